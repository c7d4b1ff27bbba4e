#include "worker_stream.hpp"

#include <lapse/sdk/detail/futex.hpp>
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
    if (sleeping_.exchange(0, std::memory_order_seq_cst) != 0) sdk::detail::futex_wake_one(sleeping_);
}

void WorkerStream::run() noexcept
{
    t_current_stream = this;
    uint32_t idle = 0;
    QueueEntry entry;
    for (;;) {
        if (queue_.pop(entry)) {
            execute(entry);
            idle = 0;
            continue;
        }
        // close() stops a device only after every other call returned, so
        // an empty queue with stopping set stays empty.
        if (stopping_.load(std::memory_order_acquire) && !queue_.has_claims()) return;
        ++idle;
        if (idle < kSpinPolls) {
            for (uint32_t i = 0; i < kPausesPerPoll; ++i) cpu_relax();
            continue;
        }
        if (idle < kSpinPolls + kYieldRounds) {
            std::this_thread::yield();
            continue;
        }
        sleeping_.store(1, std::memory_order_seq_cst);
        if (queue_.has_claims() || stopping_.load(std::memory_order_seq_cst)) {
            sleeping_.store(0, std::memory_order_relaxed);
            continue;  // a producer is writing its entry: keep spinning
        }
        sdk::detail::futex_wait(sleeping_, 1);
        sleeping_.store(0, std::memory_order_relaxed);
        idle = 0;
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
    case MpscQueue::kStart: {
        CpuWindow& w = windows_.payload(entry.a);
        w.failures.store(failures_ & kFailureCount, std::memory_order_relaxed);
        w.end_ns.store(0, std::memory_order_relaxed);  // "not stamped", until the end marker is
        w.start_ns.store(clock_.now(), std::memory_order_relaxed);
        windows_.release(entry.a);
        break;
    }
    case MpscQueue::kEnd: {
        const int64_t now = clock_.now();
        CpuWindow& w = windows_.payload(entry.a);
        w.end_ns.store(now, std::memory_order_relaxed);
        const uint32_t at_start = w.failures.load(std::memory_order_relaxed);
        if (at_start != (failures_ & kFailureCount)) w.failures.store(at_start | kWorkFailed, std::memory_order_relaxed);
        windows_.release(entry.a);
        completions_.notify(entry.a);
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
