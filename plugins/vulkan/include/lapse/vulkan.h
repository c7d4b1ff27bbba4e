/* lapse Vulkan plugin — the public extension "lapse.vulkan.commands/1".
 *
 * Obtain it with plugin->get_extension(device, LAPSE_VULKAN_COMMANDS_ID);
 * check struct_size >= the end of the last member you call. C99, like the
 * rest of the ABI.
 *
 * Two ways to use the plugin:
 *
 *  - Own mode (config `mode = "own"`, the default): the plugin creates its
 *    instance, device and compute queues. The generic ABI does everything:
 *    profile_start / profile_end / submit / sync / resolve. `submit` hands
 *    your callback a VkCommandBuffer in the recording state; record compute
 *    work into it, do not end, submit or keep it. `handles` tells you the
 *    VkDevice so you can create pipelines for that work.
 *
 *  - Attach mode (config `mode = "attach"`): the plugin uses YOUR instance,
 *    device and queue. Call `attach` once per queue you want timed; each
 *    call adds a stream. Then write window starts and ends into your own
 *    command buffers with cmd_profile_start / cmd_profile_end, submit them
 *    yourself, and read durations with the generic resolve (and abandon
 *    with the generic profile_abandon). The generic profile_start,
 *    profile_end, submit and sync answer LAPSE_ERROR_UNSUPPORTED on an
 *    attached stream: the plugin never touches your queue.
 *    describe answers for the device as it is now (0 streams and "not
 *    attached yet" before the first attach); a host that caches it asks
 *    again after attaching (the C++ lapse::Device::info() does so itself
 *    once the extension has been handed out).
 *
 * Timestamp stages: a window's start is written at
 * VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT (when the commands before it have
 * started: cheap everywhere, and the only stage lavapipe writes without
 * draining its pipeline), its end at VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT
 * (when every command before it has completed). A window therefore covers
 * its work from launch to completion; work recorded before the window that
 * is still running when it opens is included, as in every GPU profiler
 * that does not insert barriers. Config `start_stage = "bottom_of_pipe"`
 * starts the window only after earlier work completed.
 */
#ifndef LAPSE_VULKAN_H
#define LAPSE_VULKAN_H

#include <stdint.h>

#include <lapse/lapse.h>
#include <vulkan/vulkan_core.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LAPSE_VULKAN_COMMANDS_ID "lapse.vulkan.commands/1"

/* What `attach` needs from the host. The host keeps every handle alive
 * until the lapse device is closed. */
typedef struct lapse_vulkan_attach_info {
    uint32_t struct_size;         /* sizeof(lapse_vulkan_attach_info) */
    uint32_t queue_family_index;  /* family of `queue` */
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    /* The queue your command buffers go to. The plugin never submits to
     * it; it only needs the family's timestampValidBits. */
    VkQueue queue;
    /* Optional: the vkGetInstanceProcAddr you use. NULL: the plugin opens
     * the system loader (libvulkan.so.1). */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr;
    /* Non-zero when you enabled VkPhysicalDeviceHostQueryResetFeatures::
     * hostQueryReset on `device` (Vulkan 1.2 core). Required: the plugin
     * cannot see when your command buffers complete, so it resets freed
     * queries on the host, after reading them, and never by a command that
     * could run after a later read. */
    uint32_t host_query_reset_enabled;
    /* Non-zero when you enabled VK_EXT_calibrated_timestamps on `device`;
     * durations then carry LAPSE_CLOCK_HOST_MONOTONIC. */
    uint32_t calibrated_timestamps_enabled;
} lapse_vulkan_attach_info;

/* The Vulkan objects behind a stream. */
typedef struct lapse_vulkan_handles {
    uint32_t struct_size; /* sizeof(lapse_vulkan_handles), set by the caller */
    uint32_t queue_family_index;
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;
    /* The stream's queue. In own mode the plugin submits to it under its
     * own lock: do not submit to it yourself, hand work to `submit`. */
    VkQueue queue;
    PFN_vkGetInstanceProcAddr get_instance_proc_addr;
    uint32_t timestamp_valid_bits; /* of the queue family, 0 = no clock */
    uint32_t reserved;             /* 0 */
    double timestamp_period_ns;    /* VkPhysicalDeviceLimits::timestampPeriod */
} lapse_vulkan_handles;

typedef struct lapse_vulkan_commands {
    uint32_t struct_size; /* sizeof(lapse_vulkan_commands) as the plugin was built */
    uint32_t reserved;

    /* Attach mode only: binds the device to the host's Vulkan objects and
     * adds one stream for `info->queue`; *stream receives its index. Every
     * call must name the same VkDevice. [any thread, not concurrently with
     * any other call on the device] */
    lapse_status (*attach)(lapse_device* device, const lapse_vulkan_attach_info* info, lapse_stream* stream,
                           lapse_error* error);

    /* Writes a window start into `command_buffer` (recording, on a queue of
     * `stream`'s family) and fills *token. Attach mode: any command buffer
     * of yours, recorded by the calling thread. Own mode: only the command
     * buffer a submit callback of `stream` received, from inside that
     * callback (to time part of the callback's own work). Answers
     * LAPSE_NO_WINDOW when the family has no timestamps, and
     * LAPSE_ERROR_CAPACITY when the stream's query ring is full.
     * [thread-safe; the command buffer is externally synchronized, as
     * Vulkan requires] */
    lapse_status (*cmd_profile_start)(lapse_device* device, VkCommandBuffer command_buffer, lapse_stream stream,
                                      lapse_token* token, lapse_error* error);

    /* Writes the window's end into `command_buffer` (the same one or a later
     * one on the same queue). The window is read by resolve once the
     * command buffer has run. A window whose command buffer you discard
     * without submitting must be abandoned; note that its queries then stay
     * in the ring until they become available (attach mode), so a host
     * that discards many such windows should size ring_size for it.
     * [thread-safe] */
    lapse_status (*cmd_profile_end)(lapse_device* device, VkCommandBuffer command_buffer, lapse_token token,
                                    lapse_error* error);

    /* The Vulkan objects behind `stream`. [thread-safe] */
    lapse_status (*handles)(lapse_device* device, lapse_stream stream, lapse_vulkan_handles* out,
                            lapse_error* error);

    /* How many warning or error messages the validation layer has emitted
     * on the plugin's own instance (own mode with `validation = true`).
     * Tests assert that it stays 0. [thread-safe] */
    uint64_t (*validation_message_count)(lapse_device* device);
} lapse_vulkan_commands;

#ifdef __cplusplus
}
#endif

#endif /* LAPSE_VULKAN_H */
