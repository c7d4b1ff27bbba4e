// lapse report SESSION [--json | --csv]: a statistics table per window name.
//
// Measured windows feed the statistics; windows that were not measured or
// failed are counted in their own columns and never averaged in as zero (a
// failed run must not read as a fast one).
#include "html_report.hpp"
#include "statistics.hpp"
#include "terminal.hpp"

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
    std::vector<int64_t> durations_ns;  // READY windows only
    uint64_t system = 0, device = 0;    // how the measured ones were timed
    uint64_t not_measured = 0;
    uint64_t failed = 0;
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

std::vector<Row> build_rows(const std::vector<WindowRecord>& windows)
{
    std::map<std::string, Row> by_name;
    for (const WindowRecord& w : windows) {
        Row& row = by_name[w.name];
        row.name = w.name;
        switch (w.state) {
        case DurationState::ready:
            row.durations_ns.push_back(w.ns());
            (w.method == TimingMethod::system ? row.system : row.device) += 1;
            break;
        case DurationState::failed: ++row.failed; break;
        default: ++row.not_measured; break;  // not measured (a session holds no pending window)
        }
    }
    std::vector<Row> rows;
    rows.reserve(by_name.size());
    for (auto& [name, row] : by_name) {
        row.summary = summarize(row.durations_ns);
        rows.push_back(std::move(row));
    }
    // By total, largest first; names without a measurement last; ties by name.
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        const int64_t ta = a.summary ? a.summary->total_ns : -1;
        const int64_t tb = b.summary ? b.summary->total_ns : -1;
        return ta > tb;
    });
    return rows;
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

void print_csv(const std::vector<Row>& rows)
{
    std::cout << "name,count,total_ns,min_ns,median_ns,p99_ns,max_ns,stddev_ns,method,not_measured,failed\n";
    for (const Row& r : rows) {
        std::cout << csv_field(r.name) << ',';
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
        std::cout << csv_field(r.method()) << ',' << r.not_measured << ',' << r.failed << '\n';
    }
}

void print_json(const std::vector<Row>& rows, const Session& session, const std::string& file)
{
    const BackendRecord b = session.backend();
    nlohmann::ordered_json out;
    out["session"] = file;
    out["backend"] = {{"plugin", b.plugin},
                      {"plugin_version", b.plugin_version},
                      {"device", b.device_name},
                      {"streams", b.stream_count},
                      {"capabilities", capability_names(b.capabilities)}};
    auto& list = out["windows"] = nlohmann::ordered_json::array();
    for (const Row& r : rows) {
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
        } else {
            for (const char* k : {"total_ns", "min_ns", "median_ns", "p99_ns", "max_ns", "mean_ns", "stddev_ns"})
                j[k] = nullptr;  // not measured is not zero
        }
        j["method"] = r.method();
        j["not_measured"] = r.not_measured;
        j["failed"] = r.failed;
        list.push_back(std::move(j));
    }
    std::cout << out.dump(2) << '\n';
}

void print_table(const std::vector<Row>& rows, const Session& session)
{
    const BackendRecord b = session.backend();
    if (!b.plugin.empty())
        std::cout << "backend: " << b.plugin << ' ' << b.plugin_version << " on " << b.device_name << " ("
                  << b.stream_count << " streams)\n";
    std::vector<std::vector<std::string>> cells;
    cells.push_back({"name", "count", "total", "min", "median", "p99", "max", "stddev", "method", "not measured",
                     "failed"});
    for (const Row& r : rows) {
        std::vector<std::string> c{r.name};
        if (r.summary) {
            const Summary& s = *r.summary;
            c.insert(c.end(), {std::to_string(s.count), human_duration(static_cast<double>(s.total_ns)),
                               human_duration(static_cast<double>(s.min_ns)), human_duration(s.median_ns),
                               human_duration(static_cast<double>(s.p99_ns)),
                               human_duration(static_cast<double>(s.max_ns)), human_duration(s.stddev_ns)});
        } else {
            c.insert(c.end(), {"0", "-", "-", "-", "-", "-", "-"});
        }
        c.insert(c.end(), {r.method(), std::to_string(r.not_measured), std::to_string(r.failed)});
        cells.push_back(std::move(c));
    }
    std::vector<std::size_t> width(cells[0].size(), 0);
    for (const auto& row : cells)
        for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    for (const auto& row : cells) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i) {
            // Names left-aligned, numbers right-aligned.
            const std::string pad(width[i] - row[i].size(), ' ');
            line += i == 0 || i == 8 ? row[i] + pad : pad + row[i];
            if (i + 1 < row.size()) line += "  ";
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        std::cout << line << '\n';
    }
}

}  // namespace

void add_report_command(CLI::App& app)
{
    struct Options {
        std::string session;
        bool json = false;
        bool csv = false;
    };
    auto opt = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("report", "Statistics per window name from a recorded session");
    cmd->footer(R"HELP(Per window name: count, total, min, median, p99 (nearest rank), max, sample
standard deviation and the timing method, sorted by total. Windows that were
not measured or failed are counted in their own columns, never as zero.

Examples:
  lapse run --session run.lapse -- ./my_app
  lapse report run.lapse
  lapse report run.lapse --json > stats.json
  lapse report run.lapse --csv > stats.csv
  lapse report new.lapse --html report.html --base base.lapse)HELP");
    cmd->add_option("SESSION", opt->session, "A session file (lapse run --session FILE)")->required();
    auto* json = cmd->add_flag("--json", opt->json, "Print JSON (durations in ns)");
    cmd->add_flag("--csv", opt->csv, "Print CSV (durations in ns)")->excludes(json);
    // --html FILE [--base SESSION]: a page instead of a table (html_report.cpp).
    auto html = add_html_report_options(*cmd);
    cmd->callback([opt, html] {
        if (!html->output.empty()) {
            run_html_report(opt->session, *html);
            return;
        }
        Session session;
        try {
            session = Session::load(opt->session);
        } catch (const std::exception& e) {
            std::cerr << "lapse report: " << e.what() << '\n';
            throw CLI::RuntimeError(exit_usage);
        }
        const std::vector<Row> rows = build_rows(session.windows());
        if (opt->json)
            print_json(rows, session, opt->session);
        else if (opt->csv)
            print_csv(rows);
        else
            print_table(rows, session);
    });
}

}  // namespace lapse::cli
