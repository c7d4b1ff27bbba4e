// cpu plugin — sleeping on a 32-bit word and waking its sleeper.
//
// A worker with nothing to do sleeps in the kernel instead of burning a core
// on a shared machine; producers wake it only when it announced it sleeps,
// so a busy worker costs its producers no syscall. Raw futex on Linux: the
// call is exactly one syscall, with no waiter bookkeeping of its own.
#pragma once

#include <atomic>
#include <cstdint>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace lapse::cpu {

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

// Wakes one thread sleeping on `word`.
inline void futex_wake_one(std::atomic<uint32_t>& word) noexcept
{
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
#else
    word.notify_one();
#endif
}

}  // namespace lapse::cpu
