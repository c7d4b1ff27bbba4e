#include "logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace lapse::detail {

std::shared_ptr<spdlog::logger> default_logger()
{
    if (auto existing = spdlog::get("lapse")) return existing;
    try {
        return spdlog::stderr_color_mt("lapse");
    } catch (const spdlog::spdlog_ex&) {
        // Another thread registered it between get and create.
        return spdlog::get("lapse");
    }
}

static spdlog::level::level_enum to_spdlog(lapse_log_level level) noexcept
{
    switch (level) {
    case LAPSE_LOG_TRACE: return spdlog::level::trace;
    case LAPSE_LOG_DEBUG: return spdlog::level::debug;
    case LAPSE_LOG_INFO: return spdlog::level::info;
    case LAPSE_LOG_WARN: return spdlog::level::warn;
    case LAPSE_LOG_ERROR: return spdlog::level::err;
    }
    // A plugin passed a level this host does not know (appended later): keep it visible.
    return spdlog::level::info;
}

void log_line(spdlog::logger* logger, lapse_log_level level, std::string_view who, std::string_view message) noexcept
{
    if (logger == nullptr) return;
    try {
        logger->log(to_spdlog(level), "[{}] {}", who, message);
    } catch (...) {
        // Logging must never take the host down.
    }
}

}  // namespace lapse::detail
