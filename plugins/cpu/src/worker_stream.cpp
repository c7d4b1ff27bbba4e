#include "worker_stream.hpp"

#include <lapse/sdk/detail/futex.hpp>
#include <lapse/sdk/host.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <pthread.h>
#include <string>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace lapse::cpu {

namespace {

inline void cpu_relax() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Between two looks at an empty queue: 64 pause instructions, about
// 1-3 µs where a pause takes 15-45 ns (Zen, Skylake and later; older cores
// pause for far less). Each look at the next cell takes its cache line
// from the producer writing it, and the markers taken then touch the
// records the producer is still writing: a worker that polls after every
// pause keeps a producer on another core waiting for its own lines, and
// costs it more than the markers do (the figures: docs/performance.md).
constexpr uint32_t kPausesPerPoll = 64;
// About 10-40 µs of spinning in all, then a few yields: long enough to
// bridge the gaps of a hot loop of windows, short enough not to eat a core
// that another engineer's process (or the producer itself) needs.
constexpr uint32_t kSpinPolls = 512 / kPausesPerPoll;
constexpr uint32_t kYieldRounds = 16;
// Between two looks while a producer pushes markers faster than the worker
// polls (pop_markers held some back): 512 pauses, about 10-20 µs where a
// pause takes 20-40 ns. The worker then takes markers in runs of hundreds,
// each run costing the producer one line of cells read from under it, not
// one per poll. No yield here: with two callers on one stream, a worker
// yielding on every look halved their throughput (docs/performance.md).
constexpr uint32_t kPausesWhileHeld = 512;

// The longest sleep of a worker whose asymmetric fence was refused
// (asymmetric_fence::heavy).
constexpr int64_t kUnfencedSleepNs = 1'000'000;

// Markers stamped with one clock reading at most.
constexpr uint32_t kMarkersPerRun = 256;


// The stream whose worker runs on this thread, if any.
thread_local const WorkerStream* t_current_stream = nullptr;

}  // namespace

bool WorkerStream::is_current_thread() const noexcept { return t_current_stream == this; }

WorkerStream::WorkerStream(uint32_t index, std::size_t queue_capacity, bool lanes, const StampClock& clock,
                           CpuWindowTable& windows, CompletionSignal& completions, sdk::Host host)
    : index_(index),
      clock_(clock),
      windows_(windows),
      completions_(completions),
      host_(host),
      queue_(queue_capacity),
      lanes_(queue_capacity, lanes)
{
    deferred_ends_.reserve(kMarkersPerRun);
    thread_ = std::thread([this] { run(); });
    char name[16];
    std::snprintf(name, sizeof name, "lapse-cpu-%u", index_);
    pthread_setname_np(thread_.native_handle(), name);
}

WorkerStream::~WorkerStream()
{
    stopping_.store(true, std::memory_order_seq_cst);
    wake();
    if (thread_.joinable()) thread_.join();
}

void WorkerStream::wake() noexcept
{
    // Only the producer that flips the flag pays the syscall.
    if (sleeping_.exchange(0, std::memory_order_seq_cst) != 0) sdk::detail::futex_wake_one(sleeping_);
}

bool WorkerStream::mark(uint32_t kind, uint32_t key) noexcept
{
    if (MarkerLane* lane = lanes_.claim(); lane != nullptr && lane->enter()) {
        const bool pushed = lane->try_push(MpscQueue::marker_cell(kind, key), queue_.tail_position());
        lane->leave();
        if (pushed) return true;
    }
    return queue_.push_marker(kind, key);
}

void WorkerStream::stamp_lanes_before(uint64_t position, uint32_t* markers) noexcept
{
    for (;;) {
        bool held = false;
        const uint32_t n = lanes_.take(markers, kMarkersPerRun, position, false, held);
        if (n == 0) return;
        stamp(markers, n);
        cells_taken_ += n;
    }
}

bool WorkerStream::run_next_entry(uint32_t* markers, bool& after_work) noexcept
{
    QueueEntry entry;
    const uint64_t position = queue_.head_position();
    if (!queue_.pop(entry)) return false;
    // Taken after the entry: a lane marker pushed before the entry was is
    // visible now.
    stamp_lanes_before(position, markers);
    execute(entry);
    after_work = entry.kind == MpscQueue::kWork;
    return true;
}

