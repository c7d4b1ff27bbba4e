#include "stamp_clock.hpp"

#include <cstdio>
#include <cstring>
#include <ctime>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace lapse::cpu {

int64_t StampClock::monotonic_ns() noexcept
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool StampClock::detect_tsc() noexcept
{
    static const bool found = look_for_tsc();  // sysfs is read once per process
    return found;
}

bool StampClock::look_for_tsc() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) == 0 || eax < 0x80000007u) return false;
    if (__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) == 0 || (edx & (1u << 8)) == 0) return false;
    // Invariant is not enough when the counters of different CPUs disagree
    // (some VMs, old multi-socket boards): the kernel finds that out and
    // stops using the TSC, so follow its choice. Where sysfs cannot be read
    // (a sandbox), the CPUID answer stands.
    std::FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f == nullptr) return true;
    char name[32] = {};
    const bool read = std::fgets(name, sizeof name, f) != nullptr;
    std::fclose(f);
    return !read || std::strncmp(name, "tsc", 3) == 0;
#else
    return false;
#endif
}

StampClock::StampClock() : StampClock(detect_tsc() ? Source::tsc : Source::monotonic) {}

StampClock& StampClock::shared()
{
    static StampClock clock;
    return clock;
}

StampClock::StampClock(Source wanted) : source_(wanted == Source::tsc && detect_tsc() ? Source::tsc : Source::monotonic)
{
    if (source_ == Source::monotonic) return;
    anchor_ = tight_pair();  // the rate waits for the first refine()
}

StampClock::Pair StampClock::tight_pair() noexcept
{
    Pair best{0, 0};
    int64_t best_gap = INT64_MAX;
    for (int i = 0; i < 8; ++i) {
        const int64_t before = monotonic_ns();
        const int64_t ticks = StampClock::ticks();
        const int64_t after = monotonic_ns();
        if (after - before < best_gap) {
            best_gap = after - before;
            best = {before + (after - before) / 2, ticks};
        }
    }
    return best;
}

void StampClock::measure_rate(const Pair& later) noexcept
{
    const int64_t elapsed = later.ticks - anchor_.ticks;
    if (elapsed <= 0) return;
    ns_per_tick_.store(static_cast<double>(later.ns - anchor_.ns) / static_cast<double>(elapsed),
                       std::memory_order_relaxed);
    // Release: a resolver that sees the time (acquire, in refine) sees the rate.
    measured_at_ns_.store(later.ns, std::memory_order_release);
}

void StampClock::refine() noexcept
{
    if (source_ == Source::monotonic) return;
    const int64_t last = measured_at_ns_.load(std::memory_order_acquire);
    const int64_t now = monotonic_ns();
    if (last != 0 && now - last < kRefineAfterNs) return;
    // The first measurement needs a baseline of kFirstCalibrationNs from
    // the anchor: only a resolve within that of the clock's making waits
    // for it (opening a device never does).
    while (monotonic_ns() - anchor_.ns < kFirstCalibrationNs) {
    }
    // Two resolvers may both measure: each stores a rate from the same
    // anchor, both good.
    measure_rate(tight_pair());
}

}  // namespace lapse::cpu
