// The `lapse` subcommands. Each function adds one subcommand (with its
// options, --help examples and callback) to the application; the callback
// throws CLI::RuntimeError(code) to set a non-zero exit status after it has
// written its message to stderr.
//
//   CLI::App app{"lapse"};
//   lapse::cli::add_info_command(app);
//   lapse::cli::add_validate_command(app);
//   lapse::cli::add_report_command(app);
//   lapse::cli::add_export_command(app);
//   return lapse::cli::parse_and_run(app, argc, argv);
#pragma once

namespace CLI {
class App;
class ParseError;
}

namespace lapse::cli {

// lapse info PLUGIN [--json]
void add_info_command(CLI::App& app);
// lapse validate PLUGIN [--under NAME] [--only REGEX] [--seed N] [--json | --junit FILE] ...
void add_validate_command(CLI::App& app);
// lapse report SESSION [--json | --csv]
void add_report_command(CLI::App& app);
// lapse export SESSION --format chrome -o FILE
void add_export_command(CLI::App& app);

// Exit statuses shared by the subcommands.
inline constexpr int exit_failure = 1;  // the command ran and found a problem (a failed check)
inline constexpr int exit_usage = 2;    // bad arguments, unreadable input, plugin not loadable

// Parses the command line and runs the chosen subcommand; returns the exit
// status: 0, the subcommand's own, or exit_usage for any argument CLI11
// refuses (its own codes, 101 to 115, never leave the program).
int parse_and_run(CLI::App& app, int argc, char** argv);
// The status for one CLI11 error, after printing what CLI11 prints.
int exit_status(CLI::App& app, const CLI::ParseError& error);

}  // namespace lapse::cli
