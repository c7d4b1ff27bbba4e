// Internal: what a Runtime shares with the devices and opens it started.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace spdlog {
class logger;
}

namespace lapse {
class Capture;
}

namespace lapse::detail {

struct RuntimeState {
    std::vector<std::filesystem::path> extra_paths;  // RuntimeOptions::search_paths, made absolute
    std::shared_ptr<spdlog::logger> logger;

    bool disabled = false;                 // LAPSE_DISABLE
    std::string default_config;            // LAPSE_CONFIG
    std::shared_ptr<Capture> capture;      // Runtime::record_into or LAPSE_CAPTURE (under captures_mutex)
    std::shared_ptr<Capture> env_capture;  // LAPSE_CAPTURE's
    std::string env_capture_path;
    // Captures opened from configs' [capture] tables, by path, so devices
    // of one config share one file.
    mutable std::mutex captures_mutex;
    std::map<std::filesystem::path, std::weak_ptr<Capture>> config_captures;
};

}  // namespace lapse::detail
