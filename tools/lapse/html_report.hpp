// lapse report INPUT --html FILE [--base BASE]: one self-contained HTML
// page (no network: scripts, styles and data inline) with a zoomable
// timeline per stream and thread, a histogram per window name, the
// statistics table and, given --base, the diff view (docs/html-report.md).
//
// Kept apart from report.cpp: report.cpp only registers the options and
// calls run_html_report when --html is given.
#pragma once

#include <memory>
#include <string>

namespace CLI {
class App;
}

namespace lapse::cli {

struct HtmlReportOptions {
    std::string output;  // --html FILE; empty: no HTML report
    std::string base;    // --base SESSION: add the diff view, BASE against the input
};

// Adds --html and --base to `report`.
std::shared_ptr<HtmlReportOptions> add_html_report_options(CLI::App& report);

// Writes the page. Throws InputError for a bad input, std::runtime_error
// for an output that cannot be written.
void write_html_report(const std::string& input, const HtmlReportOptions& options);

// write_html_report for the command: says why it failed on stderr and
// throws CLI::RuntimeError(exit_usage).
void run_html_report(const std::string& input, const HtmlReportOptions& options);

}  // namespace lapse::cli
