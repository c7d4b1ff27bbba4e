// fusion — a device that batches the work submitted to any backend.
//
// Config: `inner = { plugin = "...", ... }` (or [backend.inner]) and
// `max_batch` (ops per batch, 1..65536, default 64). Ops submitted to a
// stream queue up and reach the inner backend as ONE inner submit, whose
// function runs the batch in order and hands each op the inner stream's
// native context. A batch is handed over when it fills, on sync, when a
// window opens, and when a window closes with LAPSE_END_FLUSH.
//
// Windows are the inner backend's (fusion passes tokens and durations
// through unchanged, so a duration says what the inner backend measured
// with):
// - profile_start first hands over what was queued before it, so earlier
//   work stays out of the window;
// - profile_end with LAPSE_END_FLUSH hands over the queue, then closes: the
//   window holds all the work registered in it;
// - profile_end without it closes on what ran and leaves the queue alone:
//   the closure's last ops run later, outside the window (what production
//   runs). Later work stays out either way. Such a window's duration says
//   so: LAPSE_DURATION_WORK_QUEUED, with queued_ops = how many ops the
//   stream still held at the close (queued_marks.hpp keeps the count from
//   the close to the resolve).
// A window never holds earlier work here (profile_start hands it over
// first), so fusion never sets LAPSE_DURATION_HOLDS_EARLIER_WORK itself; an
// inner backend's flags pass through.
// Capabilities: the inner backend's, plus BATCHING.
//
// Streams: at most kMaxStreams (an inner backend claiming more is refused
// at open, naming it). A stream's first batch is allocated by its first
// submit, so idle streams cost a few dozen bytes each.
//
// Threads: every call is thread-safe. Per stream, `queue` (a short mutex)
// guards the queue and is never held while the inner backend is called;
// `order` (recursive) is held while cut batches are handed to the inner
// backend, so they reach it in the order they were cut, and across a
// window's hand-over and its inner start/end, so no other batch slips in
// between. An inner backend that runs work inline inside submit (the CPU
// plugin's inline mode) runs it under `order`: an op may submit to this
// stream again (the recursive lock lets it hand over a nested batch, which
// runs nested, exactly as inline work would), but an op must not wait on
// another thread that syncs or opens windows on the same fusion stream.
//
// Extensions: none. An inner extension (a CUstream, a command buffer) would
// let the caller record work that bypasses the queue and breaks its order.
//
// If the inner backend refuses a batch, the batch stays first in line and
// the call that handed it over returns the error; the next sync, window or
// flush tries again. Closing hands everything over; what the inner backend
// still refuses then runs on the closing thread with a null native context
// (submit's contract: every accepted op runs exactly once), and says so in
// the log.
#pragma once

#include "queued_marks.hpp"

#include <lapse/lapse.h>
#include <lapse/sdk/host.hpp>
#include <lapse/sdk/stacked_device.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

namespace lapse::fusion {

// The host, the inner backend and its stream count are StackedDevice's
// (lapse/sdk/stacked_device.hpp); a queue per stream is allocated at open,
// so the base's kMaxStreams keeps an absurd count from becoming an
// allocation.
class FusionDevice : public sdk::StackedDevice {
public:
    static std::unique_ptr<FusionDevice> open(sdk::Host host, sdk::Config config);
    FusionDevice(sdk::Host host, sdk::InnerBackend inner, uint32_t max_batch);
    ~FusionDevice();

    void describe(lapse_device_info& info);
    lapse_status sync(lapse_stream stream, lapse_error* error);
    lapse_status submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error);
    lapse_status profile_start(lapse_stream stream, lapse_token& token, lapse_error* error);
    lapse_status profile_end(lapse_token token, uint32_t flags, lapse_error* error);
    void profile_abandon(lapse_token token) noexcept;
    lapse_status resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t timeout_ns,
                         lapse_error* error);
    const void* extension(std::string_view id) noexcept;

private:
    struct Stream;

    struct Op {
        lapse_work_fn fn;
        void* user;
    };

    // A run of ops that reaches the inner backend as one submit. Recycled
    // through the stream's pool: no allocation in the steady state.
    struct Batch {
        Stream* owner = nullptr;
        Batch* next = nullptr;
        std::vector<Op> ops;
    };

    struct Stream {
        lapse_stream index = 0;
        std::mutex queue;            // filling, cut list, pool
        std::recursive_mutex order;  // handing cut batches over, in order
        Batch* filling = nullptr;    // ops queued, not cut yet
        Batch* cut_head = nullptr;   // cut, waiting for the inner backend, oldest first
        Batch* cut_tail = nullptr;
        Batch* pool = nullptr;       // empty batches
        // Ops accepted and not handed to the inner backend yet (written
        // under `queue`, read without it by profile_end).
        std::atomic<uint64_t> held{0};
    };

    // The inner submit's function: runs a batch in order, then recycles it.
    static void run_batch(void* user, void* native) noexcept;

    Batch* take_batch_locked(Stream& s);  // from the pool, or new
    void cut_locked(Stream& s) noexcept;  // the filling batch joins the cut list
    // Hands every cut batch to the inner backend, oldest first.
    lapse_status hand_over(Stream& s, lapse_error* error);
    // Cuts the queue and hands it over.
    lapse_status flush(Stream& s, lapse_error* error);
    // Remembers that a window closed with `ops` still queued on its stream.
    void mark_queued(lapse_token token, uint64_t ops) noexcept;
    // Flags the final durations of marked windows WORK_QUEUED.
    void apply_marks(const lapse_token* tokens, lapse_duration* out, uint32_t count) noexcept;

    uint32_t max_batch_;
    std::unique_ptr<Stream[]> streams_;
    QueuedMarks marks_;
    std::atomic<bool> mark_lost_{false};
};

}  // namespace lapse::fusion
