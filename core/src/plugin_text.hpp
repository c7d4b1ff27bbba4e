// Internal: reading text a plugin wrote, never past the memory it owns.
//
// A plugin is native code that may be buggy: an error message without its
// NUL, or a descriptor string that runs on. Every read of such text in the
// core goes through these helpers, which stop at a bound the ABI sets (the
// message capacity, the fixed name array) or one the core sets for the
// descriptor's strings.
#pragma once

#include <lapse/lapse.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace lapse::detail {

// The longest descriptor strings the core reads; a longer one is not
// terminated as far as the core is concerned.
inline constexpr std::size_t max_plugin_name = 64;
inline constexpr std::size_t max_plugin_version = 64;
inline constexpr std::size_t max_plugin_description = 1024;

// The text of `s`, at most `bound` bytes; "" for null.
inline std::string_view bounded_text(const char* s, std::size_t bound) noexcept
{
    if (s == nullptr) return {};
    return std::string_view(s, ::strnlen(s, bound));
}

// True when `s` ends with a NUL within `bound` bytes (or is null).
inline bool terminated_within(const char* s, std::size_t bound) noexcept
{
    return s == nullptr || ::strnlen(s, bound) < bound;
}

// The message a plugin wrote into a caller-owned lapse_error.
inline std::string_view error_text(const lapse_error& error) noexcept
{
    return bounded_text(error.message, sizeof error.message);
}

// A fixed-size char array a plugin filled (lapse_device_info::name).
template <std::size_t N>
std::string_view array_text(const char (&text)[N]) noexcept
{
    return bounded_text(text, N);
}

}  // namespace lapse::detail
