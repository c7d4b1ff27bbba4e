// cpu plugin — one stream: a worker thread draining an in-order queue.
//
// The queue carries work, window markers and sync fences in the order they
// were pushed; each producer thread's lane (MarkerLane) carries its own
// markers, each to be stamped before the queue entry it was pushed ahead
// of. The worker runs work, stamps each marker (StampClock: the TSC, or
// CLOCK_MONOTONIC) when it reaches it (so the caller of profile_start / profile_end never
// waits and never reads a clock), and signals fences.
//
// Markers the worker finds queued back to back, with no work between them,
// share one clock reading taken after it took them: the stream reached them
// all at that moment, as a device timestamp is written once the work before
// it completes, and a window around none of the stream's work reads 0.
// Reading the clock per marker would stamp the worker's own bookkeeping.
//
// Idle policy: after the queue runs dry the worker spins a little (a burst
// of windows usually continues), yields a little, then announces it sleeps
// and sleeps on a futex. A producer pays a wake-up syscall only when it
// finds that announcement, never while the worker is awake. While it spins
// it looks at the queue about once a microsecond, not continuously: a
// worker polling right behind its producer pulls the queue's cell line and
// each new window's record away from the producer on every marker, and the
// producer then waits for them back (worker_stream.cpp). For the same
// reason, while a producer pushes markers faster than that, the worker
// takes only the cells four lines behind the one being written, then waits
// 10-20 µs (MpscQueue::pop_markers), or, once it knows the rate markers
// arrive at, dozes on a timed futex wait instead, for as long as the
// producer takes to fill half the ring (at most 0.5 ms: DozePolicy); work,
// a fence or a resolver that waits ends a doze at once (a marker does
// not). It takes the rest once they stop moving, or at once when the last
// thing it ran was work (an end marker there is the end of that work) or a
// resolver waits. So a marker that reaches an idle stream is stamped at
// most a poll later, one queued during or right after a burst of markers at
// most two such waits later, which is when the stream reaches it: the work
// queued after it starts no sooner.
#pragma once

#include "asymmetric_fence.hpp"
#include "completion_signal.hpp"
#include "cpu_window.hpp"
#include "doze_policy.hpp"
#include "marker_lane.hpp"
#include "mpsc_queue.hpp"
#include "stamp_clock.hpp"
#include "sync_fence.hpp"

#include <lapse/lapse.h>
#include <lapse/sdk/host.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace lapse::cpu {

class WorkerStream {
public:
    // Starts the worker thread. Throws when the thread cannot start.
    // `lanes`: markers go through each producer thread's own lane
    // (MarkerLane) where the process allows it.
    WorkerStream(uint32_t index, std::size_t queue_capacity, bool lanes, const StampClock& clock, CpuWindowTable& windows,
                 CompletionSignal& completions, sdk::Host host);
    // Runs everything still queued, then joins.
    ~WorkerStream();
    WorkerStream(const WorkerStream&) = delete;
    WorkerStream& operator=(const WorkerStream&) = delete;

    // [thread-safe] Each returns false only when the queue could not grow
    // (out of memory); then nothing was queued.
    bool submit(lapse_work_fn fn, void* user) noexcept
    {
        return woken(queue_.push_wide(MpscQueue::kWork, reinterpret_cast<uint64_t>(fn), reinterpret_cast<uint64_t>(user)));
    }
    bool mark_start(uint64_t id) noexcept { return marked(mark(MpscQueue::kStart, key_of(id))); }
    bool mark_end(uint64_t id) noexcept { return marked(mark(MpscQueue::kEnd, key_of(id))); }

