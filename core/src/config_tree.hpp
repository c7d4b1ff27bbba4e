// Internal: config nodes as the host services see them during an open.
//
// A ConfigNode is the lapse_config* a plugin receives: one table of the
// document plus the keys the plugin read, so the host can refuse the keys
// it never read once `open` succeeded (a typo must not be ignored). The
// TOML types stay inside config.cpp; here a table is an opaque pointer.
#pragma once

#include <lapse/host.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace lapse::detail {

struct ConfigDocument;
struct OpenContext;

struct ConfigNode {
    const ConfigDocument* doc = nullptr;
    const void* table = nullptr;  // const toml::table*
    std::string path;             // "backend", "backend.inner"
    OpenContext* context = nullptr;

    std::mutex mutex;  // a plugin may read its config from several threads
    std::set<std::string, std::less<>> read_keys;
    std::map<std::string, std::unique_ptr<ConfigNode>, std::less<>> children;

    const lapse_config* as_config() const noexcept { return reinterpret_cast<const lapse_config*>(this); }
    static ConfigNode* from(const lapse_config* config) noexcept
    {
        return const_cast<ConfigNode*>(reinterpret_cast<const ConfigNode*>(config));
    }
};

// The [backend] table of `doc`; throws Error(LAPSE_ERROR_CONFIG) when absent.
std::unique_ptr<ConfigNode> make_backend_node(const ConfigDocument& doc, OpenContext* context);

// The host's own keys of a backend table.
struct BackendEntry {
    std::string plugin;             // the `plugin` value ("" when absent)
    std::string plugin_at;          // "<file>:<line>:<col>" of it, or of the table
    std::optional<std::string> sha256;
    std::string sha256_at;
    bool allow_insecure = false;
};
BackendEntry read_backend_entry(ConfigNode& node);

// The document's [lapse] / [plugins] settings, search paths resolved against
// its base folder and checked to exist.
struct SearchSettings {
    std::vector<std::filesystem::path> paths;
    bool allow_insecure = false;
};
SearchSettings read_search_settings(const ConfigDocument& doc);

// The folder relative paths of `doc` are resolved against.
const std::filesystem::path& document_base_dir(const ConfigDocument& doc) noexcept;

// "<file>:<line>:<col>" of `key` in node (of the node itself when key is null or absent).
std::string node_location(const ConfigNode& node, const char* key);

// The first key of `node` its plugin never read, as a full message; "" when none.
std::string unknown_key_error(ConfigNode& node, std::string_view plugin_name);

// The config services of lapse_host (config.cpp).
lapse_status host_config_string(const lapse_host*, const lapse_config*, const char*, const char*, const char**,
                                lapse_error*) noexcept;
lapse_status host_config_int(const lapse_host*, const lapse_config*, const char*, int64_t, int64_t*,
                             lapse_error*) noexcept;
lapse_status host_config_double(const lapse_host*, const lapse_config*, const char*, double, double*,
                                lapse_error*) noexcept;
lapse_status host_config_bool(const lapse_host*, const lapse_config*, const char*, int, int*, lapse_error*) noexcept;
lapse_status host_config_child(const lapse_host*, const lapse_config*, const char*, const lapse_config**,
                               lapse_error*) noexcept;
lapse_status host_config_error(const lapse_host*, const lapse_config*, const char*, const char*,
                               lapse_error*) noexcept;

}  // namespace lapse::detail