void WorkerStream::run() noexcept
{
    t_current_stream = this;
#if defined(__linux__)
    // Dozes end when asked, not up to 50 µs later (the default slack).
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
    uint32_t idle = 0;
    uint32_t markers[kMarkersPerRun];
    // Right after work, the markers behind it are stamped at once: an end
    // marker waiting there is the end of that work. Otherwise the worker
    // leaves a producer the line it is writing, unless a resolver waits.
    bool after_work = false;
    for (;;) {
        bool queue_held = false;
        const bool spare_producer = !after_work && !completions_.has_waiters();
        uint32_t n = queue_.pop_markers(markers, kMarkersPerRun, spare_producer, queue_held);
        // The lanes' markers queued before the queue's next entry: no work
        // runs between them and those just taken, so one reading stamps
        // them all.
        bool lanes_held = false;
        n += lanes_.take(markers + n, kMarkersPerRun - n, queue_.head_position(), spare_producer, lanes_held);
        if (n != 0) {
            stamp(markers, n);
            cells_taken_ += n;
            after_work = false;
            idle = 0;
        }
        if (queue_held || lanes_held) {
            // Work or a fence queued behind the lane markers does not wait
            // for their producer to stop.
            if (!queue_held && run_next_entry(markers, after_work)) {
                idle = 0;
                continue;
            }
            // The producer is still writing: look again later (it has
            // stopped if the line has not moved by then).
            const int64_t from = sdk::monotonic_ns();
            const int64_t doze_ns = doze_.on_pushing(from, cells_taken_, queue_.ring_cells());
            if (doze_ns == 0) {
                for (uint32_t i = 0; i < kPausesWhileHeld; ++i) cpu_relax();
                continue;
            }
            // Announced before the look at the resolvers, as hurry() reads
            // the announcement after a resolver registers (both seq_cst).
            sleeping_.store(kDozing, std::memory_order_seq_cst);
            if (completions_.has_waiters() || stopping_.load(std::memory_order_seq_cst)) {
                sleeping_.store(kAwake, std::memory_order_relaxed);
                continue;
            }
            sdk::detail::futex_wait_for(sleeping_, kDozing, doze_ns);
            const bool hurried = sleeping_.exchange(kAwake, std::memory_order_seq_cst) != kDozing;
            doze_.on_woke(from, doze_ns, sdk::monotonic_ns(), hurried);
            continue;
        }
        if (n != 0) continue;
        if (run_next_entry(markers, after_work)) {
            idle = 0;
            continue;
        }
        after_work = false;
        // close() stops a device only after every other call returned, so
        // an empty queue with stopping set stays empty.
        if (stopping_.load(std::memory_order_acquire) && !queue_.has_claims() && !lanes_.has_cells()) return;
        ++idle;
        if (idle < kSpinPolls) {
            for (uint32_t i = 0; i < kPausesPerPoll; ++i) cpu_relax();
            continue;
        }
        if (idle < kSpinPolls + kYieldRounds) {
            std::this_thread::yield();
            continue;
        }
        sleeping_.store(kAsleep, std::memory_order_seq_cst);
        // A producer pushing into its lane checks for the announcement
        // with a plain load (needs_wake()): this fence is both sides'.
        const bool fenced = !lanes_.enabled() || asymmetric_fence::heavy();
        if (queue_.has_claims() || lanes_.has_cells() || stopping_.load(std::memory_order_seq_cst)) {
            sleeping_.store(kAwake, std::memory_order_relaxed);
            continue;  // a producer is writing its entry: keep spinning
        }
        // Unfenced, a producer may have missed the announcement: the
        // worker looks again after kUnfencedSleepNs, which bounds how late
        // that producer's marker is stamped.
        if (fenced)
            sdk::detail::futex_wait(sleeping_, kAsleep);
        else
            sdk::detail::futex_wait_for(sleeping_, kAsleep, kUnfencedSleepNs);
        sleeping_.store(kAwake, std::memory_order_relaxed);
        idle = 0;
    }
}

