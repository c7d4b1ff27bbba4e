// lapse::Runtime: from a Config to an open Device.
#include "backend_open.hpp"
#include "capture/capture_core.hpp"
#include "capture/capture_settings.hpp"
#include "capture/environment.hpp"
#include "config_tree.hpp"
#include "device_core.hpp"
#include "loaded_library.hpp"
#include "logging.hpp"
#include "plugin_search.hpp"
#include "plugin_text.hpp"
#include "runtime_state.hpp"

#include <lapse/core/runtime.hpp>
#include <lapse/sdk/error.hpp>

namespace lapse {

namespace {

// LAPSE_CONFIG's value as a config: its file, or the builtin one when empty.
Config config_from_environment(const std::string& path)
{
    if (path.empty()) return Config::builtin();
    try {
        return Config::from_file(path);
    } catch (const Error& e) {
        throw Error(e.status(), "LAPSE_CONFIG=" + path + ": " + e.what());
    }
}

}  // namespace

Config default_config() { return config_from_environment(detail::read_environment().config); }

Runtime::Runtime(RuntimeOptions options) : state_(std::make_shared<detail::RuntimeState>())
{
    for (auto& p : options.search_paths) {
        std::error_code ec;
        // The program chose these paths itself, so its own working
        // directory is the right base for a relative one.
        state_->extra_paths.push_back(std::filesystem::absolute(p, ec).lexically_normal());
    }
    state_->logger = options.logger ? std::move(options.logger) : detail::default_logger();
    const detail::Environment env = detail::read_environment();
    state_->disabled = env.disabled;
    state_->default_config = env.config;
    if (!env.capture.empty() && !env.disabled) {
        state_->capture = state_->env_capture = detail::environment_capture(env.capture, env.capture_options);
        state_->env_capture_path = env.capture;
    }
}

Runtime::Runtime(Runtime&&) noexcept = default;
Runtime& Runtime::operator=(Runtime&&) noexcept = default;
Runtime::~Runtime()
{
    // Devices may outlive the runtime (and keep its captures open), but
    // what they left pending so far reaches the files now.
    if (!state_) return;
    std::vector<std::shared_ptr<Capture>> captures;
    {
        std::lock_guard lock(state_->captures_mutex);
        if (state_->capture) captures.push_back(state_->capture);
        for (auto& [path, weak] : state_->config_captures)
            if (auto c = weak.lock()) captures.push_back(std::move(c));
    }
    for (auto& c : captures) c->core().drain_all(std::chrono::seconds(2));
}

std::shared_ptr<Capture> Runtime::capture() const
{
    std::lock_guard lock(state_->captures_mutex);
    return state_->capture;
}

void Runtime::record_into(std::shared_ptr<Capture> capture)
{
    std::lock_guard lock(state_->captures_mutex);
    if (!capture && !state_->env_capture_path.empty()) {
        // Back to LAPSE_CAPTURE's file (reopened only if it was replaced).
        capture = state_->env_capture;
    }
    state_->capture = std::move(capture);
}
bool Runtime::disabled() const noexcept { return state_->disabled; }

std::shared_ptr<spdlog::logger> Runtime::logger() const { return state_->logger; }

std::vector<std::filesystem::path> Runtime::search_paths(const Config* config) const
{
    if (config == nullptr) return detail::build_search_path(*state_, nullptr);
    detail::SearchSettings settings = detail::read_search_settings(config->document());
    return detail::build_search_path(*state_, &settings);
}

std::filesystem::path Runtime::find_plugin(std::string_view name_or_path, const Config* config) const
{
    std::filesystem::path base = config != nullptr ? config->base_dir() : std::filesystem::path{};
    return detail::resolve_plugin(name_or_path, base, search_paths(config), std::string(name_or_path));
}

PluginLibrary Runtime::load_plugin(std::string_view name_or_path, const Config* config)
{
    bool allow_insecure = false;
    std::vector<std::filesystem::path> search;
    if (config != nullptr) {
        detail::SearchSettings settings = detail::read_search_settings(config->document());
        allow_insecure = settings.allow_insecure;
        search = detail::build_search_path(*state_, &settings);
    } else {
        search = detail::build_search_path(*state_, nullptr);
    }
    std::filesystem::path base = config != nullptr ? config->base_dir() : std::filesystem::path{};
    std::string where(name_or_path);
    std::filesystem::path file = detail::resolve_plugin(name_or_path, base, search, where);
    detail::check_file_trust(file, allow_insecure, where);
    return PluginLibrary(detail::LoadedLibrary::load(file, state_->logger));
}

Device Runtime::open(const Config& config)
{
    if (state_->disabled) {
        // LAPSE_DISABLE: nothing is loaded; the config is not even read.
        DeviceInfo info{"disabled", "", "", "disabled (LAPSE_DISABLE)", 2,
                        LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS};
        auto core = std::make_unique<detail::DeviceCore>(detail::open_disabled_backend(), std::move(info), state_);
        core->disabled = true;
        return Device(std::move(core));
    }
    const detail::ConfigDocument& doc = config.document();
    // Read before anything opens: a bad [capture] table fails the open.
    std::optional<CaptureOptions> capture_settings = detail::read_capture_settings(doc);
    detail::OpenContext context;
    context.runtime = state_;
    detail::SearchSettings settings = detail::read_search_settings(doc);
    context.search_path = detail::build_search_path(*state_, &settings);
    context.allow_insecure = settings.allow_insecure;
    std::unique_ptr<detail::ConfigNode> root = detail::make_backend_node(doc, &context);

    detail::OpenedBackend opened = detail::open_node(context, *root);

    lapse_device_info raw{};
    raw.struct_size = sizeof(lapse_device_info);
    lapse_error error = sdk::make_error();
    lapse_status s = LAPSE_ERROR_INTERNAL;
    try {
        s = opened.plugin->describe(opened.device, &raw, &error);
    } catch (...) {
        error.message[0] = '\0';
    }
    if (s < 0) {
        std::string cause = !detail::error_text(error).empty() ? std::string(detail::error_text(error))
                                                               : std::string(lapse_status_name(s));
        std::string file = opened.library->path().string();
        detail::close_opened(opened);
        throw Error(s, file + ": describe failed: " + cause);
    }
    DeviceInfo info;
    info.plugin = opened.library->name();
    info.plugin_version = opened.library->version();
    info.plugin_file = opened.library->path().string();
    info.name = std::string(detail::array_text(raw.name));
    info.stream_count = raw.stream_count;
    info.capabilities = raw.capabilities;
    auto core = std::make_unique<detail::DeviceCore>(std::move(opened), std::move(info), state_);
    core->stack = detail::describe_stack(*root);
    std::shared_ptr<Capture> capture = this->capture();
    if (!capture) capture = config_capture(capture_settings);
    if (capture) core->attach_capture(std::move(capture));
    return Device(std::move(core));
}

std::shared_ptr<Capture> Runtime::config_capture(const std::optional<CaptureOptions>& settings)
{
    if (!settings) return nullptr;
    std::lock_guard lock(state_->captures_mutex);
    std::weak_ptr<Capture>& slot = state_->config_captures[settings->path];
    std::shared_ptr<Capture> capture = slot.lock();
    if (!capture) {
        capture = Capture::open(*settings);
        slot = capture;
    }
    return capture;
}

Device Runtime::open_default()
{
    // A disabled runtime reads no config at all (open() ignores it).
    if (state_->disabled) return open(Config::builtin());
    return open(config_from_environment(state_->default_config));
}

const std::filesystem::path& PluginLibrary::path() const
{
    if (!lib_) throw Error(LAPSE_ERROR_INVALID_ARGUMENT, "PluginLibrary: empty handle");
    return lib_->path();
}

const std::string& PluginLibrary::name() const
{
    if (!lib_) throw Error(LAPSE_ERROR_INVALID_ARGUMENT, "PluginLibrary: empty handle");
    return lib_->name();
}

const std::string& PluginLibrary::version() const
{
    if (!lib_) throw Error(LAPSE_ERROR_INVALID_ARGUMENT, "PluginLibrary: empty handle");
    return lib_->version();
}

const std::string& PluginLibrary::description() const
{
    if (!lib_) throw Error(LAPSE_ERROR_INVALID_ARGUMENT, "PluginLibrary: empty handle");
    return lib_->description();
}

const lapse_plugin& PluginLibrary::descriptor() const
{
    if (!lib_) throw Error(LAPSE_ERROR_INVALID_ARGUMENT, "PluginLibrary: empty handle");
    return lib_->descriptor();
}

std::string capability_names(uint64_t capabilities)
{
    static const std::pair<uint64_t, const char*> names[] = {
        {LAPSE_CAP_DEVICE_CLOCK, "device-clock"}, {LAPSE_CAP_NESTED, "nested"},
        {LAPSE_CAP_OVERLAPPING, "overlapping"},   {LAPSE_CAP_SPLIT_THREADS, "split-threads"},
        {LAPSE_CAP_BATCHING, "batching"},         {LAPSE_CAP_SINGLE_WINDOW, "single-window"},
        {LAPSE_CAP_HOST_TIMELINE, "host-timeline"},
    };
    std::string out;
    uint64_t known = 0;
    for (const auto& [bit, name] : names) {
        known |= bit;
        if ((capabilities & bit) == 0) continue;
        if (!out.empty()) out += ' ';
        out += name;
    }
    if (capabilities & ~known) out += out.empty() ? "unknown-bits" : " unknown-bits";
    return out.empty() ? "none" : out;
}

}  // namespace lapse
