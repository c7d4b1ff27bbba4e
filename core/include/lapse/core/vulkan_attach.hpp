// lapse core — Vulkan attach mode in the C++ API: windows written into the
// host's own VkCommandBuffers yield lapse::Durations and record into the
// session and capture like any other named window, so an engine needs no
// raw lapse_duration, token or dev.plugin().resolve(...).
//
//   lapse::Device dev = runtime.open(config);          // vulkan, mode = "attach"
//   lapse::VulkanAttach vk(dev);
//   const lapse::Stream s = vk.attach(info);           // the host's instance, device, queue
//   lapse::Window w = vk.start(cb, s, "shadow pass");  // into the host's command buffer
//   record_shadow_pass(cb);
//   lapse::Duration d = vk.end(cb, w);                 // keep it, resolve it, or drop it
//   /* ... the host submits cb ... */
//
// Header-only; include it where the Vulkan headers and the plugin's
// <lapse/vulkan.h> (target lapse::vulkan_api) are on the include path.
// Thread safety: as lapse.vulkan.commands/1 (lapse/vulkan.h): attach not
// concurrently with any other call on the device; start and end from any
// thread, each command buffer externally synchronized, as Vulkan requires.
#pragma once

#include <lapse/core/device.hpp>
#include <lapse/core/error.hpp>
#include <lapse/vulkan.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace lapse {

class VulkanAttach {
public:
    // Throws Error (LAPSE_ERROR_UNSUPPORTED) when the device's backend does
    // not offer lapse.vulkan.commands/1, or offers a table too short to
    // hold the three calls this class makes (required_commands_size).
    explicit VulkanAttach(Device& device)
        : device_(&device), ext_(static_cast<const lapse_vulkan_commands*>(device.extension(LAPSE_VULKAN_COMMANDS_ID)))
    {
        if (ext_ == nullptr)
            throw Error(LAPSE_ERROR_UNSUPPORTED, std::string("VulkanAttach: the device's backend does not offer ") +
                                                     LAPSE_VULKAN_COMMANDS_ID);
        // The ABI's growth rule (lapse/plugin.h): a table is usable when its
        // struct_size reaches the end of the last field read, so an older
        // plugin's shorter table and a newer plugin's longer one both work.
        if (ext_->struct_size < required_commands_size)
            throw Error(LAPSE_ERROR_UNSUPPORTED,
                        std::string("VulkanAttach: the backend's lapse_vulkan_commands (") + LAPSE_VULKAN_COMMANDS_ID +
                            ") has struct_size " + std::to_string(ext_->struct_size) + ", too short: attach, "
                            "cmd_profile_start and cmd_profile_end need " + std::to_string(required_commands_size) +
                            " bytes");
    }

    // The bytes of lapse_vulkan_commands this class reads: through
    // cmd_profile_end, the last of the three calls it makes.
    static constexpr std::size_t required_commands_size =
        offsetof(lapse_vulkan_commands, cmd_profile_end) + sizeof(lapse_vulkan_commands::cmd_profile_end);

    // Binds the host's Vulkan objects (one queue) and returns the stream
    // they became; the device's info() is refreshed to show it. Throws
    // Error with the plugin's cause.
    Stream attach(const lapse_vulkan_attach_info& info)
    {
        lapse_error error = make_error();
        lapse_stream stream = 0;
        const lapse_status s = ext_->attach(device_->handle(), &info, &stream, &error);
        if (s != LAPSE_OK) throw Error(s, std::string("VulkanAttach::attach: ") + error.message);
        device_->refresh_info();
        return stream;
    }

    // Writes a window start into `command_buffer` (recording, on a queue of
    // `stream`). Never throws for a window that cannot open: the Window
    // carries the error, as Device::profile_start's does.
    Window start(VkCommandBuffer command_buffer, Stream stream, std::string_view name = {})
    {
        lapse_error error = make_error();
        lapse_token token{};
        const lapse_status s = ext_->cmd_profile_start(device_->handle(), command_buffer, stream, &token, &error);
        return device_->adopt_start(stream, s, token, &error, name);
    }

    // Writes the window's end into `command_buffer` (the same one or a
    // later one on the same queue) and returns its Duration: pending until
    // the host's submission has run. A named window is recorded whether the
    // Duration is kept, resolved or dropped.
    Duration end(VkCommandBuffer command_buffer, Window& window)
    {
        if (window.kind() != Window::Kind::device) return device_->adopt_end(window, LAPSE_OK, nullptr);
        lapse_error error = make_error();
        const lapse_status s = ext_->cmd_profile_end(device_->handle(), command_buffer, window.token(), &error);
        return device_->adopt_end(window, s, &error);
    }

    // start, record(), end: a window around what `record` writes into
    // `command_buffer`. A throw from `record` abandons the window.
    template <class F>
    Duration profile(VkCommandBuffer command_buffer, Stream stream, F&& record, std::string_view name = {})
    {
        Window window = start(command_buffer, stream, name);
        std::forward<F>(record)();
        return end(command_buffer, window);
    }

    // The backend's table as it is: the plugin's struct_size may be shorter
    // than this build's sizeof, so check it reaches a member (handles,
    // validation_message_count) before calling one beyond cmd_profile_end.
    const lapse_vulkan_commands& commands() const noexcept { return *ext_; }

private:
    static lapse_error make_error() noexcept
    {
        lapse_error e{};
        e.struct_size = sizeof e;
        return e;
    }

    Device* device_;
    const lapse_vulkan_commands* ext_;
};

}  // namespace lapse
