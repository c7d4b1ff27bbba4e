#include "html_report.hpp"

#include "diff_model.hpp"
#include "html_report_assets.hpp"  // generated: the inlined d3, Chart.js and our script
#include "record_source.hpp"
#include "statistics.hpp"
#include "terminal.hpp"

#include "commands.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>
#include <tuple>

namespace lapse::cli {
namespace {

std::string escape(const std::string& s)
{
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out += c;
        }
    }
    return out;
}

struct TrackData {
    std::string name;
    std::vector<int64_t> start, dur;
    std::vector<uint32_t> name_index, depth;
    bool device_clock = false;
};

struct Group {  // per (name, method): never mix device and system times
    std::vector<int64_t> durations;
    uint64_t failed = 0, not_measured = 0;
};

// Sorts a track by start (containers first) and gives each window its
// nesting depth, for drawing nested windows below their parents.
void order_and_nest(TrackData& t)
{
    std::vector<std::size_t> order(t.start.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return t.start[a] != t.start[b] ? t.start[a] < t.start[b] : t.dur[a] > t.dur[b];
    });
    TrackData sorted;
    sorted.name = t.name;
    std::vector<int64_t> open_ends;
    for (std::size_t i : order) {
        while (!open_ends.empty() && open_ends.back() <= t.start[i]) open_ends.pop_back();
        sorted.start.push_back(t.start[i]);
        sorted.dur.push_back(t.dur[i]);
        sorted.name_index.push_back(t.name_index[i]);
        sorted.depth.push_back(static_cast<uint32_t>(open_ends.size()));
        open_ends.push_back(t.start[i] + t.dur[i]);
    }
    sorted.device_clock = t.device_clock;
    t = std::move(sorted);
}

nlohmann::json histogram(const std::string& name, TimingMethod method, std::vector<int64_t>& d)
{
    std::sort(d.begin(), d.end());
    const int64_t lo = d.front(), p99 = nearest_rank(d, 99.0), hi = d.back();
    constexpr int bins = 40;
    const bool overflow = p99 < hi;
    const double width = std::max<double>(1.0, static_cast<double>(p99 - lo) / bins);
    std::vector<uint64_t> counts(bins + (overflow ? 1 : 0), 0);
    std::vector<double> edges;
    for (int i = 0; i < bins; ++i) edges.push_back(static_cast<double>(lo) + i * width);
    if (overflow) edges.push_back(static_cast<double>(p99));
    for (int64_t v : d) {
        if (overflow && v > p99)
            ++counts.back();
        else
            ++counts[std::min<std::size_t>(bins - 1, static_cast<std::size_t>((static_cast<double>(v - lo)) / width))];
    }
    return {{"name", name}, {"method", to_string(method)}, {"count", d.size()},
            {"edges", edges}, {"counts", counts}, {"overflow", overflow}};
}

std::string stats_table(std::map<std::pair<std::string, TimingMethod>, Group>& groups)
{
    std::ostringstream h;
    h << "<table class=\"stats\"><tr><th>name</th><th>method</th><th>count</th><th>total</th><th>min</th>"
         "<th>median</th><th>p99</th><th>max</th><th>stddev</th><th>not measured</th><th>failed</th></tr>\n";
    for (auto& [key, g] : groups) {
        h << "<tr><td>" << escape(key.first) << "</td><td>" << to_string(key.second) << "</td>";
        if (const auto s = summarize(g.durations)) {
            h << "<td>" << s->count << "</td><td>" << human_duration(static_cast<double>(s->total_ns)) << "</td><td>"
              << human_duration(static_cast<double>(s->min_ns)) << "</td><td>" << human_duration(s->median_ns)
              << "</td><td>" << human_duration(static_cast<double>(s->p99_ns)) << "</td><td>"
              << human_duration(static_cast<double>(s->max_ns)) << "</td><td>" << human_duration(s->stddev_ns)
              << "</td>";
        } else {
            h << "<td>0</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>";
        }
        h << "<td>" << g.not_measured << "</td><td>" << g.failed << "</td></tr>\n";
    }
    h << "</table>\n";
    return h.str();
}

