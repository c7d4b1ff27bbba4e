// lapse diff BASE NEW [--threshold 2%] [--json]: per window name, stream
// and method, did NEW get slower than BASE? A regression gate for CI: exit
// 1 when some window is significantly slower beyond the threshold.
#include "diff_model.hpp"
#include "terminal.hpp"

#include "commands.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>

namespace lapse::cli {
namespace {

// "2%", "2 %" or "0.5%": a percentage; a bare number is a percentage too.
double parse_threshold(std::string text)
{
    while (!text.empty() && (text.back() == ' ' || text.back() == '%')) text.pop_back();
    std::size_t used = 0;
    double value = -1;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || !(value >= 0) || !std::isfinite(value))
        throw CLI::ValidationError("--threshold", "'" + text + "' is not a percentage such as 2%");
    return value / 100.0;
}

std::string percent(double fraction)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.2f%%", fraction * 100.0);
    return buf;
}

std::string side_counts(const DiffSide& s)
{
    std::string out = std::to_string(s.count);
    if (s.failed) out += " (+" + std::to_string(s.failed) + " failed)";
    if (s.not_measured) out += " (+" + std::to_string(s.not_measured) + " not measured)";
    return out;
}

std::string input_tail(const InputInfo& info)
{
    std::string out;
    if (info.counts_recorded)
        out += ", dropped " + std::to_string(info.dropped) + ", unflushed " + std::to_string(info.unflushed);
    if (info.cut_short) out += ", cut short";
    return out;
}

void print_table(const DiffResult& result, const DiffOptions& options)
{
    std::cout << "base: " << result.base_info.path << input_tail(result.base_info) << "\nnew:  "
              << result.new_info.path << input_tail(result.new_info) << "\n";
    char conf[32];
    std::snprintf(conf, sizeof conf, "%g%% CI", options.confidence * 100);
    std::vector<std::vector<std::string>> cells;
    cells.push_back({"name", "stream", "method", "base n", "new n", "base median", "new median", "base p90", "new p90",
                     "base p99", "new p99", "change", conf, "verdict"});
    for (const DiffRow& r : result.rows) {
        std::vector<std::string> c{r.name, std::to_string(r.stream), to_string(r.method), side_counts(r.base),
                                   side_counts(r.next)};
        for (const DiffSide* s : {&r.base, &r.next})
            c.push_back(s->count ? human_duration(s->median_ns) : "-");
        for (const auto field : {&DiffSide::p90_ns, &DiffSide::p99_ns})
            for (const DiffSide* s : {&r.base, &r.next})
                c.push_back(s->count ? human_duration(static_cast<double>(s->*field)) : "-");
        if (r.shift) {
            c.push_back(percent(r.change));
            c.push_back("[" + percent(r.change_low) + ", " + percent(r.change_high) + "]");
        } else {
            c.insert(c.end(), {"-", "-"});
        }
        c.push_back(to_string(r.verdict));
        cells.push_back(std::move(c));
    }
    // The name, the method and the verdict left-aligned.
    print_columns(std::cout, cells, [](std::size_t i, std::size_t n) { return i == 0 || i == 2 || i + 1 == n; });
    std::cout << "threshold " << options.threshold * 100 << "%: "
              << (result.any_slower() ? "some windows are slower\n" : "no window is slower\n");
}

nlohmann::ordered_json side_json(const DiffSide& s)
{
    nlohmann::ordered_json j{{"count", s.count}, {"failed", s.failed}, {"not_measured", s.not_measured}};
    if (s.count) {
        j["median_ns"] = s.median_ns;
        j["p90_ns"] = s.p90_ns;
        j["p99_ns"] = s.p99_ns;
    } else {
        for (const char* k : {"median_ns", "p90_ns", "p99_ns"}) j[k] = nullptr;  // not measured is not zero
    }
    j["sampled"] = s.sampled;
    return j;
}

