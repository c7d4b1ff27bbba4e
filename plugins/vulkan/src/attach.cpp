// The extension lapse.vulkan.commands/1 (include/lapse/vulkan.h): attach
// the host's device and queues, write windows into the host's own command
// buffers, and hand out the handles behind a stream.
#include "device.hpp"

#include <lapse/sdk/error.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace lapse::vulkan {

// ---------------------------------------------------------------------------
// lapse.vulkan.commands/1

namespace {

Device* self(lapse_device* d) noexcept { return reinterpret_cast<Device*>(d); }

// Every entry point of the extension: a null device is refused, and nothing
// the device throws crosses the C boundary.
template <auto Method, class... Args>
lapse_status guarded(const char* what, lapse_device* d, lapse_error* e, Args... args) noexcept
{
    if (d == nullptr) return sdk::failf(e, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: %s: device is null", what);
    try {
        return (self(d)->*Method)(args..., e);
    } catch (...) {
        char call[64];
        std::snprintf(call, sizeof call, "vulkan: %s", what);
        return sdk::status_from_current_exception(e, call);
    }
}

lapse_status ext_attach(lapse_device* d, const lapse_vulkan_attach_info* info, lapse_stream* stream, lapse_error* e) noexcept
{
    return guarded<&Device::attach>("attach", d, e, info, stream);
}

lapse_status ext_cmd_start(lapse_device* d, VkCommandBuffer cb, lapse_stream stream, lapse_token* token,
                           lapse_error* e) noexcept
{
    return guarded<&Device::cmd_profile_start>("cmd_profile_start", d, e, cb, stream, token);
}

lapse_status ext_cmd_end(lapse_device* d, VkCommandBuffer cb, lapse_token token, lapse_error* e) noexcept
{
    return guarded<&Device::cmd_profile_end>("cmd_profile_end", d, e, cb, token);
}

lapse_status ext_handles(lapse_device* d, lapse_stream stream, lapse_vulkan_handles* out, lapse_error* e) noexcept
{
    return guarded<&Device::handles>("handles", d, e, stream, out);
}

uint64_t ext_validation_count(lapse_device* d) noexcept { return d ? self(d)->validation_message_count() : 0; }

const lapse_vulkan_commands kCommands = {
    sizeof(lapse_vulkan_commands), 0, &ext_attach, &ext_cmd_start, &ext_cmd_end, &ext_handles, &ext_validation_count,
};

}  // namespace

const void* Device::extension(std::string_view id)
{
    if (id == LAPSE_VULKAN_COMMANDS_ID) return &kCommands;
    if (id == LAPSE_RESOLVE_COMPACT_EXTENSION) return compact_extension();
    return nullptr;
}

uint64_t Device::validation_message_count() const noexcept
{
    return ctx_->validation_messages.load(std::memory_order_relaxed);
}

lapse_status Device::attach(const lapse_vulkan_attach_info* info, lapse_stream* out_stream, lapse_error* error)
{
    if (info == nullptr || out_stream == nullptr)
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: attach: null argument");
    if (info->struct_size < sizeof(lapse_vulkan_attach_info))
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: attach: lapse_vulkan_attach_info is too short");
    if (ctx_->own)
        return sdk::fail(error, LAPSE_ERROR_UNSUPPORTED,
                         "vulkan: attach: this device was opened in own mode; open one with mode = \"attach\"");
    if (info->instance == VK_NULL_HANDLE || info->physical_device == VK_NULL_HANDLE || info->device == VK_NULL_HANDLE ||
        info->queue == VK_NULL_HANDLE)
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: attach: instance, physical device, device and queue are required");
    uint32_t n = stream_count_.load();
    if (n >= kMaxAttachStreams)
        return sdk::failf(error, LAPSE_ERROR_CAPACITY, "vulkan: attach: at most %u queues can be attached", kMaxAttachStreams);
    if (!info->host_query_reset_enabled)
        return sdk::fail(error, LAPSE_ERROR_UNSUPPORTED,
                         "vulkan: attach: enable hostQueryReset (VkPhysicalDeviceVulkan12Features or "
                         "VK_EXT_host_query_reset) on your VkDevice: in attach mode the plugin cannot see when your "
                         "command buffers complete, so it resets freed queries on the host");
    DeviceContext& ctx = *ctx_;
    VkApi& vk = ctx.api;
    std::string why;
    if (n == 0) {
        if (!vk.load_loader(info->get_instance_proc_addr, why)) return sdk::fail(error, LAPSE_ERROR_UNAVAILABLE, "vulkan: attach: " + why);
        if (!vk.load_instance(info->instance, why)) return sdk::fail(error, LAPSE_ERROR_UNAVAILABLE, "vulkan: attach: " + why);
        if (!vk.load_device(info->device, why)) return sdk::fail(error, LAPSE_ERROR_UNAVAILABLE, "vulkan: attach: " + why);
        if (vk.vkResetQueryPool == nullptr)
            return sdk::fail(error, LAPSE_ERROR_UNSUPPORTED, "vulkan: attach: the device has no vkResetQueryPool");
        ctx.instance = info->instance;
        ctx.physical = info->physical_device;
        ctx.device = info->device;
        ctx.host_query_reset = true;
        VkPhysicalDeviceProperties props;
        vk.vkGetPhysicalDeviceProperties(ctx.physical, &props);
        ctx.period_ns = static_cast<double>(props.limits.timestampPeriod);
        std::snprintf(name_, sizeof name_, "%.127s", props.deviceName);
        if (info->calibrated_timestamps_enabled && settings_.calibrate && vk.vkGetCalibratedTimestampsEXT != nullptr &&
            offers_monotonic_calibration(vk, ctx.physical))
            ctx.calibration.configure(vk.vkGetCalibratedTimestampsEXT, ctx.device, settings_.recalibrate_ns);
    } else if (info->device != ctx.device) {
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: attach: every attached queue must belong to the same VkDevice");
    }
    uint32_t nf = 0;
    vk.vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical, &nf, nullptr);
    if (info->queue_family_index >= nf)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: attach: queue family %u does not exist (the device has %u)",
                          info->queue_family_index, nf);
    std::vector<VkQueueFamilyProperties> families(nf);
    vk.vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical, &nf, families.data());

    StreamConfig sc;
    sc.index = n;
    sc.family = info->queue_family_index;
    sc.valid_bits = valid_bits_for(families[sc.family].timestampValidBits);
    sc.ring_windows = settings_.ring_windows;
    sc.attached_queue = info->queue;
    auto s = std::make_unique<Stream>(ctx, sc);
    if (lapse_status st = s->init(error); st != LAPSE_OK) return st;
    streams_[n] = std::move(s);
    stream_count_.store(n + 1, std::memory_order_release);
    if (VkResult r = ctx.calibration.prime(sdk::monotonic_ns()); r != VK_SUCCESS)
        return ctx.vk_fail(error, "attach", "vkGetCalibratedTimestampsEXT", r);
    *out_stream = n;
    return LAPSE_OK;
}