std::string diff_table(const std::string& base, const std::string& input)
{
    auto source = open_record_source({base, input});
    const DiffOptions options;
    const DiffResult r = compute_diff(*source, options);
    std::ostringstream h;
    h << "<p>base <code>" << escape(base) << "</code> against <code>" << escape(input)
      << "</code>: Hodges-Lehmann shift of the median, 99% interval (Mann-Whitney), threshold 2%.</p>\n"
      << "<table class=\"diff\"><tr><th>name</th><th>stream</th><th>method</th><th>base n</th><th>new n</th>"
         "<th>base median</th><th>new median</th><th>change</th><th>interval</th><th>verdict</th></tr>\n";
    char buf[96];
    for (const DiffRow& row : r.rows) {
        h << "<tr class=\"verdict-" << (row.verdict == Verdict::slower ? "slower" : row.verdict == Verdict::faster ? "faster" : "same")
          << "\"><td>" << escape(row.name) << "</td><td>" << row.stream << "</td><td>" << to_string(row.method)
          << "</td><td>" << row.base.count << "</td><td>" << row.next.count << "</td><td>"
          << (row.base.count ? human_duration(row.base.median_ns) : "-") << "</td><td>"
          << (row.next.count ? human_duration(row.next.median_ns) : "-") << "</td>";
        if (row.shift) {
            std::snprintf(buf, sizeof buf, "<td>%+.2f%%</td><td>[%+.2f%%, %+.2f%%]</td>", row.change * 100,
                          row.change_low * 100, row.change_high * 100);
            h << buf;
        } else {
            h << "<td>-</td><td>-</td>";
        }
        h << "<td>" << to_string(row.verdict) << "</td></tr>\n";
    }
    h << "</table>\n";
    return h.str();
}

