// vulkan plugin — the lock of one stream: a mutex whose uncontended lock
// and unlock take one locked instruction between them, not two.
//
// profile_start and profile_end each record into the stream's command
// buffer under this lock, so what it costs uncontended is paid twice per
// window. std::mutex (glibc) locks with one locked instruction and unlocks
// with another, because an unlock must learn atomically whether a thread
// sleeps on the mutex. Here unlock is a release store of "free" and then a
// plain load of the waiter count. That pair needs a StoreLoad barrier, and
// the thread about to sleep supplies it instead of every unlock: it counts
// itself a waiter, then calls membarrier(2) (MEMBARRIER_CMD_PRIVATE_EXPEDITED),
// which runs a full barrier on every thread of the process. After that call
// either the unlocking thread's store is visible to the waiter, or the
// unlocking thread's load sees the waiter and wakes it. A kernel without
// the expedited command (older than 4.14, or a sandbox that refuses it)
// makes unlock pay the barrier itself, as std::mutex would.
//
// A stream is usually driven by one thread; a second one that finds the
// lock held spins briefly (the holder is recording a command or two), then
// sleeps until woken: a holder may keep it across a vkQueueSubmit or a
// blocking query read.
//
// BasicLockable (std::unique_lock, std::lock_guard and
// std::condition_variable_any take it). Not recursive.
// Thread safety: [thread-safe].
#pragma once

#include <atomic>
#include <cstdint>

namespace lapse::vulkan {

class StreamLock {
public:
    StreamLock() noexcept;
    StreamLock(const StreamLock&) = delete;
    StreamLock& operator=(const StreamLock&) = delete;

    // [any thread] Blocks until the calling thread holds the lock.
    void lock() noexcept
    {
        if (word_.exchange(kHeld, std::memory_order_acquire) != kFree) [[unlikely]]
            lock_contended();
    }

    // [any thread] Takes the lock if it is free; never blocks.
    bool try_lock() noexcept
    {
        return word_.load(std::memory_order_relaxed) == kFree &&
               word_.exchange(kHeld, std::memory_order_acquire) == kFree;
    }

    // [the holder] Releases the lock, waking a sleeper if there is one.
    void unlock() noexcept
    {
        word_.store(kFree, std::memory_order_release);
        if (barrier_by_waiter_)
            std::atomic_signal_fence(std::memory_order_seq_cst);  // keep the load below the store
        else
            waiters_.fetch_add(0, std::memory_order_seq_cst);  // the StoreLoad barrier, paid here
        if (waiters_.load(std::memory_order_relaxed) != 0) [[unlikely]]
            wake_one();
    }

private:
    static constexpr uint32_t kFree = 0, kHeld = 1;

    [[gnu::noinline]] void lock_contended() noexcept;
    [[gnu::noinline]] void wake_one() noexcept;

    std::atomic<uint32_t> word_{kFree};
    std::atomic<uint32_t> waiters_{0};  // threads between "I will sleep" and holding the lock
    const bool barrier_by_waiter_;      // the process may use MEMBARRIER_CMD_PRIVATE_EXPEDITED
};

}  // namespace lapse::vulkan
