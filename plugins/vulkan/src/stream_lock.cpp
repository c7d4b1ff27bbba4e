#include "stream_lock.hpp"

// The raw futex, not std::atomic::wait/notify: an unlock's store is not
// fenced, and libstdc++'s notify reads a waiter count of its own first
// (lapse/sdk/detail/futex.hpp).
#include <lapse/sdk/detail/futex.hpp>

#include <thread>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace lapse::vulkan {

namespace {

// How often a thread that finds the lock held tries again before it sleeps:
// 64 pauses, 1-3 us on current x86 cores, about what a holder recording a
// command or two takes.
constexpr int kSpins = 64;

void pause() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#if defined(__linux__)
// Registers the process for expedited private membarriers, once: true when
// the kernel offers and accepted it.
bool process_barrier_registered() noexcept
{
    static const bool registered = [] {
        const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
        if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
        return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    }();
    return registered;
}

// A full barrier on every running thread of the process; false if the
// kernel refused it.
bool process_barrier() noexcept { return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0; }
#else
bool process_barrier_registered() noexcept { return false; }
bool process_barrier() noexcept { return false; }
#endif

}  // namespace

StreamLock::StreamLock() noexcept : barrier_by_waiter_(process_barrier_registered()) {}

void StreamLock::lock_contended() noexcept
{
    for (int i = 0; i < kSpins; ++i) {
        pause();
        if (try_lock()) return;
    }
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    // After this, every unlock either has its store visible here or sees
    // the waiter (see the header). Without it a sleep could miss its wake,
    // so a thread whose barrier failed yields instead of sleeping.
    const bool may_sleep = !barrier_by_waiter_ || process_barrier();
    while (word_.exchange(kHeld, std::memory_order_acquire) != kFree) {
        if (may_sleep)
            sdk::detail::futex_wait(word_, kHeld);
        else
            std::this_thread::yield();
    }
    waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void StreamLock::wake_one() noexcept { sdk::detail::futex_wake_one(word_); }

}  // namespace lapse::vulkan