    // [thread-safe] The window path's common case, split so that its caller
    // makes no call unless it must: lane() is the calling thread's lane
    // (nullptr: lanes are off, or it has none yet and mark_* gives it one),
    // try_mark_* queues the marker there (the caller inside the lane:
    // MarkerLane::enter), or try_queue_* in the queue where lanes are off,
    // when there is room (false: nothing queued, use mark_*), and
    // needs_wake() says whether the worker announced it sleeps (then
    // wake() it).
    [[gnu::always_inline]] MarkerLane* lane() const noexcept { return lanes_.find(); }
    bool lanes_enabled() const noexcept { return lanes_.enabled(); }
    [[gnu::always_inline]] bool try_queue_start(uint64_t id) noexcept { return queue_.try_push_marker(MpscQueue::kStart, key_of(id)); }
    [[gnu::always_inline]] bool try_queue_end(uint64_t id) noexcept { return queue_.try_push_marker(MpscQueue::kEnd, key_of(id)); }
    [[gnu::always_inline]] bool try_mark_start(MarkerLane& lane, uint64_t id) noexcept
    {
        return lane.try_push(MpscQueue::marker_cell(MpscQueue::kStart, key_of(id)), queue_.tail_position());
    }
    [[gnu::always_inline]] bool try_mark_end(MarkerLane& lane, uint64_t id) noexcept
    {
        return lane.try_push(MpscQueue::marker_cell(MpscQueue::kEnd, key_of(id)), queue_.tail_position());
    }
    // After a lane push, the worker's asymmetric fence before it sleeps
    // pairs with light() here; after a queue push, the claim's seq_cst. So
    // either the worker saw the marker before it slept, or this sees it
    // sleeping. A worker dozing through a burst of markers is not woken by
    // one more marker: its doze is timed to end before the queue fills
    // (see run(); a lane that fills first sends its markers there).
    bool needs_wake() const noexcept
    {
        asymmetric_fence::light();
        return sleeping_.load(std::memory_order_seq_cst) == kAsleep;
    }
    void wake() noexcept;
    // [any thread] Ends a doze at once: a resolver waits for the markers
    // (one that finds the worker dozing costs it its wake-up; DozePolicy).
    // seq_cst, paired with the worker's look at the resolvers after it
    // announces a doze: either it sees the resolver, or this sees it dozing.
    void hurry() noexcept
    {
        if (sleeping_.load(std::memory_order_seq_cst) == kDozing) wake();
    }
    bool fence(SyncFence& fence) noexcept
    {
        return woken(queue_.push_wide(MpscQueue::kFence, reinterpret_cast<uint64_t>(&fence), 0));
    }

    // The largest record index + 1 a marker can name: the device's table
    // holds at most this many records.
    static constexpr uint32_t max_windows = MpscQueue::max_key;

    // Cells the queue holds (memory accounting).
    std::size_t queue_cells() const noexcept { return queue_.cells_allocated() + lanes_.cells_allocated(); }

    // Whether the calling thread is this stream's worker (running its work):
    // waiting on the stream from there would wait for itself.
    bool is_current_thread() const noexcept;

private:
    // A marker names its window by the record's index + 1 (the id's low
    // word), all that the worker's table calls read: the generation stays
    // out of the queue, so a marker fits one 32-bit cell.
    static uint32_t key_of(uint64_t id) noexcept { return static_cast<uint32_t>(id); }

    // mark_*: the thread's lane, made if it has none, else the queue
    // (which grows when full).
    bool mark(uint32_t kind, uint32_t key) noexcept;

    // Work and fences wake a dozing worker too: work must not wait for a
    // doze to end. A marker wakes only a worker that sleeps (see needs_wake()).
    bool woken(bool queued) noexcept
    {
        if (!queued) [[unlikely]]
            return false;
        if (sleeping_.load(std::memory_order_seq_cst) != kAwake) wake();
        return true;
    }
    bool marked(bool queued) noexcept
    {
        if (!queued) [[unlikely]]
            return false;
        if (needs_wake()) wake();
        return true;
    }
    void run() noexcept;
    void execute(const QueueEntry& entry) noexcept;
    // Stamps the lane markers queued before the queue's entry at
    // `position`, before the worker runs it.
    void stamp_lanes_before(uint64_t position, uint32_t* markers) noexcept;
    // Takes the queue's next entry, when one is ready, and runs it (after
    // the lane markers queued before it); `after_work`: it was work.
    bool run_next_entry(uint32_t* markers, bool& after_work) noexcept;
    // Stamps a run of markers (their queue cells) with one clock reading.
    void stamp(const uint32_t* markers, uint32_t count) noexcept;
    static void stamp_end(CpuWindow& w, int64_t now, uint32_t failures) noexcept;
    // Keeps an end marker taken before its window's start marker for a
    // later run (stamp()).
    void defer_end(uint32_t key) noexcept;

    const uint32_t index_;
    const StampClock& clock_;
    CpuWindowTable& windows_;
    CompletionSignal& completions_;
    sdk::Host host_;
    MpscQueue queue_;
    MarkerLanes lanes_;
    // kAsleep: the queue ran dry, the worker sleeps (or is about to) until
    // a producer wakes it. kDozing: a producer is pushing markers faster
    // than the worker looks, and the worker sleeps for a time it chose.
    static constexpr uint32_t kAwake = 0, kAsleep = 1, kDozing = 2;
    alignas(64) std::atomic<uint32_t> sleeping_{kAwake};
    std::atomic<bool> stopping_{false};
    uint32_t failures_ = 0;  // worker only: work items that threw so far
    uint64_t cells_taken_ = 0;  // worker only: cells taken from the queue so far
    DozePolicy doze_;           // worker only
    std::vector<uint32_t> deferred_ends_;  // worker only: keys of end markers taken before their start
    std::thread thread_;     // last: starts once everything above exists
};

}  // namespace lapse::cpu