constexpr const char* style = R"CSS(
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; } h2 { font-size: 15px; margin-top: 24px; } h3 { font-size: 13px; margin: 4px 0; }
table { border-collapse: collapse; } td, th { padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: right; }
td:first-child, th:first-child { text-align: left; }
tr.verdict-slower td { background: #fde2e1; } tr.verdict-faster td { background: #e1f5e1; }
#timeline svg { border: 1px solid #ccc; cursor: grab; } .background { fill: #fafafa; }
rect.window { stroke: none; } rect.aggregate { fill: #7a8ca6; }
.track-label { font-size: 11px; fill: #333; } .axis text { font-size: 10px; }
.axis path, .axis line { fill: none; stroke: #999; }
.histogram { display: inline-block; margin: 8px; vertical-align: top; }
.lapse-error { color: #b00; white-space: pre-wrap; }
#timeline-info { min-height: 1.4em; color: #555; }
)CSS";

}  // namespace

std::shared_ptr<HtmlReportOptions> add_html_report_options(CLI::App& report)
{
    auto opt = std::make_shared<HtmlReportOptions>();
    report.add_option("--html", opt->output, "Write a self-contained HTML report (timeline, histograms, table) to FILE");
    report.add_option("--base", opt->base, "With --html: add the diff view, this session as the base")
        ->needs(report.get_option("--html"));
    return opt;
}

void write_html_report(const std::string& input, const HtmlReportOptions& options)
{
    if (!html_assets::available)
        throw std::runtime_error("this lapse was built without d3 and Chart.js (Debian's libjs-d3, libjs-chart.js), "
                                 "which the HTML report inlines: install them and build again");
    auto source = open_record_source({input});
    std::map<std::tuple<int, uint64_t>, TrackData> tracks;
    std::map<std::pair<std::string, TimingMethod>, Group> groups;
    std::map<std::string, uint32_t> name_index;
    std::vector<std::string> names;
    std::map<Stream, int64_t> device_origin;
    uint64_t windows = 0;
    InputInfo info;
    RecordedWindow w;
    while (source->next_input()) {
        info = source->info();
        while (source->next_record(w)) {
            Group& g = groups[{std::string(w.name), w.method}];
            if (w.state == DurationState::failed) {
                ++g.failed;
                continue;
            }
            if (!measured(w)) {
                ++g.not_measured;
                continue;
            }
            g.durations.push_back(w.ns());
            const int kind = w.method == TimingMethod::system ? 0 : w.domain == ClockDomain::host_monotonic ? 1 : 2;
            TrackData& t = tracks[{kind, kind == 0 ? w.thread : w.stream}];
            if (t.name.empty()) {
                const std::string id = std::to_string(kind == 0 ? w.thread : w.stream);
                t.name = kind == 0 ? "thread " + id : kind == 1 ? "stream " + id : "stream " + id + " (device clock, not aligned)";
                t.device_clock = kind == 2;
            }
            auto [it, added] = name_index.try_emplace(std::string(w.name), static_cast<uint32_t>(names.size()));
            if (added) names.emplace_back(w.name);
            t.start.push_back(w.start_ns);
            t.dur.push_back(w.ns());
            t.name_index.push_back(it->second);
            ++windows;
        }
    }
    // Host tracks count from the earliest host start; a device clock's track
    // from its own earliest start (it has no relation to the host's).
    int64_t host_origin = INT64_MAX, t1 = 0;
    for (auto& [key, t] : tracks)
        if (!t.device_clock)
            for (int64_t s : t.start) host_origin = std::min(host_origin, s);
    nlohmann::json track_list = nlohmann::json::array();
    for (auto& [key, t] : tracks) {
        order_and_nest(t);
        const int64_t origin = t.device_clock ? (t.start.empty() ? 0 : t.start.front()) : host_origin;
        for (auto& s : t.start) s -= origin;
        for (std::size_t i = 0; i < t.start.size(); ++i) t1 = std::max(t1, t.start[i] + t.dur[i]);
        const uint32_t max_depth = t.depth.empty() ? 0 : *std::max_element(t.depth.begin(), t.depth.end());
        track_list.push_back({{"name", t.name}, {"s", t.start}, {"d", t.dur}, {"n", t.name_index},
                              {"dp", t.depth}, {"max_depth", max_depth}});
    }
    nlohmann::json histograms = nlohmann::json::array();
    for (auto& [key, g] : groups)
        if (!g.durations.empty()) {
            std::vector<int64_t> copy = g.durations;
            histograms.push_back(histogram(key.first, key.second, copy));
        }
    nlohmann::json data{{"t0", 0}, {"t1", t1}, {"names", names}, {"tracks", std::move(track_list)},
                        {"histograms", std::move(histograms)}, {"window_count", windows}};
    std::string json = data.dump();
    // Inside <script>, "</" could close the element: JSON allows "<\/".
    for (std::size_t at = json.find("</"); at != std::string::npos; at = json.find("</", at + 3)) json.insert(at + 1, "\\");

    const std::string diff = options.base.empty() ? std::string() : diff_table(options.base, input);

    std::ofstream out(options.output, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + options.output + ": " + std::strerror(errno));
    out << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>lapse report: " << escape(input)
        << "</title>\n<style>" << style << "</style>\n"
        << "<script>window.onerror = function (message, source, line, column) {\n"
           "  var e = document.createElement('pre'); e.className = 'lapse-error';\n"
           "  e.textContent = 'JavaScript error: ' + message + ' (line ' + line + ':' + column + ')';\n"
           "  (document.body || document.documentElement).appendChild(e);\n};</script>\n"
        << "<script>" << html_assets::d3_js << "</script>\n"
        << "<script>" << html_assets::chart_js << "</script>\n"
        << "</head><body>\n<h1>lapse report: " << escape(input) << "</h1>\n";
    if (!info.backend.plugin.empty())
        out << "<p>backend: " << escape(info.backend.plugin) << ' ' << escape(info.backend.plugin_version) << " on "
            << escape(info.backend.device_name) << "</p>\n";
    out << "<div id=\"lapse-ready\" data-status=\"loading\">loading</div>\n"
        << "<h2>Timeline</h2><p>Wheel to zoom, drag to pan. Zoomed out, dense tracks are drawn as occupied "
           "pixels; zoom in to see single windows.</p>\n<div id=\"timeline\"></div><div id=\"timeline-info\"></div>\n"
        << "<h2>Statistics</h2>\n" << stats_table(groups);
    if (!diff.empty()) out << "<h2>Diff</h2>\n" << diff;
    out << "<h2>Histograms</h2>\n<div id=\"histograms\"></div>\n"
        << "<script id=\"lapse-data\" type=\"application/json\">" << json << "</script>\n"
        << "<script>" << html_assets::app_js << "</script>\n</body></html>\n";
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + options.output + ": " + std::strerror(errno));
}

void run_html_report(const std::string& input, const HtmlReportOptions& options)
{
    try {
        write_html_report(input, options);
    } catch (const std::exception& e) {
        std::cerr << "lapse report: " << e.what() << '\n';
        throw CLI::RuntimeError(exit_usage);
    }
}

}  // namespace lapse::cli
