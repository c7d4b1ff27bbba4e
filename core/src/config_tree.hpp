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

// A lapse_config* is a handle, not the address of a ConfigNode: an id that
// is never reused, looked up in a process-wide table. A node a plugin kept
// past the `open` it was handed to is then recognised as gone (the call
// answers LAPSE_ERROR_INVALID_ARGUMENT) instead of being read after it was
// freed, and a node is not freed while a service call is still using it.
struct ConfigNode {
    ConfigNode();   // registers the node: as_config() is valid from here
    ~ConfigNode();  // unregisters it, then waits for calls still using it
    ConfigNode(const ConfigNode&) = delete;
    ConfigNode& operator=(const ConfigNode&) = delete;

    const ConfigDocument* doc = nullptr;
    const void* table = nullptr;  // const toml::table*
    std::string path;             // "backend", "backend.inner"
    OpenContext* context = nullptr;

    std::mutex mutex;  // a plugin may read its config from several threads
    std::set<std::string, std::less<>> read_keys;
    std::map<std::string, std::unique_ptr<ConfigNode>, std::less<>> children;

    const lapse_config* as_config() const noexcept { return handle; }

    const lapse_config* handle = nullptr;  // the id, set by the constructor
    int users = 0;                         // service calls using the node (under the table's lock)
};

// One service call's use of the node a handle names; empty when the handle
// names no live node (kept past its open, made up). The node is not freed
// while the use lasts.
class NodeUse {
public:
    explicit NodeUse(const lapse_config* config) noexcept;
    ~NodeUse();
    NodeUse(const NodeUse&) = delete;
    NodeUse& operator=(const NodeUse&) = delete;

    explicit operator bool() const noexcept { return node_ != nullptr; }
    ConfigNode& operator*() const noexcept { return *node_; }
    ConfigNode* operator->() const noexcept { return node_; }

private:
    ConfigNode* node_ = nullptr;
};

// What a service answers for a handle that names no live node.
lapse_status node_gone(lapse_error* error, const char* call) noexcept;

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
