// Shared pieces of the CUDA plugin's CPU-only tests: where the files are,
// and a fixture that opens the plugin over the driver test double, through
// the shared test double of the host (tests/support).
#pragma once

#include "fake_cuda_driver.h"

#include <lapse/cuda.h>
#include <lapse_test/test_host.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>

#ifndef LAPSE_CUDA_PLUGIN_PATH
#error "LAPSE_CUDA_PLUGIN_PATH must name the built lapse_cuda.so"
#endif
#ifndef LAPSE_FAKE_CUDA_DRIVER_PATH
#error "LAPSE_FAKE_CUDA_DRIVER_PATH must name the built test double"
#endif

// The driver calls a host makes itself (the double exports them as the
// real driver does).
extern "C" {
int cuCtxPushCurrent_v2(CUctx_st* ctx);
int cuCtxPopCurrent_v2(CUctx_st** ctx);
int cuStreamCreate(CUstream_st** out, unsigned int flags);
int cuStreamDestroy_v2(CUstream_st* stream);
}

namespace lapse::test {

// A stream the host creates in `ctx` (flags as cuStreamCreate takes them:
// 1 non-blocking), destroyed at scope end or by reset().
struct HostStream {
    explicit HostStream(CUctx_st* ctx, unsigned int flags = 1)
    {
        REQUIRE(cuCtxPushCurrent_v2(ctx) == 0);
        REQUIRE(cuStreamCreate(&stream, flags) == 0);
        CUctx_st* popped = nullptr;
        cuCtxPopCurrent_v2(&popped);
    }
    HostStream(const HostStream&) = delete;
    HostStream& operator=(const HostStream&) = delete;
    ~HostStream() { reset(); }
    void reset()
    {
        if (stream != nullptr) cuStreamDestroy_v2(stream);
        stream = nullptr;
    }
    CUstream_st* stream = nullptr;
};

inline fake_cuda_counters counters()
{
    fake_cuda_counters c{};
    fake_cuda_get_counters(&c);
    return c;
}

// The plugin opened over fake_cuda_driver (the test double), with a fresh
// double for every test. Closing checks that the plugin gave every driver
// object back.
struct FakeDevice {
    explicit FakeDevice(ConfigTable extra = {}, bool open_now = true) : loaded(LAPSE_CUDA_PLUGIN_PATH)
    {
        REQUIRE(fake_cuda_reset() == 0);
        // The anchor thread is slowed down so that a failure a test injects
        // into the next driver call is met by the call the test means.
        config = {{"driver", std::string(LAPSE_FAKE_CUDA_DRIVER_PATH)},
                  {"nvml", std::string(LAPSE_FAKE_CUDA_DRIVER_PATH)},
                  {"anchor_period_ms", int64_t{60000}}};
        for (auto& [k, v] : extra) config[k] = v;
        REQUIRE(loaded.plugin() != nullptr);
        if (open_now) open();
    }
    ~FakeDevice() { close(); }

    void open()
    {
        lapse_status s = loaded.open(config, &device);
        INFO(loaded.last_error().message);
        REQUIRE(s == LAPSE_OK);
        REQUIRE(device != nullptr);
        ext = static_cast<const lapse_cuda_stream_ext*>(
            loaded.plugin()->get_extension(device, LAPSE_CUDA_STREAM_EXTENSION));
        REQUIRE(ext != nullptr);
        REQUIRE(ext->struct_size >= sizeof(lapse_cuda_stream_ext));
    }

    // Closes the device and checks that nothing of the driver is left.
    void close()
    {
        if (device == nullptr) return;
        loaded.plugin()->close(device);
        device = nullptr;
        fake_cuda_counters c = counters();
        CHECK(c.events_live == 0);
        CHECK(c.streams_live == 0);
        CHECK(c.primary_ctx_retained == 0);
        CHECK(c.records_on_pending_event == 0);
        CHECK(c.calls_without_context == 0);
    }

    const lapse_plugin& p() const { return *loaded.plugin(); }

    // The plugin's context, as the stream extension hands it to a host.
    CUctx_st* context()
    {
        CUctx_st* ctx = nullptr;
        REQUIRE(ext->context(device, &ctx, nullptr) == LAPSE_OK);
        return ctx;
    }

    // Registers a host's own stream; its index on the device.
    lapse_stream register_stream(CUstream_st* host_stream)
    {
        lapse_stream index = 0;
        REQUIRE(ext->register_stream(device, host_stream, &index, nullptr) == LAPSE_OK);
        return index;
    }

    CUstream_st* stream(lapse_stream s)
    {
        CUstream_st* out = nullptr;
        REQUIRE(ext->native_stream(device, s, &out, nullptr) == LAPSE_OK);
        return out;
    }

    lapse_token start(lapse_stream s)
    {
        lapse_token t{};
        lapse_error e = make_error();
        lapse_status st = p().profile_start(device, s, &t, &e);
        INFO(e.message);
        REQUIRE(st == LAPSE_OK);
        REQUIRE(t.id != 0);
        REQUIRE(t.opened_on == s);
        return t;
    }

    void end(lapse_token t)
    {
        lapse_error e = make_error();
        lapse_status st = p().profile_end(device, t, nullptr, &e);
        INFO(e.message);
        REQUIRE(st == LAPSE_OK);
    }

    // Launches a fake kernel of `ns` on stream `s`, through submit, as a
    // host's work would go.
    void busy(lapse_stream s, int64_t ns)
    {
        struct Work {
            int64_t ns;
            int result;
        } w{ns, -1};
        lapse_status st = p().submit(
            device, s,
            [](void* user, void* native) {
                auto* work = static_cast<Work*>(user);
                work->result = fake_cuda_launch_busy(static_cast<CUstream_st*>(native), work->ns);
            },
            &w, nullptr);
        REQUIRE(st == LAPSE_OK);
        REQUIRE(w.result == 0);
    }

    lapse_duration resolve(lapse_token t, uint64_t timeout = LAPSE_WAIT_FOREVER, lapse_status* status = nullptr)
    {
        lapse_duration d = make_duration();
        lapse_error e = make_error();
        lapse_status st = p().resolve(device, &t, &d, 1, timeout, &e);
        if (status != nullptr) *status = st;
        else {
            INFO(e.message);
            REQUIRE(st == LAPSE_OK);
        }
        last_message = e.message;
        return d;
    }

    LoadedPlugin loaded;  // the plugin file and its TestHost
    ConfigTable config;
    lapse_device* device = nullptr;
    const lapse_cuda_stream_ext* ext = nullptr;
    std::string last_message;
};

}  // namespace lapse::test
