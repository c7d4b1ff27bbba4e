// One exit status convention for every subcommand: CLI11's own codes
// (105 for a value that fails a check, 109 for an extra argument, ...)
// never leave the program; bad arguments are exit_usage (2), as
// sdk/README.md promises.
#include <lapse/cli/commands.hpp>

#include <CLI/CLI.hpp>

namespace lapse::cli {

int exit_status(CLI::App& app, const CLI::ParseError& error)
{
    // app.exit prints what CLI11 prints (help, or the error and a hint) and
    // returns CLI11's code: 0 for --help, the command's own for RuntimeError.
    const int code = app.exit(error);
    if (code == 0 || dynamic_cast<const CLI::RuntimeError*>(&error) != nullptr) return code;
    return exit_usage;
}

int parse_and_run(CLI::App& app, int argc, char** argv)
{
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return exit_status(app, e);
    }
    return 0;
}

}  // namespace lapse::cli
