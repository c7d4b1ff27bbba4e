// cpu plugin — lets resolve() sleep until a worker stamps an end marker.
//
// Resolvers announce themselves in `waiters_`; a worker that stamped an end
// marker takes the mutex and notifies only when someone waits, so the common
// case (nobody resolving with a timeout) costs the worker one load. The
// resolver re-polls at least every millisecond as a safety net, so even a
// wake-up lost to a memory-model corner could only delay an answer, never
// hang it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace lapse::cpu {

class CompletionSignal {
public:
    using clock = std::chrono::steady_clock;

    // [worker] After a window's end marker was stamped.
    void notify() noexcept
    {
        if (waiters_.load(std::memory_order_seq_cst) == 0) return;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ++epoch_;
        }
        cv_.notify_all();
    }

    // [resolver] Calls poll() (true = done) until it says done or `deadline`
    // passes (never, when `forever`). Returns poll's last answer.
    template <class Poll>
    bool wait(Poll&& poll, clock::time_point deadline, bool forever)
    {
        // An end marker usually lands within microseconds of profile_end:
        // a short spin answers that without a sleep and a wake-up.
        for (int i = 0; i < 32; ++i) {
            if (poll()) return true;
            if (!forever && clock::now() >= deadline) return false;
            std::this_thread::yield();
        }
        // seq_cst RMW here, seq_cst load of the record word in poll (take),
        // seq_cst RMW of the word then seq_cst load of waiters_ in the
        // worker: one of the two sides sees the other.
        waiters_.fetch_add(1, std::memory_order_seq_cst);
        std::unique_lock<std::mutex> lock(mutex_);
        bool done = false;
        for (;;) {
            const uint64_t seen = epoch_;
            lock.unlock();
            done = poll();
            lock.lock();
            if (done) break;
            const clock::time_point now = clock::now();
            if (!forever && now >= deadline) break;
            clock::time_point until = now + std::chrono::milliseconds(1);
            if (!forever && deadline < until) until = deadline;
            cv_.wait_until(lock, until, [&] { return epoch_ != seen; });
        }
        lock.unlock();
        waiters_.fetch_sub(1, std::memory_order_relaxed);
        return done;
    }

private:
    alignas(64) std::atomic<uint32_t> waiters_{0};
    std::mutex mutex_;
    std::condition_variable cv_;
    uint64_t epoch_ = 0;  // guarded by mutex_
};

}  // namespace lapse::cpu
