// lapse SDK (C++) — lapse.resolve_compact/1 (lapse/resolve_compact.h), both sides.
//
// A plugin offers it from a device class with
//
//   lapse_status resolve_compact(const lapse_token* tokens, lapse_stamp_pair* stamps, uint8_t* states,
//                                uint32_t count, uint64_t timeout_ns, lapse_error* error) noexcept;
//   lapse_resolve_compact compact_ = lapse::sdk::make_resolve_compact<MyDevice>(
//       LAPSE_TIMING_DEVICE, LAPSE_CLOCK_HOST_MONOTONIC);
//   const void* extension(std::string_view id)
//   {
//       return id == LAPSE_RESOLVE_COMPACT_EXTENSION ? &compact_ : nullptr;
//   }
//
// and writes each window with set_compact_ready / set_compact_not_ready.
// A class that also has
//
//   lapse_status resolve_compact_strided(const lapse_token* tokens, std::size_t token_stride,
//                                        lapse_stamp_pair* stamps, std::size_t stamp_stride, uint8_t* states,
//                                        uint32_t count, uint64_t timeout_ns, lapse_error* error) noexcept;
//
// offers the strided form as well (it writes a pair only when READY with
// set_compact_ready, and only the state otherwise).
// The trampoline refuses the null arguments the ABI forbids before the
// class sees them. The class's function must be noexcept: a resolve that
// threw halfway would have taken windows whose stamps never reached the
// caller, and the extension's promise is that a window is either answered
// READY or left untouched.
//
// A host asks once per device: resolve_compact_of(plugin, device), null
// when the device does not offer it (then it resolves in full).
#pragma once

#include <lapse/lapse.h>
#include <lapse/resolve_compact.h>
#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace lapse::sdk {

// A window answered with its stamps (it was taken). [any thread]
[[gnu::always_inline]] inline void set_compact_ready(lapse_stamp_pair& stamps, uint8_t& state, int64_t start_ns,
                                                     int64_t end_ns) noexcept
{
    stamps.start_ns = start_ns;
    stamps.end_ns = end_ns;
    state = LAPSE_COMPACT_READY;
}

// A window left untouched: LAPSE_COMPACT_PENDING or
// LAPSE_COMPACT_RESOLVE_FULL, its pair the one that reads as no duration.
// [any thread]
inline void set_compact_not_ready(lapse_stamp_pair& stamps, uint8_t& state, uint8_t why) noexcept
{
    stamps.start_ns = 0;
    stamps.end_ns = LAPSE_COMPACT_NO_STAMP;
    state = why;
}

namespace detail {

template <class D>
struct CompactAdapter {
    static lapse_status resolve_compact(lapse_device* device, const lapse_token* tokens, lapse_stamp_pair* stamps,
                                        uint8_t* states, uint32_t count, uint64_t timeout_ns,
                                        lapse_error* error) noexcept
    {
        if (device == nullptr) return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "resolve_compact: device is null");
        if (count > 0 && (tokens == nullptr || stamps == nullptr || states == nullptr))
            return failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                         "resolve_compact: %s is null with count %u (tokens, stamps and states are all required)",
                         tokens == nullptr ? "tokens" : stamps == nullptr ? "stamps" : "states", count);
        if (count == 0) return LAPSE_OK;
        static_assert(noexcept(reinterpret_cast<D*>(device)->resolve_compact(tokens, stamps, states, count,
                                                                             timeout_ns, error)),
                      "D::resolve_compact must be noexcept: a throw halfway would lose windows already taken");
        return reinterpret_cast<D*>(device)->resolve_compact(tokens, stamps, states, count, timeout_ns, error);
    }

    static lapse_status resolve_compact_strided(lapse_device* device, const lapse_token* tokens,
                                                std::size_t token_stride, lapse_stamp_pair* stamps,
                                                std::size_t stamp_stride, uint8_t* states, uint32_t count,
                                                uint64_t timeout_ns, lapse_error* error) noexcept
    {
        if (device == nullptr)
            return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "resolve_compact_strided: device is null");
        if (count > 0 && (tokens == nullptr || stamps == nullptr || states == nullptr))
            return failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                         "resolve_compact_strided: %s is null with count %u (tokens, stamps and states are all "
                         "required)",
                         tokens == nullptr ? "tokens" : stamps == nullptr ? "stamps" : "states", count);
        if (count > 1 && (!valid_stride(token_stride) || !valid_stride(stamp_stride)))
            return failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                         "resolve_compact_strided: stride %zu is not a multiple of 8 of at least 16",
                         valid_stride(token_stride) ? stamp_stride : token_stride);
        if (count == 0) return LAPSE_OK;
        static_assert(noexcept(reinterpret_cast<D*>(device)->resolve_compact_strided(
                          tokens, token_stride, stamps, stamp_stride, states, count, timeout_ns, error)),
                      "D::resolve_compact_strided must be noexcept: a throw halfway would lose windows already taken");
        return reinterpret_cast<D*>(device)->resolve_compact_strided(tokens, token_stride, stamps, stamp_stride,
                                                                     states, count, timeout_ns, error);
    }

    static constexpr bool valid_stride(std::size_t stride) noexcept { return stride >= 16 && stride % 8 == 0; }
};

