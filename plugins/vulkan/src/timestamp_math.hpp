// Timestamp arithmetic for the Vulkan plugin, kept pure (no Vulkan, no
// state) so that it can be unit-tested with any mask width.
//
// A queue family's timestamps carry `timestampValidBits` meaningful bits:
// the counter wraps at 2^bits. Every difference is therefore taken modulo
// 2^bits, which is right as long as the true interval is shorter than one
// full wrap (2^36 ns is 68 s; 2^48 ns is 3.2 days). Ticks become
// nanoseconds through `timestampPeriod` (ns per tick, a float in Vulkan),
// multiplied in double so that a period of, say, 83.333 does not round.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace lapse::vulkan {

// The mask of a counter with `bits` valid bits (0 → 0: no clock at all).
constexpr uint64_t valid_mask(uint32_t bits) noexcept
{
    return bits == 0 ? 0 : bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

// A queue with no valid timestamp bits has no device clock: profile_start
// answers LAPSE_NO_WINDOW and describe drops LAPSE_CAP_DEVICE_CLOCK.
constexpr bool has_device_clock(uint32_t valid_bits) noexcept { return valid_bits != 0; }

// Ticks from `start` to `end`, where `end` was written after `start`, under
// the mask: a stamp that wrapped past zero still gives the short interval.
constexpr uint64_t ticks_between(uint64_t start, uint64_t end, uint64_t mask) noexcept
{
    return (end - start) & mask;
}

// Signed distance from `ref` to `t` under the mask, in
// [-2^(bits-1), 2^(bits-1)): the nearer of the two ways round the circle.
// Used to place a stamp relative to a calibration point that may be just
// before or just after it.
constexpr int64_t signed_ticks(uint64_t ref, uint64_t t, uint64_t mask) noexcept
{
    if (mask == 0) return 0;
    uint64_t forward = (t - ref) & mask;
    uint64_t half = (mask >> 1) + 1;  // 2^(bits-1)
    if (forward < half) return static_cast<int64_t>(forward);
    uint64_t backward = (ref - t) & mask;  // == 2^bits - forward
    return -static_cast<int64_t>(backward);
}

// `x` (>= 0, or NaN) rounded to the nearest integer, ties to even: what
// std::nearbyint gives in the default rounding mode, without its library
// call (resolve converts two values per window). Below 2^52, adding and
// taking away 2^52 leaves exactly the rounded value; from 2^52 on every
// double is an integer already.
inline double round_nonnegative(double x) noexcept
{
    constexpr double k2p52 = 4503599627370496.0;
    return x < k2p52 ? (x + k2p52) - k2p52 : x;
}

// Ticks to nanoseconds, rounded to nearest, in double. Saturates instead of
// overflowing (a duration beyond 292 years is not a measurement).
inline int64_t ticks_to_ns(uint64_t ticks, double period_ns) noexcept
{
    double ns = round_nonnegative(static_cast<double>(ticks) * period_ns);
    if (!(ns < 9.2e18)) return std::numeric_limits<int64_t>::max();
    return static_cast<int64_t>(ns);
}

inline int64_t signed_ticks_to_ns(int64_t ticks, double period_ns) noexcept
{
    return ticks < 0 ? -ticks_to_ns(static_cast<uint64_t>(-(ticks + 1)) + 1, period_ns)
                     : ticks_to_ns(static_cast<uint64_t>(ticks), period_ns);
}

}  // namespace lapse::vulkan
