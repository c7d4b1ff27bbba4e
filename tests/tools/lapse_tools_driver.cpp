// The `lapse` executable's subcommands, registered by the same list, for
// tests that need a driver beside the real executable (sanitizer builds,
// the out-of-tree template check).
#include "commands.hpp"

#include <CLI/CLI.hpp>

int main(int argc, char** argv)
{
    CLI::App app{"lapse: profiling windows over pluggable backends (test driver)"};
    app.require_subcommand(1);
    lapse::cli::add_all_commands(app);
    return lapse::cli::run_command_line(app, argc, argv);
}
