// lapse core — the one exception type of the C++ API.
//
// Carries the lapse_status of the failure and a message that names the
// file, key, call or token and the cause. Measurement problems (a window
// that could not open, a wrong token) are NOT thrown: they come back as a
// FAILED Duration, so a closure always runs; Error is thrown for setup
// (config, loading, opening a device) and for submit/sync failures.
#pragma once

#include <lapse/core/export.hpp>
#include <lapse/status.h>

#include <stdexcept>
#include <string>

namespace lapse {

class LAPSE_CORE_API Error : public std::runtime_error {
public:
    Error(lapse_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
    lapse_status status() const noexcept { return status_; }
    // "LAPSE_ERROR_CONFIG", ...
    const char* status_name() const noexcept { return lapse_status_name(status_); }

private:
    lapse_status status_;
};

}  // namespace lapse
