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

// Refuses a file that others could have replaced (the search path is code
// execution): a world-writable file, a world-writable folder anywhere on its
// path or on the path of any link of its symlink chain (a sticky one such as
// /tmp only when the entry taken from it belongs to someone else), and the
// same for every folder its RUNPATH / RPATH name ($ORIGIN expanded).
void check_file_trust(const std::filesystem::path& file, bool allow_insecure, const std::string& where);

// A pinned SHA-256 from a config, checked to be 64 hex digits (lowercased),
// with the position errors name. LoadedLibrary hashes the descriptor it
// loads, so the pin holds for the code that runs.
struct PinnedHash {
    std::string sha256;
    std::string where;
};
PinnedHash parse_sha256_pin(std::string_view pinned, const std::string& where);

// SHA-256 of an open file descriptor's whole content, read with pread (the
// descriptor's offset is left alone); `shown_as` names it in errors.
std::string sha256_of_descriptor(int fd, const std::filesystem::path& shown_as);

// The RUNPATH / RPATH entries of an ELF file, as written (elf_symbols.cpp).
std::vector<std::string> library_search_paths(const std::filesystem::path& file);

}  // namespace lapse::detail
