// lapse export SESSION --format chrome -o FILE: a session as a trace that
// Perfetto (ui.perfetto.dev) and chrome://tracing open.
#include "chrome_trace.hpp"

#include "commands.hpp"
#include <lapse/core.hpp>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

namespace lapse::cli {

void add_export_command(CLI::App& app)
{
    struct Options {
        std::string session;
        std::string format = "chrome";
        std::string output;
    };
    auto opt = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("export", "Write a recorded session as a trace for Perfetto / chrome://tracing");
    cmd->footer(R"HELP(One track per thread (system-time windows) and per stream (device windows);
nested windows become nested slices. Device windows whose stamps are on the
host clock share the host timeline; windows on a device's own clock get
their own process, marked as not aligned with the host. Windows overlapping
without nesting go to an extra "(overlap N)" lane. Windows that were not
measured or failed have no interval and are left out (counted on stderr).

Examples:
  lapse export run.lapse --format chrome -o trace.json
  lapse export run.lapse -o -            # to stdout
  then open trace.json in https://ui.perfetto.dev or chrome://tracing)HELP");
    cmd->add_option("SESSION", opt->session, "A session file (lapse run --session FILE)")->required();
    cmd->add_option("--format,-f", opt->format, "Output format")->check(CLI::IsMember({"chrome"}))->capture_default_str();
    cmd->add_option("--output,-o", opt->output, "Output file, or - for stdout")->required();
    cmd->callback([opt] {
        Session session;
        try {
            session = Session::load(opt->session);
        } catch (const std::exception& e) {
            std::cerr << "lapse export: " << e.what() << '\n';
            throw CLI::RuntimeError(exit_usage);
        }
        ChromeTraceStats stats;
        const std::string text = chrome_trace(session, stats).dump(1) + "\n";
        if (opt->output == "-") {
            std::cout << text;
        } else {
            std::ofstream out(opt->output, std::ios::binary | std::ios::trunc);
            if (out) out << text;
            out.flush();
            if (!out) {
                std::cerr << "lapse export: cannot write " << opt->output << ": " << std::strerror(errno) << '\n';
                throw CLI::RuntimeError(exit_usage);
            }
        }
        if (stats.not_measured + stats.failed > 0)
            std::cerr << "lapse export: left out " << stats.not_measured << " window(s) not measured and "
                      << stats.failed << " failed (no interval to draw)\n";
    });
}

}  // namespace lapse::cli
