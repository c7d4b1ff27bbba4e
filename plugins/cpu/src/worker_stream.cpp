#include "worker_stream.hpp"

#include "futex.hpp"

#include <lapse/sdk/host.hpp>

#include <cstdio>
#include <exception>
#include <pthread.h>
#include <string>

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

// Polling after the queue ran dry: intervals doubling up to kMaxPace
// pauses, about 512 pauses (10-40 µs) in all, then a few yields: long
// enough to bridge the gaps of a hot loop of windows, short enough not to
// eat a core that another process (or the producer itself) needs.
constexpr uint32_t kMaxPace = 64;
constexpr uint32_t kSpinPauses = 512;
constexpr uint32_t kYieldRounds = 16;

// The stream whose worker runs on this thread, if any.
thread_local const WorkerStream* t_current_stream = nullptr;

}  // namespace

bool WorkerStream::is_current_thread() const noexcept { return t_current_stream == this; }

WorkerStream::WorkerStream(uint32_t index, std::size_t queue_capacity, const StampClock& clock,
                           CpuWindowTable& windows, CompletionSignal& completions, sdk::Host host)
    : index_(index), clock_(clock), windows_(windows), completions_(completions), host_(host), queue_(queue_capacity)
{
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
    if (sleeping_.exchange(0, std::memory_order_seq_cst) != 0) futex_wake_one(sleeping_);
}

void WorkerStream::run() noexcept
{
    t_current_stream = this;
    do drain();
    while (idle());
}

void WorkerStream::drain() noexcept
{
    QueueEntry entry;
    for (;;) {
        uint32_t n = queue_.pop_markers(batch_, kBatch);
        if (n == 0) {
            if (!queue_.pop(entry)) return;
            if (entry.kind != MpscQueue::kStart && entry.kind != MpscQueue::kEnd) {
                // The markers before it were stamped: pop_markers() stops
                // at a wide entry.
                execute_wide(entry);
                continue;
            }
            // A marker pop() found: the first of a new segment, or one
            // written since pop_markers() looked.
            batch_[0] = static_cast<uint32_t>(entry.a << 2 | entry.kind);
            n = 1;
        }
        stamp(n);
    }
}

bool WorkerStream::idle() noexcept
{
    uint32_t pace = 1;
    uint32_t paused = 0;
    uint32_t yields = 0;
    for (;;) {
        // Pause first: a claim whose cell is still being written sends the
        // worker back here at once, and its producer may be preempted.
        if (paused < kSpinPauses) {
            for (uint32_t i = 0; i < pace; ++i) cpu_relax();
            paused += pace;
            if (pace < kMaxPace) pace *= 2;
        } else if (yields < kYieldRounds) {
            std::this_thread::yield();
            ++yields;
        } else {
            sleeping_.store(1, std::memory_order_seq_cst);
            // A claim (a producer still writing its entry) or close():
            // stay awake. Otherwise a producer that claims after this
            // check sees the announcement and wakes us.
            if (!queue_.has_claims() && !stopping_.load(std::memory_order_seq_cst)) futex_wait(sleeping_, 1);
            sleeping_.store(0, std::memory_order_relaxed);
            pace = 1;
            paused = 0;
            yields = 0;
        }
        // The tail, not the next cell: the producers write that cell's
        // cache line, and every read of it would take the line from them.
        if (queue_.has_claims()) return true;
        // close() stops a device only after every other call returned, so
        // an empty queue with stopping set stays empty.
        if (stopping_.load(std::memory_order_acquire)) return false;
    }
}

void WorkerStream::stamp(uint32_t n) noexcept
{
    // After the markers were popped: each was queued before this reading.
    const int64_t now = clock_.now();
    for (uint32_t i = 0; i < n; ++i) {
        const uint64_t key = MpscQueue::marker_key(batch_[i]);
        CpuWindow& w = windows_.payload(key);
        if (MpscQueue::marker_kind(batch_[i]) == MpscQueue::kStart) {
            w.failures.store(failures_ & kFailureCount, std::memory_order_relaxed);
            w.start_ns.store(now, std::memory_order_relaxed);
            if (i + 1 < n && batch_[i + 1] == (batch_[i] ^ MpscQueue::kStart ^ MpscQueue::kEnd)) {
                // Its end marker right behind it: no work between them, the
                // same reading, and one locked release for both holds.
                w.end_ns.store(now, std::memory_order_relaxed);
                windows_.release(key, 2);
                completions_.notify(key);
                ++i;
                continue;
            }
            w.end_ns.store(0, std::memory_order_relaxed);  // "not stamped", until the end marker is
            windows_.release(key);
        } else {
            w.end_ns.store(now, std::memory_order_relaxed);
            const uint32_t at_start = w.failures.load(std::memory_order_relaxed);
            if (at_start != (failures_ & kFailureCount))
                w.failures.store(at_start | kWorkFailed, std::memory_order_relaxed);
            windows_.release(key);
            completions_.notify(key);
        }
    }
}

void WorkerStream::execute_wide(const QueueEntry& entry) noexcept
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
    case MpscQueue::kFence:
        reinterpret_cast<SyncFence*>(entry.a)->arrive();
        break;
    default:
        break;
    }
}

}  // namespace lapse::cpu
