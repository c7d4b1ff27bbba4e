#include "plugin_search.hpp"

#include "config_tree.hpp"
#include "logging.hpp"
#include "runtime_state.hpp"

#include <lapse/core/error.hpp>
#include <lapse/core/plugin.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace lapse::detail {

namespace {

void add_unique(std::vector<std::filesystem::path>& list, const std::filesystem::path& p)
{
    if (std::find(list.begin(), list.end(), p) == list.end()) list.push_back(p);
}

std::string join(const std::vector<std::filesystem::path>& list)
{
    std::string out;
    for (const auto& p : list) {
        if (!out.empty()) out += ':';
        out += p.string();
    }
    return out.empty() ? "(empty)" : out;
}

bool world_writable(const std::filesystem::path& p)
{
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return false;
    return (st.st_mode & S_IWOTH) != 0;
}

}  // namespace

std::vector<std::filesystem::path> build_search_path(const RuntimeState& runtime, const SearchSettings* config)
{
    std::vector<std::filesystem::path> out;
    if (const char* env = std::getenv("LAPSE_PLUGIN_PATH")) {
        std::string_view rest(env);
        while (!rest.empty()) {
            auto colon = rest.find(':');
            std::string_view item = rest.substr(0, colon);
            rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
            if (item.empty()) continue;
            std::filesystem::path p(item);
            if (p.is_relative()) {
                // A relative entry would depend on the working directory.
                log_line(runtime.logger.get(), LAPSE_LOG_WARN, "lapse",
                         "LAPSE_PLUGIN_PATH: ignoring relative entry '" + p.string() + "'");
                continue;
            }
            add_unique(out, p.lexically_normal());
        }
    }
    for (const auto& p : runtime.extra_paths) add_unique(out, p);
    if (config != nullptr)
        for (const auto& p : config->paths) add_unique(out, p);
    add_unique(out, default_plugin_dir());
    return out;
}

std::filesystem::path resolve_plugin(std::string_view value, const std::filesystem::path& base_dir,
                                     const std::vector<std::filesystem::path>& search, const std::string& where)
{
    std::error_code ec;
    bool is_path = value.find('/') != std::string_view::npos ||
                   (value.size() >= 3 && value.substr(value.size() - 3) == ".so");
    if (is_path) {
        std::filesystem::path p(value);
        if (p.is_relative()) {
            if (base_dir.empty())
                throw Error(LAPSE_ERROR_LOAD, where + ": relative plugin path '" + p.string() +
                                                  "' in a config with no base folder");
            p = base_dir / p;
        }
        p = p.lexically_normal();
        if (!std::filesystem::is_regular_file(p, ec))
            throw Error(LAPSE_ERROR_LOAD, where + ": plugin file '" + p.string() + "' does not exist");
        return p;
    }
    std::string file = "lapse_" + std::string(value) + ".so";
    for (const auto& dir : search) {
        std::filesystem::path p = dir / file;
        if (std::filesystem::is_regular_file(p, ec)) return p;
    }
    throw Error(LAPSE_ERROR_LOAD, where + ": no plugin '" + std::string(value) + "' (" + file +
                                      ") in the search path " + join(search));
}

void check_file_trust(const std::filesystem::path& file, bool allow_insecure, const std::string& where)
{
    if (allow_insecure) return;
    // Through a symlink, both the link's folder and the real file's folder
    // decide what gets loaded.
    std::error_code ec;
    std::filesystem::path real = std::filesystem::canonical(file, ec);
    if (ec) real = file;
    const char* why = nullptr;
    if (world_writable(real))
        why = "the file is world-writable";
    else if (world_writable(file.parent_path()) || world_writable(real.parent_path()))
        why = "its folder is world-writable";
    if (why != nullptr)
        throw Error(LAPSE_ERROR_LOAD, where + ": refusing " + file.string() + ": " + why +
                                          " (anyone on this machine could replace the code lapse would run); "
                                          "fix the permissions or set allow_insecure = true");
}

void check_sha256(const std::filesystem::path& file, std::string_view pinned, const std::string& where)
{
    std::string expected(pinned);
    std::transform(expected.begin(), expected.end(), expected.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    bool hex = expected.size() == 64 && std::all_of(expected.begin(), expected.end(), [](unsigned char c) {
                   return std::isxdigit(c) != 0;
               });
    if (!hex)
        throw Error(LAPSE_ERROR_CONFIG, where + ": expected 64 hex digits, got '" + std::string(pinned) + "'");
    std::string actual = sha256_file(file);
    if (actual != expected)
        throw Error(LAPSE_ERROR_LOAD, where + ": " + file.string() + " has SHA-256 " + actual +
                                          ", the config pins " + expected + "; refusing to load it");
}

}  // namespace lapse::detail
