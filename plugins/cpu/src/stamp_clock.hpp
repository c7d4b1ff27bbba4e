// cpu plugin — the clock the worker stamps markers with.
//
// Where the TSC is invariant and the kernel itself keeps time with it (its
// clocksource is "tsc": the counters of all CPUs agree), the worker reads
// the raw counter (rdtsc, a few ns, no vDSO call) and resolve converts it
// to CLOCK_MONOTONIC nanoseconds. Elsewhere (no invariant TSC, another
// clocksource, not x86) it reads CLOCK_MONOTONIC itself. Which one is
// decided when the clock is made (at the first device open), so a duration's domain
// is LAPSE_CLOCK_HOST_MONOTONIC either way.
//
// Conversion: ns = anchor_ns + (ticks - anchor_ticks) * ns_per_tick, with
// the anchor a tight (CLOCK_MONOTONIC, TSC) pair taken at construction and
// the rate measured from the anchor to a later tight pair, by resolve: the
// first time at least kFirstCalibrationNs after the anchor, then again
// whenever the last measurement is older than kRefineAfterNs. So the rate's error shrinks
// with the clock's age, and a stamp converted near the latest pair lands
// where CLOCK_MONOTONIC (slewed by NTP or not) was at that moment.
#pragma once

#include <atomic>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace lapse::cpu {

class StampClock {
public:
    enum class Source { tsc, monotonic };

    // The TSC when detect_tsc() says it can be trusted, CLOCK_MONOTONIC
    // otherwise. Takes the anchor pair only (a microsecond): the rate is
    // measured by the first refine().
    StampClock();
    // A chosen source (tests; the TSC is only honoured where detect_tsc()).
    explicit StampClock(Source wanted);

    // [thread-safe] The process's clock, made (and calibrated) by the first
    // device that opens in stream mode: later devices open without the
    // calibration spin, and every resolve refines the one rate.
    static StampClock& shared();

    // Whether this machine has a TSC to stamp with: invariant (CPUID
    // 0x80000007 EDX bit 8) and the kernel's clocksource.
    static bool detect_tsc() noexcept;

    Source source() const noexcept { return source_; }

    // [worker] A raw stamp: TSC ticks or CLOCK_MONOTONIC ns. Never 0.
    int64_t now() const noexcept
    {
        if (source_ == Source::tsc) [[likely]]
            return ticks();
        return monotonic_ns();
    }

    // How raw stamps become CLOCK_MONOTONIC ns, as of now: taken once per
    // resolve, so converting a million stamps reads no atomic and tests
    // no source.
    struct Conversion {
        int64_t anchor_ns = 0;
        int64_t anchor_ticks = 0;
        double ns_per_tick = 1.0;
        bool identity = true;  // CLOCK_MONOTONIC stamps
        int64_t to_ns(int64_t raw) const noexcept
        {
            if (identity) return raw;
            return anchor_ns + static_cast<int64_t>(static_cast<double>(raw - anchor_ticks) * ns_per_tick);
        }
    };
    Conversion conversion() const noexcept
    {
        if (source_ == Source::monotonic) return {};
        return {anchor_.ns, anchor_.ticks, ns_per_tick_.load(std::memory_order_relaxed), false};
    }

    // [any thread] A raw stamp in CLOCK_MONOTONIC ns. Call refine() once
    // before converting (the rate is measured there).
    int64_t to_ns(int64_t raw) const noexcept { return conversion().to_ns(raw); }

    // [any thread] Measures the rate when it has not been measured yet or
    // the last measurement is older than kRefineAfterNs (resolve calls it
    // once per call: a load and a compare when it is recent).
    void refine() noexcept;

    static constexpr int64_t kFirstCalibrationNs = 500'000;
    static constexpr int64_t kRefineAfterNs = 10'000'000;

    static int64_t monotonic_ns() noexcept;
    // The TSC (0 where there is none: never used then).
    static int64_t ticks() noexcept
    {
#if defined(__x86_64__) || defined(__i386__)
        return static_cast<int64_t>(__rdtsc());
#else
        return 0;
#endif
    }

private:
    struct Pair {
        int64_t ns;
        int64_t ticks;
    };
    // (CLOCK_MONOTONIC, TSC) read closest together out of a few tries.
    static Pair tight_pair() noexcept;
    static bool look_for_tsc() noexcept;
    void measure_rate(const Pair& later) noexcept;

    Source source_;
    Pair anchor_{};  // written by the constructor only
    std::atomic<double> ns_per_tick_{1.0};
    std::atomic<int64_t> measured_at_ns_{0};
};

}  // namespace lapse::cpu
