// lapse core — the runtime: loads plugins and opens devices from configs.
//
//   lapse::Runtime runtime;                                   // default logger
//   lapse::Device dev = runtime.open(lapse::Config::from_file("lapse.toml"));
//
// open() resolves the [backend] plugin, checks the file (pinned sha256,
// not world-writable unless allow_insecure), loads it (rtld_now |
// rtld_local), negotiates the ABI, opens the device, and refuses config
// keys the plugin did not read. Stacking plugins open their children
// through the host services; a cycle is refused with its path, and a
// failure below names every layer on the way
// ("forward (backend) -> vulkan (backend.inner): <cause>").
// Every failure throws Error naming the file, key and cause.
//
// Devices keep what they need alive: a Runtime may be destroyed before
// the devices it opened.
//
// Drop-in environment (read when the Runtime is constructed):
//   LAPSE_CONFIG=file.toml  the config open_default() opens (instead of the builtin one)
//   LAPSE_CAPTURE=path      every device this runtime opens records every
//                           named window into `path` (lapse/core/capture.hpp);
//                           every Runtime of the process shares that one file,
//                           closed (its end chunk written) at exit
//   LAPSE_DISABLE=1         nothing is loaded or opened: open() returns a
//                           device whose windows are no-ops and whose work
//                           runs inline on the calling thread
// A config's [capture] table records its devices the same way
// (LAPSE_CAPTURE and Runtime::record_into take precedence).
#pragma once

#include <lapse/core/capture.hpp>
#include <lapse/core/config.hpp>
#include <lapse/core/device.hpp>
#include <lapse/core/export.hpp>
#include <lapse/core/plugin.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace spdlog {
class logger;
}

namespace lapse {

struct RuntimeOptions {
    // Searched before the config's search_paths (and after LAPSE_PLUGIN_PATH).
    std::vector<std::filesystem::path> search_paths;
    // Where plugin logs ("[cpu] ...") and the core's own messages go; null
    // uses the logger named "lapse" (created on stderr when absent). spdlog
    // is part of the host API: lapse::core links it publicly, and
    // find_package(lapse) and pkg-config lapse-core bring it along, so a
    // host that passes its own logger uses the very spdlog the core does.
    std::shared_ptr<spdlog::logger> logger;
};

namespace detail {
struct RuntimeState;
}

// The config a host opens when it names none: the file the environment
// variable LAPSE_CONFIG names when it is set and not empty (read at the
// call; a failure's message starts "LAPSE_CONFIG=<path>: "), else
// Config::builtin(). The one place that reads LAPSE_CONFIG: the C host API
// and the Python package ask here.
LAPSE_CORE_API Config default_config();

class LAPSE_CORE_API Runtime {
public:
    explicit Runtime(RuntimeOptions options = {});
    Runtime(Runtime&&) noexcept;
    Runtime& operator=(Runtime&&) noexcept;
    // Drains what its devices' captures hold pending into the files first.
    ~Runtime();

    // Opens the device the config's [backend] table names.
    Device open(const Config& config);
    // open() of default_config() as LAPSE_CONFIG stood when this runtime
    // was constructed.
    Device open_default();
    // Every device this runtime opens from now on records into `capture`
    // (overriding LAPSE_CAPTURE and a config's [capture] table); null
    // returns to those.
    void record_into(std::shared_ptr<Capture> capture);
    // The capture devices of this runtime record into by default
    // (record_into, LAPSE_CAPTURE), or null.
    std::shared_ptr<Capture> capture() const;
    // True when LAPSE_DISABLE turned every window into a no-op.
    bool disabled() const noexcept;

    // Loads a plugin file without opening a device (for `lapse info`):
    // a name on the search path or a path. `config` supplies search paths
    // and allow_insecure; relative paths are resolved against its folder
    // (without a config, against nothing: give an absolute path or a name).
    PluginLibrary load_plugin(std::string_view name_or_path, const Config* config = nullptr);
    // Where a plugin name or path resolves to, without loading it.
    std::filesystem::path find_plugin(std::string_view name_or_path, const Config* config = nullptr) const;
    // The search path in effect for `config` (or without one).
    std::vector<std::filesystem::path> search_paths(const Config* config = nullptr) const;

    std::shared_ptr<spdlog::logger> logger() const;

private:
    std::shared_ptr<Capture> config_capture(const std::optional<CaptureOptions>& settings);
    std::shared_ptr<detail::RuntimeState> state_;
};

}  // namespace lapse
