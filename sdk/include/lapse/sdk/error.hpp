// lapse SDK (C++) — errors for plugin authors.
//
// Inside a plugin, fail with `return lapse::sdk::fail(error, STATUS, msg)` on
// hot paths, or throw lapse::sdk::Error anywhere: the adapter in plugin.hpp
// catches every exception at the C boundary and turns it into a status and
// message. Nothing here allocates on the success path.
#pragma once

#include <lapse/lapse.h>

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

// Growth: a minor version only appends fields to a struct, so the other
// side of a call may have been built against an older or a newer minor and
// pass a shorter or longer struct than this build's sizeof. A reader accepts
// any struct_size that reaches the end of the last field it uses; a writer
// writes no byte past the struct_size the other side set (PJRT's rule).
// LAPSE_SDK_SIZE_THROUGH(type, field) is where `field` of `type` ends.
#define LAPSE_SDK_SIZE_THROUGH(type, field) (offsetof(type, field) + sizeof(static_cast<type*>(nullptr)->field))

namespace lapse::sdk {

// The part of a caller's lapse_error that is written: code and message.
inline constexpr std::size_t error_size_written = LAPSE_SDK_SIZE_THROUGH(lapse_error, message);

// An error with the status it maps to at the boundary.
class Error : public std::exception {
public:
    Error(lapse_status status, std::string message) : status_(status), message_(std::move(message)) {}
    lapse_status status() const noexcept { return status_; }
    const char* what() const noexcept override { return message_.c_str(); }

private:
    lapse_status status_;
    std::string message_;
};

// Writes `message` into a caller-owned error struct, if there is one and it
// reaches the end of the fields we write (a longer one, from a later minor,
// keeps its later fields). Truncates; never throws.
inline void write_error(lapse_error* error, lapse_status status, std::string_view message) noexcept
{
    if (error == nullptr || error->struct_size < error_size_written) return;
    error->code = status;
    std::size_t n = message.size() < LAPSE_ERROR_MESSAGE_CAPACITY - 1 ? message.size()
                                                                       : LAPSE_ERROR_MESSAGE_CAPACITY - 1;
    std::memcpy(error->message, message.data(), n);
    error->message[n] = '\0';
}

// Fills `error` and returns `status`: `return fail(error, LAPSE_ERROR_X, "...")`.
inline lapse_status fail(lapse_error* error, lapse_status status, std::string_view message) noexcept
{
    write_error(error, status, message);
    return status;
}

// printf-style variant; formats only when a caller asked for a message.
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
inline lapse_status failf(lapse_error* error, lapse_status status, const char* format, ...) noexcept
{
    if (error == nullptr || error->struct_size < error_size_written) return status;
    error->code = status;
    va_list args;
    va_start(args, format);
    std::vsnprintf(error->message, LAPSE_ERROR_MESSAGE_CAPACITY, format, args);
    va_end(args);
    return status;
}

// Prepends "<prefix>: " to a message already in `error` (a forwarding plugin
// adds its name to an inner error and keeps the inner message intact).
inline void prefix_error(lapse_error* error, std::string_view prefix) noexcept
{
    if (error == nullptr || error->struct_size < error_size_written) return;
    constexpr std::size_t capacity = LAPSE_ERROR_MESSAGE_CAPACITY - 1;  // keep room for the NUL
    char* m = error->message;
    const std::size_t inner = ::strnlen(m, capacity);
    const std::size_t head = prefix.size() + 2 < capacity ? prefix.size() + 2 : capacity;
    const std::size_t kept = inner < capacity - head ? inner : capacity - head;  // truncate the tail
    std::memmove(m + head, m, kept);
    std::memcpy(m, prefix.data(), head - 2 < prefix.size() ? head - 2 : prefix.size());
    if (head >= 2) {
        m[head - 2] = ':';
        m[head - 1] = ' ';
    }
    m[head + kept] = '\0';
}

// Turns the exception being handled into a status and message. Call only
// from a catch block.
inline lapse_status status_from_current_exception(lapse_error* error, const char* call) noexcept
{
    try {
        throw;
    } catch (const Error& e) {
        return failf(error, e.status(), "%s", e.what());
    } catch (const std::bad_alloc&) {
        return failf(error, LAPSE_ERROR_OUT_OF_MEMORY, "%s: out of memory", call);
    } catch (const std::exception& e) {
        return failf(error, LAPSE_ERROR_INTERNAL, "%s: unexpected exception: %s", call, e.what());
    } catch (...) {
        return failf(error, LAPSE_ERROR_INTERNAL, "%s: unexpected non-standard exception", call);
    }
}

// A caller-owned error struct ready to pass down.
inline lapse_error make_error() noexcept
{
    lapse_error e{};
    e.struct_size = sizeof(lapse_error);
    return e;
}

}  // namespace lapse::sdk
