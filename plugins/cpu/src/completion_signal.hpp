// cpu plugin — lets resolve() sleep until a worker stamps an end marker.
//
// Resolvers announce themselves in `waiters_`; a worker that stamped an end
// marker takes the mutex and notifies only when someone waits, so the common
// case (nobody resolving with a timeout) costs the worker one load. A lone
// resolver also names the window it is blocked on (`awaited_`), and the
// worker notifies only for that one: a batch resolved right after closing
// wakes its resolver once per window it blocks on, not once per end marker.
// The resolver re-polls at least every millisecond as a safety net, so even
// a wake-up lost to a memory-model corner (or to a second resolver's
// arrival) could only delay an answer, never hang it.
#pragma once

#include <lapse/sdk/deadline.hpp>

#include <algorithm>
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

    // [worker] After the end marker of the window whose record is `key`
    // (its id's low word: the marker carries no generation) was stamped.
    void notify(uint64_t key) noexcept
    {
        if (waiters_.load(std::memory_order_seq_cst) == 0) return;
        const uint64_t awaited = awaited_.load(std::memory_order_seq_cst);
        if (awaited != kAnyWindow && static_cast<uint32_t>(awaited) != key) return;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ++epoch_;
        }
        cv_.notify_all();
    }

    // [worker] Whether a resolver waits: the worker then stamps end markers
    // as soon as it finds them, and does not doze. seq_cst: a worker that
    // announced a doze and then reads no waiter is seen dozing by the
    // resolver's hurry (wait()).
    bool has_waiters() const noexcept { return waiters_.load(std::memory_order_seq_cst) != 0; }

    // [resolver] Calls poll() (true = done) until it says done or `deadline`
    // passes (never, when it waits forever). Returns poll's last answer.
    // blocked_on() names the window the last poll stopped at (its end
    // marker is what to wake for).
    //
    // hurry() wakes the workers dozing through a burst of markers: called
    // before the first poll, and again once the resolver is registered (a
    // worker that announced its doze before that is woken; one that
    // announces it after sees the resolver and does not doze).
    template <class Poll, class BlockedOn, class Hurry>
    bool wait(Poll&& poll, BlockedOn&& blocked_on, Hurry&& hurry, const sdk::Deadline& deadline)
    {
        hurry();
        // An end marker usually lands within microseconds of profile_end:
        // a short spin answers that without a sleep and a wake-up.
        for (int i = 0; i < 32; ++i) {
            if (poll()) return true;
            if (deadline.expired()) return false;
            std::this_thread::yield();
        }
        // seq_cst RMW here, seq_cst load of the record word in poll (take),
        // seq_cst RMW of the word then seq_cst load of waiters_ in the
        // worker: one of the two sides sees the other.
        waiters_.fetch_add(1, std::memory_order_seq_cst);
        hurry();
        std::unique_lock<std::mutex> lock(mutex_);
        bool done = false;
        for (;;) {
            const uint64_t seen = epoch_;
            lock.unlock();
            // The window is named before the poll that finds it pending, so
            // a worker that stamps it after the poll looked sees the name
            // (seq_cst store, then the poll's seq_cst load of the record;
            // the worker's seq_cst release of the record, then its seq_cst
            // load of awaited_). A poll that moved on to another window
            // names that one and polls again.
            uint64_t named = kAnyWindow;
            do {
                named = waiters_.load(std::memory_order_seq_cst) == 1 ? blocked_on() : kAnyWindow;
                awaited_.store(named, std::memory_order_seq_cst);
                done = poll();
            } while (!done && named != kAnyWindow && blocked_on() != named);
            lock.lock();
            if (done) break;
            const clock::duration left = deadline.remaining();
            if (left == clock::duration::zero()) break;
            cv_.wait_for(lock, std::min<clock::duration>(left, std::chrono::milliseconds(1)),
                         [&] { return epoch_ != seen; });
        }
        lock.unlock();
        waiters_.fetch_sub(1, std::memory_order_relaxed);
        return done;
    }

private:
    static constexpr uint64_t kAnyWindow = 0;  // token ids are never 0

    alignas(64) std::atomic<uint32_t> waiters_{0};
    std::atomic<uint64_t> awaited_{kAnyWindow};
    std::mutex mutex_;
    std::condition_variable cv_;
    uint64_t epoch_ = 0;  // guarded by mutex_
};

}  // namespace lapse::cpu
