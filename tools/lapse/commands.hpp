// The subcommands of `lapse`, one file each, and the exit codes they share.
//
// A subcommand's add_* function registers it (options, --help examples,
// callback) on the application; its callback prints why it failed and
// throws CLI::RuntimeError(code). A new subcommand adds its file to
// CMakeLists.txt, declares its add_* function here and appends it to
// add_all_commands (commands.cpp): main.cpp and the test driver both call
// that one list.
#pragma once

namespace CLI {
class App;
}

namespace lapse::cli {

// Exit codes, the same for every subcommand (README, `lapse --help`).
enum ExitCode : int {
    exit_ok = 0,
    // The command ran and found a problem: a failed check, a device error
    // during the run, a file that could not be written.
    exit_failure = 1,
    // The command could not start on what it was given: bad arguments, an
    // unreadable or damaged input file, a bad config, a plugin or backend
    // that cannot be loaded or opened.
    exit_usage = 2,
    // The backend is unavailable on this machine (no driver, no device):
    // nothing was measured or checked. `validate --require-device` and the
    // GPU check use it to tell "not here" from "broken".
    exit_unavailable = 3
};

// lapse run [--config FILE] [--session FILE]
void add_run_command(CLI::App& app);
// lapse info PLUGIN [--json]
void add_info_command(CLI::App& app);
// lapse validate PLUGIN [--under NAME] [--only REGEX] [--seed N] [--json | --junit FILE] ...
void add_validate_command(CLI::App& app);
// lapse report SESSION [--json | --csv]
void add_report_command(CLI::App& app);
// lapse export INPUT... --format chrome|perfetto -o FILE
void add_export_command(CLI::App& app);
// lapse diff BASE NEW [--threshold 2%] [--json]
void add_diff_command(CLI::App& app);
// lapse bench [--config FILE] [--json FILE] [--filter REGEX] [--quick] [--rounds N] [--verbose]
void add_bench_command(CLI::App& app);

// Every subcommand above, in the order `lapse --help` lists them.
void add_all_commands(CLI::App& app);

// Parses the command line and runs the subcommand; returns the exit code.
// CLI11's own codes for bad arguments (106, 109, ...) become exit_usage, so
// every subcommand exits with one of the codes above whatever went wrong.
int run_command_line(CLI::App& app, int argc, char** argv);

}  // namespace lapse::cli
