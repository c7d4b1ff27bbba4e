// Config files (toml++): parsing with file:line:col errors, the host's
// config services over toml nodes, and the unknown-key check. toml++ is
// heavy, so this is the only translation unit that includes it.
#include "config_tree.hpp"

#include "capture/capture_settings.hpp"
#include "metrics/listen_address.hpp"

#include <lapse/core/config.hpp>
#include <lapse/core/error.hpp>
#include <lapse/sdk/error.hpp>

#include <toml++/toml.h>

#include <fstream>
#include <sstream>

namespace lapse::detail {

struct ConfigDocument {
    std::string source_name;
    std::filesystem::path base_dir;
    toml::table root;
};

namespace {

// Keys of a backend table the host reads itself.
bool is_host_key(std::string_view key)
{
    return key == "plugin" || key == "sha256" || key == "allow_insecure";
}

const char* type_name(toml::node_type type)
{
    switch (type) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a floating-point number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
    }
}

std::string location(const std::string& file, const toml::source_region& where)
{
    return file + ":" + std::to_string(where.begin.line) + ":" + std::to_string(where.begin.column);
}

const toml::table& table_of(const ConfigNode& node) { return *static_cast<const toml::table*>(node.table); }

std::string key_path(const ConfigNode& node, std::string_view key)
{
    return node.path + "." + std::string(key);
}

// Marks `key` read and returns its node, or null when absent.
const toml::node* read_key(ConfigNode& node, const char* key)
{
    std::lock_guard lock(node.mutex);
    node.read_keys.emplace(key);
    return table_of(node).get(key);
}

lapse_status wrong_type(const ConfigNode& node, const char* key, const toml::node& value, const char* expected,
                        lapse_error* error)
{
    return sdk::fail(error, LAPSE_ERROR_CONFIG,
                     location(node.doc->source_name, value.source()) + ": " + key_path(node, key) + ": expected " +
                         expected + ", got " + type_name(value.type()));
}

// A TOML string may hold "\u0000"; every reader of a string here hands on
// a C string, which would silently end at the NUL ("stream\u0000inline"
// read as "stream"). Such a value is refused where it stands.
std::string nul_error(const std::string& file, const toml::node& value, const std::string& name)
{
    return location(file, value.source()) + ": " + name + ": the string contains a NUL character (\\u0000)";
}

bool has_nul(const toml::node& value)
{
    return value.is_string() && value.as_string()->get().find('\0') != std::string::npos;
}

lapse_status bad_call(lapse_error* error, const char* what)
{
    return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, what);
}

std::shared_ptr<ConfigDocument> parse(std::string_view text, std::string source_name, std::filesystem::path base_dir)
{
    auto doc = std::make_shared<ConfigDocument>();
    doc->source_name = std::move(source_name);
    doc->base_dir = std::move(base_dir);
    try {
        doc->root = toml::parse(text, doc->source_name);
    } catch (const toml::parse_error& e) {
        throw Error(LAPSE_ERROR_CONFIG,
                    location(doc->source_name, e.source()) + ": not valid TOML: " + std::string(e.description()));
    }
    return doc;
}

}  // namespace

std::unique_ptr<ConfigNode> make_backend_node(const ConfigDocument& doc, OpenContext* context)
{
    const toml::node* backend = doc.root.get("backend");
    if (backend == nullptr)
        throw Error(LAPSE_ERROR_CONFIG, doc.source_name + ": no [backend] table (which plugin should lapse load?)");
    if (!backend->is_table())
        throw Error(LAPSE_ERROR_CONFIG, location(doc.source_name, backend->source()) +
                                            ": backend: expected a table, got " + type_name(backend->type()));
    auto node = std::make_unique<ConfigNode>();
    node->doc = &doc;
    node->table = backend->as_table();
    node->path = "backend";
    node->context = context;
    return node;
}

const std::filesystem::path& document_base_dir(const ConfigDocument& doc) noexcept { return doc.base_dir; }

