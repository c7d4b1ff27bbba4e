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
//       // Refuse (and say why, through host->log) a host of another ABI major.
//       if (!lapse::sdk::host_is_compatible(host, "mine")) return nullptr;
//       static const lapse_plugin plugin = lapse::sdk::make_plugin<MyDevice>(
//           "mine", "1.0.0", "what it measures", LAPSE_CAP_DEVICE_CLOCK | ...);
//       return &plugin;
//   }
//
// Every trampoline is noexcept: whatever the class throws (sdk::Error,
// std::bad_alloc, anything) becomes a status and a message at the boundary.
// Arguments the ABI forbids (null pointers, structs too short for the fields
// read or written) are refused before the class sees them.
//
// Growth (error.hpp): the class always sees structs of this build's size.
// A caller's struct may be shorter (an older minor) or longer (a newer
// one): the adapter accepts any size that reaches the last field of ABI
// 1.0 it reads or writes, and writes back only min(caller's size, ours).
// For resolve that means the caller's element stride, out[0].struct_size:
// a caller built against another minor gets its durations copied through
// a buffer of this build's layout, a caller of the same build (the hot
// path) is passed through untouched.
#pragma once

#include <lapse/lapse.h>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/host.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>

namespace lapse::sdk {

// The fields of ABI 1.0 the adapter reads or writes in each struct a
// caller passes: the least struct_size it accepts.
inline constexpr std::size_t device_info_size_written = LAPSE_SDK_SIZE_THROUGH(lapse_device_info, name);
inline constexpr std::size_t end_options_size_read = LAPSE_SDK_SIZE_THROUGH(lapse_end_options, flags);
inline constexpr std::size_t duration_size_written = LAPSE_SDK_SIZE_THROUGH(lapse_duration, failure);

namespace detail {

// Copies the bytes two builds' views of a struct share, struct_size
// excepted (it belongs to the caller and always comes first).
inline void copy_shared_fields(void* to, const void* from, std::size_t shared) noexcept
{
    if (shared > sizeof(uint32_t))
        std::memcpy(static_cast<unsigned char*>(to) + sizeof(uint32_t),
                    static_cast<const unsigned char*>(from) + sizeof(uint32_t), shared - sizeof(uint32_t));
}

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
        if (out->struct_size < device_info_size_written)
            return failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                         "describe: lapse_device_info is %u bytes, shorter than the %zu this plugin fills",
                         out->struct_size, device_info_size_written);
        try {
            lapse_device_info full{};
            full.struct_size = sizeof full;
            self<D>(device)->describe(full);
            full.name[sizeof full.name - 1] = '\0';
            copy_shared_fields(out, &full, std::min<std::size_t>(out->struct_size, sizeof full));
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
        // The common call, no options, goes straight through: a test each,
        // no register moved for a failure path.
        if (device == nullptr || options != nullptr) [[unlikely]]
            return profile_end_checked(device, token, options, error);
        return end_on(device, token, 0, error);
    }

    [[gnu::noinline]] static lapse_status profile_end_checked(lapse_device* device, lapse_token token,
                                                              const lapse_end_options* options,
                                                              lapse_error* error) noexcept
    {
        if (device == nullptr) return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "profile_end: device is null");
        uint32_t flags = 0;
        if (options != nullptr) {
            if (options->struct_size < end_options_size_read)
                return failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                             "profile_end: lapse_end_options is %u bytes, shorter than the %zu this plugin reads",
                             options->struct_size, end_options_size_read);
            flags = options->flags;
        }
        return end_on(device, token, flags, error);
    }

    static lapse_status end_on(lapse_device* device, lapse_token token, uint32_t flags, lapse_error* error) noexcept
    {
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
        if (count > 0 && out[0].struct_size < duration_size_written)
            return failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                         "resolve: out[0].struct_size is %u, shorter than the %zu bytes of lapse_duration this "
                         "plugin writes",
                         out[0].struct_size, duration_size_written);
        try {
            if (count == 0 || out[0].struct_size == sizeof(lapse_duration))
                return self<D>(device)->resolve(tokens, out, count, timeout_ns, error);
            return resolve_strided(self<D>(device), tokens, out, count, timeout_ns, error);
        } catch (...) {
            return status_from_current_exception(error, "resolve");
        }
    }

    // A caller built against another minor: its elements are
    // out[0].struct_size apart. Resolves through a buffer of this build's
    // layout, a slice at a time, under one deadline for the whole call.
    static lapse_status resolve_strided(D* d, const lapse_token* tokens, lapse_duration* out, uint32_t count,
                                        uint64_t timeout_ns, lapse_error* error)
    {
        constexpr uint32_t slice = 32;
        lapse_duration local[slice];
        const std::size_t stride = out[0].struct_size;
        const std::size_t shared = std::min(stride, sizeof(lapse_duration));
        auto* bytes = reinterpret_cast<unsigned char*>(out);
        const bool bounded = timeout_ns != 0 && timeout_ns != LAPSE_WAIT_FOREVER;
        const int64_t deadline = bounded ? monotonic_ns() + static_cast<int64_t>(std::min<uint64_t>(timeout_ns, INT64_MAX / 2)) : 0;
        lapse_status result = LAPSE_OK;
        lapse_error slice_error = make_error();
        for (uint32_t at = 0; at < count;) {
            const uint32_t n = std::min(slice, count - at);
            for (uint32_t k = 0; k < n; ++k) {
                local[k] = lapse_duration{};
                copy_shared_fields(&local[k], bytes + (std::size_t(at) + k) * stride, shared);
                local[k].struct_size = sizeof(lapse_duration);
            }
            uint64_t wait = timeout_ns;
            if (bounded) {
                const int64_t left = deadline - monotonic_ns();
                wait = left > 0 ? static_cast<uint64_t>(left) : 0;
            }
            slice_error.message[0] = '\0';
            const lapse_status s = d->resolve(tokens + at, local, n, wait, &slice_error);
            for (uint32_t k = 0; k < n; ++k) copy_shared_fields(bytes + (std::size_t(at) + k) * stride, &local[k], shared);
            if (s < 0 && result >= 0) {
                result = s;
                write_error(error, s, std::string_view(slice_error.message, ::strnlen(slice_error.message, sizeof slice_error.message)));
            } else if (s == LAPSE_NOT_READY && result == LAPSE_OK) {
                result = LAPSE_NOT_READY;
            }
            at += n;
        }
        return result;
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
// Another minor is accepted: its struct may be shorter or longer than ours.
inline bool host_is_compatible(const lapse_host* host, const char* plugin_name) noexcept
{
    if (host == nullptr || host->struct_size < sizeof(uint32_t) * 3) return false;
    if (host->abi_major != LAPSE_ABI_MAJOR) {
        if (host->struct_size >= LAPSE_SDK_SIZE_THROUGH(lapse_host, log) && host->log != nullptr) {
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
