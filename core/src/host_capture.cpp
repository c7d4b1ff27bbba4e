// The C host API's captures (lapse/host_api.h): lapse::Capture and
// lapse::CaptureReader behind opaque handles, and record_into for runtimes
// and devices. Like host_api.cpp, a thin layer: every rule is the C++
// API's, and no exception leaves this file.
#include "host_api_support.hpp"

#include <lapse/core.hpp>
#include <lapse/host_api.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

struct lapse_host_capture_reader {
    lapse::CaptureReader reader;
    // The last window's strings, NUL-terminated for C (the reader's views
    // are not), valid until the next call as the header promises.
    std::string name;
    std::string cause;
};

namespace {

using lapse::host_api::fail;
using lapse::host_api::guarded;
using lapse::host_api::null_argument;
using lapse::host_api::too_small;

std::shared_ptr<lapse::Capture> capture_of(const lapse_host_capture* capture)
{
    return capture != nullptr ? capture->capture : nullptr;
}

}  // namespace

extern "C" {

lapse_status lapse_host_capture_open(const lapse_host_capture_options* options, lapse_host_capture** out,
                                     lapse_error* error)
{
    constexpr const char* call = "lapse_host_capture_open";
    if (out == nullptr) return null_argument(error, call, "out");
    *out = nullptr;
    if (options == nullptr) return null_argument(error, call, "options");
    if (options->struct_size < sizeof(lapse_host_capture_options))
        return too_small(error, call, "options", options->struct_size, "lapse_host_capture_options",
                         sizeof(lapse_host_capture_options));
    if (options->path == nullptr || options->path[0] == '\0') return null_argument(error, call, "options->path");
    return guarded(error, call, [&]() -> lapse_status {
        if (options->policy != LAPSE_HOST_CAPTURE_DROP && options->policy != LAPSE_HOST_CAPTURE_BLOCK)
            return fail(error, LAPSE_ERROR_INVALID_ARGUMENT,
                        std::string(call) + ": options->policy " + std::to_string(options->policy) +
                            " is neither LAPSE_HOST_CAPTURE_DROP (0) nor LAPSE_HOST_CAPTURE_BLOCK (1)");
        lapse::CaptureOptions o;
        o.path = options->path;
        if (options->budget_bytes != 0) o.budget_bytes = options->budget_bytes;
        o.policy = options->policy == LAPSE_HOST_CAPTURE_BLOCK ? lapse::CapturePolicy::block
                                                               : lapse::CapturePolicy::drop;
        if (options->flush_ms != 0) o.flush_interval = std::chrono::milliseconds(options->flush_ms);
        // Capture::open's errors name the file and the cause.
        *out = new lapse_host_capture{lapse::Capture::open(std::move(o))};
        return LAPSE_OK;
    });
}

lapse_status lapse_host_runtime_capture(lapse_host_runtime* runtime, lapse_host_capture** out, lapse_error* error)
{
    constexpr const char* call = "lapse_host_runtime_capture";
    if (out == nullptr) return null_argument(error, call, "out");
    *out = nullptr;
    if (runtime == nullptr) return null_argument(error, call, "runtime");
    return guarded(error, call, [&]() -> lapse_status {
        if (std::shared_ptr<lapse::Capture> c = runtime->runtime.capture()) *out = new lapse_host_capture{std::move(c)};
        return LAPSE_OK;
    });
}

lapse_status lapse_host_runtime_record_into(lapse_host_runtime* runtime, lapse_host_capture* capture,
                                            lapse_error* error)
{
    constexpr const char* call = "lapse_host_runtime_record_into";
    if (runtime == nullptr) return null_argument(error, call, "runtime");
    return guarded(error, call, [&]() -> lapse_status {
        runtime->runtime.record_into(capture_of(capture));
        return LAPSE_OK;
    });
}

lapse_status lapse_host_device_record_into(lapse_host_device* device, lapse_host_capture* capture,
                                           lapse_error* error)
{
    constexpr const char* call = "lapse_host_device_record_into";
    if (device == nullptr) return null_argument(error, call, "device");
    // Device::record_into names the call and says "closed" on a closed device.
    return guarded(error, call, [&]() -> lapse_status {
        device->device.record_into(capture_of(capture));
        return LAPSE_OK;
    });
}

lapse_status lapse_host_capture_flush(lapse_host_capture* capture, lapse_error* error)
{
    constexpr const char* call = "lapse_host_capture_flush";
    if (capture == nullptr) return null_argument(error, call, "capture");
    return guarded(error, call, [&]() -> lapse_status {
        capture->capture->flush();
        return LAPSE_OK;
    });
}

lapse_status lapse_host_capture_stats_of(const lapse_host_capture* capture, lapse_host_capture_stats* out,
                                         lapse_error* error)
{
    constexpr const char* call = "lapse_host_capture_stats_of";
    if (capture == nullptr) return null_argument(error, call, "capture");
    if (out == nullptr) return null_argument(error, call, "out");
    if (out->struct_size < sizeof(lapse_host_capture_stats))
        return too_small(error, call, "out", out->struct_size, "lapse_host_capture_stats",
                         sizeof(lapse_host_capture_stats));
    const lapse::CaptureStats s = capture->capture->stats();
    out->recorded = s.recorded;
    out->dropped = s.dropped;
    out->queued = s.queued;
    out->bytes_written = s.bytes_written;
    out->chunks = s.chunks;
    out->peak_held_bytes = s.peak_held_bytes;
    out->budget_bytes = s.budget_bytes;
    return LAPSE_OK;
}

void lapse_host_capture_close(lapse_host_capture* capture)
{
    if (capture != nullptr) capture->capture->close();
}

void lapse_host_capture_destroy(lapse_host_capture* capture) { delete capture; }

// ---- reading ----------------------------------------------------------------

lapse_status lapse_host_capture_reader_open(const char* path, lapse_host_capture_reader** out, lapse_error* error)
{
    constexpr const char* call = "lapse_host_capture_reader_open";
    if (out == nullptr) return null_argument(error, call, "out");
    *out = nullptr;
    if (path == nullptr) return null_argument(error, call, "path");
    return guarded(error, call, [&]() -> lapse_status {
        *out = new lapse_host_capture_reader{lapse::CaptureReader(path), {}, {}};
        return LAPSE_OK;
    });
}

lapse_status lapse_host_capture_reader_next(lapse_host_capture_reader* reader, lapse_host_captured_window* out,
                                            int* found, lapse_error* error)
{
    constexpr const char* call = "lapse_host_capture_reader_next";
    if (found != nullptr) *found = 0;
    if (reader == nullptr) return null_argument(error, call, "reader");
    if (out == nullptr) return null_argument(error, call, "out");
    if (found == nullptr) return null_argument(error, call, "found");
    if (out->struct_size < sizeof(lapse_host_captured_window))
        return too_small(error, call, "out", out->struct_size, "lapse_host_captured_window",
                         sizeof(lapse_host_captured_window));
    return guarded(error, call, [&]() -> lapse_status {
        lapse::CapturedWindow w;
        if (!reader->reader.next(w)) return LAPSE_OK;
        reader->name.assign(w.name);
        reader->cause.assign(w.cause);
        out->source = w.source;
        out->stream = w.stream;
        out->state = static_cast<uint32_t>(w.state);
        out->method = static_cast<uint32_t>(w.method);
        out->clock_domain = static_cast<uint32_t>(w.domain);
        out->start_ns = w.start_ns;
        out->end_ns = w.end_ns;
        out->failure = w.failure;
        out->reserved = 0;
        out->flags = w.flags;
        out->thread = w.thread;
        out->close_thread = w.close_thread;
        out->name = reader->name.c_str();
        out->cause = reader->cause.c_str();
        *found = 1;
        return LAPSE_OK;
    });
}

lapse_status lapse_host_capture_reader_summary(const lapse_host_capture_reader* reader,
                                               lapse_host_capture_summary* out, lapse_error* error)
{
    constexpr const char* call = "lapse_host_capture_reader_summary";
    if (reader == nullptr) return null_argument(error, call, "reader");
    if (out == nullptr) return null_argument(error, call, "out");
    if (out->struct_size < sizeof(lapse_host_capture_summary))
        return too_small(error, call, "out", out->struct_size, "lapse_host_capture_summary",
                         sizeof(lapse_host_capture_summary));
    const lapse::CaptureReader& r = reader->reader;
    out->complete = r.complete() ? 1u : 0u;
    out->windows_read = r.windows_read();
    out->chunks_read = r.chunks_read();
    out->dropped_total = r.dropped_total();
    uint64_t damaged = 0;
    for (const lapse::CaptureDamage& d : r.damage()) damaged += d.size;
    out->damaged_bytes = damaged;
    out->damage_count = static_cast<uint32_t>(r.damage().size());
    out->source_count = static_cast<uint32_t>(r.sources().size());
    return LAPSE_OK;
}

void lapse_host_capture_reader_destroy(lapse_host_capture_reader* reader) { delete reader; }

}  // extern "C"
