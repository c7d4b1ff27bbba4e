// libFuzzer target: the config loader and the config services.
//
// For any text: Config::from_string either parses or throws lapse::Error
// (LAPSE_ERROR_CONFIG with file:line:col); then the runtime's view of it
// (search paths, the plugin it names, where that resolves) either answers
// or throws lapse::Error. Anything else is a bug.
//
// Opening a device runs plugin code, so it happens only when it is
// harmless: the backend is exactly the CPU plugin by name, found on a
// search path that fuzzed text cannot change (no [lapse]/[plugins] table,
// LAPSE_PLUGIN_PATH cleared), with only the keys whose sizes are bounded
// small (no capacities that would allocate gigabytes, no child tables, no
// paths). The cpu plugin's config reading and the host's unknown-key and
// type checks then run on fuzzed values.
#include <lapse/core.hpp>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

lapse::Runtime* runtime = nullptr;
// Held for the whole run: libFuzzer keeps reading the coverage counters of
// every instrumented module it has seen, so the CPU plugin must never be
// unloaded (closing the last device would dlclose it and libFuzzer would
// then touch unmapped memory).
lapse::PluginLibrary* cpu_plugin = nullptr;

bool harmless_to_open(std::string_view text)
{
    toml::table root;
    try {
        root = toml::parse(text);
    } catch (const toml::parse_error&) {
        return false;
    }
    if (root.contains("lapse") || root.contains("plugins")) return false;
    const toml::table* backend = root["backend"].as_table();
    if (backend == nullptr) return false;
    const toml::node* plugin = backend->get("plugin");
    if (plugin == nullptr || plugin->value<std::string>() != "cpu") return false;
    for (const auto& [key, value] : *backend) {
        const std::string_view k = key.str();
        if (k == "plugin" || k == "mode") continue;
        if (k == "streams") {
            // Each stream is a thread: keep it small even when valid.
            auto n = value.value<int64_t>();
            if (n && (*n < 0 || *n > 4)) return false;
            continue;
        }
        return false;  // sha256, allow_insecure, capacities, unknown keys: parsing only
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    ::unsetenv("LAPSE_PLUGIN_PATH");
    lapse::RuntimeOptions options;
    options.search_paths.push_back(LAPSE_FUZZ_PLUGIN_DIR);
    // Plugin warnings would flood the fuzzer's output: a logger that drops them.
    options.logger = std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_mt>());
    runtime = new lapse::Runtime(std::move(options));
    cpu_plugin = new lapse::PluginLibrary(runtime->load_plugin("cpu"));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    lapse::Config config = lapse::Config::builtin();
    try {
        config = lapse::Config::from_string(text, "fuzz.toml", "/nonexistent/lapse-fuzz");
    } catch (const lapse::Error& e) {
        if (e.status() != LAPSE_ERROR_CONFIG) __builtin_trap();
        return 0;
    }
    try {
        (void)runtime->search_paths(&config);
        const std::string plugin = config.backend_plugin();
        // Resolving a name only looks at files; it never loads them.
        if (!plugin.empty()) (void)runtime->find_plugin(plugin, &config);
    } catch (const lapse::Error&) {
    }
    if (!harmless_to_open(text)) return 0;
    try {
        lapse::Device device = runtime->open(config);
        lapse::Duration d = device.profile(0, [] {});
        (void)d.resolve();
    } catch (const lapse::Error&) {
    }
    return 0;
}
