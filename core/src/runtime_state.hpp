// Internal: what a Runtime shares with the devices and opens it started.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

namespace spdlog {
class logger;
}

namespace lapse::detail {

struct RuntimeState {
    std::vector<std::filesystem::path> extra_paths;  // RuntimeOptions::search_paths, made absolute
    std::shared_ptr<spdlog::logger> logger;
};

}  // namespace lapse::detail
