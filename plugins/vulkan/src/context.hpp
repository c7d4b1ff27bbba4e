// What every stream of one lapse device shares: the Vulkan entry points and
// handles, the device-wide facts (period, reset path, stages), the
// device-lost flag that poisons every window, and the host's services.
// Written during open/attach, read-only afterwards except for the atomics.
#pragma once

#include "calibration.hpp"
#include "vk_api.hpp"

#include <lapse/lapse.h>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/host.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace lapse::vulkan {

// A VkQueue and the lock Vulkan requires around vkQueueSubmit on it. Several
// streams (queue slots) may share one queue; no other lock is device-wide.
struct QueueSlot {
    VkQueue queue = VK_NULL_HANDLE;
    std::mutex mutex;
};

struct DeviceContext {
    explicit DeviceContext(const lapse_host* h) : host(h) {}

    sdk::Host host;
    VkApi api;
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    bool own = true;               // own mode: the plugin created (and destroys) instance and device
    double period_ns = 1.0;        // VkPhysicalDeviceLimits::timestampPeriod
    bool host_query_reset = true;  // reset freed queries with vkResetQueryPool (else vkCmdResetQueryPool)
    VkPipelineStageFlagBits start_stage = VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT;
    VkPipelineStageFlagBits end_stage = VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT;
    Calibration calibration;

    // LAPSE_OK, or LAPSE_ERROR_DEVICE once any call returned
    // VK_ERROR_DEVICE_LOST: from then on every unresolved window is FAILED.
    std::atomic<lapse_status> lost{LAPSE_OK};
    std::atomic<uint64_t> validation_messages{0};

    bool is_lost() const noexcept { return lost.load(std::memory_order_acquire) != LAPSE_OK; }

    // Turns a failed VkResult into a status and a message naming the
    // operation, the Vulkan call and the result; marks the device lost on
    // VK_ERROR_DEVICE_LOST.
    lapse_status vk_fail(lapse_error* error, const char* operation, const char* call, VkResult result) noexcept
    {
        lapse_status status = LAPSE_ERROR_DEVICE;
        if (result == VK_ERROR_DEVICE_LOST) {
            lost.store(LAPSE_ERROR_DEVICE, std::memory_order_release);
        } else if (result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY) {
            status = LAPSE_ERROR_OUT_OF_MEMORY;
        }
        return sdk::failf(error, status, "vulkan: %s: %s failed: %s", operation, call, vk_result_name(result));
    }
};

}  // namespace lapse::vulkan
