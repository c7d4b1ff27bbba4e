// lapse benchmark suite — what the concerns that time recorded windows
// (bench_capture.cpp, bench_metrics.cpp) share: the subject opened anew and
// recording into a capture, the names its windows carry, and where the
// capture file goes. Not a public header.
#pragma once

#include "internal.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

namespace lapse::bench::detail {

// The names recorded windows take in turn (8: a frame's usual phases).
inline constexpr const char* recorded_names[] = {"frame", "update", "physics", "render",
                                                 "shadow", "post", "ui", "present"};

// A file of this process's own under the temp dir ("lapse-bench-PID-LEAF").
inline std::filesystem::path scratch_file(const std::string& leaf)
{
    return std::filesystem::temp_directory_path() / ("lapse-bench-" + std::to_string(::getpid()) + "-" + leaf);
}

// The options of the caller's-cost figures: a budget no batch fills, so
// nothing is dropped and nothing blocks.
inline CaptureOptions budgeted_capture(const std::filesystem::path& file)
{
    CaptureOptions o;
    o.path = file;
    o.budget_bytes = 256u << 20;
    return o;
}

struct Recording {
    Device device;
    std::shared_ptr<Capture> capture;
};

// The subject opened anew (its own device, not ctx.subject), recording into
// a capture opened with `options`. Throws what opening either throws.
inline Recording open_recording(Context& ctx, const CaptureOptions& options)
{
    Recording r;
    r.device = ctx.runtime->open(ctx.config(ctx.subject_config));
    r.capture = Capture::open(options);
    r.device.record_into(r.capture);
    return r;
}

// Until the collector has taken every window handed to it.
inline void wait_drained(const Capture& capture)
{
    while (capture.stats().queued > 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

}  // namespace lapse::bench::detail
