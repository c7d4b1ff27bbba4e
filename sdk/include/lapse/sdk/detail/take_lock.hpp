// lapse SDK (C++) — the lock a WindowTable's takers hold. Not an interface
// of its own (machinery, like record_pool.hpp).
//
// The rule it keeps: a closed record is taken and abandoned only under its
// shard's take lock, so a take frees one nobody holds any more with a
// plain store, not a CAS, and a device side that holds the lock (a
// ReleaseRun) drops a closed record's holds with one. A resolver taking
// into a batch takes the lock once per batch, a CPU worker once per run of
// markers: resolving or stamping a million windows costs a few thousand
// locked operations, not a million (a CAS waits for every store before it
// and for the line: docs/performance.md, "2026-12-06 (morning)" and "(late
// morning)", measured what that took from a resolve and from the worker).
//
// Held across at most flush_every takes of one resolver's batch, one
// abandon, or one run of a device side's releases (which only tries it):
// a thread that finds it held spins a little, then yields to a holder
// that may have lost its core. On a cache line of its own, apart
// from the free list the callers' profile_start pops.
#pragma once

#include <atomic>
#include <thread>

namespace lapse::sdk::detail {

class alignas(64) TakeLock {
public:
    // [thread-safe]
    void lock() noexcept
    {
        constexpr int kSpins = 64;
        int spins = 0;
        while (held_.exchange(true, std::memory_order_acquire)) {
            while (held_.load(std::memory_order_relaxed)) {
                if (++spins < kSpins) {
#if defined(__x86_64__) || defined(__i386__)
                    __builtin_ia32_pause();
#endif
                } else {
                    std::this_thread::yield();
                }
            }
        }
    }
    // [thread-safe] Takes it if nobody holds it; never waits.
    bool try_lock() noexcept
    {
        return !held_.load(std::memory_order_relaxed) && !held_.exchange(true, std::memory_order_acquire);
    }
    // [the holder]
    void unlock() noexcept { held_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> held_{false};
};

}  // namespace lapse::sdk::detail
