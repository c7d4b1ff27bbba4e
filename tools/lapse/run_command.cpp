// `lapse run`: open a backend (the built-in CPU config unless --config),
// run the demo workload, resolve every window and print a table per
// window name; --session saves what was recorded, --capture streams every
// named window into a capture file. --seconds N loops the workload for N
// seconds (a soak host). --metrics ADDR serves live Prometheus metrics of
// the recorded windows there while it runs (with --capture or without a
// file; docs/metrics.md). `lapse run --capture FILE -- PROGRAM ARGS...`
// runs a host program with LAPSE_CAPTURE=FILE instead (and
// LAPSE_CONFIG=--config), so it records with no code change.
#include "commands.hpp"
#include "demo_workload.hpp"
#include "window_stats.hpp"

#include <lapse/core.hpp>

#include <CLI/CLI.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

extern char** environ;

namespace lapse::cli {

namespace {

struct RunOptions {
    std::string config;
    std::string session;
    std::string capture;
    std::string metrics;
    bool metrics_allow_remote = false;
    double seconds = 0;
    std::vector<std::string> program;
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

// Runs a host program with the drop-in variables set; its exit status is ours.
void run_program(const RunOptions& options)
{
    if (options.capture.empty())
        give_up(exit_failure, "to record a program, say where: lapse run --capture FILE -- PROGRAM [ARGS...]");
    if (!options.session.empty())
        give_up(exit_failure, "--session saves the built-in workload's session; a program records with --capture FILE");
    if (!options.metrics.empty())
        give_up(exit_failure, "--metrics serves the built-in workload's windows; a program serves its own with a "
                              "[metrics] table in its config (LAPSE_CONFIG)");
    ::setenv("LAPSE_CAPTURE", std::filesystem::absolute(options.capture).c_str(), 1);
    if (!options.config.empty()) ::setenv("LAPSE_CONFIG", std::filesystem::absolute(options.config).c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& a : options.program) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t child = 0;
    const int err = ::posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), environ);
    if (err != 0) give_up(exit_failure, "cannot run '" + options.program[0] + "': " + std::strerror(err));
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    std::cerr << "lapse run: capture in " << options.capture << " (lapse report " << options.capture << ")\n";
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) throw CLI::RuntimeError(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        std::cerr << "lapse run: '" << options.program[0] << "' was killed by signal " << WTERMSIG(status) << '\n';
        throw CLI::RuntimeError(exit_failure);
    }
}

// One pass of every phase; false when one failed.
bool run_phases(DemoContext& context, const std::vector<DemoPhase>& phases)
{
    bool ok = true;
    for (const auto& phase : phases) {
        try {
            phase.run(context);
        } catch (const std::exception& e) {
            // Keep going: the other phases still say something true.
            std::cerr << "lapse run: phase '" << phase.name << "' failed: " << e.what() << '\n';
            ok = false;
        }
    }
    return ok;
}

