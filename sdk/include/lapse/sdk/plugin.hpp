// lapse SDK (C++) — adapts a C++ device class to the C ABI.
//
//   struct MyDevice {
//       static std::unique_ptr<MyDevice> open(lapse::sdk::Host, lapse::sdk::Config);
//       void describe(lapse_device_info& info);                   // stream_count, capabilities, name
//       lapse_status sync(lapse_stream, lapse_error*);
//       lapse_status submit(lapse_stream, lapse_work_fn, void* user, lapse_error*);
//       lapse_status profile_start(lapse_stream, lapse_token&, lapse_error*);
//       lapse_status profile_end(lapse_token, uint32_t flags, lapse_error*);
//       void profile_abandon(lapse_token) noexcept;
//       lapse_status resolve(const lapse_token*, lapse_duration*, uint32_t count,
//                            uint64_t timeout_ns, lapse_error*);
//       const void* extension(std::string_view id);              // optional
//       ~MyDevice();                                             // = close
//   };
//
//   LAPSE_PLUGIN_ENTRY {
//       static const lapse_plugin plugin = lapse::sdk::make_plugin<MyDevice>(
//           "mine", "1.0.0", "what it measures", LAPSE_CAP_DEVICE_CLOCK | ...);
//       (void)host;
//       return &plugin;
//   }
//
// Every trampoline is noexcept: whatever the class throws (sdk::Error,
// std::bad_alloc, anything) becomes a status and a message at the boundary.
// Arguments the ABI forbids (null pointers, short structs) are refused
// before the class sees them.
#pragma once

#include <lapse/lapse.h>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/host.hpp>

#include <memory>
#include <string_view>

namespace lapse::sdk {

namespace detail {

template <class D>
D* self(lapse_device* device) noexcept
{
    return reinterpret_cast<D*>(device);
}

template <class D>
struct Adapter {
    static lapse_status open(const lapse_host* host, const lapse_config* config, lapse_device** out,
                             lapse_error* error) noexcept
    {
        if (out == nullptr) return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "open: out is null");
        *out = nullptr;
        if (host == nullptr) return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "open: host is null");
        try {
            std::unique_ptr<D> device = D::open(Host(host), Config(host, config));
            if (!device) return fail(error, LAPSE_ERROR_INTERNAL, "open: the plugin returned no device");
            *out = reinterpret_cast<lapse_device*>(device.release());
            return LAPSE_OK;
        } catch (...) {
            return status_from_current_exception(error, "open");
        }
    }

    static void close(lapse_device* device) noexcept
    {
        // A destructor that throws would terminate here, which is the right
        // outcome for a bug that cannot be reported: close cannot fail.
        delete self<D>(device);
    }

