// lapse core, internal (installed, included by lapse/core/device.hpp):
// what Device's inline members use to call into a plugin (the hot path's
// error buffer, the handler for a plugin that throws) and to own submitted
// work until it runs.
#pragma once

#include <lapse/core/detail/window_parts.hpp>
#include <lapse/core/export.hpp>
#include <lapse/plugin.h>

#include <exception>
#include <memory>
#include <type_traits>

namespace lapse::detail {

LAPSE_CORE_API void work_failed(DeviceCore* device, std::exception_ptr error) noexcept;
// Called from a catch handler around a call into a plugin: C++ exceptions
// must not cross the C ABI, but a plugin built without the SDK may throw
// anyway. Writes "plugin 'NAME': CALL threw ..." into `error` and returns
// LAPSE_ERROR_INTERNAL, so the call reads as that plugin's failure.
LAPSE_CORE_API lapse_status plugin_threw(const lapse_plugin* plugin, const char* call, lapse_error& error) noexcept;

// The options of a profile_end call: none (NULL, the ABI's default, of
// which the plugin reads nothing) unless the window is to flush.
inline constexpr lapse_end_options flush_end_options{sizeof(lapse_end_options), LAPSE_END_FLUSH};
inline const lapse_end_options* end_options(bool flush) noexcept { return flush ? &flush_end_options : nullptr; }

// A caller-owned error struct for the hot path: only the fields a plugin
// reads are set (the message is written by the plugin on failure only).
struct CallErrorBuffer {
    lapse_error e;
    CallErrorBuffer() noexcept
    {
        e.struct_size = sizeof(lapse_error);
        e.code = LAPSE_OK;
        e.message[0] = '\0';
    }
};

// Owns a submitted callable until the stream runs it exactly once.
template <class F>
struct WorkBox {
    DeviceCore* device;
    F fn;

    static void run(void* user, void* native) noexcept
    {
        std::unique_ptr<WorkBox> box(static_cast<WorkBox*>(user));
        try {
            if constexpr (std::is_invocable_v<F&, void*>)
                box->fn(native);
            else
                box->fn();
        } catch (...) {
            // The exception cannot cross the plugin's C ABI: keep it for
            // the next sync() on this device to rethrow.
            work_failed(box->device, std::current_exception());
        }
    }
    static void destroy(void* user) noexcept { delete static_cast<WorkBox*>(user); }
};

}  // namespace lapse::detail
