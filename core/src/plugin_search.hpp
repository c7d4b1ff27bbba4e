// Internal: from a config's `plugin` value to a file lapse is willing to load.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace spdlog {
class logger;
}

namespace lapse::detail {

struct RuntimeState;
struct SearchSettings;

// LAPSE_PLUGIN_PATH, the runtime's paths, the config's paths, the folder
// beside the core library: in that order, without duplicates.
std::vector<std::filesystem::path> build_search_path(const RuntimeState& runtime, const SearchSettings* config);

// A name becomes lapse_<name>.so on the search path; a value with '/' or
// ending in ".so" is a path (relative to `base_dir`, never the working
// directory). `where` ("<file>:<line>:<col>: backend.plugin") prefixes errors.
std::filesystem::path resolve_plugin(std::string_view value, const std::filesystem::path& base_dir,
                                     const std::vector<std::filesystem::path>& search, const std::string& where);

// Refuses a file that others could have replaced: world-writable itself or
// in a world-writable folder (the search path is code execution).
void check_file_trust(const std::filesystem::path& file, bool allow_insecure, const std::string& where);

// Refuses a file whose SHA-256 differs from the pinned one, before loading it.
void check_sha256(const std::filesystem::path& file, std::string_view pinned, const std::string& where);

}  // namespace lapse::detail