    static lapse_status describe(lapse_device* device, lapse_device_info* out, lapse_error* error) noexcept
    {
        if (device == nullptr || out == nullptr)
            return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "describe: null argument");
        if (out->struct_size < sizeof(lapse_device_info))
            return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "describe: lapse_device_info is too short");
        try {
            uint32_t size = out->struct_size;
            *out = lapse_device_info{};
            out->struct_size = size;
            self<D>(device)->describe(*out);
            out->name[sizeof out->name - 1] = '\0';
            return LAPSE_OK;
        } catch (...) {
            return status_from_current_exception(error, "describe");
        }
    }

    static lapse_status sync(lapse_device* device, lapse_stream stream, lapse_error* error) noexcept
    {
        if (device == nullptr) return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "sync: device is null");
        try {
            return self<D>(device)->sync(stream, error);
        } catch (...) {
            return status_from_current_exception(error, "sync");
        }
    }

    static lapse_status submit(lapse_device* device, lapse_stream stream, lapse_work_fn fn, void* user,
                               lapse_error* error) noexcept
    {
        if (device == nullptr || fn == nullptr)
            return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "submit: null device or function");
        try {
            return self<D>(device)->submit(stream, fn, user, error);
        } catch (...) {
            return status_from_current_exception(error, "submit");
        }
    }

    static lapse_status profile_start(lapse_device* device, lapse_stream stream, lapse_token* token,
                                      lapse_error* error) noexcept
    {
        if (device == nullptr || token == nullptr)
            return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "profile_start: null argument");
        try {
            return self<D>(device)->profile_start(stream, *token, error);
        } catch (...) {
            return status_from_current_exception(error, "profile_start");
        }
    }

    static lapse_status profile_end(lapse_device* device, lapse_token token, const lapse_end_options* options,
                                    lapse_error* error) noexcept
    {
        if (device == nullptr) return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "profile_end: device is null");
        uint32_t flags = 0;
        if (options != nullptr) {
            if (options->struct_size < sizeof(lapse_end_options))
                return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "profile_end: lapse_end_options is too short");
            flags = options->flags;
        }
        try {
            return self<D>(device)->profile_end(token, flags, error);
        } catch (...) {
            return status_from_current_exception(error, "profile_end");
        }
    }

    static void profile_abandon(lapse_device* device, lapse_token token) noexcept
    {
        if (device == nullptr) return;
        try {
            self<D>(device)->profile_abandon(token);
        } catch (...) {
            // Abandon cannot fail: it runs during unwinding.
        }
    }

    static lapse_status resolve(lapse_device* device, const lapse_token* tokens, lapse_duration* out,
                                uint32_t count, uint64_t timeout_ns, lapse_error* error) noexcept
    {
        if (device == nullptr || (count > 0 && (tokens == nullptr || out == nullptr)))
            return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "resolve: null argument");
        // `out` is one array, so one element size: checking out[0] checks
        // them all, without a pass over a million durations before the real one.
        if (count > 0 && out[0].struct_size < sizeof(lapse_duration))
            return failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                         "resolve: out[0].struct_size is %u, shorter than lapse_duration (%zu bytes)",
                         out[0].struct_size, sizeof(lapse_duration));
        try {
            return self<D>(device)->resolve(tokens, out, count, timeout_ns, error);
        } catch (...) {
            return status_from_current_exception(error, "resolve");
        }
    }

    static const void* get_extension(lapse_device* device, const char* id) noexcept
    {
        if (device == nullptr || id == nullptr) return nullptr;
        if constexpr (requires(D& d) { d.extension(std::string_view{}); }) {
            try {
                return self<D>(device)->extension(std::string_view(id));
            } catch (...) {
                return nullptr;
            }
        } else {
            return nullptr;
        }
    }
};

}  // namespace detail

// Builds the descriptor for device class D. Keep the result in a static.
template <class D>
constexpr lapse_plugin make_plugin(const char* name, const char* version, const char* description,
                                   uint64_t capabilities) noexcept
{
    using A = detail::Adapter<D>;
    lapse_plugin p{};
    p.struct_size = sizeof(lapse_plugin);
    p.abi_major = LAPSE_ABI_MAJOR;
    p.abi_minor = LAPSE_ABI_MINOR;
    p.name = name;
    p.version = version;
    p.description = description;
    p.capabilities = capabilities;
    p.open = &A::open;
    p.close = &A::close;
    p.describe = &A::describe;
    p.sync = &A::sync;
    p.submit = &A::submit;
    p.profile_start = &A::profile_start;
    p.profile_end = &A::profile_end;
    p.profile_abandon = &A::profile_abandon;
    p.resolve = &A::resolve;
    p.get_extension = &A::get_extension;
    return p;
}

// Refuses a host whose ABI major differs, saying why through its log.
inline bool host_is_compatible(const lapse_host* host, const char* plugin_name) noexcept
{
    if (host == nullptr || host->struct_size < sizeof(uint32_t) * 3) return false;
    if (host->abi_major != LAPSE_ABI_MAJOR) {
        if (host->struct_size >= sizeof(lapse_host) && host->log != nullptr) {
            char msg[160];
            std::snprintf(msg, sizeof msg, "%s: built for lapse ABI %d, host speaks %u; refusing to load",
                          plugin_name, LAPSE_ABI_MAJOR, host->abi_major);
            host->log(host, LAPSE_LOG_ERROR, msg);
        }
        return false;
    }
    return true;
}

}  // namespace lapse::sdk
