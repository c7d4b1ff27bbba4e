// Internal: what the C host API's files share (host_api.cpp, host_capture.cpp):
// the handles' definitions and the boundary helpers that turn C++ errors
// into a status and the caller's lapse_error.
#pragma once

#include <lapse/core.hpp>
#include <lapse/host_api.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>

struct lapse_host_runtime {
    lapse::Runtime runtime;
};
struct lapse_host_config {
    lapse::Config config;
};
struct lapse_host_device {
    lapse::Device device;
};
struct lapse_host_capture {
    std::shared_ptr<lapse::Capture> capture;
};

namespace lapse::host_api {

// Written on failure only, and only into a struct at least as large as
// this header's lapse_error.
inline void write_error(lapse_error* error, lapse_status status, std::string_view message) noexcept
{
    if (error == nullptr || error->struct_size < sizeof(lapse_error)) return;
    error->code = status;
    std::size_t n = std::min(message.size(), sizeof(error->message) - 1);
    std::memcpy(error->message, message.data(), n);
    error->message[n] = '\0';
}

inline lapse_status fail(lapse_error* error, lapse_status status, std::string_view message) noexcept
{
    write_error(error, status, message);
    return status;
}

inline lapse_status null_argument(lapse_error* error, const char* call, const char* argument) noexcept
{
    std::string message;
    try {
        message = std::string(call) + ": " + argument + " is NULL";
    } catch (...) {
    }
    return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, message);
}

// "CALL: WHAT->struct_size N is smaller than sizeof(TYPE) M".
inline lapse_status too_small(lapse_error* error, const char* call, const char* what, uint32_t size,
                              const char* type, std::size_t want) noexcept
{
    try {
        return fail(error, LAPSE_ERROR_INVALID_ARGUMENT,
                    std::string(call) + ": " + what + "->struct_size " + std::to_string(size) +
                        " is smaller than sizeof(" + type + ") " + std::to_string(want));
    } catch (...) {
        return fail(error, LAPSE_ERROR_INVALID_ARGUMENT, call);
    }
}

// Runs `body` and turns whatever it throws into a status and a message.
template <class F>
lapse_status guarded(lapse_error* error, const char* call, F&& body) noexcept
{
    try {
        return body();
    } catch (const lapse::Error& e) {
        return fail(error, e.status(), e.what());
    } catch (const std::bad_alloc&) {
        return fail(error, LAPSE_ERROR_OUT_OF_MEMORY, std::string_view(call));
    } catch (const std::exception& e) {
        try {
            return fail(error, LAPSE_ERROR_INTERNAL, std::string(call) + ": " + e.what());
        } catch (...) {
            return fail(error, LAPSE_ERROR_INTERNAL, std::string_view(call));
        }
    } catch (...) {
        return fail(error, LAPSE_ERROR_INTERNAL, std::string_view(call));
    }
}

}  // namespace lapse::host_api
