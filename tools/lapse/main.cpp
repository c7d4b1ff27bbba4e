// `lapse`: measure work on any backend (run), and later inspect plugins
// (info, validate), and turn sessions into reports (report, export).
#include "commands.hpp"

#include <CLI/CLI.hpp>

int main(int argc, char** argv)
{
    CLI::App app{"lapse: profiling windows over pluggable backends"};
    app.require_subcommand(1);
    lapse::tool::add_run_command(app);
    // A subcommand that fails throws CLI::RuntimeError(code) after saying why.
    CLI11_PARSE(app, argc, argv);
    return lapse::tool::exit_ok;
}
