// forward — a device that stacks on any backend and makes it whole.
//
// Every call goes to the inner backend (opened from the `inner` config node
// through the host's open_backend service). On top of it forward adds:
//
// - its own tokens, each mapping to what measures the window (the SDK's
//   WindowTable, used with claims: an end or resolve claims the record,
//   calls the inner backend, and publishes or frees it by the answer), so
//   windows nest, overlap and split across threads whatever the inner
//   backend allows. opened_on is preserved: forward stream i is inner
//   stream i. Where the inner backend is whole already (a device clock on
//   every stream, probed at open; nests, overlaps, splits threads; not
//   single-window) the map would be the identity, and forward hands the
//   inner tokens through instead: a layer then costs one indirect call, not
//   two atomic read-modify-writes (the performance target is 1.1x per
//   layer), and offers lapse.window_dispatch/1 (lapse/dispatch.h), so the
//   host calls past it and it costs nothing. Its own window calls go to the
//   inner device's dispatch target too: a stack of passing layers is one
//   call deep. `own_tokens = true` in its config keeps the map anyway (forward
//   then checks every token itself, and times in system time a stream that
//   stops opening windows later).
// - system-time windows where the inner backend answers LAPSE_NO_WINDOW:
//   start syncs the inner stream and reads the host clock; end syncs (which
//   is what flushes a batching inner backend that has no window to flush
//   into) and reads it again. Method SYSTEM, host monotonic clock. Because
//   of this fallback forward itself never answers LAPSE_NO_WINDOW: every
//   profile_start that succeeds opens a window.
// - segments for inner backends that hold one window per stream
//   (LAPSE_CAP_SINGLE_WINDOW): see segment_log.hpp. A segmented window
//   reads from its first segment's start to its last one's end, and each
//   segment closes with the flags of the window whose boundary it is, so
//   an unflushed window reads the same whether forward cut it or not.
// - the inner durations' LAPSE_DURATION_* flags, carried up in every mode
//   (a segmented window: work queued at its last segment's close, earlier
//   work held by any of its segments). Streams: at most kMaxStreams.
//
// Capabilities: the inner ones, plus NESTED | OVERLAPPING | SPLIT_THREADS,
// minus SINGLE_WINDOW; DEVICE_CLOCK only if the inner backend has it (its
// absence tells a caller the durations are system time, even though
// profile_start opens windows); HOST_TIMELINE when every window is a
// system-time one.
//
// Errors from the inner backend pass through with their message intact and
// "forward: " in front; the caller's error struct is handed straight down.
// (A host that calls past forward's window calls gets the inner backend's
// own messages for those.)
// Extensions: lapse.window_dispatch/1 while passing tokens through, and
// nothing else. An inner extension takes the inner device, so handing it up
// unchanged would let a caller bypass forward's token map; forward answers
// NULL ("not supported") for every other id.
//
// Hot path (start, end, abandon): over a whole inner backend, one inner
// call; with forward's own tokens, one slot taken or claimed (a CAS) and one
// inner call; never a lock, an allocation or a log line. On a
// single-window inner backend a boundary takes the stream's mutex, closes
// one inner window and opens the next; submits to that stream take the same
// mutex, so no work can fall between two segments. An inner backend that
// runs work inline inside submit runs it under that mutex: work must not call
// back into the same forward stream.
#pragma once

#include "segment_log.hpp"

#include <lapse/lapse.h>
#include <lapse/sdk/deadline.hpp>
#include <lapse/sdk/host.hpp>
#include <lapse/sdk/stacked_device.hpp>
#include <lapse/sdk/window_table.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

namespace lapse::forward {

// The host, the inner backend, its stream count and capabilities at open
// are StackedDevice's (lapse/sdk/stacked_device.hpp): forward probes every
// stream at open and keeps state per stream, so the base's kMaxStreams
// refuses an absurd count.
class ForwardDevice : public sdk::StackedDevice {
public:
    static std::unique_ptr<ForwardDevice> open(sdk::Host host, sdk::Config config);
    ForwardDevice(sdk::Host host, sdk::InnerBackend inner, bool own_tokens);
    ~ForwardDevice();

