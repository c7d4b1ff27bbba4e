// What forward's device files share (forward_device.cpp, segments.cpp):
// the window-limit error and resolve's deadline arithmetic.
#pragma once

#include "slot_table.hpp"

#include <lapse/lapse.h>
#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/host.hpp>

#include <cstdint>

namespace lapse::forward::device_support {

inline lapse_status table_full(lapse_error* error) noexcept
{
    return sdk::failf(error, LAPSE_ERROR_CAPACITY, "forward: profile_start: %u windows are live; resolve or abandon some",
                      kMaxLiveSlots);
}

constexpr uint32_t kBatch = 64;  // tokens handed to the inner resolve at once

inline uint64_t deadline_after(uint64_t timeout_ns) noexcept
{
    if (timeout_ns == LAPSE_WAIT_FOREVER) return UINT64_MAX;
    uint64_t now = static_cast<uint64_t>(sdk::monotonic_ns());
    return timeout_ns >= UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + timeout_ns;
}

inline uint64_t remaining(uint64_t deadline) noexcept
{
    if (deadline == UINT64_MAX) return LAPSE_WAIT_FOREVER;
    uint64_t now = static_cast<uint64_t>(sdk::monotonic_ns());
    return deadline > now ? deadline - now : 0;
}

using sdk::copy_duration;  // flags and queued_ops travel up with the times
using sdk::set_failed;

}  // namespace lapse::forward::device_support