std::string node_location(const ConfigNode& node, const char* key)
{
    const toml::table& table = table_of(node);
    if (key != nullptr) {
        if (const toml::node* value = table.get(key)) return location(node.doc->source_name, value->source());
    }
    return location(node.doc->source_name, table.source());
}

BackendEntry read_backend_entry(ConfigNode& node)
{
    BackendEntry entry;
    const toml::table& table = table_of(node);
    {
        std::lock_guard lock(node.mutex);
        node.read_keys.insert({"plugin", "sha256", "allow_insecure"});
    }
    const std::string& file = node.doc->source_name;
    entry.plugin_at = location(file, table.source());
    if (const toml::node* plugin = table.get("plugin")) {
        entry.plugin_at = location(file, plugin->source());
        if (!plugin->is_string())
            throw Error(LAPSE_ERROR_CONFIG, entry.plugin_at + ": " + key_path(node, "plugin") +
                                                ": expected a string, got " + type_name(plugin->type()));
        if (has_nul(*plugin)) throw Error(LAPSE_ERROR_CONFIG, nul_error(file, *plugin, key_path(node, "plugin")));
        entry.plugin = plugin->as_string()->get();
    }
    if (entry.plugin.empty())
        throw Error(LAPSE_ERROR_CONFIG, entry.plugin_at + ": [" + node.path +
                                            "] names no plugin (set plugin = \"<name or path>\")");
    if (const toml::node* sha = table.get("sha256")) {
        entry.sha256_at = location(file, sha->source());
        if (!sha->is_string())
            throw Error(LAPSE_ERROR_CONFIG, entry.sha256_at + ": " + key_path(node, "sha256") +
                                                ": expected a string, got " + type_name(sha->type()));
        if (has_nul(*sha)) throw Error(LAPSE_ERROR_CONFIG, nul_error(file, *sha, key_path(node, "sha256")));
        entry.sha256 = sha->as_string()->get();
    }
    if (const toml::node* insecure = table.get("allow_insecure")) {
        if (!insecure->is_boolean())
            throw Error(LAPSE_ERROR_CONFIG, location(file, insecure->source()) + ": " +
                                                key_path(node, "allow_insecure") + ": expected a boolean, got " +
                                                type_name(insecure->type()));
        entry.allow_insecure = insecure->as_boolean()->get();
    }
    return entry;
}

SearchSettings read_search_settings(const ConfigDocument& doc)
{
    SearchSettings settings;
    const std::string& file = doc.source_name;
    for (const char* section : {"lapse", "plugins"}) {
        const toml::node* n = doc.root.get(section);
        if (n == nullptr) continue;
        const toml::table* t = n->as_table();
        if (t == nullptr)
            throw Error(LAPSE_ERROR_CONFIG, location(file, n->source()) + ": " + section +
                                                ": expected a table, got " + type_name(n->type()));
        for (const auto& [key, value] : *t) {
            std::string where = location(file, value.source());
            std::string name = std::string(section) + "." + std::string(key.str());
            if (key == "allow_insecure") {
                if (!value.is_boolean())
                    throw Error(LAPSE_ERROR_CONFIG,
                                where + ": " + name + ": expected a boolean, got " + type_name(value.type()));
                settings.allow_insecure = settings.allow_insecure || value.as_boolean()->get();
            } else if (key == "search_paths") {
                const toml::array* list = value.as_array();
                if (list == nullptr)
                    throw Error(LAPSE_ERROR_CONFIG, where + ": " + name + ": expected an array of strings, got " +
                                                        type_name(value.type()));
                for (std::size_t i = 0; i < list->size(); ++i) {
                    const toml::node& item = *list->get(i);
                    std::string item_where = location(file, item.source());
                    std::string item_name = name + "[" + std::to_string(i) + "]";
                    if (!item.is_string())
                        throw Error(LAPSE_ERROR_CONFIG, item_where + ": " + item_name + ": expected a string, got " +
                                                            type_name(item.type()));
                    if (has_nul(item)) throw Error(LAPSE_ERROR_CONFIG, nul_error(file, item, item_name));
                    std::filesystem::path p(item.as_string()->get());
                    if (p.is_relative()) {
                        // Relative to the config's folder, never the working directory.
                        if (doc.base_dir.empty())
                            throw Error(LAPSE_ERROR_CONFIG, item_where + ": " + item_name + ": relative path '" +
                                                                p.string() + "' in a config with no base folder");
                        p = doc.base_dir / p;
                    }
                    p = p.lexically_normal();
                    std::error_code ec;
                    if (!std::filesystem::is_directory(p, ec))
                        throw Error(LAPSE_ERROR_CONFIG, item_where + ": " + item_name + ": search path '" +
                                                            p.string() + "' is not an existing folder");
                    settings.paths.push_back(p);
                }
            } else {
                throw Error(LAPSE_ERROR_CONFIG, location(file, key.source()) + ": unknown key '" +
                                                    std::string(key.str()) + "' in [" + section +
                                                    "] (known: search_paths, allow_insecure)");
            }
        }
    }
    return settings;
}

