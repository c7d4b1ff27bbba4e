// Internal: the core's logging, kept out of most translation units so that
// only logging.cpp pays for spdlog's headers.
#pragma once

#include <lapse/host.h>

#include <memory>
#include <string_view>

namespace spdlog {
class logger;
}

namespace lapse::detail {

// The logger named "lapse", created on stderr when absent.
std::shared_ptr<spdlog::logger> default_logger();

// One line "[<who>] <message>" at `level`. Never throws.
void log_line(spdlog::logger* logger, lapse_log_level level, std::string_view who, std::string_view message) noexcept;

}  // namespace lapse::detail
