// lapse report CAPTURE... [--json | --csv]: a statistics table per window
// name, streamed over captures (or Session archives) in constant memory.
//
// Measured windows feed the statistics; windows that were not measured or
// failed are counted in their own columns and never averaged in as zero (a
// failed run must not read as a fast one). What a capture could not hold
// (windows dropped past its memory budget, a run cut short, damaged
// chunks) is printed first, where nobody can miss it.
#include "html_report.hpp"
#include "statistics.hpp"
#include "terminal.hpp"
#include "record_source.hpp"

#include <lapse/window.h>

#include "commands.hpp"
#include <lapse/core.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace lapse::cli {
namespace {

struct Row {
    std::string name;
    SummaryBuilder durations;         // READY windows only
    uint64_t system = 0, device = 0;  // how the measured ones were timed
    uint64_t not_measured = 0;
    uint64_t failed = 0;
    uint64_t dropped = 0;             // by the capture's policy (no window recorded)
    // Measured windows that closed with work still queued (no flush over a
    // batching backend): their numbers cover only what ran.
    uint64_t unflushed = 0;
    // Measured windows whose start may have been stamped while work from
    // before them still ran (the duration holds some of it).
    uint64_t held_earlier = 0;
    std::optional<Summary> summary;

    // "device", "system", or "mixed (device 3, system 2)": a name timed two
    // ways is worth seeing, since the two methods measure different things.
    std::string method() const
    {
        if (system == 0 && device == 0) return "none";
        if (system == 0) return "device";
        if (device == 0) return "system";
        return "mixed (device " + std::to_string(device) + ", system " + std::to_string(system) + ")";
    }
};

struct Report {
    std::vector<Row> rows;
    uint64_t dropped_total = 0;
    uint64_t unflushed_total = 0;
    uint64_t held_earlier_total = 0;
};

Report build_report(RecordSource& source, std::vector<InputInfo>& inputs)
{
    std::map<std::string, Row, std::less<>> by_name;
    Row* last = nullptr;  // consecutive windows usually share a name
    inputs = for_each_window(source, [&](const RecordedWindow& w) {
        if (last == nullptr || last->name != w.name) {
            auto it = by_name.find(w.name);
            if (it == by_name.end()) {
                it = by_name.emplace(std::string(w.name), Row{}).first;
                it->second.name = it->first;
            }
            last = &it->second;
        }
        Row& row = *last;
        switch (w.state) {
        case DurationState::ready:
            row.durations.add(w.ns());
            (w.method == TimingMethod::system ? row.system : row.device) += 1;
            if ((w.flags & LAPSE_DURATION_WORK_QUEUED) != 0) ++row.unflushed;
            if ((w.flags & LAPSE_DURATION_HOLDS_EARLIER_WORK) != 0) ++row.held_earlier;
            break;
        case DurationState::failed: ++row.failed; break;
        default: ++row.not_measured; break;  // not measured (nothing recorded is pending)
        }
    });
    Report report;
    for (const InputInfo& s : inputs) {
        report.dropped_total += s.dropped;
        for (const CaptureDrop& d : s.dropped_by_name) {
            auto it = by_name.find(d.name);
            if (it == by_name.end()) {
                it = by_name.emplace(d.name, Row{}).first;
                it->second.name = d.name;
            }
            it->second.dropped += d.count;
        }
    }
    report.rows.reserve(by_name.size());
    for (auto& [name, row] : by_name) {
        row.summary = row.durations.summary();
        report.unflushed_total += row.unflushed;
        report.held_earlier_total += row.held_earlier;
        report.rows.push_back(std::move(row));
    }
    // By total, largest first; names without a measurement last; ties by name.
    std::stable_sort(report.rows.begin(), report.rows.end(), [](const Row& a, const Row& b) {
        const int64_t ta = a.summary ? a.summary->total_ns : -1;
        const int64_t tb = b.summary ? b.summary->total_ns : -1;
        return ta > tb;
    });
    return report;
}

std::string csv_field(const std::string& s)
{
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

void print_csv(const Report& report)
{
    std::cout << "name,count,total_ns,min_ns,median_ns,p99_ns,max_ns,stddev_ns,method,not_measured,failed,dropped,"
                 "unflushed,held_earlier\n";
    for (const Row& r : report.rows) {
        std::cout << csv_field(printable(r.name)) << ',';
        if (r.summary) {
            const Summary& s = *r.summary;
            char buf[256];
            std::snprintf(buf, sizeof buf, "%llu,%lld,%lld,%.1f,%lld,%lld,%.1f,",
                          static_cast<unsigned long long>(s.count), static_cast<long long>(s.total_ns),
                          static_cast<long long>(s.min_ns), s.median_ns, static_cast<long long>(s.p99_ns),
                          static_cast<long long>(s.max_ns), s.stddev_ns);
            std::cout << buf;
        } else {
            std::cout << "0,,,,,,,";  // empty cells: no measurement, not zero
        }
        std::cout << csv_field(r.method()) << ',' << r.not_measured << ',' << r.failed << ',' << r.dropped << ','
                  << r.unflushed << ',' << r.held_earlier << '\n';
    }
}

nlohmann::ordered_json input_json(const InputInfo& s)
{
    nlohmann::ordered_json j;
    j["file"] = s.path;
    j["format"] = s.capture ? "capture" : "session";
    j["windows"] = s.windows;
    if (!s.capture) return j;
    j["host"] = s.header.host;
    j["pid"] = s.header.pid;
    j["program"] = s.header.program;
    j["anchor_realtime_ns"] = s.header.anchor_realtime_ns;
    j["anchor_monotonic_ns"] = s.header.anchor_monotonic_ns;
    j["complete"] = !s.cut_short;
    j["cut_short"] = s.cut_short;
    j["last_chunk_realtime_ns"] = s.last_chunk_realtime_ns;
    j["dropped_total"] = s.dropped;
    auto& drops = j["dropped"] = nlohmann::ordered_json::object();
    for (const CaptureDrop& d : s.dropped_by_name) drops[d.name] = d.count;
    auto& damage = j["damage"] = nlohmann::ordered_json::array();
    for (const CaptureDamage& d : s.damage) damage.push_back({{"offset", d.offset}, {"size", d.size}, {"cause", d.cause}});
    auto& devices = j["devices"] = nlohmann::ordered_json::array();
    for (const CaptureSource& d : s.sources)
        devices.push_back({{"plugin", d.plugin}, {"device", d.device_name}, {"stack", d.stack}, {"streams", d.stream_count}});
    return j;
}

void print_json(const Report& report, const std::vector<InputInfo>& inputs)
{
    const InputInfo& first = inputs.front();
    const BackendRecord& b = first.backend;
    nlohmann::ordered_json out;
    out["session"] = first.path;
    out["backend"] = {{"plugin", b.plugin},
                      {"plugin_version", b.plugin_version},
                      {"device", b.device_name},
                      {"streams", b.stream_count},
                      {"capabilities", capability_names(b.capabilities)}};
    auto& list = out["inputs"] = nlohmann::ordered_json::array();
    for (const InputInfo& s : inputs) list.push_back(input_json(s));
    out["dropped_total"] = report.dropped_total;
    auto& rows = out["windows"] = nlohmann::ordered_json::array();
    for (const Row& r : report.rows) {
        nlohmann::ordered_json j;
        j["name"] = r.name;
        j["count"] = r.summary ? r.summary->count : 0;
        if (r.summary) {
            const Summary& s = *r.summary;
            j["total_ns"] = s.total_ns;
            j["min_ns"] = s.min_ns;
            j["median_ns"] = s.median_ns;
            j["p99_ns"] = s.p99_ns;
            j["max_ns"] = s.max_ns;
            j["mean_ns"] = s.mean_ns;
            j["stddev_ns"] = s.stddev_ns;
            j["approximate_quantiles"] = s.approximate;
        } else {
            for (const char* k : {"total_ns", "min_ns", "median_ns", "p99_ns", "max_ns", "mean_ns", "stddev_ns"})
                j[k] = nullptr;  // not measured is not zero
        }
        j["method"] = r.method();
        j["not_measured"] = r.not_measured;
        j["failed"] = r.failed;
        j["dropped"] = r.dropped;
        j["unflushed"] = r.unflushed;
        j["held_earlier"] = r.held_earlier;
        rows.push_back(std::move(j));
    }
    // Names are bytes from the recorded program: invalid UTF-8 is replaced, never fatal.
    std::cout << out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

// What a reader must not miss: always on stderr, and also on `also` (the
// table's stdout) when given.
void print_warnings(const std::vector<InputInfo>& inputs, std::ostream* also)
{
    auto say = [&](const std::string& line) {
        if (also != nullptr) *also << line << '\n';
        std::cerr << "lapse report: " << line << '\n';
    };
    for (const InputInfo& s : inputs) {
        if (!s.capture) continue;
        const std::string file = printable(s.path);
        if (s.cut_short) {
            const std::string line = "CUT SHORT: " + file + " has no end chunk (the host was killed or crashed); its last complete chunk was written at " +
                                     utc_time(s.last_chunk_realtime_ns);
            say(line);
        }
        for (const CaptureDamage& d : s.damage) {
            const std::string line = "DAMAGED: " + file + ": " + std::to_string(d.size) + " bytes at offset " +
                                     std::to_string(d.offset) + " skipped (" + printable(d.cause) + ")";
            say(line);
        }
        if (s.dropped > 0) {
            std::string line = "DROPPED: " + std::to_string(s.dropped) + " windows of " + file +
                               " were not recorded (the capture's memory budget was full; see the dropped column):";
            std::size_t shown = 0;
            for (const CaptureDrop& d : s.dropped_by_name) {
                if (shown++ == 5) {
                    line += " ...";
                    break;
                }
                line += " " + printable(d.name) + " " + std::to_string(d.count);
            }
            say(line);
        }
    }
}

void print_table(const Report& report, const std::vector<InputInfo>& inputs)
{
    for (const InputInfo& s : inputs) {
        if (s.capture) {
            std::cout << "capture: " << printable(s.path) << " (" << printable(s.header.program) << ", pid " << s.header.pid
                      << " on " << printable(s.header.host) << ", started " << utc_time(s.header.anchor_realtime_ns)
                      << ", " << s.windows << " windows)\n";
            for (const CaptureSource& d : s.sources)
                std::cout << "  device " << d.id << ": " << printable(d.stack.empty() ? d.plugin : d.stack) << " on "
                          << printable(d.device_name) << " (" << d.stream_count << " streams)\n";
        } else if (!s.backend.plugin.empty()) {
            const BackendRecord& b = s.backend;
            std::cout << "backend: " << printable(b.plugin) << ' ' << printable(b.plugin_version) << " on "
                      << printable(b.device_name) << " (" << b.stream_count << " streams)\n";
        }
    }
    print_warnings(inputs, &std::cout);
    const bool any_dropped = report.dropped_total > 0;
    bool any_approximate = false;
    std::vector<std::vector<std::string>> cells;
    cells.push_back({"name", "count", "total", "min", "median", "p99", "max", "stddev", "method", "not measured",
                     "failed"});
    if (any_dropped) cells[0].push_back("dropped");
    const bool any_unflushed = report.unflushed_total > 0;
    if (any_unflushed) cells[0].push_back("unflushed*");
    const bool any_held_earlier = report.held_earlier_total > 0;
    if (any_held_earlier) cells[0].push_back("held earlier+");
    for (const Row& r : report.rows) {
        std::vector<std::string> c{printable(r.name)};
        if (r.summary) {
            const Summary& s = *r.summary;
            const std::string approx = s.approximate ? "~" : "";
            any_approximate = any_approximate || s.approximate;
            c.insert(c.end(), {std::to_string(s.count), human_duration(static_cast<double>(s.total_ns)),
                               human_duration(static_cast<double>(s.min_ns)), approx + human_duration(s.median_ns),
                               approx + human_duration(static_cast<double>(s.p99_ns)),
                               human_duration(static_cast<double>(s.max_ns)), human_duration(s.stddev_ns)});
        } else {
            c.insert(c.end(), {"0", "-", "-", "-", "-", "-", "-"});
        }
        c.insert(c.end(), {r.method(), std::to_string(r.not_measured), std::to_string(r.failed)});
        if (any_dropped) c.push_back(std::to_string(r.dropped));
        if (any_unflushed) c.push_back(std::to_string(r.unflushed));
        if (any_held_earlier) c.push_back(std::to_string(r.held_earlier));
        cells.push_back(std::move(c));
    }
    // The name and the method left-aligned.
    print_columns(std::cout, cells, [](std::size_t i, std::size_t) { return i == 0 || i == 8; });
    if (any_unflushed)
        std::cout << "(*: windows closed without flush over a batching backend while their work was still\n"
                     "    queued: their numbers cover only the work that ran before they closed)\n";
    if (any_held_earlier)
        std::cout << "(+: windows opened while work submitted before them was still running on the device:\n"
                     "    their numbers may hold some of that work)\n";
    if (any_approximate)
        std::cout << "(~: median and p99 of names with more than " << SummaryBuilder::exact_limit
                  << " windows come from a histogram, within 0.8 %)\n";
}

}  // namespace

void add_report_command(CLI::App& app)
{
    struct Options {
        std::vector<std::string> files;
        bool json = false;
        bool csv = false;
    };
    auto opt = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("report", "Statistics per window name from recorded captures or sessions");
    cmd->footer(R"HELP(Per window name: count, total, min, median, p99 (nearest rank), max, sample
standard deviation and the timing method, sorted by total. Windows that were
not measured or failed are counted in their own columns, never as zero.
Several captures (of several processes or machines) are merged on one
timeline by their clock anchors. A capture cut short (the host was killed),
damaged chunks and windows dropped past the memory budget are reported
first. Captures stream in constant memory; Session archives also load.

Examples:
  lapse run --capture run.lapse-capture -- ./my_app
  lapse report run.lapse-capture
  lapse report client.lapse-capture server.lapse-capture
  lapse report run.lapse-capture --json > stats.json
  lapse report run.lapse-capture --csv > stats.csv
  lapse report new.lapse-capture --html report.html --base base.lapse-capture)HELP");
    cmd->add_option("CAPTURE", opt->files, "Capture files (LAPSE_CAPTURE, lapse run --capture) or session archives")
        ->required();
    auto* json = cmd->add_flag("--json", opt->json, "Print JSON (durations in ns)");
    cmd->add_flag("--csv", opt->csv, "Print CSV (durations in ns)")->excludes(json);
    // --html FILE [--base INPUT]: a page instead of a table (html_report.cpp).
    auto html = add_html_report_options(*cmd);
    cmd->callback([opt, html] {
        if (!html->output.empty()) {
            if (opt->files.size() != 1) {
                std::cerr << "lapse report: --html takes one input (and --base for a second)\n";
                throw CLI::RuntimeError(exit_usage);
            }
            run_html_report(opt->files.front(), *html);
            return;
        }
        std::vector<InputInfo> inputs;
        Report report;
        try {
            // On one timeline: the earliest anchor first.
            auto source = open_record_source(opt->files, InputOrder::by_anchor);
            report = build_report(*source, inputs);
        } catch (const std::exception& e) {
            std::cerr << "lapse report: " << e.what() << '\n';
            throw CLI::RuntimeError(exit_usage);
        }
        if (opt->json) {
            print_warnings(inputs, nullptr);
            print_json(report, inputs);
        } else if (opt->csv) {
            print_warnings(inputs, nullptr);
            print_csv(report);
        } else {
            print_table(report, inputs);
        }
    });
}

}  // namespace lapse::cli