void WorkerStream::stamp(const uint32_t* markers, uint32_t count) noexcept
{
    // One reading for the run. The stream did no work between these
    // markers, and every one of them was queued before the reading (see
    // pop_markers): this is when the stream reached each of them, as a
    // device timestamp written after the work before it completes. Reading
    // the clock once per marker would stamp the worker's own bookkeeping.
    const int64_t now = clock_.now();
    const uint32_t failures = failures_ & kFailureCount;
    // The run's holds are dropped under the stream's take lock where it is
    // free: a plain store a window instead of a locked operation, which
    // was most of this thread's time (the record's line comes from the
    // caller's core, and a locked operation waits for it). A lone marker
    // (popped after work) takes the one locked operation instead.
    CpuWindowTable::ReleaseRun releases;
    if (count > 1) windows_.begin_releases(releases, index_);
    for (uint32_t i = 0; i < count; ++i) {
        const uint64_t key = MpscQueue::marker_key(markers[i]);
        CpuWindow& w = windows_.payload(key);
        if (MpscQueue::marker_kind(markers[i]) == MpscQueue::kStart) {
            // Its end marker right behind it (a window around nothing): both
            // stamped, both holds dropped with one atomic operation.
            const bool ends_here =
                i + 1 < count && markers[i + 1] == MpscQueue::marker_cell(MpscQueue::kEnd, MpscQueue::marker_key(markers[i]));
            w.failures.store(failures, std::memory_order_relaxed);
            w.end_ns.store(ends_here ? now : 0, std::memory_order_relaxed);  // 0: "not stamped", until the end marker is
            w.start_ns.store(now, std::memory_order_relaxed);
            if (!ends_here) {
                windows_.release(key, 1, releases);
                continue;
            }
            ++i;
            windows_.release(key, 2, releases);
        } else if (windows_.holds(key) == kStartAndEndHeld) [[unlikely]] {
            // Its start marker is still in another thread's lane (the
            // window was opened on one thread and closed on another): the
            // end waits for it, and is stamped in the same run as it or
            // later (the window then reads the time between the two runs).
            defer_end(key);
        } else {
            stamp_end(w, now, failures);
            windows_.release(key, 1, releases);
        }
    }
    // Ends whose start this run or an earlier one stamped: moved behind the
    // ones still waiting, stamped, and dropped once notified.
    const auto late = std::partition(deferred_ends_.begin(), deferred_ends_.end(),
                                     [&](uint32_t key) { return windows_.holds(key) == kStartAndEndHeld; });
    for (auto it = late; it != deferred_ends_.end(); ++it) {
        stamp_end(windows_.payload(*it), now, failures);
        windows_.release(*it, 1, releases);
    }
    windows_.end_releases(releases);
    // After the fence: a resolver waiting for one of these windows either
    // saw it released or is seen waiting here (an end still deferred is
    // looked up for nothing).
    if (completions_.has_waiters()) {
        for (uint32_t i = 0; i < count; ++i)
            if (MpscQueue::marker_kind(markers[i]) == MpscQueue::kEnd) completions_.notify(MpscQueue::marker_key(markers[i]));
        for (auto it = late; it != deferred_ends_.end(); ++it) completions_.notify(*it);
    }
    deferred_ends_.erase(late, deferred_ends_.end());
}

void WorkerStream::stamp_end(CpuWindow& w, int64_t now, uint32_t failures) noexcept
{
    w.end_ns.store(now, std::memory_order_relaxed);
    const uint32_t at_start = w.failures.load(std::memory_order_relaxed);
    if (at_start != failures) w.failures.store(at_start | kWorkFailed, std::memory_order_relaxed);
}

void WorkerStream::defer_end(uint32_t key) noexcept
{
    try {
        deferred_ends_.push_back(key);
    } catch (...) {
        // Out of memory: stamped now, the window resolves NOT_MEASURED when
        // its start marker (which sets end_ns to "not stamped") comes next.
        windows_.release(key, 1);
    }
}

void WorkerStream::execute(const QueueEntry& entry) noexcept
{
    switch (entry.kind) {
    case MpscQueue::kWork: {
        auto fn = reinterpret_cast<lapse_work_fn>(entry.a);
        try {
            fn(reinterpret_cast<void*>(entry.b), nullptr);
        } catch (const std::exception& e) {
            // The worker must survive a throwing job; the windows around it
            // must not read as a fast measurement (errors poison).
            ++failures_;
            host_.error("stream " + std::to_string(index_) + ": submitted work threw: " + e.what() +
                        "; the windows open around it will resolve as failed");
        } catch (...) {
            ++failures_;
            host_.error("stream " + std::to_string(index_) +
                        ": submitted work threw a non-standard exception; the windows open around it will "
                        "resolve as failed");
        }
        break;
    }
    case MpscQueue::kStart:
    case MpscQueue::kEnd: {
        const uint32_t cell = MpscQueue::marker_cell(entry.kind, static_cast<uint32_t>(entry.a));
        stamp(&cell, 1);
        break;
    }
    case MpscQueue::kFence:
        reinterpret_cast<SyncFence*>(entry.a)->arrive();
        break;
    default:
        break;
    }
}

}  // namespace lapse::cpu
