// A stand-in for the `lapse` executable in tests: the same subcommand
// registrations on a CLI::App, so the tests exercise the real commands
// without depending on tools/lapse/ (owned and wired elsewhere).
#include <lapse/cli/commands.hpp>

#include <CLI/CLI.hpp>

int main(int argc, char** argv)
{
    CLI::App app{"lapse: profiling windows over pluggable backends (test driver)"};
    app.require_subcommand(1);
    lapse::cli::add_info_command(app);
    lapse::cli::add_validate_command(app);
    lapse::cli::add_report_command(app);
    lapse::cli::add_export_command(app);
    return lapse::cli::parse_and_run(app, argc, argv);
}
