// What the device checks share (conformance_checks.cpp, window_checks.cpp):
// a device under test opened through the host and driven through the raw C
// ABI, host work submitted to a stream, and status expectations.
#pragma once

#include "checks.hpp"

#include <lapse/core.hpp>
#include <lapse/lapse.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>


namespace lapse::cli::device_checks {


inline int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline std::string status_text(lapse_status s) { return lapse_status_name(s); }

// Placement tolerance for durations stamped on the host clock: a calibrated
// device clock may be off by this much and still be called host-aligned.
constexpr int64_t host_placement_tolerance_ns = 5'000'000;

// The device under test, opened through the host.
struct Dut {
    Runtime runtime;
    Device device;
    const lapse_plugin* p = nullptr;
    lapse_device* h = nullptr;
    lapse_device_info info{};

    explicit Dut(const CheckContext& ctx)
    {
        try {
            Config config = Config::from_string(ctx.config_text, ctx.config_name, ctx.config_dir);
            device = runtime.open(config);
        } catch (const Error& e) {
            if (e.status() == LAPSE_ERROR_UNAVAILABLE) skip(std::string("device unavailable: ") + e.what());
            std::string hint;
            if (e.status() == LAPSE_ERROR_CONFIG && std::string(e.what()).find("inner") != std::string::npos)
                hint = " (a stacking plugin: name the backend it stacks on with --inner, e.g. --inner cpu)";
            fail(std::string("open failed (") + e.status_name() + "): " + e.what() + hint);
        }
        p = &device.plugin();
        h = device.handle();
        info.struct_size = sizeof info;
        lapse_error err = error();
        lapse_status s = p->describe(h, &info, &err);
        require(s == LAPSE_OK, "describe failed: " + status_text(s) + ": " + err.message);
        require(info.stream_count >= 1, "describe says 0 streams");
    }

    static lapse_error error()
    {
        lapse_error e{};
        e.struct_size = sizeof e;
        return e;
    }
    bool has(uint64_t cap) const { return (info.capabilities & cap) == cap; }

    // Opens a window; skips the check when the backend opens none (it
    // measures in system time, which the host supplies).
    lapse_token open(lapse_stream stream)
    {
        lapse_token t{};
        lapse_error err = error();
        lapse_status s = p->profile_start(h, stream, &t, &err);
        if (s == LAPSE_NO_WINDOW)
            skip("stream " + std::to_string(stream) + " opens no window (no device clock: the host measures in system "
                                                      "time), so window rules do not apply");
        require(s == LAPSE_OK, "profile_start(stream " + std::to_string(stream) + ") = " + status_text(s) + ": " +
                                   err.message);
        require(t.id != 0, "profile_start returned token id 0 (ids are never 0)");
        require(t.opened_on == stream, "token.opened_on is " + std::to_string(t.opened_on) + ", opened on stream " +
                                           std::to_string(stream));
        return t;
    }
    void end(lapse_token t, uint32_t flags = 0)
    {
        lapse_end_options o{sizeof o, flags};
        lapse_error err = error();
        lapse_status s = p->profile_end(h, t, flags != 0 ? &o : nullptr, &err);
        require(s == LAPSE_OK, "profile_end(token " + std::to_string(t.id) + ") = " + status_text(s) + ": " +
                                   err.message);
    }
    // Resolves one token, waiting forever; the duration must be final.
    lapse_duration resolve(lapse_token t)
    {
        lapse_duration d{};
        d.struct_size = sizeof d;
        lapse_error err = error();
        lapse_status s = p->resolve(h, &t, &d, 1, LAPSE_WAIT_FOREVER, &err);
        require(s == LAPSE_OK, "resolve(token " + std::to_string(t.id) + ", forever) = " + status_text(s) + ": " +
                                   err.message);
        require(d.state != LAPSE_DURATION_PENDING, "resolve waited forever but left the duration PENDING");
        check_final(d, "token " + std::to_string(t.id));
        return d;
    }
    // Rules every final duration obeys.
    void check_final(const lapse_duration& d, const std::string& what) const
    {
        require(d.state <= LAPSE_DURATION_FAILED, what + ": unknown state " + std::to_string(d.state));
        if (d.state == LAPSE_DURATION_READY) {
            require(d.end_ns >= d.start_ns, what + ": end_ns < start_ns (" + std::to_string(d.end_ns - d.start_ns) +
                                                " ns): a negative duration");
            require(d.method == LAPSE_TIMING_DEVICE || d.method == LAPSE_TIMING_SYSTEM,
                    what + ": READY without a timing method");
            require(d.clock_domain == LAPSE_CLOCK_HOST_MONOTONIC || d.clock_domain == LAPSE_CLOCK_DEVICE,
                    what + ": READY without a clock domain");
            if (has(LAPSE_CAP_HOST_TIMELINE))
                require(d.clock_domain == LAPSE_CLOCK_HOST_MONOTONIC,
                        what + ": the device declares host-timeline but the duration is on the device clock");
        }
    }
    void sync(lapse_stream stream = LAPSE_ALL_STREAMS)
    {
        lapse_error err = error();
        lapse_status s = p->sync(h, stream, &err);
        require(s == LAPSE_OK, "sync = " + status_text(s) + ": " + err.message);
    }
};

// Work handed to a stream: spins on the host clock (a CPU worker's stream
// then measures it), counts its runs and remembers the native context.
struct HostWork {
    int64_t spin_ns = 0;
    std::atomic<int> runs{0};
    std::atomic<bool> native_seen{false};

    static void run(void* user, void* native)
    {
        auto* w = static_cast<HostWork*>(user);
        if (native != nullptr) w->native_seen.store(true);
        const int64_t until = now_ns() + w->spin_ns;
        while (now_ns() < until) {
        }
        w->runs.fetch_add(1);
    }
};

inline void submit(Dut& dut, lapse_stream stream, HostWork& work)
{
    lapse_error err = Dut::error();
    lapse_status s = dut.p->submit(dut.h, stream, &HostWork::run, &work, &err);
    require(s == LAPSE_OK, "submit(stream " + std::to_string(stream) + ") = " + status_text(s) + ": " + err.message);
}

// Expects a refusal with exactly `want`, and a message in the error struct.
inline void expect_status(lapse_status got, const lapse_error& err, lapse_status want, const std::string& call)
{
    require(got == want, call + " answered " + status_text(got) + ", expected " + status_text(want) +
                             (err.message[0] != '\0' ? std::string(" (") + err.message + ")" : ""));
    require(err.code == want, call + " returned " + status_text(want) + " but the error struct says " +
                                  status_text(err.code));
    require(err.message[0] != '\0', call + " refused without a message in the error struct");
}

// ---------------------------------------------------------------------------


}  // namespace lapse::cli::device_checks
