#include "commands.hpp"

#include <CLI/CLI.hpp>

namespace lapse::cli {

void add_all_commands(CLI::App& app)
{
    add_run_command(app);
    add_info_command(app);
    add_validate_command(app);
    add_report_command(app);
    add_export_command(app);
    add_diff_command(app);
    add_bench_command(app);
}

int run_command_line(CLI::App& app, int argc, char** argv)
{
    app.footer("Exit codes: 0 ok; 1 the command ran and found a problem (a failed check, a device error);\n"
               "2 bad arguments or input (an unreadable file, a bad config, a plugin that cannot be loaded or opened);\n"
               "3 the backend is unavailable on this machine (no driver, no device).");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // A subcommand that failed threw CLI::RuntimeError(code) after saying
        // why; --help and --version are "errors" with code 0.
        const int code = app.exit(e);
        if (code == exit_ok || code == exit_failure || code == exit_usage || code == exit_unavailable) return code;
        return exit_usage;
    }
    return exit_ok;
}

}  // namespace lapse::cli