nlohmann::ordered_json input_json(const InputInfo& info)
{
    nlohmann::ordered_json j{{"path", info.path}, {"plugin", info.backend.plugin}, {"device", info.backend.device_name}};
    if (info.counts_recorded) {
        j["dropped"] = info.dropped;
        j["unflushed"] = info.unflushed;
    } else {
        j["dropped"] = nullptr;  // not recorded by this input format
        j["unflushed"] = nullptr;
    }
    j["cut_short"] = info.cut_short;
    return j;
}

}  // namespace

nlohmann::ordered_json diff_json(const DiffResult& result, const DiffOptions& options)
{
    nlohmann::ordered_json out;
    out["base"] = input_json(result.base_info);
    out["new"] = input_json(result.new_info);
    out["threshold"] = options.threshold;
    out["confidence"] = options.confidence;
    out["method"] = "Hodges-Lehmann shift, Mann-Whitney interval and test";
    auto& rows = out["windows"] = nlohmann::ordered_json::array();
    for (const DiffRow& r : result.rows) {
        nlohmann::ordered_json j{{"name", r.name}, {"stream", r.stream}, {"method", to_string(r.method)},
                                 {"base", side_json(r.base)}, {"new", side_json(r.next)}};
        if (r.shift) {
            j["shift_ns"] = r.shift->shift_ns;
            j["shift_low_ns"] = r.shift->low_ns;
            j["shift_high_ns"] = r.shift->high_ns;
            j["change"] = r.change;
            j["change_low"] = r.change_low;
            j["change_high"] = r.change_high;
            j["p_value"] = r.shift->p_value;
        }
        j["verdict"] = to_string(r.verdict);
        rows.push_back(std::move(j));
    }
    out["slower"] = result.any_slower();
    return out;
}

void add_diff_command(CLI::App& app)
{
    struct Options {
        std::string base, next;
        std::string threshold = "2%";
        double confidence = 99;
        bool json = false;
    };
    auto opt = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("diff", "Compare two recorded sessions: which windows got slower");
    cmd->footer(R"HELP(Per window name, stream and timing method (device and system times are
never mixed): counts, median, p90, p99 on both sides, the change of the
median (Hodges-Lehmann shift over the base median) with its confidence
interval (Mann-Whitney), and a verdict. A window is "slower" when the
interval lies above zero and the change exceeds --threshold; "faster" the
other way; otherwise "no change". Failed and not-measured windows are
counted apart and never enter the statistics (docs/diff.md).

Exit codes: 0 no window is slower; 1 some window is slower; 2 bad input.

Examples:
  lapse diff base.lapse new.lapse
  lapse diff base.lapse new.lapse --threshold 5% --json > diff.json)HELP");
    cmd->add_option("BASE", opt->base, "The session to compare against")->required();
    cmd->add_option("NEW", opt->next, "The session to judge")->required();
    cmd->add_option("--threshold", opt->threshold, "Smallest change of the median that counts, e.g. 2%")
        ->capture_default_str();
    cmd->add_option("--confidence", opt->confidence, "Confidence of the interval, in percent")
        ->check(CLI::Range(50.0, 99.9999))
        ->capture_default_str();
    cmd->add_flag("--json", opt->json, "Print JSON (durations in ns)");
    cmd->callback([opt] {
        DiffOptions options;
        try {
            options.threshold = parse_threshold(opt->threshold);
        } catch (const CLI::ValidationError& e) {
            std::cerr << "lapse diff: " << e.what() << '\n';
            throw CLI::RuntimeError(exit_usage);
        }
        options.confidence = opt->confidence / 100.0;
        DiffResult result;
        try {
            auto source = open_record_source({opt->base, opt->next});
            result = compute_diff(*source, options);
        } catch (const std::exception& e) {
            std::cerr << "lapse diff: " << e.what() << '\n';
            throw CLI::RuntimeError(exit_usage);
        }
        if (opt->json)
            std::cout << diff_json(result, options).dump(2) << '\n';
        else
            print_table(result, options);
        if (result.any_slower()) throw CLI::RuntimeError(exit_failure);
    });
}

}  // namespace lapse::cli
