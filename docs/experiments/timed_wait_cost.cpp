// Experiment (not part of the build): what a timed sleep costs the
// sleeping thread, against how long it sleeps: the measurement behind the
// CPU worker's doze (plugins/cpu/src/doze_policy.hpp; docs/performance.md,
// "the worker dozes through a burst").
//
//   g++ -O2 -std=c++20 docs/experiments/timed_wait_cost.cpp -o timed_wait_cost && ./timed_wait_cost
//
// For each timeout: 1,000 FUTEX_WAITs on a word nobody changes (200 for the
// longest), then as many nanosleeps; the thread's CPU time and the wall
// time per wait. Run it as it is (the default 50 us of timer slack) or
// under `prctl(PR_SET_TIMERSLACK)` to see what the slack adds to the wall.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <initializer_list>

namespace {

int64_t now_ns(clockid_t clock)
{
    timespec t;
    clock_gettime(clock, &t);
    return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

template <class Wait>
void measure(const char* what, long timeout_ns, int waits, Wait&& wait)
{
    const int64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID), wall0 = now_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < waits; ++i) wait(timespec{0, timeout_ns});
    const int64_t cpu1 = now_ns(CLOCK_THREAD_CPUTIME_ID), wall1 = now_ns(CLOCK_MONOTONIC);
    std::printf("%-9s timeout %7ld ns: CPU %.1f us a wait, wall %.1f us a wait\n", what, timeout_ns,
                double(cpu1 - cpu0) / 1e3 / waits, double(wall1 - wall0) / 1e3 / waits);
}

}  // namespace

int main()
{
    std::atomic<uint32_t> word{1};
    for (long timeout_ns : {10'000L, 50'000L, 200'000L, 1'000'000L}) {
        const int waits = timeout_ns >= 1'000'000 ? 200 : 1000;
        measure("futex", timeout_ns, waits, [&](timespec t) {
            syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, 1, &t, nullptr, 0);
        });
        measure("nanosleep", timeout_ns, waits, [](timespec t) { nanosleep(&t, nullptr); });
    }
}
