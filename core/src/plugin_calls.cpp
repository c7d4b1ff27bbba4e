// Calls into a plugin that must survive a plugin built without the SDK:
// C++ exceptions must not cross the C ABI, but such a plugin may throw
// anyway, and the host turns that into the plugin's error.
#include "device_core.hpp"

#include <lapse/sdk/resolve_compact.hpp>
#include <lapse/sdk/window_dispatch.hpp>

#include <cstdio>
#include <exception>

namespace lapse::detail {

lapse_status plugin_threw(const lapse_plugin* plugin, const char* call, lapse_error& error) noexcept
{
    const char* who = plugin != nullptr && plugin->name != nullptr ? plugin->name : "(unnamed)";
    const char* what = "an exception that is not a std::exception";
    try {
        throw;
    } catch (const std::exception& e) {
        what = e.what();
    } catch (...) {
    }
    error.code = LAPSE_ERROR_INTERNAL;
    std::snprintf(error.message, sizeof error.message,
                  "plugin '%s': %s threw a C++ exception across the C ABI (a plugin must return a status): %s", who,
                  call, what);
    return LAPSE_ERROR_INTERNAL;
}

// sdk::window_dispatch_target, with the plugin's get_extension behind a
// catch: the SDK's version is noexcept, and a plugin built without the SDK
// may throw from it (the device is then its own target).
lapse_window_dispatch guarded_window_dispatch_target(const lapse_plugin* plugin, lapse_device* device) noexcept
{
    const lapse_window_dispatch self{sizeof(lapse_window_dispatch), 0, plugin, device};
    if (plugin == nullptr || device == nullptr || plugin->get_extension == nullptr) return self;
    try {
        if (plugin->get_extension(device, LAPSE_WINDOW_DISPATCH_EXTENSION) == nullptr) return self;
    } catch (...) {
        return self;
    }
    return sdk::window_dispatch_target(plugin, device);
}

// sdk::resolve_compact_of, with the plugin's get_extension behind a catch
// (a throw: the device resolves in full).
const lapse_resolve_compact* guarded_resolve_compact(const lapse_plugin* plugin, lapse_device* device) noexcept
{
    if (plugin == nullptr || device == nullptr || plugin->get_extension == nullptr) return nullptr;
    try {
        return sdk::usable_resolve_compact(plugin->get_extension(device, LAPSE_RESOLVE_COMPACT_EXTENSION));
    } catch (...) {
        return nullptr;
    }
}

}  // namespace lapse::detail