    void describe(lapse_device_info& info);
    lapse_status sync(lapse_stream stream, lapse_error* error);
    lapse_status submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error);
    // Over a backend whose tokens it passes through, a window costs one
    // check and the inner call (inline here, so the SDK's trampoline
    // inlines it too); everything else is out of line.
    lapse_status profile_start(lapse_stream stream, lapse_token& token, lapse_error* error)
    {
        if (passthrough() && stream < stream_count_) [[likely]] {
            const lapse_status status = window_.plugin->profile_start(window_.device, stream, &token, error);
            return status == LAPSE_OK ? LAPSE_OK : passthrough_start_refused(stream, status, error);
        }
        return start_mapped(stream, token, error);
    }
    lapse_status profile_end(lapse_token token, uint32_t flags, lapse_error* error)
    {
        if (passthrough()) [[likely]] {
            lapse_end_options options;
            const lapse_status status =
                window_.plugin->profile_end(window_.device, token, sdk::end_options(flags, options), error);
            return status < 0 ? prefixed(status, error) : status;
        }
        return end_mapped(token, flags, error);
    }
    void profile_abandon(lapse_token token) noexcept;
    lapse_status resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t timeout_ns,
                         lapse_error* error);
    const void* extension(std::string_view id) noexcept;

private:
    enum class Kind : uint8_t { kNone, kInner, kSystem, kSegmented };

    // What a forward token maps to (its stream is the record's tag).
    struct Window {
        Kind kind = Kind::kNone;
        lapse_status failure = LAPSE_OK;  // kSystem: a sync that failed poisons the window
        lapse_token inner{};              // kInner
        uint64_t start_ns = 0;            // kSystem
        uint64_t end_ns = 0;              // kSystem
        uint64_t first_segment = 0;       // kSegmented
        uint64_t last_segment = 0;        // kSegmented
    };
    using Table = sdk::WindowTable<Window>;
    using Live = Table::Live;

    // One stream of a single-window inner backend.
    struct SegmentedStream {
        std::mutex lock;       // boundaries and submits on this stream
        std::mutex resolving;  // one resolve at a time reads results into the log
        uint32_t open_windows = 0;
        bool inner_open = false;  // the newest segment's inner window is open
        bool no_clock = false;    // the inner stream answered NO_WINDOW: system time here (under lock)
        SegmentLog log;
    };

    lapse_status start_system(lapse_stream stream, lapse_token& token, lapse_error* error);
    lapse_status start_segmented(lapse_stream stream, lapse_token& token, lapse_error* error);
    // Takes a window's end boundary on its segmented stream and records its
    // last segment. LAPSE_ERROR_OUT_OF_MEMORY: no boundary was taken.
    lapse_status end_boundary(lapse_stream stream, Window& w, uint32_t flags, lapse_error* error);
    // Closes the newest segment's inner window. Caller holds s.lock.
    lapse_status close_segment(SegmentedStream& s, uint32_t flags, lapse_error* error) noexcept;
    // Opens the next segment covered by `refs` windows, or records a hole
    // that poisons them. Caller holds s.lock.
    lapse_status open_segment(SegmentedStream& s, lapse_stream stream, uint32_t refs, lapse_error* error);
    void release_segments(SegmentedStream& s, uint64_t first, uint64_t last) noexcept;
    // Resolves one segmented window into `out`; false while it is pending.
    bool resolve_segmented(lapse_stream stream, const Window& w, lapse_duration& out, const sdk::Deadline& deadline,
                           lapse_status& status, lapse_error* error);
    // Claims the record of `token` in one of `states`, waiting out another
    // call's claim (never held across user code); says why not otherwise.
    sdk::WindowCheck claim(const lapse_token& token, unsigned states, Live& was) noexcept;
    // The INVALID_TOKEN or WRONG_STREAM error for a claim that failed.
    lapse_status refuse(const lapse_token& token, sdk::WindowCheck check, const char* call, lapse_error* error) const noexcept;
    lapse_status table_full(lapse_error* error) const noexcept;
    lapse_status resolve_inner_batch(const lapse_token* inner, lapse_duration* scratch, uint32_t n,
                                     const sdk::Deadline& deadline, lapse_error* error);
    // inner_.prefixed out of line: the pass-through end's failure branch is
    // a call, so its common case saves no registers for the message work.
    lapse_status prefixed(lapse_status status, lapse_error* error) const noexcept;
    lapse_status passthrough_start_refused(lapse_stream stream, lapse_status status, lapse_error* error);
    lapse_status start_mapped(lapse_stream stream, lapse_token& token, lapse_error* error);
    lapse_status end_mapped(lapse_token token, uint32_t flags, lapse_error* error);
    bool every_stream_opens_windows() noexcept;

    bool inner_clock_ = false;
    bool segmented_ = false;
    // Set only while passing the inner tokens through (chosen at open, for
    // the device's life): where the inner device's windows really open
    // (itself, or its own dispatch target); also our dispatch extension.
    lapse_window_dispatch window_{};
    bool passthrough() const noexcept { return window_.plugin != nullptr; }
    std::unique_ptr<SegmentedStream[]> streams_;  // when segmented_
    std::unique_ptr<Table> table_;                // sized by the stream count
};

}  // namespace lapse::forward
