// Placement of device timestamps on the host's CLOCK_MONOTONIC through
// VK_EXT_calibrated_timestamps.
//
// One calibration is a (device ticks, host ns) pair read together by
// vkGetCalibratedTimestampsEXT, which also reports the maximum deviation
// between the two reads. Several pairs are sampled and the one with the
// smallest deviation kept; the pair is refreshed when it is older than the
// configured interval, because the two clocks drift apart slowly. Only the
// placement (start_ns) uses it: every duration is the difference of its own
// two stamps, so a calibration error shifts a window, never stretches it.
#pragma once

#include "vk_api.hpp"

#include <cstdint>
#include <mutex>

namespace lapse::vulkan {

struct CalibrationPoint {
    uint64_t device_ticks = 0;   // full-width device timestamp
    int64_t host_ns = 0;         // CLOCK_MONOTONIC at the same instant
    uint64_t max_deviation = 0;  // ns, as the driver reported it
};

// True when the physical device can read its timestamps together with
// CLOCK_MONOTONIC (it offers both time domains). The caller checks that the
// extension is enabled on its VkDevice.
bool offers_monotonic_calibration(const VkApi& vk, VkPhysicalDevice physical);

class Calibration {
public:
    static constexpr int kSamples = 5;

    // `get` is null when calibrated timestamps are not enabled: placement
    // then stays in the device domain.
    void configure(PFN_vkGetCalibratedTimestampsEXT get, VkDevice device, int64_t refresh_ns) noexcept
    {
        get_ = get;
        device_ = device;
        refresh_ns_ = refresh_ns;
    }
    bool enabled() const noexcept { return get_ != nullptr; }

    // The current point, resampled first when older than the refresh
    // interval (`now_ns` is CLOCK_MONOTONIC). Returns false when there is
    // no point at all (the first sample failed: `failure` says how); a
    // failed resample keeps the last good point. [thread-safe]
    bool current(int64_t now_ns, CalibrationPoint& out, VkResult& failure);
    // Takes the first point (open and attach do, so a device whose
    // calibration fails says so at once): VK_SUCCESS, or the failure.
    // VK_SUCCESS when calibration is not enabled.
    VkResult prime(int64_t now_ns);

private:
    VkResult sample(CalibrationPoint& out) const noexcept;

    PFN_vkGetCalibratedTimestampsEXT get_ = nullptr;
    VkDevice device_ = VK_NULL_HANDLE;
    int64_t refresh_ns_ = 1000000000;
    std::mutex mutex_;  // guards the fields below; held for a copy or a resample, never on the hot path
    CalibrationPoint point_{};
    int64_t taken_at_ns_ = 0;
    bool valid_ = false;
};

}  // namespace lapse::vulkan