std::string unknown_key_error(ConfigNode& node, std::string_view plugin_name)
{
    std::lock_guard lock(node.mutex);
    std::string first;
    std::size_t more = 0;
    for (const auto& [key, value] : table_of(node)) {
        if (is_host_key(key.str()) || node.read_keys.count(key.str()) != 0) continue;
        if (first.empty())
            first = location(node.doc->source_name, key.source()) + ": unknown key '" + std::string(key.str()) +
                    "' in [" + node.path + "] for plugin '" + std::string(plugin_name) + "'";
        else
            ++more;
    }
    if (more > 0) first += " (and " + std::to_string(more) + " more)";
    return first;
}

// The host services. Each is noexcept: nothing may cross the C ABI.

lapse_status host_config_string(const lapse_host*, const lapse_config* config, const char* key,
                                const char* fallback, const char** out, lapse_error* error) noexcept
{
    if (config == nullptr || key == nullptr || out == nullptr) return bad_call(error, "config_string: null argument");
    try {
        NodeUse use(config);
        if (!use) return node_gone(error, "config_string");
        ConfigNode& node = *use;
        const toml::node* value = read_key(node, key);
        if (value == nullptr) {
            *out = fallback;
            return LAPSE_OK;
        }
        if (!value->is_string()) return wrong_type(node, key, *value, "a string", error);
        if (has_nul(*value))
            return sdk::fail(error, LAPSE_ERROR_CONFIG, nul_error(node.doc->source_name, *value, key_path(node, key)));
        *out = value->as_string()->get().c_str();  // lives as long as the document
        return LAPSE_OK;
    } catch (...) {
        return sdk::status_from_current_exception(error, "config_string");
    }
}

lapse_status host_config_int(const lapse_host*, const lapse_config* config, const char* key, int64_t fallback,
                             int64_t* out, lapse_error* error) noexcept
{
    if (config == nullptr || key == nullptr || out == nullptr) return bad_call(error, "config_int: null argument");
    try {
        NodeUse use(config);
        if (!use) return node_gone(error, "config_int");
        ConfigNode& node = *use;
        const toml::node* value = read_key(node, key);
        if (value == nullptr) {
            *out = fallback;
            return LAPSE_OK;
        }
        if (!value->is_integer()) return wrong_type(node, key, *value, "an integer", error);
        *out = value->as_integer()->get();
        return LAPSE_OK;
    } catch (...) {
        return sdk::status_from_current_exception(error, "config_int");
    }
}

