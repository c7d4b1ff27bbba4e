// lapse export INPUT... --format NAME -o FILE: recorded windows as a trace
// that Perfetto (ui.perfetto.dev) and chrome://tracing open. The formats
// are a registry (export/export_format.hpp), one file each.
#include "export/export_format.hpp"

#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace lapse::cli {

void add_export_command(CLI::App& app)
{
    struct Options {
        std::vector<std::string> inputs;
        std::string format = "chrome";
        std::string output;
    };
    auto opt = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("export", "Write recorded sessions as a trace for Perfetto / chrome://tracing");
    std::string formats_help = "Formats:\n";
    std::vector<std::string> names;
    for (const ExportFormat& f : export_formats()) {
        formats_help += "  " + std::string(f.name) + std::string(10 - f.name.size(), ' ') + std::string(f.summary) + "\n";
        names.emplace_back(f.name);
    }
    cmd->footer(formats_help + R"HELP(
One track per thread (system-time windows) and per stream (device windows);
nested windows become nested slices. Device windows whose stamps are on the
host clock share the host timeline; windows on a device's own clock are
marked as not aligned with the host. Windows overlapping without nesting go
to an extra "(overlap N)" track. A window opened on one thread and closed on
another is drawn as a flow. Several captures share one timeline through
their realtime anchors. Windows that were not measured or failed have no
interval and are left out (counted on stderr).

Examples:
  lapse export run.lapse-capture --format perfetto -o run.pftrace
  lapse export run.lapse-capture --format chrome -o trace.json
  lapse export client.lapse-capture server.lapse-capture --format perfetto -o both.pftrace
  lapse export run.lapse-capture -o -            # to stdout
  then open the file in https://ui.perfetto.dev or chrome://tracing)HELP");
    cmd->add_option("INPUT", opt->inputs, "Capture files (LAPSE_CAPTURE, lapse run --capture) or session archives")->required();
    cmd->add_option("--format,-f", opt->format, "Output format")->check(CLI::IsMember(names))->capture_default_str();
    cmd->add_option("--output,-o", opt->output, "Output file, or - for stdout")->required();
    cmd->callback([opt] {
        const ExportFormat& format = *find_export_format(opt->format);
        if (opt->inputs.size() > 1 && !format.several_inputs) {
            std::cerr << "lapse export: --format " << format.name << " holds one input, " << opt->inputs.size()
                      << " given (--format perfetto holds several)\n";
            throw CLI::RuntimeError(exit_usage);
        }
        std::ofstream file;
        if (opt->output != "-") {
            file.open(opt->output, std::ios::binary | std::ios::trunc);
            if (!file) {
                std::cerr << "lapse export: cannot write " << opt->output << ": " << std::strerror(errno) << '\n';
                throw CLI::RuntimeError(exit_usage);
            }
        }
        std::ostream& out = opt->output == "-" ? std::cout : file;
        ExportCounts counts;
        try {
            auto source = open_record_source(opt->inputs, format.order);
            format.write(*source, out, counts);
        } catch (const std::exception& e) {
            std::cerr << "lapse export: " << e.what() << '\n';
            if (file.is_open()) {  // formats stream: do not leave half a trace behind
                file.close();
                std::error_code ignored;
                std::filesystem::remove(opt->output, ignored);
            }
            throw CLI::RuntimeError(exit_usage);
        }
        out.flush();
        if (!out) {
            std::cerr << "lapse export: cannot write " << opt->output << ": " << std::strerror(errno) << '\n';
            throw CLI::RuntimeError(exit_usage);
        }
        if (counts.not_measured + counts.failed > 0)
            std::cerr << "lapse export: left out " << counts.not_measured << " window(s) not measured and "
                      << counts.failed << " failed (no interval to draw)\n";
    });
}

}  // namespace lapse::cli