void run(const RunOptions& options)
{
    if (!options.program.empty()) return run_program(options);
    std::optional<Config> config;
    try {
        config = options.config.empty() ? Config::builtin() : Config::from_file(options.config);
    } catch (const Error& e) {
        give_up(exit_usage, e.what());
    }

    std::shared_ptr<Capture> capture;
    if (!options.capture.empty() || !options.metrics.empty()) {
        try {
            CaptureOptions capture_options;
            capture_options.path = options.capture;  // may be empty: recorded for the metrics only
            capture_options.metrics.listen = options.metrics;
            capture_options.metrics.allow_remote = options.metrics_allow_remote;
            capture = Capture::open(std::move(capture_options));
        } catch (const Error& e) {
            give_up(e.status() == LAPSE_ERROR_CONFIG ? exit_usage : exit_failure, e.what());
        }
        if (capture->metrics_port() != 0)
            std::cout << "metrics:  http://" << options.metrics.substr(0, options.metrics.rfind(':')) << ':'
                      << capture->metrics_port() << "/metrics\n";
    }
    Runtime runtime;
    if (capture) runtime.record_into(capture);
    Device device;
    try {
        device = runtime.open(*config);
    } catch (const Error& e) {
        give_up(e.status() == LAPSE_ERROR_UNAVAILABLE ? exit_unavailable : exit_usage,
                std::string("cannot open the backend (") + e.status_name() + "): " + e.what());
    }
    print_backend(device.info(), config->source_name());
    if (device.info().stream_count == 0) give_up(exit_usage, "the device has no streams to run work on");

    // A soak run keeps no session: its memory must not grow with its length
    // (the capture holds the windows).
    const bool soak = options.seconds > 0;
    auto session = std::make_shared<Session>();
    if (!soak) device.record_into(session);

    DemoContext context{device, 0, device.info().stream_count > 1 ? Stream{1} : Stream{0}, {}};
    std::vector<DemoPhase> phases = cpu_phases();
    for (auto& phase : native_phases(device)) phases.push_back(std::move(phase));

    bool failed = false;
    if (!soak) {
        failed = !run_phases(context, phases);
    } else {
        const bool progress = ::isatty(STDERR_FILENO) != 0;
        const auto start = std::chrono::steady_clock::now();
        const auto until = start + std::chrono::duration<double>(options.seconds);
        auto next_report = start;
        uint64_t passes = 0;
        while (std::chrono::steady_clock::now() < until) {
            failed = !run_phases(context, phases) || failed;
            ++passes;
            // The capture resolves dropped windows itself; without one they are resolved here.
            // With one, sync paces the loop instead: nothing else waits for the
            // work, which would pile up on the streams and outlast --seconds.
            if (!capture)
                device.resolve(context.durations, std::chrono::seconds(60));
            else
                try {
                    device.sync();
                } catch (const std::exception& e) {
                    std::cerr << "lapse run: sync failed: " << e.what() << '\n';
                    failed = true;
                }
            context.durations.clear();
            const auto now = std::chrono::steady_clock::now();
            if (progress && now >= next_report) {
                const double t = std::chrono::duration<double>(now - start).count();
                std::fprintf(stderr, "\rlapse run: %.1f s of %.1f s, %llu passes", t, options.seconds,
                             static_cast<unsigned long long>(passes));
                if (capture) {
                    const CaptureStats s = capture->stats();
                    std::fprintf(stderr, ", %llu windows recorded, %llu dropped, %.1f MB", static_cast<unsigned long long>(s.recorded),
                                 static_cast<unsigned long long>(s.dropped), static_cast<double>(s.bytes_written) / 1e6);
                }
                std::fflush(stderr);
                next_report = now + std::chrono::milliseconds(500);
            }
        }
        if (progress) std::fprintf(stderr, "\n");
        std::cout << "ran the workload " << passes << " times in " << options.seconds << " s\n";
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
    if (!soak) {
        std::vector<WindowStats> stats = summarize(session->windows());
        print_table(std::cout, stats);
        print_partial_note(std::cout, stats);
        std::cout << "\n(device: stamped by the backend's clock; system: host clock around syncs.\n"
                     " Failed and not-measured windows are counted apart, never as fast ones.)\n";
    }
    print_failure_causes(std::cout, failure_causes(context.durations));
    context.durations.clear();
    device.close();  // drains its pending windows into the capture
    if (capture) capture->close();  // the metrics stop being served here
    if (capture && !options.capture.empty()) {
        const CaptureStats s = capture->stats();
        std::cout << "capture saved to " << options.capture << " (" << s.recorded << " windows, " << s.dropped
                  << " dropped, " << s.bytes_written << " bytes";
        if (s.recorded > 0)
            std::cout << ", " << static_cast<double>(s.bytes_written) / static_cast<double>(s.recorded) << " bytes per window";
        std::cout << ")\n";
    }

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
        "run", "Run a built-in workload on a backend (CPU phases; a GPU phase on Vulkan) and print a table per window name, "
               "or record a program (-- PROGRAM ARGS...)");
    run_cmd->add_option("--config", options->config, "Backend config (TOML); default: the built-in CPU config");
    run_cmd->add_option("--session", options->session, "Save the recorded session (Boost text archive) to this file");
    run_cmd->add_option("--capture", options->capture,
                        "Stream every named window into this capture file (for lapse report / export)");
    run_cmd->add_option("--metrics", options->metrics,
                        "Serve Prometheus metrics of the recorded windows on HOST:PORT while it runs "
                        "(loopback unless --metrics-allow-remote; port 0 picks one)");
    run_cmd->add_flag("--metrics-allow-remote", options->metrics_allow_remote,
                      "Let --metrics listen on an address that is not loopback (e.g. 0.0.0.0:9464)");
    run_cmd->add_option("--seconds", options->seconds, "Loop the workload for this many seconds (a soak run)")
        ->check(CLI::Range(0.0, 1e7));
    run_cmd->add_option("PROGRAM", options->program, "A host program to run with LAPSE_CAPTURE (after --)");
    run_cmd->footer(R"HELP(Examples:
  lapse run                                        the demo, a table per window name
  lapse run --capture run.lapse-capture --seconds 3600
  lapse run --capture run.lapse-capture -- ./my_app --its-args
  lapse run --seconds 600 --metrics 127.0.0.1:9464   Prometheus scrapes it (docs/metrics.md)
  lapse report run.lapse-capture)HELP");
    run_cmd->callback([options] { run(*options); });
}

}  // namespace lapse::cli