lapse_status host_config_double(const lapse_host*, const lapse_config* config, const char* key, double fallback,
                                double* out, lapse_error* error) noexcept
{
    if (config == nullptr || key == nullptr || out == nullptr) return bad_call(error, "config_double: null argument");
    try {
        NodeUse use(config);
        if (!use) return node_gone(error, "config_double");
        ConfigNode& node = *use;
        const toml::node* value = read_key(node, key);
        if (value == nullptr) {
            *out = fallback;
            return LAPSE_OK;
        }
        // `scale = 2` means 2.0: TOML users rarely write the decimal point.
        if (value->is_integer()) {
            *out = static_cast<double>(value->as_integer()->get());
            return LAPSE_OK;
        }
        if (!value->is_floating_point()) return wrong_type(node, key, *value, "a number", error);
        *out = value->as_floating_point()->get();
        return LAPSE_OK;
    } catch (...) {
        return sdk::status_from_current_exception(error, "config_double");
    }
}

lapse_status host_config_bool(const lapse_host*, const lapse_config* config, const char* key, int fallback,
                              int* out, lapse_error* error) noexcept
{
    if (config == nullptr || key == nullptr || out == nullptr) return bad_call(error, "config_bool: null argument");
    try {
        NodeUse use(config);
        if (!use) return node_gone(error, "config_bool");
        ConfigNode& node = *use;
        const toml::node* value = read_key(node, key);
        if (value == nullptr) {
            *out = fallback;
            return LAPSE_OK;
        }
        if (!value->is_boolean()) return wrong_type(node, key, *value, "a boolean", error);
        *out = value->as_boolean()->get() ? 1 : 0;
        return LAPSE_OK;
    } catch (...) {
        return sdk::status_from_current_exception(error, "config_bool");
    }
}

lapse_status host_config_child(const lapse_host*, const lapse_config* config, const char* key,
                               const lapse_config** out, lapse_error* error) noexcept
{
    if (config == nullptr || key == nullptr || out == nullptr) return bad_call(error, "config_child: null argument");
    *out = nullptr;
    try {
        NodeUse use(config);
        if (!use) return node_gone(error, "config_child");
        ConfigNode& node = *use;
        const toml::node* value = read_key(node, key);
        if (value == nullptr) return LAPSE_OK;
        if (!value->is_table()) return wrong_type(node, key, *value, "a table", error);
        std::lock_guard lock(node.mutex);
        auto& child = node.children[key];  // one node per key: read keys and cycle checks see the same one
        if (!child) {
            child = std::make_unique<ConfigNode>();
            child->doc = node.doc;
            child->table = value->as_table();
            child->path = key_path(node, key);
            child->context = node.context;
        }
        *out = child->as_config();
        return LAPSE_OK;
    } catch (...) {
        return sdk::status_from_current_exception(error, "config_child");
    }
}

lapse_status host_config_error(const lapse_host*, const lapse_config* config, const char* key, const char* message,
                               lapse_error* error) noexcept
{
    if (config == nullptr) return bad_call(error, "config_error: null node");
    try {
        NodeUse use(config);
        if (!use) return node_gone(error, "config_error");
        const ConfigNode& node = *use;
        std::string where = node_location(node, key);
        std::string name = key != nullptr ? key_path(node, key) : node.path;
        return sdk::fail(error, LAPSE_ERROR_CONFIG,
                         where + ": " + name + ": " + (message != nullptr ? message : "invalid value"));
    } catch (...) {
        return sdk::status_from_current_exception(error, "config_error");
    }
}

