// lapse export CAPTURE... --format chrome -o FILE: captures (or sessions)
// as a trace that Perfetto (ui.perfetto.dev) and chrome://tracing open,
// streamed: memory stays constant however long the run was.
#include "chrome_trace.hpp"
#include "window_input.hpp"

#include "commands.hpp"
#include <lapse/core.hpp>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace lapse::cli {

void add_export_command(CLI::App& app)
{
    struct Options {
        std::vector<std::string> files;
        std::string format = "chrome";
        std::string output;
    };
    auto opt = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("export", "Write recorded captures or sessions as a trace for Perfetto / chrome://tracing");
    cmd->footer(R"HELP(One track per thread (system-time windows) and per stream (device windows);
nested windows become nested slices. Device windows whose stamps are on the
host clock share the host timeline; windows on a device's own clock get
their own process, marked as not aligned with the host. Windows overlapping
without nesting go to an extra "(overlap N)" lane. A window opened on one
thread and closed on another is drawn as a flow between the two threads.
Several captures share one timeline through their realtime anchors.
Windows that were not measured or failed have no interval and are left out
(counted on stderr).

Examples:
  lapse export run.lapse-capture --format chrome -o trace.json
  lapse export client.lapse-capture server.lapse-capture -o both.json
  lapse export run.lapse-capture -o -            # to stdout
  then open trace.json in https://ui.perfetto.dev or chrome://tracing)HELP");
    cmd->add_option("CAPTURE", opt->files, "Capture files or session archives")->required();
    cmd->add_option("--format,-f", opt->format, "Output format")->check(CLI::IsMember({"chrome"}))->capture_default_str();
    cmd->add_option("--output,-o", opt->output, "Output file, or - for stdout")->required();
    cmd->callback([opt] {
        std::optional<WindowInputs> inputs;
        try {
            inputs.emplace(opt->files);
        } catch (const std::exception& e) {
            std::cerr << "lapse export: " << e.what() << '\n';
            throw CLI::RuntimeError(exit_usage);
        }
        ChromeTraceStats stats;
        const bool to_stdout = opt->output == "-";
        // Into a temporary file, renamed when complete: a failed export
        // never leaves half a trace under the wanted name.
        const std::string temp = opt->output + ".tmp";
        std::ofstream file;
        if (!to_stdout) {
            file.open(temp, std::ios::binary | std::ios::trunc);
            if (!file) {
                std::cerr << "lapse export: cannot write " << opt->output << ": " << std::strerror(errno) << '\n';
                throw CLI::RuntimeError(exit_usage);
            }
        }
        std::ostream& out = to_stdout ? std::cout : file;
        try {
            write_chrome_trace(*inputs, out, stats);
        } catch (const std::exception& e) {
            std::cerr << "lapse export: " << e.what() << '\n';
            if (!to_stdout) std::remove(temp.c_str());
            throw CLI::RuntimeError(exit_usage);
        }
        out.flush();
        if (!out) {
            std::cerr << "lapse export: cannot write " << opt->output << ": " << std::strerror(errno) << '\n';
            if (!to_stdout) std::remove(temp.c_str());
            throw CLI::RuntimeError(exit_usage);
        }
        if (!to_stdout) {
            file.close();
            std::error_code ec;
            std::filesystem::rename(temp, opt->output, ec);
            if (ec) {
                std::cerr << "lapse export: cannot write " << opt->output << ": " << ec.message() << '\n';
                throw CLI::RuntimeError(exit_usage);
            }
        }
        if (stats.not_measured + stats.failed > 0)
            std::cerr << "lapse export: left out " << stats.not_measured << " window(s) not measured and "
                      << stats.failed << " failed (no interval to draw)\n";
        for (const InputSummary& s : inputs->summaries()) {
            if (!s.complete)
                std::cerr << "lapse export: " << printable(s.file) << " was cut short (last chunk written at "
                          << utc_time(s.last_chunk_realtime_ns) << ")\n";
            if (s.dropped_total > 0)
                std::cerr << "lapse export: " << printable(s.file) << ": " << s.dropped_total
                          << " windows were dropped while recording (not in the trace)\n";
            for (const CaptureDamage& d : s.damage)
                std::cerr << "lapse export: " << printable(s.file) << ": damaged: " << d.size << " bytes at offset "
                          << d.offset << " skipped (" << printable(d.cause) << ")\n";
        }
    });
}

}  // namespace lapse::cli
