#include "stream_lock.hpp"

#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace lapse::vulkan {

namespace {

// How often a thread that finds the lock held tries again before it sleeps:
// about a microsecond, what a holder recording a command or two takes.
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

// The raw futex calls, not std::atomic::wait/notify: libstdc++'s notify
// first reads a waiter count of its own, and that read, after an unlock's
// unfenced store, could miss a sleeper the barrier above does not cover.
// A futex wake takes the kernel's lock on the word's queue, so the unlock's
// store is visible to any sleeper's check that comes after it.
void sleep_while(std::atomic<uint32_t>& word, uint32_t value) noexcept
{
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, value, nullptr, nullptr, 0);
}
void wake(std::atomic<uint32_t>& word) noexcept
{
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}
#else
bool process_barrier_registered() noexcept { return false; }
bool process_barrier() noexcept { return false; }
void sleep_while(std::atomic<uint32_t>& word, uint32_t value) noexcept { word.wait(value, std::memory_order_relaxed); }
void wake(std::atomic<uint32_t>& word) noexcept { word.notify_one(); }
#endif

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex is a plain 32-bit word");

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
            sleep_while(word_, kHeld);
        else
            std::this_thread::yield();
    }
    waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void StreamLock::wake_one() noexcept { wake(word_); }

}  // namespace lapse::vulkan
