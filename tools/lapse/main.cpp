// `lapse`: measure work on any backend (run, bench), inspect and test plugin
// files (info, validate), turn sessions into reports and traces (report,
// export). commands.hpp lists the subcommands and the exit codes.
#include "commands.hpp"

#include <CLI/CLI.hpp>

int main(int argc, char** argv)
{
    CLI::App app{"lapse: profiling windows over pluggable backends"};
    app.require_subcommand(1);
    lapse::cli::add_all_commands(app);
    return lapse::cli::run_command_line(app, argc, argv);
}
