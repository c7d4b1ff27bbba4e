// The built-in workload of `lapse run`: real CPU work in named phases,
// with nested windows, overlapping windows, two streams and split pairs
// closed on another thread. Every window it opens is handed back as a
// Duration to resolve. Windows that mean "the cost of this work" close with
// flush (a batching backend runs what it still holds queued inside them);
// the handoff windows close without it, as production code does, and the
// table marks those that left work queued.
#pragma once

#include <lapse/core/device.hpp>

#include <functional>
#include <string>
#include <vector>

namespace lapse::cli {

struct DemoContext {
    Device& device;
    Stream main_stream = 0;    // stream 0
    Stream second_stream = 0;  // stream 1 when the device has two, else 0
    std::vector<Duration> durations;

    void keep(Duration d) { durations.push_back(std::move(d)); }
};

struct DemoPhase {
    std::string name;
    std::function<void(DemoContext&)> run;
};

// The CPU phases (they run on every backend; on a GPU backend their work
// runs on the host side of the stream's queue).
std::vector<DemoPhase> cpu_phases();

// Phases for devices with a native context (a Vulkan command buffer, a
// CUstream), chosen from the device's name and extensions. Defined in
// demo_native_phases.cpp, where the GPU backends' engineers add theirs.
std::vector<DemoPhase> native_phases(Device& device);

}  // namespace lapse::cli
