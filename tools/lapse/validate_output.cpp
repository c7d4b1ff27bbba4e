#include "validate_output.hpp"

#include "terminal.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <ostream>

namespace lapse::cli {
namespace {

std::string xml_escape(const std::string& raw)
{
    const std::string s = utf8_text(raw);  // the document says UTF-8
    std::string out;
    out.reserve(s.size());
    for (unsigned char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default:
            // XML 1.0 forbids most control characters, even escaped.
            if (c < 0x20 && c != '\n' && c != '\t' && c != '\r')
                out += '?';
            else
                out += static_cast<char>(c);
        }
    }
    return out;
}

// Plugin output may be any bytes; JSON strings must be UTF-8.
std::string printable(const std::string& s)
{
    std::string out;
    for (unsigned char c : s) out += (c < 0x80 && (c >= 0x20 || c == '\n' || c == '\t')) ? static_cast<char>(c) : '?';
    return out;
}

}  // namespace

std::size_t ValidateRun::count(Outcome o) const
{
    std::size_t n = 0;
    for (const auto& c : checks) n += c.result.outcome == o ? 1 : 0;
    return n;
}

void print_text_line(std::ostream& out, const CheckRecord& check, bool verbose)
{
    const char* tag = check.result.outcome == Outcome::pass ? "PASS" : check.result.outcome == Outcome::skip ? "SKIP" : "FAIL";
    char time[32];
    std::snprintf(time, sizeof time, "%7.3f s", check.result.seconds);
    out << tag << "  " << time << "  " << check.name;
    if (!check.result.message.empty()) out << ": " << terminal_text(check.result.message);
    out << '\n';
    if (check.result.outcome == Outcome::fail || verbose) {
        if (!check.result.stderr_tail.empty()) {
            out << "      --- the check's stderr (last lines) ---\n";
            std::string line;
            for (char c : check.result.stderr_tail) {
                if (c == '\n') {
                    out << "      " << terminal_text(line) << '\n';
                    line.clear();
                } else {
                    line += c;
                }
            }
            if (!line.empty()) out << "      " << terminal_text(line) << '\n';
        }
    }
}

void print_text_summary(std::ostream& out, const ValidateRun& run)
{
    out << terminal_text(run.plugin_file) << (run.under.empty() ? "" : " under " + run.under) << ": " << run.count(Outcome::pass)
        << " passed, " << run.count(Outcome::fail) << " failed, " << run.count(Outcome::skip) << " skipped (seed "
        << run.seed << ")\n";
}

void print_json(std::ostream& out, const ValidateRun& run)
{
    nlohmann::ordered_json j;
    j["plugin"] = run.plugin_arg;
    j["file"] = run.plugin_file;
    j["under"] = run.under.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(run.under);
    j["config"] = run.config_name;
    j["seed"] = run.seed;
    auto& list = j["checks"] = nlohmann::ordered_json::array();
    for (const auto& c : run.checks) {
        list.push_back({{"name", c.name},
                        {"description", c.description},
                        {"outcome", to_string(c.result.outcome)},
                        {"message", printable(c.result.message)},
                        {"seconds", c.result.seconds},
                        {"stderr", printable(c.result.stderr_tail)}});
    }
    j["summary"] = {{"passed", run.count(Outcome::pass)},
                    {"failed", run.count(Outcome::fail)},
                    {"skipped", run.count(Outcome::skip)}};
    out << json_text(j) << '\n';
}

void write_junit(std::ostream& out, const ValidateRun& run)
{
    double total = 0;
    for (const auto& c : run.checks) total += c.result.seconds;
    const std::string suite = "lapse validate " + run.plugin_file + (run.under.empty() ? "" : " under " + run.under);
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<testsuites>\n"
        << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << run.checks.size() << "\" failures=\""
        << run.count(Outcome::fail) << "\" errors=\"0\" skipped=\"" << run.count(Outcome::skip) << "\" time=\"" << total
        << "\">\n"
        << "    <properties><property name=\"seed\" value=\"" << run.seed << "\"/></properties>\n";
    for (const auto& c : run.checks) {
        out << "    <testcase classname=\"lapse.validate\" name=\"" << xml_escape(c.name) << "\" time=\""
            << c.result.seconds << "\"";
        if (c.result.outcome == Outcome::pass) {
            out << "/>\n";
            continue;
        }
        out << ">\n";
        if (c.result.outcome == Outcome::skip)
            out << "      <skipped message=\"" << xml_escape(c.result.message) << "\"/>\n";
        else
            out << "      <failure message=\"" << xml_escape(c.result.message) << "\">" << xml_escape(c.result.message)
                << "</failure>\n";
        if (!c.result.stderr_tail.empty())
            out << "      <system-err>" << xml_escape(c.result.stderr_tail) << "</system-err>\n";
        out << "    </testcase>\n";
    }
    out << "  </testsuite>\n</testsuites>\n";
}

}  // namespace lapse::cli
