// lapse sdk — where a device's windows really open (lapse/dispatch.h).
//
//   lapse_window_dispatch hot = lapse::sdk::window_dispatch_target(plugin, device);
//   hot.plugin->profile_start(hot.device, stream, &token, &error);
//
// Used by the host for its hot path and by a layer for its own inner calls,
// so a stack of layers that add nothing to a window is called past in one
// step. Never fails: a device without the extension (or with one that does
// not hold up) is its own target.
#pragma once

#include <lapse/dispatch.h>

#include <cstddef>

namespace lapse::sdk {

// The target of `device`'s lapse.window_dispatch/1 extension, or the device
// itself. [any thread; once per device, not per window]
inline lapse_window_dispatch window_dispatch_target(const lapse_plugin* plugin, lapse_device* device) noexcept
{
    const lapse_window_dispatch self{sizeof(lapse_window_dispatch), 0, plugin, device};
    if (plugin == nullptr || device == nullptr || plugin->get_extension == nullptr) return self;
    const auto* d =
        static_cast<const lapse_window_dispatch*>(plugin->get_extension(device, LAPSE_WINDOW_DISPATCH_EXTENSION));
    // Any minor's struct that reaches `device` (the last field read) will do.
    constexpr std::size_t size_read = offsetof(lapse_window_dispatch, device) + sizeof(lapse_device*);
    if (d == nullptr || d->struct_size < size_read || d->plugin == nullptr ||
        d->device == nullptr)
        return self;
    const lapse_plugin& target = *d->plugin;
    if (target.profile_start == nullptr || target.profile_end == nullptr || target.profile_abandon == nullptr)
        return self;
    return lapse_window_dispatch{sizeof(lapse_window_dispatch), 0, d->plugin, d->device};
}

}  // namespace lapse::sdk