// Whether device class D resolves strided records too.
template <class D>
concept ResolvesCompactStrided =
    requires(D& d, const lapse_token* t, std::size_t n, lapse_stamp_pair* p, uint8_t* s, lapse_error* e) {
        { d.resolve_compact_strided(t, n, p, n, s, uint32_t{}, uint64_t{}, e) } -> std::same_as<lapse_status>;
    };

}  // namespace detail

// The extension struct for device class D, whose READY pairs carry
// `method` and `clock_domain`. Keep it in the device (or a static): it must
// live as long as the device. [any thread]
template <class D>
constexpr lapse_resolve_compact make_resolve_compact(uint32_t method, uint32_t clock_domain) noexcept
{
    lapse_resolve_compact c{};
    c.struct_size = sizeof(lapse_resolve_compact);
    c.method = method;
    c.clock_domain = clock_domain;
    c.reserved = 0;
    c.resolve_compact = &detail::CompactAdapter<D>::resolve_compact;
    if constexpr (detail::ResolvesCompactStrided<D>)
        c.resolve_compact_strided = &detail::CompactAdapter<D>::resolve_compact_strided;
    return c;
}

// `extension` (what get_extension answered for
// LAPSE_RESOLVE_COMPACT_EXTENSION) as the extension, or null when it is
// null or does not hold up: too short to reach the function, a null
// function, READY pairs with a method or clock that a READY duration
// cannot have. [any thread]
inline const lapse_resolve_compact* usable_resolve_compact(const void* extension) noexcept
{
    const auto* c = static_cast<const lapse_resolve_compact*>(extension);
    // Any minor's struct that reaches the function (the last field read) will do.
    constexpr std::size_t size_read = LAPSE_SDK_SIZE_THROUGH(lapse_resolve_compact, resolve_compact);
    if (c == nullptr || c->struct_size < size_read || c->resolve_compact == nullptr) return nullptr;
    if (c->method != LAPSE_TIMING_SYSTEM && c->method != LAPSE_TIMING_DEVICE) return nullptr;
    if (c->clock_domain != LAPSE_CLOCK_HOST_MONOTONIC && c->clock_domain != LAPSE_CLOCK_DEVICE) return nullptr;
    return c;
}

// The device's lapse.resolve_compact/1, or null when it does not offer it
// or offers one that does not hold up (usable_resolve_compact). A plugin
// whose get_extension may throw needs the call behind a catch: ask it
// yourself and pass the answer to usable_resolve_compact. [any thread;
// once per device, not per resolve]
inline const lapse_resolve_compact* resolve_compact_of(const lapse_plugin* plugin, lapse_device* device) noexcept
{
    if (plugin == nullptr || device == nullptr || plugin->get_extension == nullptr) return nullptr;
    return usable_resolve_compact(plugin->get_extension(device, LAPSE_RESOLVE_COMPACT_EXTENSION));
}

// The strided form of a usable extension, or null when the plugin's struct
// is too short to hold it or the device does not offer it. [any thread]
inline lapse_resolve_compact_strided_fn resolve_compact_strided_of(const lapse_resolve_compact& c) noexcept
{
    constexpr std::size_t size_read = LAPSE_SDK_SIZE_THROUGH(lapse_resolve_compact, resolve_compact_strided);
    return c.struct_size >= size_read ? c.resolve_compact_strided : nullptr;
}

// Why a READY pair of `c` cannot be a duration (the rules
// impossible_duration applies to a READY lapse_duration), or null when it
// can. [any thread]
[[gnu::always_inline]] inline const char* impossible_pair(const lapse_resolve_compact& c,
                                                          const lapse_stamp_pair& p) noexcept
{
    return impossible_interval(p.start_ns, p.end_ns, c.clock_domain);
}

}  // namespace lapse::sdk
