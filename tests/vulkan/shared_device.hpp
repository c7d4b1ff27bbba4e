// One own-mode device (two streams, validation on) and its busy kernel,
// shared by the tests that need no special config: opening a validated
// Vulkan device and compiling the shader (lavapipe: ~20 ms per pipeline,
// paid on the first dispatch) once per process keeps the suite fast.
#pragma once

#include "busy_kernel.hpp"
#include "plugin_fixture.hpp"

#include <catch2/catch.hpp>

#include <memory>

namespace lapse::test {

struct SharedDevice {
    OpenDevice device{base_config({{"queues", int64_t{2}}})};
    std::unique_ptr<BusyKernel> busy;
    double ns_per_iteration = 0;

    SharedDevice()
    {
        if (device.open_status() != LAPSE_OK) return;
        lapse_vulkan_handles h{};
        h.struct_size = sizeof h;
        device.commands()->handles(device.get(), 0, &h, nullptr);
        busy = std::make_unique<BusyKernel>(h.physical_device, h.device);
        // Warm up (shader compile), then calibrate iterations per ns with a
        // window around a longer dispatch.
        run_busy(0, 1000);
        const uint32_t probe = 200000;
        lapse_token t{};
        device.start(0, t);
        run_busy(0, probe, /*sync=*/false);
        device.end(t);
        lapse_duration d{};
        device.resolve_one(t, d);
        ns_per_iteration = static_cast<double>(d.end_ns - d.start_ns) / probe;
    }

    // Records a dispatch of `iterations` on `stream` (and waits for it when `sync`).
    void run_busy(lapse_stream stream, uint32_t iterations, bool sync = true)
    {
        auto work = [&](VkCommandBuffer cb) { busy->record(cb, iterations); };
        REQUIRE(device.submit(stream, work) == LAPSE_OK);
        if (sync) REQUIRE(device.sync(stream) == LAPSE_OK);
    }

    uint32_t iterations_for_ms(double ms) const
    {
        return static_cast<uint32_t>(ms * 1e6 / (ns_per_iteration > 0 ? ns_per_iteration : 1.0)) + 1;
    }
};

inline SharedDevice& shared()
{
    static SharedDevice s;
    REQUIRE(s.device.open_status() == LAPSE_OK);
    REQUIRE(s.ns_per_iteration > 0);
    return s;
}

}  // namespace lapse::test