lapse_status Device::cmd_profile_start(VkCommandBuffer cb, lapse_stream index, lapse_token* token, lapse_error* error)
{
    if (cb == VK_NULL_HANDLE || token == nullptr)
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: cmd_profile_start: null command buffer or token");
    Stream* s = stream(index);
    if (s == nullptr)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "vulkan: cmd_profile_start: stream %u does not exist (the device has %u)", index,
                          stream_count_.load());
    if (!s->has_clock()) return LAPSE_NO_WINDOW;
    return s->cmd_start(cb, *token, error);
}

lapse_status Device::cmd_profile_end(VkCommandBuffer cb, lapse_token token, lapse_error* error)
{
    if (cb == VK_NULL_HANDLE)
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: cmd_profile_end: null command buffer");
    uint64_t position = 0;
    lapse_status status = LAPSE_OK;
    Stream* s = token_stream(token, position, "cmd_profile_end", error, status);
    if (s == nullptr) return status;
    return s->cmd_end(cb, position, token, error);
}

lapse_status Device::handles(lapse_stream index, lapse_vulkan_handles* out, lapse_error* error)
{
    if (out == nullptr || out->struct_size < sizeof(lapse_vulkan_handles))
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: handles: null or short lapse_vulkan_handles");
    Stream* s = stream(index);
    if (s == nullptr)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: handles: stream %u does not exist (the device has %u)",
                          index, stream_count_.load());
    uint32_t size = out->struct_size;
    std::memset(out, 0, sizeof *out);
    out->struct_size = size;
    out->queue_family_index = s->family();
    out->instance = ctx_->instance;
    out->physical_device = ctx_->physical;
    out->device = ctx_->device;
    out->queue = s->queue();
    out->get_instance_proc_addr = ctx_->api.vkGetInstanceProcAddr;
    out->timestamp_valid_bits = s->valid_bits();
    out->timestamp_period_ns = ctx_->period_ns;
    return LAPSE_OK;
}


}  // namespace lapse::vulkan
