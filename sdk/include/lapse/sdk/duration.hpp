// lapse SDK (C++) — writing a resolved duration for the caller.
#pragma once

#include <lapse/window.h>

#include <cstdint>

namespace lapse::sdk {

// Writes every field of `out` but struct_size, which belongs to the caller
// (a plugin leaves it as the caller set it: see lapse_plugin::resolve).
// Stores only, never a read of `out`: a resolve over a million durations
// would otherwise wait for a cache miss on each before writing it.
// [any thread; `out` is the caller's]
inline void set_duration(lapse_duration& out, uint32_t state, lapse_status failure = LAPSE_OK,
                         uint32_t method = LAPSE_TIMING_NONE, uint32_t domain = LAPSE_CLOCK_NONE, int64_t start_ns = 0,
                         int64_t end_ns = 0) noexcept
{
    out.state = state;
    out.method = method;
    out.clock_domain = domain;
    out.start_ns = start_ns;
    out.end_ns = end_ns;
    out.failure = failure;
    out.reserved = 0;
}

}  // namespace lapse::sdk
