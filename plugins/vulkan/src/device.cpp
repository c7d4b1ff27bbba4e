// The Vulkan device's routing: open (own or attach mode), close, and every
// generic ABI call handed to the stream its index or token names.
#include "device.hpp"

#include "token.hpp"

#include <lapse/sdk/error.hpp>

#include <cinttypes>
#include <string>

namespace lapse::vulkan {

Device::Device(const lapse_host* host) : ctx_(std::make_unique<DeviceContext>(host)) {}

// ---------------------------------------------------------------------------
// Open (own mode)

std::unique_ptr<Device> Device::open(sdk::Host host, sdk::Config config)
{
    auto device = std::make_unique<Device>(host.get());
    device->settings_ = read_settings(config);
    device->ctx_->start_stage = device->settings_.start_stage;
    if (device->settings_.attach) {
        device->ctx_->own = false;
        std::snprintf(device->name_, sizeof device->name_, "vulkan (attach mode, not attached yet)");
        return device;
    }
    device->open_own(device->settings_);
    return device;
}

Device::~Device()
{
    uint32_t n = stream_count_.load();
    uint64_t live = 0;
    for (uint32_t i = 0; i < n; ++i) live += streams_[i]->shutdown();
    if (live > 0)
        ctx_->host.warn("vulkan: close: abandoned " + std::to_string(live) +
                        " window(s) still open or closed and never resolved");
    // Streams (query pools, command pools) go before the device; this also
    // covers a stream whose init failed during open.
    for (auto& s : streams_) s.reset();
    VkApi& vk = ctx_->api;
    if (ctx_->own) {
        if (ctx_->device != VK_NULL_HANDLE) {
            if (!ctx_->is_lost()) vk.vkDeviceWaitIdle(ctx_->device);
            vk.vkDestroyDevice(ctx_->device, nullptr);
        }
        if (messenger_ != VK_NULL_HANDLE) vk.vkDestroyDebugUtilsMessengerEXT(ctx_->instance, messenger_, nullptr);
        if (ctx_->instance != VK_NULL_HANDLE) vk.vkDestroyInstance(ctx_->instance, nullptr);
    }
}

// ---------------------------------------------------------------------------
// Generic ABI

void Device::describe(lapse_device_info& info)
{
    uint32_t n = stream_count_.load(std::memory_order_acquire);
    info.stream_count = n;
    uint64_t caps = LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS;
    if (n > 0 && streams_[0]->has_clock()) {
        caps |= LAPSE_CAP_DEVICE_CLOCK;
        if (ctx_->calibration.enabled()) caps |= LAPSE_CAP_HOST_TIMELINE;
    }
    info.capabilities = caps;
    std::snprintf(info.name, sizeof info.name, "%s", name_);
}

lapse_status Device::sync(lapse_stream index, lapse_error* error)
{
    if (index == LAPSE_ALL_STREAMS) {
        uint32_t n = stream_count_.load(std::memory_order_acquire);
        for (uint32_t i = 0; i < n; ++i)
            if (streams_[i]->own())
                if (lapse_status st = streams_[i]->sync(error); st != LAPSE_OK) return st;
        return LAPSE_OK;
    }
    Stream* s = stream(index);
    if (s == nullptr)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: sync: stream %u does not exist (the device has %u)",
                          index, stream_count_.load());
    if (!s->own())
        return sdk::failf(error, LAPSE_ERROR_UNSUPPORTED,
                          "vulkan: sync: stream %u is attached: the host owns its queue and waits on it itself", index);
    return s->sync(error);
}

lapse_status Device::submit(lapse_stream index, lapse_work_fn fn, void* user, lapse_error* error)
{
    Stream* s = stream(index);
    if (s == nullptr)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "vulkan: submit: stream %u does not exist (the device has %u)", index, stream_count_.load());
    if (!s->own())
        return sdk::failf(error, LAPSE_ERROR_UNSUPPORTED,
                          "vulkan: submit: stream %u is attached: record into your own command buffers", index);
    return s->submit(fn, user, error);
}

lapse_status Device::profile_start(lapse_stream index, lapse_token& token, lapse_error* error)
{
    Stream* s = stream(index);
    if (s == nullptr)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "vulkan: profile_start: stream %u does not exist (the device has %u)", index,
                          stream_count_.load());
    if (!s->own())
        return sdk::failf(error, LAPSE_ERROR_UNSUPPORTED,
                          "vulkan: profile_start: stream %u is attached: use cmd_profile_start of " LAPSE_VULKAN_COMMANDS_ID,
                          index);
    if (!s->has_clock()) return LAPSE_NO_WINDOW;  // no timestamps on this queue: measure in system time
    return s->start(token, error);
}

Stream* Device::token_stream(lapse_token token, uint64_t& position, const char* operation, lapse_error* error,
                             lapse_status& status)
{
    uint32_t index = 0;
    Stream* s = nullptr;
    if (decode_token_id(token.id, position, index)) s = stream(index);
    if (s == nullptr) {
        status = sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN, "vulkan: %s: token %" PRIu64 " was not issued by this device",
                            operation, token.id);
        return nullptr;
    }
    if (token.opened_on != index) {
        if (s->has_window(position))
            status = sdk::failf(error, LAPSE_ERROR_WRONG_STREAM,
                                "vulkan: %s: token %" PRIu64 " says opened_on = %u but its window was opened on stream %u",
                                operation, token.id, token.opened_on, index);
        else
            status = sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN,
                                "vulkan: %s: token %" PRIu64 " (stream %u) names no open window", operation, token.id,
                                token.opened_on);
        return nullptr;
    }
    return s;
}

lapse_status Device::profile_end(lapse_token token, uint32_t flags, lapse_error* error)
{
    // LAPSE_END_FLUSH is accepted and has nothing to do: the end stamp is
    // recorded after every command already handed to the stream, and
    // submit() never holds work back.
    if ((flags & ~static_cast<uint32_t>(LAPSE_END_FLUSH)) != 0)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "vulkan: profile_end: unknown flags 0x%x", flags);
    uint64_t position = 0;
    lapse_status status = LAPSE_OK;
    Stream* s = token_stream(token, position, "profile_end", error, status);
    if (s == nullptr) return status;
    if (!s->own())
        return sdk::failf(error, LAPSE_ERROR_UNSUPPORTED,
                          "vulkan: profile_end: stream %u is attached: use cmd_profile_end of " LAPSE_VULKAN_COMMANDS_ID,
                          token.opened_on);
    return s->end(position, token, error);
}

void Device::profile_abandon(lapse_token token) noexcept
{
    uint64_t position = 0;
    uint32_t index = 0;
    if (!decode_token_id(token.id, position, index) || index != token.opened_on) return;
    if (Stream* s = stream(index)) s->abandon(position);
}

}  // namespace lapse::vulkan
