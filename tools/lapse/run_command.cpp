// `lapse run`: open a backend (the built-in CPU config unless --config),
// run the demo workload, resolve every window and print a table per
// window name; --session saves what was recorded.
#include "commands.hpp"
#include "demo_workload.hpp"
#include "window_stats.hpp"

#include <lapse/core.hpp>

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <optional>

namespace lapse::cli {

namespace {

struct RunOptions {
    std::string config;
    std::string session;
};

[[noreturn]] void give_up(int code, const std::string& message)
{
    std::cerr << "lapse run: " << message << '\n';
    throw CLI::RuntimeError(code);
}

void print_backend(const DeviceInfo& info, const std::string& source)
{
    std::cout << "config:   " << source << '\n'
              << "backend:  " << info.plugin << ' ' << info.plugin_version << " (" << info.plugin_file << ")\n"
              << "device:   " << info.name << ", " << info.stream_count << " stream"
              << (info.stream_count == 1 ? "" : "s") << '\n'
              << "can:      " << capability_names(info.capabilities) << "\n\n";
}

void run(const RunOptions& options)
{
    std::optional<Config> config;
    try {
        config = options.config.empty() ? Config::builtin() : Config::from_file(options.config);
    } catch (const Error& e) {
        give_up(exit_usage, e.what());
    }

    Runtime runtime;
    Device device;
    try {
        device = runtime.open(*config);
    } catch (const Error& e) {
        give_up(e.status() == LAPSE_ERROR_UNAVAILABLE ? exit_unavailable : exit_usage,
                std::string("cannot open the backend (") + e.status_name() + "): " + e.what());
    }
    print_backend(device.info(), config->source_name());
    if (device.info().stream_count == 0) give_up(exit_usage, "the device has no streams to run work on");

    auto session = std::make_shared<Session>();
    device.record_into(session);

    DemoContext context{device, 0, device.info().stream_count > 1 ? Stream{1} : Stream{0}, {}};
    std::vector<DemoPhase> phases = cpu_phases();
    for (auto& phase : native_phases(device)) phases.push_back(std::move(phase));

    bool failed = false;
    for (const auto& phase : phases) {
        try {
            phase.run(context);
        } catch (const std::exception& e) {
            // Keep going: the other phases still say something true.
            std::cerr << "lapse run: phase '" << phase.name << "' failed: " << e.what() << '\n';
            failed = true;
        }
    }
    try {
        device.sync();
    } catch (const std::exception& e) {
        std::cerr << "lapse run: sync failed: " << e.what() << '\n';
        failed = true;
    }
    if (!device.resolve(context.durations, std::chrono::seconds(60))) {
        std::size_t pending = 0;
        for (const auto& d : context.durations) pending += d.pending() ? 1 : 0;
        std::cerr << "lapse run: " << pending << " windows still pending after 60 s; they are abandoned\n";
        failed = true;
    }
    std::vector<WindowStats> stats = summarize(session->windows());
    print_table(std::cout, stats);
    print_partial_note(std::cout, stats);
    print_failure_causes(std::cout, failure_causes(context.durations));
    std::cout << "\n(device: stamped by the backend's clock; system: host clock around syncs.\n"
                 " Failed and not-measured windows are counted apart, never as fast ones.)\n";

    if (!options.session.empty()) {
        try {
            session->save(options.session);
            std::cout << "session saved to " << options.session << " (" << session->size() << " windows)\n";
        } catch (const Error& e) {
            give_up(exit_failure, e.what());
        }
    }
    if (failed) throw CLI::RuntimeError(exit_failure);
}

}  // namespace

void add_run_command(CLI::App& app)
{
    auto options = std::make_shared<RunOptions>();
    CLI::App* run_cmd = app.add_subcommand(
        "run", "Run a built-in workload on a backend (CPU phases; a GPU phase on Vulkan) and print a table per window name");
    run_cmd->add_option("--config", options->config, "Backend config (TOML); default: the built-in CPU config");
    run_cmd->add_option("--session", options->session, "Save the recorded session (Boost text archive) to this file");
    run_cmd->callback([options] { run(*options); });
}

}  // namespace lapse::cli
