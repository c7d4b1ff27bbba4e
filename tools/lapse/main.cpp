// `lapse`: measure work on any backend (run, here), inspect and test plugin
// files (info, validate), turn sessions into reports (report, export) and
// measure a backend (bench) — those come from tools/commands when built.
#include "commands.hpp"

#include <CLI/CLI.hpp>

#if LAPSE_HAVE_COMMANDS
#include <lapse/cli/commands.hpp>  // tools/commands: info, validate, report, export
#endif
#if LAPSE_HAVE_BENCH_COMMAND
#include "bench.hpp"  // tools/commands/bench.hpp
#endif

int main(int argc, char** argv)
{
    CLI::App app{"lapse: profiling windows over pluggable backends"};
    app.require_subcommand(1);
    lapse::tool::add_run_command(app);
#if LAPSE_HAVE_COMMANDS
    lapse::cli::add_info_command(app);
    lapse::cli::add_validate_command(app);
    lapse::cli::add_report_command(app);
    lapse::cli::add_export_command(app);
#endif
#if LAPSE_HAVE_BENCH_COMMAND
    lapse::cli::add_bench_command(app);
#endif
    // A subcommand that fails throws CLI::RuntimeError(code) after saying why.
#if LAPSE_HAVE_COMMANDS
    // Bad arguments exit 2, never CLI11's own codes (sdk/README.md).
    return lapse::cli::parse_and_run(app, argc, argv);
#else
    CLI11_PARSE(app, argc, argv);
    return lapse::tool::exit_ok;
#endif
}