namespace {

// [metrics]: see capture/capture_settings.hpp.
std::optional<MetricsOptions> read_metrics_settings(const ConfigDocument& doc)
{
    const toml::node* n = doc.root.get("metrics");
    if (n == nullptr) return std::nullopt;
    const std::string& file = doc.source_name;
    const toml::table* t = n->as_table();
    if (t == nullptr)
        throw Error(LAPSE_ERROR_CONFIG,
                    location(file, n->source()) + ": metrics: expected a table, got " + type_name(n->type()));
    MetricsOptions options;
    options.listen = "127.0.0.1:9464";
    const toml::node* listen = nullptr;
    auto bad = [&](const toml::node& value, const std::string& key, const std::string& why) {
        return Error(LAPSE_ERROR_CONFIG, location(file, value.source()) + ": metrics." + key + ": " + why);
    };
    for (const auto& [key, value] : *t) {
        const std::string k(key.str());
        if (k == "listen") {
            if (!value.is_string()) throw bad(value, k, std::string("expected a string, got ") + type_name(value.type()));
            options.listen = value.as_string()->get();
            listen = &value;
        } else if (k == "allow_remote") {
            if (!value.is_boolean()) throw bad(value, k, std::string("expected a boolean, got ") + type_name(value.type()));
            options.allow_remote = value.as_boolean()->get();
        } else if (k == "max_series") {
            if (!value.is_integer()) throw bad(value, k, std::string("expected an integer, got ") + type_name(value.type()));
            const int64_t count = value.as_integer()->get();
            if (count < 1 || count > 1000000) throw bad(value, k, std::to_string(count) + " is out of range (1 to 1000000)");
            options.max_series = static_cast<uint32_t>(count);
        } else {
            throw Error(LAPSE_ERROR_CONFIG, location(file, key.source()) + ": unknown key '" + k +
                                                "' in [metrics] (known: listen, allow_remote, max_series)");
        }
    }
    // Checked here, where the error can point at the line; bound at open.
    parse_listen_address(options.listen, options.allow_remote,
                         location(file, listen != nullptr ? listen->source() : t->source()) + ": metrics.listen");
    return options;
}

}  // namespace

// [capture] and [metrics]: see capture/capture_settings.hpp.
std::optional<CaptureOptions> read_capture_settings(const ConfigDocument& doc)
{
    std::optional<MetricsOptions> metrics = read_metrics_settings(doc);
    const toml::node* n = doc.root.get("capture");
    if (n == nullptr) {
        if (!metrics) return std::nullopt;
        CaptureOptions options;  // no file: recorded for the metrics only
        options.metrics = std::move(*metrics);
        return options;
    }
    const std::string& file = doc.source_name;
    const toml::table* t = n->as_table();
    if (t == nullptr)
        throw Error(LAPSE_ERROR_CONFIG,
                    location(file, n->source()) + ": capture: expected a table, got " + type_name(n->type()));
    CaptureOptions options;
    if (metrics) options.metrics = std::move(*metrics);
    auto bad = [&](const toml::node& value, const std::string& key, const std::string& why) {
        return Error(LAPSE_ERROR_CONFIG, location(file, value.source()) + ": capture." + key + ": " + why);
    };
    for (const auto& [key, value] : *t) {
        const std::string k(key.str());
        if (k == "path") {
            if (!value.is_string()) throw bad(value, k, std::string("expected a string, got ") + type_name(value.type()));
            std::filesystem::path p(value.as_string()->get());
            if (p.empty()) throw bad(value, k, "an empty path");
            if (p.is_relative()) {
                if (doc.base_dir.empty()) throw bad(value, k, "a relative path in a config with no base folder");
                p = doc.base_dir / p;
            }
            options.path = p.lexically_normal();
        } else if (k == "budget") {
            int64_t bytes = 0;
            if (value.is_integer()) {
                bytes = value.as_integer()->get();
            } else if (value.is_string()) {
                const std::string& text = value.as_string()->get();
                std::size_t used = 0;
                long long number = 0;
                try {
                    number = std::stoll(text, &used);
                } catch (...) {
                    throw bad(value, k, "'" + text + "' is not a size (say 4194304, \"4 MiB\" or \"512 KiB\")");
                }
                std::string unit = text.substr(used);
                unit.erase(0, unit.find_first_not_of(' '));
                const int64_t scale = unit.empty() || unit == "B" ? 1
                                      : unit == "KiB"             ? int64_t{1} << 10
                                      : unit == "MiB"             ? int64_t{1} << 20
                                      : unit == "GiB"             ? int64_t{1} << 30
                                                                  : 0;
                if (scale == 0) throw bad(value, k, "unknown unit '" + unit + "' (B, KiB, MiB or GiB)");
                if (number < 0 || number > (int64_t{1} << 40) / scale) throw bad(value, k, "'" + text + "' is out of range");
                bytes = number * scale;
            } else {
                throw bad(value, k, std::string("expected a size (an integer or a string), got ") + type_name(value.type()));
            }
            if (bytes < 64 * 1024 || bytes > (int64_t{1} << 40))
                throw bad(value, k, std::to_string(bytes) + " bytes is out of range (64 KiB to 1 TiB)");
            options.budget_bytes = static_cast<uint64_t>(bytes);
        } else if (k == "policy") {
            if (!value.is_string()) throw bad(value, k, std::string("expected a string, got ") + type_name(value.type()));
            const std::string& policy = value.as_string()->get();
            if (policy == "drop")
                options.policy = CapturePolicy::drop;
            else if (policy == "block")
                options.policy = CapturePolicy::block;
            else
                throw bad(value, k, "unknown policy '" + policy + "' (drop or block)");
        } else if (k == "flush_ms") {
            if (!value.is_integer()) throw bad(value, k, std::string("expected an integer, got ") + type_name(value.type()));
            const int64_t ms = value.as_integer()->get();
            if (ms < 1 || ms > 100) throw bad(value, k, std::to_string(ms) + " is out of range (1 to 100)");
            options.flush_interval = std::chrono::milliseconds(ms);
        } else {
            throw Error(LAPSE_ERROR_CONFIG, location(file, key.source()) + ": unknown key '" + k +
                                                "' in [capture] (known: path, budget, policy, flush_ms)");
        }
    }
    if (options.path.empty())
        throw Error(LAPSE_ERROR_CONFIG, location(file, t->source()) + ": [capture] names no path (set path = \"<file>\")");
    return options;
}

