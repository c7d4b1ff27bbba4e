// Loads lapse_cpu.so with dlopen (as a host would) and wraps one device in a
// small RAII helper for the tests, over the shared test double of the host
// (tests/support). LAPSE_CPU_PLUGIN_PATH comes from CMake.
#pragma once

#include <lapse/lapse.h>
#include <lapse_test/test_host.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace lapse_test {

using lapse::test::ConfigValue;
using lapse::test::make_duration;
using lapse::test::make_error;
using lapse::test::now_ns;
using lapse::test::TestHost;

// Loaded once for the whole test binary, as the core keeps a plugin loaded
// while its devices live.
inline lapse_plugin_entry_fn cpu_entry() { return lapse::test::process_plugin_entry(LAPSE_CPU_PLUGIN_PATH); }

// Opening a device either works (then plugin/device are set) or the test
// reads status/error.
class CpuDevice {
public:
    explicit CpuDevice(std::map<std::string, ConfigValue> config = {})
        : host_(std::make_unique<TestHost>(std::move(config)))
    {
        plugin_ = cpu_entry()(host_->get());
        REQUIRE(plugin_ != nullptr);
        error = make_error();
        status = plugin_->open(host_->get(), host_->node(), &device_, &error);
    }
    ~CpuDevice() { close(); }
    CpuDevice(const CpuDevice&) = delete;
    CpuDevice& operator=(const CpuDevice&) = delete;

    void close()
    {
        if (device_ != nullptr) plugin_->close(device_);
        device_ = nullptr;
    }

    bool opened() const { return device_ != nullptr; }
    const lapse_plugin& plugin() const { return *plugin_; }
    lapse_device* device() const { return device_; }
    TestHost& host() { return *host_; }

    lapse_token start(lapse_stream stream)
    {
        lapse_token t{};
        lapse_error e = make_error();
        lapse_status s = plugin_->profile_start(device_, stream, &t, &e);
        INFO(e.message);
        REQUIRE(s == LAPSE_OK);
        REQUIRE(t.id != 0);
        REQUIRE(t.opened_on == stream);
        return t;
    }
    lapse_status end(lapse_token t, lapse_error* e = nullptr) { return plugin_->profile_end(device_, t, nullptr, e); }
    void end_ok(lapse_token t)
    {
        lapse_error e = make_error();
        lapse_status s = end(t, &e);
        INFO(e.message);
        REQUIRE(s == LAPSE_OK);
    }
    void abandon(lapse_token t) { plugin_->profile_abandon(device_, t); }
    lapse_status resolve(lapse_token t, lapse_duration& d, uint64_t timeout_ns, lapse_error* e = nullptr)
    {
        d = make_duration();
        return plugin_->resolve(device_, &t, &d, 1, timeout_ns, e);
    }
    // Waits for a window that must measure, and returns it.
    lapse_duration ready(lapse_token t)
    {
        lapse_duration d;
        lapse_error e = make_error();
        lapse_status s = resolve(t, d, LAPSE_WAIT_FOREVER, &e);
        INFO(e.message);
        REQUIRE(s == LAPSE_OK);
        REQUIRE(d.state == LAPSE_DURATION_READY);
        REQUIRE(d.method == LAPSE_TIMING_DEVICE);
        REQUIRE(d.clock_domain == LAPSE_CLOCK_HOST_MONOTONIC);
        REQUIRE(d.end_ns >= d.start_ns);
        return d;
    }
    template <class F>
    void submit(lapse_stream stream, F* f)
    {
        lapse_error e = make_error();
        lapse_status s = plugin_->submit(
            device_, stream, [](void* user, void*) { (*static_cast<F*>(user))(); }, f, &e);
        INFO(e.message);
        REQUIRE(s == LAPSE_OK);
    }
    void sync(lapse_stream stream)
    {
        lapse_error e = make_error();
        lapse_status s = plugin_->sync(device_, stream, &e);
        INFO(e.message);
        REQUIRE(s == LAPSE_OK);
    }

    lapse_status status = LAPSE_OK;
    lapse_error error{};

private:
    std::unique_ptr<TestHost> host_;
    const lapse_plugin* plugin_ = nullptr;
    lapse_device* device_ = nullptr;
};

// A stamp converted from the TSC agrees with CLOCK_MONOTONIC only as well
// as the clock's calibration pairs do (StampClock::refine accepts a pair
// whose two CLOCK_MONOTONIC reads lie up to 10 µs apart): a check that a
// stamp comes before or after a job's own clock read allows that much.
// Every such order in these tests is held by milliseconds of work when it
// holds at all.
inline constexpr int64_t kClockAgreementNs = 10'000;

// Spins (no sleep: a sleeping job would measure the scheduler) until
// `ns` of CLOCK_MONOTONIC passed; records when it really ran.
struct BusyJob {
    int64_t ns;
    int64_t began = 0;
    int64_t ended = 0;
    void operator()()
    {
        began = now_ns();
        while (now_ns() - began < ns) {
        }
        ended = now_ns();
    }
};

// Holds a stream's worker until released, so what is queued behind it
// stays queued (markers in flight).
struct Gate {
    std::atomic<bool> open{false};
    void operator()()
    {
        while (!open.load()) std::this_thread::yield();
    }
};

}  // namespace lapse_test
