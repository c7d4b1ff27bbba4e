#include "stamp_clock.hpp"

#include <algorithm>
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
    Pair best{0, 0, INT64_MAX};
    for (int i = 0; i < 8; ++i) {
        const int64_t before = monotonic_ns();
        const int64_t ticks = StampClock::ticks();
        const int64_t after = monotonic_ns();
        if (after - before < best.gap) best = {before + (after - before) / 2, ticks, after - before};
    }
    return best;
}

int64_t StampClock::ordered_ticks() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_lfence();
    const int64_t t = ticks();
    _mm_lfence();
    return t;
#else
    return 0;
#endif
}

// Why a snapshot never converts a stamp that a later segment covers.
//
// A segment k+1 starting at s is added in this order: announce s in
// next_start_; read the TSC (T2); give up unless T2 <= s - lead/2; publish
// the segment (count_); withdraw the announcement. A snapshot reads the
// TSC (T), then next_start_, then count_, and covers [start of the newest
// segment it saw, T + lead/2), cut at an announced start beyond it. All
// four atomics are sequentially consistent and the TSC reads are fenced.
//   * It saw the announcement: its range ends at s at the latest.
//   * It saw the withdrawal: the publication came before, so it saw k+1.
//   * It saw neither: its read of next_start_ came before the
//     announcement, so T < T2, and T + lead/2 < T2 + lead/2 <= s.
// And no stamp existed at or after s when k+1 was announced (T2 was below
// s), so no conversion made before it can disagree with k+1.
bool StampClock::add_segment() noexcept
{
    const uint64_t count = count_.load(std::memory_order_relaxed);  // written under refining_ only
    Segment last;
    if (count == 0 || !read_segment(count - 1, last)) return false;
    const Pair now = tight_pair();
    // A pair split by a preemption would slew the conversion toward a
    // wrong point: wait for a tight one.
    if (now.gap > 10'000 || now.ticks <= anchor_.ticks) return false;
    const double rate = static_cast<double>(now.ns - anchor_.ns) / static_cast<double>(now.ticks - anchor_.ticks);
    const int64_t lead = lead_ticks_.load(std::memory_order_relaxed);
    const int64_t start = now.ticks + lead;
    next_start_.store(start, std::memory_order_seq_cst);
    if (ordered_ticks() > start - lead / 2) {  // stalled between the pair and the announcement
        next_start_.store(INT64_MAX, std::memory_order_seq_cst);
        return false;
    }
    // Where CLOCK_MONOTONIC will be at `start` (by the measured rate), and
    // where the last segment puts it: the new one starts where the last
    // leaves off and closes the gap by the next refinement.
    const int64_t from_ns = last.to_ns(start);
    const double monotonic_at_start = static_cast<double>(now.ns) + static_cast<double>(lead) * rate;
    const int64_t next_interval = std::min(interval_ns_ * 2, kMaxRefineNs);
    double slew = (monotonic_at_start - static_cast<double>(from_ns)) / static_cast<double>(next_interval);
    slew = std::clamp(slew, -kMaxSlew, kMaxSlew);
    publish(count, Segment{start, from_ns, rate * (1.0 + slew)});
    next_start_.store(INT64_MAX, std::memory_order_seq_cst);
    interval_ns_ = next_interval;
    return true;
}

void StampClock::calibrate() noexcept
{
    // The first rate needs a baseline of kFirstCalibrationNs from the
    // anchor: only a resolve within that of the clock's making waits for it
    // (opening a device never does).
    while (monotonic_ns() - anchor_.ns < kFirstCalibrationNs) {
    }
    Pair later = tight_pair();
    for (int tries = 0; later.gap > 10'000 && tries < 100; ++tries) later = tight_pair();
    const int64_t elapsed = later.ticks - anchor_.ticks;
    const double rate = elapsed > 0 ? static_cast<double>(later.ns - anchor_.ns) / static_cast<double>(elapsed) : 1.0;
    lead_ticks_.store(static_cast<int64_t>(static_cast<double>(kLeadNs) / rate), std::memory_order_relaxed);
    publish(0, Segment{anchor_.ticks, anchor_.ns, rate});
}

void StampClock::publish(uint64_t index, const Segment& s) noexcept
{
    Slot& slot = slots_[index % kSegments];
    slot.seq.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    slot.ticks.store(s.ticks, std::memory_order_relaxed);
    slot.ns.store(s.ns, std::memory_order_relaxed);
    slot.ns_per_tick.store(s.ns_per_tick, std::memory_order_relaxed);
    slot.seq.store(static_cast<int64_t>(index + 1), std::memory_order_release);
    count_.store(index + 1, std::memory_order_seq_cst);
}

bool StampClock::read_segment(uint64_t index, Segment& out) const noexcept
{
    const Slot& slot = slots_[index % kSegments];
    const int64_t expected = static_cast<int64_t>(index + 1);
    if (slot.seq.load(std::memory_order_acquire) != expected) return false;
    out = {slot.ticks.load(std::memory_order_relaxed), slot.ns.load(std::memory_order_relaxed),
           slot.ns_per_tick.load(std::memory_order_relaxed)};
    std::atomic_thread_fence(std::memory_order_acquire);
    return slot.seq.load(std::memory_order_relaxed) == expected;
}

void StampClock::refine() noexcept
{
    if (source_ == Source::monotonic) return;
    const int64_t due = due_ticks_.load(std::memory_order_acquire);
    if (due != 0 && ticks() < due) return;
    std::unique_lock lock(refining_, std::defer_lock);
    if (due == 0)
        lock.lock();  // not calibrated: every resolve waits for the first segment
    else if (!lock.try_lock())
        return;  // another resolve is refining: this one goes on with what exists
    int64_t wait_ns = interval_ns_;
    if (count_.load(std::memory_order_relaxed) == 0)
        calibrate();
    else if (ticks() < due_ticks_.load(std::memory_order_relaxed))
        return;  // refined meanwhile
    else if (!add_segment())
        wait_ns = kRetryNs;
    due_ticks_.store(ticks() + wait_ns * lead_ticks_.load(std::memory_order_relaxed) / kLeadNs,
                     std::memory_order_release);
}

bool StampClock::refine_now() noexcept
{
    if (source_ == Source::monotonic) return false;
    refine();  // calibrates when it has not
    std::unique_lock lock(refining_, std::try_to_lock);
    return lock.owns_lock() && add_segment();
}

StampClock::Conversion StampClock::conversion() noexcept
{
    if (source_ == Source::monotonic) return {};
    if (count_.load(std::memory_order_acquire) == 0) refine();
    // The order of these three reads is what the proof above needs.
    const int64_t now = ordered_ticks();
    const int64_t announced = next_start_.load(std::memory_order_seq_cst);
    const uint64_t count = count_.load(std::memory_order_seq_cst);
    Conversion c;
    c.clock = this;
    if (!read_segment(count - 1, c.newest)) return c;  // overtaken meanwhile: every stamp by to_ns
    c.until_ticks = now + lead_ticks_.load(std::memory_order_relaxed) / 2;
    if (announced > c.newest.ticks && announced < c.until_ticks) c.until_ticks = announced;
    if (count < 2 || !read_segment(count - 2, c.before)) c.before = c.newest;  // an empty range
    return c;
}

int64_t StampClock::to_ns(int64_t raw) noexcept
{
    if (source_ == Source::monotonic) return raw;
    if (count_.load(std::memory_order_acquire) == 0) refine();
    for (;;) {
        const int64_t announced = next_start_.load(std::memory_order_seq_cst);
        const uint64_t count = count_.load(std::memory_order_seq_cst);
        Segment newest;
        if (!read_segment(count - 1, newest)) continue;  // overtaken while reading: read again
        if (newest.ticks <= raw) {
            // `raw` lies past a segment being added (its refinement
            // stalled): wait for that to be published or given up.
            if (announced != INT64_MAX && raw >= announced) {
                std::lock_guard wait(refining_);
                continue;
            }
            return newest.to_ns(raw);
        }
        // The newest kept segment that starts at or before `raw`, by
        // bisection over the segments' starts (they only grow); past the
        // segments kept, the oldest one still read whole.
        uint64_t low = count > kSegments - 1 ? count - (kSegments - 1) : 0;  // candidates [low, high)
        uint64_t high = count - 1;
        Segment at_or_before{};
        bool found = false;
        Segment oldest_after = newest;  // the oldest read that starts after `raw`
        while (low < high) {
            const uint64_t mid = low + (high - low) / 2;
            Segment s;
            if (!read_segment(mid, s)) {
                low = mid + 1;  // overwritten by a newer one: older than anything kept
                continue;
            }
            if (s.ticks <= raw) {
                at_or_before = s;
                found = true;
                low = mid + 1;
            } else {
                oldest_after = s;
                high = mid;
            }
        }
        return (found ? at_or_before : oldest_after).to_ns(raw);
    }
}

}  // namespace lapse::cpu