namespace {
void describe_layers(const ConfigNode& node, std::string& out)
{
    const toml::table& table = table_of(node);
    if (const toml::node* plugin = table.get("plugin"); plugin != nullptr && plugin->is_string()) {
        if (!out.empty()) out += " -> ";
        out += plugin->as_string()->get() + " (" + node.path + ")";
    }
    for (const auto& [key, child] : node.children)
        if (child) describe_layers(*child, out);
}
}  // namespace

std::string describe_stack(const ConfigNode& root)
{
    std::string out;
    describe_layers(root, out);
    return out;
}

}  // namespace lapse::detail

namespace lapse {

namespace {
// The config `lapse run` uses with no --config: the CPU plugin, two streams.
constexpr std::string_view builtin_config = R"(# lapse's built-in config
[backend]
plugin = "cpu"
mode = "stream"
streams = 2
)";
}  // namespace

Config Config::from_file(const std::filesystem::path& file)
{
    std::error_code ec;
    std::filesystem::path absolute = std::filesystem::absolute(file, ec).lexically_normal();
    if (ec) absolute = file;
    std::ifstream in(absolute, std::ios::binary);
    if (!in) throw Error(LAPSE_ERROR_CONFIG, absolute.string() + ": cannot read the config file");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw Error(LAPSE_ERROR_CONFIG, absolute.string() + ": read failed");
    return Config(detail::parse(text.str(), absolute.string(), absolute.parent_path()));
}

Config Config::from_string(std::string_view text, std::string source_name, std::filesystem::path base_dir)
{
    return Config(detail::parse(text, std::move(source_name), std::move(base_dir)));
}

Config Config::builtin()
{
    return from_string(builtin_config, "<builtin config>", {});
}

std::string_view Config::builtin_text() noexcept { return builtin_config; }

const std::string& Config::source_name() const noexcept { return doc_->source_name; }

const std::filesystem::path& Config::base_dir() const noexcept { return doc_->base_dir; }

std::string Config::backend_plugin() const
{
    return std::string(doc_->root["backend"]["plugin"].value_or(std::string_view{}));
}

}  // namespace lapse
