// cpu plugin — the clock the worker stamps markers with.
//
// Where the TSC is invariant and the kernel itself keeps time with it (its
// clocksource is "tsc": the counters of all CPUs agree), the worker reads
// the raw counter (rdtsc, a few ns, no vDSO call) and resolve converts it
// to CLOCK_MONOTONIC nanoseconds. Elsewhere (no invariant TSC, another
// clocksource, not x86) it reads CLOCK_MONOTONIC itself. Which one is
// decided when the clock is made (at the first device open), so a
// duration's domain is LAPSE_CLOCK_HOST_MONOTONIC either way.
//
// Conversion is a function of the stamp alone: a stamp converts to the
// same nanosecond whenever it is resolved, by whichever call, so windows
// that share a reading (or nest) keep their order however they are
// resolved. It is piecewise linear and continuous: segment k covers the
// ticks from its start to the next segment's start. A refinement (at most
// every kFirstRefineNs, doubling to kMaxRefineNs) measures the rate from
// the anchor (a tight CLOCK_MONOTONIC/TSC pair taken at construction) to
// a tight pair now, and starts a new segment kLeadNs ahead of now, where
// the last segment leaves off. Its rate is the measured one, slewed (by at
// most kMaxSlew) so that the conversion meets CLOCK_MONOTONIC again by the
// next refinement. No stamp taken yet can lie in a segment that does not
// exist yet; Conversion snapshots are bounded so that they never convert a
// stamp a later segment covers (the proof is in stamp_clock.cpp).
//
// kSegments are kept. With the schedule above that covers more than an
// hour of stamps; a stamp older than every kept segment (a window resolved
// over an hour after it closed) converts with the oldest one kept. A stamp
// older than a snapshot's two segments finds its own by bisection.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

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
    StampClock(const StampClock&) = delete;
    StampClock& operator=(const StampClock&) = delete;

    // [thread-safe] The process's clock, made (and calibrated) by the first
    // device that opens in stream mode: later devices open without the
    // calibration spin, and every resolve refines the one conversion.
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

    // One piece of the conversion: the stamps from `ticks` on (up to the
    // next segment's start) convert along `ns_per_tick` from `ns`.
    struct Segment {
        int64_t ticks = 0;
        int64_t ns = 0;
        double ns_per_tick = 1.0;
        int64_t to_ns(int64_t raw) const noexcept
        {
            return ns + static_cast<int64_t>(static_cast<double>(raw - ticks) * ns_per_tick);
        }
    };

    // How raw stamps become CLOCK_MONOTONIC ns: the newest segment when it
    // was taken, for the stamps it is sure to cover, and the one before it
    // (a batch resolved across a refinement); the clock for any other.
    // Taken once per resolve, so converting a million stamps reads no
    // atomic; a stamp taken after the snapshot (a resolve that waited) is
    // converted by the clock, with the segment that covers it.
    struct Conversion {
        Segment newest;
        int64_t until_ticks = 0;  // stamps below this lie in no later segment
        Segment before;           // covers [before.ticks, newest.ticks); empty when there is none
        StampClock* clock = nullptr;  // null: CLOCK_MONOTONIC stamps
        int64_t to_ns(int64_t raw) const noexcept
        {
            if (clock == nullptr) return raw;
            if (raw >= newest.ticks && raw < until_ticks) [[likely]]
                return newest.to_ns(raw);
            if (raw >= before.ticks && raw < newest.ticks) return before.to_ns(raw);
            return clock->to_ns(raw);
        }
    };
    // [any thread] Calibrates first when no refine() has yet.
    Conversion conversion() noexcept;

    // [any thread] A raw stamp in CLOCK_MONOTONIC ns (calibrates first
    // when no refine() has yet).
    int64_t to_ns(int64_t raw) noexcept;

    // [any thread] Starts a new segment when none exists yet or the last
    // one is due for refinement (resolve calls it once per call: a TSC read
    // and a compare when it is not). The first one waits until the anchor
    // is kFirstCalibrationNs old.
    void refine() noexcept;
    // [any thread] A refinement now, whatever the schedule (tests). False
    // when none could be made (another thread was refining, or the pair
    // read now was not tight).
    bool refine_now() noexcept;

    static constexpr int64_t kFirstCalibrationNs = 500'000;
    static constexpr int64_t kFirstRefineNs = 10'000'000;
    static constexpr int64_t kMaxRefineNs = 1'000'000'000;
    static constexpr int64_t kLeadNs = 1'000'000;
    static constexpr int64_t kRetryNs = 1'000'000;  // after a refinement that could not be made
    static constexpr double kMaxSlew = 500e-6;
    static constexpr uint32_t kSegments = 4096;

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
        int64_t gap;  // ns between the two CLOCK_MONOTONIC reads around the TSC
    };
    // One kept segment, read without a lock: `seq` is its index + 1 once
    // written, 0 while being written (a seqlock of one writer).
    struct Slot {
        std::atomic<int64_t> seq{0};
        std::atomic<int64_t> ticks{0};
        std::atomic<int64_t> ns{0};
        std::atomic<double> ns_per_tick{1.0};
    };
    // (CLOCK_MONOTONIC, TSC) read closest together out of a few tries.
    static Pair tight_pair() noexcept;
    static bool look_for_tsc() noexcept;
    // The TSC read after every earlier instruction has completed, and
    // before any later one starts (the bounds' proof needs that order; a
    // sequentially consistent store before it has drained the store buffer).
    static int64_t ordered_ticks() noexcept;
    // Under mutex_: the first segment, or the next one (false when the
    // pair was not tight enough or the lead could not be kept).
    bool add_segment() noexcept;
    void calibrate() noexcept;
    void publish(uint64_t index, const Segment& s) noexcept;
    // Segment `index` if it is still kept and was read whole.
    bool read_segment(uint64_t index, Segment& out) const noexcept;

    Source source_;
    Pair anchor_{};  // written by the constructor only
    std::mutex refining_;
    int64_t interval_ns_ = kFirstRefineNs;  // under refining_
    std::atomic<int64_t> due_ticks_{0};     // the next refinement's TSC; 0: not calibrated
    // The start of a segment being added (announced before its bounds are
    // checked): a snapshot stops short of it.
    std::atomic<int64_t> next_start_{INT64_MAX};
    std::atomic<uint64_t> count_{0};  // segments published
    std::atomic<int64_t> lead_ticks_{0};  // kLeadNs in ticks, set with the first segment
    Slot slots_[kSegments];
};

}  // namespace lapse::cpu
