// lapse SDK (C++) — sleeping on a 32-bit word and waking its sleeper: the
// raw futex, for a plugin's own waits. Not an interface of its own
// (machinery, like record_pool.hpp).
//
// Exactly one syscall per call, with no waiter bookkeeping of its own.
// That is why the shipped plugins use it rather than std::atomic::wait:
// libstdc++'s notify first reads a waiter count of its own, so a waker
// whose store to the word is not fenced (the Vulkan stream lock's unlock)
// could skip the wake. The cpu plugin's worker sleeps on it when its queue
// is empty (and dozes on it, timed, through a burst of markers); the Vulkan
// stream lock's waiters sleep on it.
#pragma once

#include <atomic>
#include <cstdint>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#else
#include <chrono>
#include <thread>
#endif

namespace lapse::sdk::detail {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex needs a plain 32-bit word");

// Sleeps while `word` holds `expected` (returns at once otherwise, and may
// return spuriously: callers re-check).
inline void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) noexcept
{
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
#else
    word.wait(expected, std::memory_order_acquire);
#endif
}

// The same, for at most `timeout_ns` (then it returns; also spuriously,
// and at once when `word` no longer holds `expected`). The kernel may
// sleep a little longer: the thread's timer slack (prctl PR_SET_TIMERSLACK).
inline void futex_wait_for(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeout_ns) noexcept
{
#if defined(__linux__)
    const timespec timeout{static_cast<time_t>(timeout_ns / 1000000000), static_cast<long>(timeout_ns % 1000000000)};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, &timeout, nullptr, 0);
#else
    // No timed wait on the word here: a sleep a waker cannot cut short.
    if (word.load(std::memory_order_acquire) == expected)
        std::this_thread::sleep_for(std::chrono::nanoseconds(timeout_ns));
#endif
}

// Wakes one thread sleeping on `word`.
inline void futex_wake_one(std::atomic<uint32_t>& word) noexcept
{
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
#else
    word.notify_one();
#endif
}

}  // namespace lapse::sdk::detail
