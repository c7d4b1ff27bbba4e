// lapse SDK (C++) — writing a resolved duration for the caller.
#pragma once

#include <lapse/window.h>

#include <cstdint>

namespace lapse::sdk {

// Writes every field of `out` but struct_size, which belongs to the caller
// (a plugin leaves it as the caller set it: see lapse_plugin::resolve).
// Stores only, never a read of `out`: a resolve over a million durations
// would otherwise wait for a cache miss on each before writing it.
// A duration that is not READY carries LAPSE_TIMING_NONE and no clock,
// whatever the caller passed: "how it was measured" means nothing for a
// window that was not, and every plugin must answer the same.
// [any thread; `out` is the caller's]
inline void set_duration(lapse_duration& out, uint32_t state, lapse_status failure = LAPSE_OK,
                         uint32_t method = LAPSE_TIMING_NONE, uint32_t domain = LAPSE_CLOCK_NONE, int64_t start_ns = 0,
                         int64_t end_ns = 0, uint32_t flags = 0, uint32_t queued_ops = 0) noexcept
{
    const bool ready = state == LAPSE_DURATION_READY;
    out.state = state;
    out.method = ready ? method : uint32_t{LAPSE_TIMING_NONE};
    out.clock_domain = ready ? domain : uint32_t{LAPSE_CLOCK_NONE};
    out.start_ns = ready ? start_ns : 0;
    out.end_ns = ready ? end_ns : 0;
    out.failure = failure;
    out.flags = static_cast<uint16_t>(flags);
    out.queued_ops = static_cast<uint16_t>(queued_ops > LAPSE_DURATION_QUEUED_OPS_MAX ? LAPSE_DURATION_QUEUED_OPS_MAX
                                                                                      : queued_ops);
}

// A FAILED duration: `failure` says why (a negative status), method
// LAPSE_TIMING_NONE, no clock, no times, no flags. [any thread]
inline void set_failed(lapse_duration& out, lapse_status failure) noexcept
{
    set_duration(out, LAPSE_DURATION_FAILED, failure);
}

// A whole copy of a duration another backend wrote (a layer handing its
// inner backend's answer up), struct_size left as the caller set it.
// [any thread]
inline void copy_duration(lapse_duration& to, const lapse_duration& from) noexcept
{
    set_duration(to, from.state, from.failure, from.method, from.clock_domain, from.start_ns, from.end_ns, from.flags,
                 from.queued_ops);
}

// Why a READY interval from `start_ns` to `end_ns` on `clock_domain`
// cannot be a number, or nullptr when it can: an end before its start, a
// span that does not fit in int64_t, a host-clock time before the clock's
// origin. What impossible_duration and impossible_pair (resolve_compact.hpp)
// share. [any thread]
inline const char* impossible_interval(int64_t start_ns, int64_t end_ns, uint32_t clock_domain) noexcept
{
    if (end_ns < start_ns) return "an end before its start";
    int64_t span = 0;
    if (__builtin_sub_overflow(end_ns, start_ns, &span)) return "a span that does not fit in 64 bits";
    if (clock_domain == LAPSE_CLOCK_HOST_MONOTONIC && start_ns < 0)
        return "a host-clock start before the clock's origin";
    return nullptr;
}

// Why a duration a backend returned cannot be handed up as a number, or
// nullptr when it can: a state, method or clock outside the enums, an end
// before its start, a span that does not fit in int64_t, a host-clock time
// before the clock's origin. [any thread]
inline const char* impossible_duration(const lapse_duration& d) noexcept
{
    switch (d.state) {
    case LAPSE_DURATION_PENDING:
    case LAPSE_DURATION_NOT_MEASURED:
    case LAPSE_DURATION_FAILED: return nullptr;
    case LAPSE_DURATION_READY: break;
    default: return "a state outside lapse_duration_state";
    }
    if (d.method != LAPSE_TIMING_SYSTEM && d.method != LAPSE_TIMING_DEVICE)
        return "a READY duration whose method is not SYSTEM or DEVICE";
    if (d.clock_domain != LAPSE_CLOCK_HOST_MONOTONIC && d.clock_domain != LAPSE_CLOCK_DEVICE)
        return "a READY duration whose clock is not HOST_MONOTONIC or DEVICE";
    return impossible_interval(d.start_ns, d.end_ns, d.clock_domain);
}

}  // namespace lapse::sdk
