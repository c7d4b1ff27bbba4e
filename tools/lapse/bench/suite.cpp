// lapse benchmark suite — the driver: context, rounds, figures, table, JSON.
#include "internal.hpp"

#include <lapse/sdk/error.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <regex>
#include <sched.h>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace lapse::bench {

namespace detail {

namespace {

const char* const kDefaultConfig =
    "# lapse bench: the CPU plugin in stream mode, two worker streams.\n"
    "[backend]\n"
    "plugin = \"cpu\"\n"
    "mode = \"stream\"\n"
    "streams = 2\n";

Context* g_context = nullptr;

const std::vector<Concern>& concerns()
{
    static const std::vector<Concern> all = {
        {"window", &add_window},   {"system", &add_system},     {"resolve", &add_resolve},
        {"memory", &add_memory},   {"accuracy", &add_accuracy}, {"load", &add_load},
        {"contention", &add_contention}, {"c_host", &add_c_host}, {"capture", &add_capture},
        {"worker", &add_worker},   {"metrics", &add_metrics}, {"cuda", &add_cuda},
#if LAPSE_BENCH_HAVE_VULKAN
        {"vulkan", &add_vulkan},
#endif
    };
    return all;
}

int nproc()
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    return static_cast<int>(std::thread::hardware_concurrency());
}

void native_probe(void* user, void* native) { *static_cast<void**>(user) = native; }

// Opens what the benchmarks share and warms it: the subject's tables and
// queues grown to their working size, the big buffers touched.
void open_context(Context& ctx, std::ostream& log)
{
    ctx.runtime = std::make_unique<Runtime>();
    ctx.subject = ctx.runtime->open(ctx.config(ctx.subject_config));
    const DeviceInfo& info = ctx.subject.info();
    ctx.plugin = info.plugin;
    ctx.streams = info.stream_count;

    // Where does submitted work run? A CPU worker hands it NULL.
    void* native = reinterpret_cast<void*>(1);
    const lapse_plugin& p = ctx.subject.plugin();
    lapse_device* h = ctx.subject.handle();
    lapse_error e = sdk::make_error();
    if (p.submit(h, 0, &native_probe, &native, &e) == LAPSE_OK && p.sync(h, 0, &e) == LAPSE_OK)
        ctx.host_work = native == nullptr;

    // The subject must open windows for the window figures to mean anything.
    lapse_token t;
    const lapse_status s = p.profile_start(h, 0, &t, &e);
    if (s == LAPSE_NO_WINDOW)
        throw Error(LAPSE_ERROR_UNSUPPORTED, "the backend '" + ctx.plugin +
                                                  "' opens no windows (no device clock): there is nothing to "
                                                  "benchmark; put it under forward to measure system-time windows");
    if (s != LAPSE_OK) throw Error(s, std::string("profile_start on stream 0: ") + e.message);
    p.profile_abandon(h, t);

    try {
        ctx.forward1 = ctx.runtime->open(ctx.config(ctx.wrapped(1)));
        ctx.forward2 = ctx.runtime->open(ctx.config(ctx.wrapped(2)));
    } catch (const std::exception& ex) {
        ctx.forward1.close();
        ctx.forward2.close();
        ctx.forward1 = Device();
        ctx.forward2 = Device();
        ctx.forward_error = ex.what();
        log << "lapse bench: forward stacks not available: " << ex.what() << "\n";
    }

    ctx.big_tokens.assign(ctx.big, lapse_token{});
    ctx.big_out = duration_array(ctx.big);

    std::string message;
    for (Device* dev : {&ctx.subject, &ctx.forward1, &ctx.forward2}) {
        if (!*dev) continue;
        for (int i = 0; i < 8; ++i)
            if (!open_close(*dev, 0, ctx.big_tokens.data(), ctx.batch, message) ||
                !resolve_all(*dev, ctx.big_tokens.data(), ctx.big_out.data(), ctx.batch, message))
                throw Error(LAPSE_ERROR_INTERNAL, "warm-up on '" + dev->info().plugin + "': " + message);
    }
    // Grow the subject's tables to the big figure's size once, untimed, and
    // leave real stamps in big_out for the reading baseline. A backend with
    // a fixed capacity (a Vulkan query ring) may not hold that many: then
    // the big figures say so instead of the whole run failing.
    const uint32_t n = static_cast<uint32_t>(ctx.big);
    uint32_t opened = 0;
    for (; opened < n; ++opened) {
        lapse_error err = sdk::make_error();
        lapse_status st = p.profile_start(h, 0, &ctx.big_tokens[opened], &err);
        if (st == LAPSE_OK) st = p.profile_end(h, ctx.big_tokens[opened], nullptr, &err);
        if (st != LAPSE_OK) {
            ctx.big_error = std::to_string(ctx.big) + " windows do not fit: " + lapse_status_name(st) + ": " +
                            err.message;
            p.profile_abandon(h, ctx.big_tokens[opened]);
            break;
        }
    }
    if (!ctx.big_error.empty()) {
        for (uint32_t i = 0; i < opened; ++i) p.profile_abandon(h, ctx.big_tokens[i]);
        log << "lapse bench: " << ctx.big_error << "\n";
        return;
    }
    if (!resolve_all(ctx.subject, ctx.big_tokens.data(), ctx.big_out.data(), n, message))
        throw Error(LAPSE_ERROR_INTERNAL, "warm-up: " + message);
}

double median_of(std::vector<double> v)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::vector<std::string> split(const std::string& s, char sep)
{
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

std::string regex_escape(const std::string& s)
{
    std::string out;
    for (char c : s) {
        if (std::strchr(".^$|()[]{}*+?\\", c)) out += '\\';
        out += c;
    }
    return out;
}

// Collects every run by benchmark name and round; shows them when verbose.
class Collector : public benchmark::BenchmarkReporter {
public:
    explicit Collector(benchmark::BenchmarkReporter* display) : display_(display) {}
    int round = 0;
    std::map<std::string, std::map<int, Sample>> samples;
    std::map<std::string, std::string> errors;

    bool ReportContext(const Context& c) override { return display_ == nullptr || display_->ReportContext(c); }
    void ReportRuns(const std::vector<Run>& runs) override
    {
        for (const Run& r : runs) {
            if (r.run_type != Run::RT_Iteration) continue;
            const std::string& name = r.run_name.function_name;
            if (r.error_occurred) {
                errors[name] = r.error_message;
                continue;
            }
            Sample s;
            s.ns_per_iteration = r.iterations > 0 ? r.real_accumulated_time * 1e9 / static_cast<double>(r.iterations) : 0;
            for (const auto& [k, c] : r.counters) s.counters[k] = c.value;
            samples[name][round] = s;
        }
        if (display_ != nullptr) display_->ReportRuns(runs);
    }
    void Finalize() override {}

private:
    benchmark::BenchmarkReporter* display_;
};

void compute(FigureSpec& spec, const Collector& c)
{
    Figure& f = spec.figure;
    if (!spec.unavailable.empty()) {
        f.note = spec.unavailable;
        return;
    }
    auto missing = [&](const std::string& name) -> bool {
        if (c.samples.count(name)) return false;
        auto e = c.errors.find(name);
        f.note = e != c.errors.end() ? name + ": " + e->second : name + ": did not run";
        return true;
    };
    if (missing(spec.subject)) return;
    const std::vector<std::string> bases = split(spec.baseline, '|');
    for (const auto& b : bases)
        if (missing(b)) return;

    std::vector<double> values, subject_ns, baseline_ns;
    for (const auto& [round, s] : c.samples.at(spec.subject)) {
        double base_time = 0, base_counter = 0;
        bool all = true;
        for (const auto& b : bases) {
            const auto& per_round = c.samples.at(b);
            auto it = per_round.find(round);
            if (it == per_round.end()) {
                all = false;
                break;
            }
            base_time += it->second.ns_per_iteration / static_cast<double>(bases.size());
            auto ct = it->second.counters.find(spec.counter);
            if (ct != it->second.counters.end()) base_counter += ct->second / static_cast<double>(bases.size());
        }
        if (!all) continue;
        double v = 0;
        switch (spec.formula) {
        case Formula::time_ratio: v = s.ns_per_iteration / base_time; break;
        case Formula::sqrt_time_ratio: v = std::sqrt(s.ns_per_iteration / base_time); break;
        case Formula::time_ms: v = s.ns_per_iteration / 1e6; break;
        case Formula::counter:
        case Formula::rate_ratio: {
            auto ct = s.counters.find(spec.counter);
            if (ct == s.counters.end()) continue;
            v = spec.formula == Formula::counter ? ct->second : ct->second / base_counter;
            break;
        }
        }
        if (!std::isfinite(v)) continue;
        values.push_back(v);
        subject_ns.push_back(s.ns_per_iteration / spec.ops_per_iteration);
        if (!bases.empty()) baseline_ns.push_back(base_time / spec.ops_per_iteration);
    }
    if (values.empty()) {
        f.note = "no complete round";
        return;
    }
    f.measured = true;
    f.samples = static_cast<int>(values.size());
    f.median = median_of(values);
    f.min = *std::min_element(values.begin(), values.end());
    f.max = *std::max_element(values.begin(), values.end());
    if (spec.formula == Formula::time_ratio || spec.formula == Formula::sqrt_time_ratio) {
        f.subject_ns = median_of(subject_ns);
        f.baseline_ns = median_of(baseline_ns);
    }
}

std::string fmt(double v, const std::string& unit)
{
    char buf[64];
    if (unit == "x")
        std::snprintf(buf, sizeof buf, "%.3fx", v);
    else if (unit == "%")
        std::snprintf(buf, sizeof buf, "%.3f%%", v);
    else if (unit == "ms")
        std::snprintf(buf, sizeof buf, "%.3f ms", v);
    else if (unit == "B")
        std::snprintf(buf, sizeof buf, "%.1f B", v);
    else
        std::snprintf(buf, sizeof buf, "%.4g %s", v, unit.c_str());
    return buf;
}

std::string target_text(const Figure& f)
{
    switch (f.target) {
    case Target::at_most: return "<= " + fmt(f.limit, f.unit);
    case Target::at_least: return ">= " + fmt(f.limit, f.unit);
    case Target::report: return "report";
    }
    return "";
}

}  // namespace

Context& context() { return *g_context; }

std::string Context::wrapped(int layers) const
{
    // Every table under [backend] moves one level down; forward takes its
    // place. The new [backend] goes last, so top-level keys stay top-level.
    std::string text;
    std::istringstream in(subject_config);
    std::string line;
    std::string prefix;
    for (int i = 0; i < layers; ++i) prefix += ".inner";
    while (std::getline(in, line)) {
        std::size_t at = line.find_first_not_of(" \t");
        if (at != std::string::npos) {
            std::size_t b = line.find_first_not_of('[', at);
            if (b != std::string::npos && b > at && line.compare(b, 7, "backend") == 0 &&
                (line.size() == b + 7 || line[b + 7] == ']' || line[b + 7] == '.'))
                line.insert(b + 7, prefix);
        }
        text += line + "\n";
    }
    for (int i = layers - 1; i >= 0; --i) {
        std::string table = "backend";
        for (int j = 0; j < i; ++j) table += ".inner";
        text += "\n[" + table + "]\nplugin = \"forward\"\n";
    }
    return text;
}

Config Context::config(const std::string& text) const { return Config::from_string(text, config_name, config_dir); }

benchmark::internal::Benchmark* add(const std::string& name, std::function<void(benchmark::State&)> fn)
{
    return benchmark::RegisterBenchmark(name.c_str(), [fn](benchmark::State& st) { fn(st); });
}

std::vector<lapse_duration> duration_array(std::size_t count)
{
    lapse_duration blank{};
    blank.struct_size = sizeof blank;
    return std::vector<lapse_duration>(count, blank);
}

bool resolve_all(const Device& dev, const lapse_token* tokens, lapse_duration* out, uint32_t count,
                 std::string& message)
{
    lapse_error e = sdk::make_error();
    const lapse_status s = dev.plugin().resolve(dev.handle(), tokens, out, count, LAPSE_WAIT_FOREVER, &e);
    if (s != LAPSE_OK) {
        message = std::string("resolve: ") + lapse_status_name(s) + ": " + e.message;
        return false;
    }
    return true;
}

bool resolve_compact_all(const Device& dev, const lapse_resolve_compact& compact, const lapse_token* tokens,
                         lapse_stamp_pair* stamps, uint8_t* states, uint32_t count, std::string& message)
{
    lapse_error e = sdk::make_error();
    const lapse_status s =
        compact.resolve_compact(dev.handle(), tokens, stamps, states, count, LAPSE_WAIT_FOREVER, &e);
    if (s == LAPSE_OK) return true;
    if (s < 0) {
        message = std::string("resolve_compact: ") + lapse_status_name(s) + ": " + e.message;
        return false;
    }
    for (uint32_t i = 0; i < count; ++i) {
        if (states[i] == LAPSE_COMPACT_READY) continue;
        lapse_duration d{};
        d.struct_size = sizeof d;
        const lapse_status full = dev.plugin().resolve(dev.handle(), &tokens[i], &d, 1, LAPSE_WAIT_FOREVER, &e);
        message = "resolve_compact: window " + std::to_string(i) + " read state " + std::to_string(states[i]) +
                  "; resolve then said " + lapse_status_name(full) + ", duration state " + std::to_string(d.state) +
                  (full < 0 ? std::string(": ") + e.message : std::string());
        return false;
    }
    message = "resolve_compact: LAPSE_NOT_READY with every state READY";
    return false;
}

bool open_close(const Device& dev, lapse_stream stream, lapse_token* tokens, uint32_t count, std::string& message)
{
    const lapse_plugin& p = dev.plugin();
    lapse_device* h = dev.handle();
    lapse_error e = sdk::make_error();
    for (uint32_t i = 0; i < count; ++i) {
        lapse_status s = p.profile_start(h, stream, &tokens[i], &e);
        if (s == LAPSE_OK) s = p.profile_end(h, tokens[i], nullptr, &e);
        if (s != LAPSE_OK) [[unlikely]] {
            message = std::string("window ") + std::to_string(i) + ": " + lapse_status_name(s) + ": " + e.message;
            return false;
        }
    }
    return true;
}

}  // namespace detail

using namespace detail;

bool Figure::met() const
{
    if (!measured) return false;
    switch (target) {
    case Target::at_most: return median <= limit;
    case Target::at_least: return median >= limit;
    case Target::report: return true;
    }
    return false;
}

std::string Figure::verdict() const
{
    if (!measured) return "n/a";
    if (target == Target::report) return "reported";
    return met() ? "met" : "MISSED";
}

const std::vector<std::string>& concern_names()
{
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for (const auto& c : concerns()) n.push_back(c.name);
        return n;
    }();
    return names;
}

Result run(const Options& options, std::ostream& log)
{
    Context ctx;
    ctx.options = options;
    ctx.quick = options.quick;
    if (ctx.quick) {
        ctx.big = 100000;
        ctx.min_time = 0.01;
        ctx.accuracy_runs_1ms = 5;
        ctx.accuracy_runs_20ms = 2;
        ctx.load_iterations = 2;
    }
    ctx.subject_config = options.config_text.empty() ? kDefaultConfig : options.config_text;
    ctx.config_name = options.config_name;
    ctx.config_dir = options.config_dir;
    g_context = &ctx;
    struct Reset {
        ~Reset() { g_context = nullptr; }
    } reset;

    open_context(ctx, log);

    benchmark::ClearRegisteredBenchmarks();
    std::vector<FigureSpec> specs;
    for (const auto& c : concerns()) {
        if (!options.concerns.empty() &&
            std::find(options.concerns.begin(), options.concerns.end(), c.name) == options.concerns.end())
            continue;
        c.add(ctx, specs);
    }
    if (!options.filter.empty()) {
        const std::regex re(options.filter);
        std::erase_if(specs, [&](const FigureSpec& s) { return !std::regex_search(s.figure.key, re); });
    }
    // Run only the benchmarks the selected figures need.
    std::vector<std::string> needed;
    for (const auto& s : specs) {
        if (!s.unavailable.empty()) continue;
        for (const auto& n : split(s.subject + "|" + s.baseline, '|'))
            if (!n.empty() && std::find(needed.begin(), needed.end(), n) == needed.end()) needed.push_back(n);
    }

    Result result;
    result.nproc = nproc();
    result.quick = options.quick;
    result.rounds = options.rounds > 0 ? options.rounds : (options.quick ? 2 : 9);
    result.subject = ctx.plugin + ": " + ctx.subject.info().name;

    std::unique_ptr<benchmark::BenchmarkReporter> display;
    if (options.verbose) display.reset(benchmark::CreateDefaultDisplayReporter());
    Collector collector(display.get());
    if (!needed.empty()) {
        std::string spec = "^(";
        for (std::size_t i = 0; i < needed.size(); ++i) spec += (i ? "|" : "") + regex_escape(needed[i]);
        spec += ")(/|$)";
        for (int r = 0; r < result.rounds; ++r) {
            collector.round = r;
            log << "lapse bench: round " << (r + 1) << " of " << result.rounds << "\n" << std::flush;
            benchmark::RunSpecifiedBenchmarks(&collector, spec);
        }
    }
    benchmark::ClearRegisteredBenchmarks();

    for (auto& s : specs) {
        compute(s, collector);
        result.figures.push_back(s.figure);
    }
    for (const Figure& f : result.figures)
        if (f.measured && f.key.ends_with("_window_vs_two_clock_reads")) {
            char buf[256];
            std::snprintf(buf, sizeof buf,
                          "one steady_clock::now() took %.1f ns here (median); a window start+end took %.1f ns",
                          f.baseline_ns / 2, f.subject_ns);
            result.extra_notes.push_back(buf);
        }
    for (const Figure& f : result.figures)
        if (f.measured && f.key == "device_vs_system_window" && f.median > 0) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "a system-time window costs the caller %.0fx a device window here",
                          1.0 / f.median);
            result.extra_notes.push_back(buf);
        }
    if (ctx.plugin == "cpu" && result.nproc <= 2)
        result.extra_notes.push_back(
            "nproc " + std::to_string(result.nproc) +
            ": each CPU stream is a worker thread, so 2 callers + 2 workers share " + std::to_string(result.nproc) +
            " core(s) in the 2x2 case");
    if (options.quick) result.extra_notes.push_back("--quick: short runs, " + std::to_string(ctx.big) +
                                                    " windows for the big figures; proves the suite runs, not for decisions");
    return result;
}

void print_table(const Result& result, std::ostream& out)
{
    out << "lapse bench: " << result.subject << "; nproc " << result.nproc << "; " << result.rounds
        << " round(s): median of the per-round values, spread = min-max over rounds\n\n";
    struct Row {
        std::string key, median, spread, target, verdict, baseline;
    };
    std::vector<Row> rows;
    for (const Figure& f : result.figures)
        rows.push_back({f.key, f.measured ? fmt(f.median, f.unit) : "-",
                        f.measured ? fmt(f.min, f.unit) + " - " + fmt(f.max, f.unit) : "-", target_text(f), f.verdict(),
                        (f.baseline.empty() ? "-" : f.baseline) + (f.aim.empty() ? "" : " (" + f.aim + ")")});
    // Each column as wide as its widest cell, so no cell runs into the next.
    std::size_t wk = 6, wv = 6, ws = 16, wt = 6, wr = 6;
    for (const Row& r : rows) {
        wk = std::max(wk, r.key.size());
        wv = std::max(wv, r.median.size());
        ws = std::max(ws, r.spread.size());
        wt = std::max(wt, r.target.size());
        wr = std::max(wr, r.verdict.size());
    }
    const auto cell = [&out](const std::string& text, std::size_t width) {
        out << text << std::string(width - text.size() + 2, ' ');
    };
    cell("figure", wk), cell("median", wv), cell("spread (min-max)", ws), cell("target", wt), cell("result", wr);
    out << "baseline\n" << std::string(wk + wv + ws + wt + wr + 10 + 24, '-') << "\n";
    for (const Row& r : rows) {
        cell(r.key, wk), cell(r.median, wv), cell(r.spread, ws), cell(r.target, wt), cell(r.verdict, wr);
        out << r.baseline << "\n";
    }
    out << "\n";
    for (const Figure& f : result.figures) {
        out << "  " << f.key << ": " << f.title;
        if (f.subject_ns > 0)
            out << "; " << std::fixed << std::setprecision(1) << f.subject_ns << " ns vs " << f.baseline_ns
                << " ns baseline" << std::defaultfloat << std::setprecision(6);
        if (!f.note.empty()) out << "; " << f.note;
        out << "\n";
    }
    for (const auto& n : result.extra_notes) out << "  note: " << n << "\n";
}

std::string to_json(const Result& result)
{
    nlohmann::ordered_json j;
    for (const Figure& f : result.figures)
        if (f.measured) j[f.key] = f.median;
    j["nproc"] = result.nproc;
    j["rounds"] = result.rounds;
    j["quick"] = result.quick;
    j["subject"] = result.subject;
    nlohmann::ordered_json details = nlohmann::ordered_json::object();
    for (const Figure& f : result.figures) {
        nlohmann::ordered_json d;
        d["title"] = f.title;
        d["baseline"] = f.baseline;
        d["unit"] = f.unit;
        if (f.measured) {
            d["median"] = f.median;
            d["min"] = f.min;
            d["max"] = f.max;
            d["rounds"] = f.samples;
        }
        if (f.subject_ns > 0) {
            d["subject_ns_per_op"] = f.subject_ns;
            d["baseline_ns_per_op"] = f.baseline_ns;
        }
        d["target"] = target_text(f);
        d["result"] = f.verdict();
        if (!f.note.empty()) d["note"] = f.note;
        details[f.key] = d;
    }
    j["details"] = details;
    j["notes"] = result.extra_notes;
    return j.dump(2) + "\n";
}

bool any_missed(const Result& result)
{
    return std::any_of(result.figures.begin(), result.figures.end(),
                       [](const Figure& f) { return f.measured && f.target != Target::report && !f.met(); });
}

int program_main(int argc, char** argv, const std::vector<std::string>& concerns)
{
    Options options;
    options.concerns = concerns;
    std::string json_file;
    std::vector<char*> rest{argv[0]};
    auto value = [&](int& i, const char* flag) -> std::string {
        const std::size_t n = std::strlen(flag);
        if (std::strncmp(argv[i], flag, n) == 0 && argv[i][n] == '=') return argv[i] + n + 1;
        if (i + 1 >= argc) throw std::runtime_error(std::string(flag) + " needs a value");
        return argv[++i];
    };
    auto is = [&](int i, const char* flag) {
        const std::size_t n = std::strlen(flag);
        return std::strncmp(argv[i], flag, n) == 0 && (argv[i][n] == '\0' || argv[i][n] == '=');
    };
    try {
        for (int i = 1; i < argc; ++i) {
            if (is(i, "--rounds"))
                options.rounds = std::stoi(value(i, "--rounds"));
            else if (is(i, "--filter"))
                options.filter = value(i, "--filter");
            else if (is(i, "--json"))
                json_file = value(i, "--json");
            else if (is(i, "--config")) {
                const std::string file = value(i, "--config");
                std::ifstream in(file);
                if (!in) throw std::runtime_error("cannot read " + file);
                std::stringstream ss;
                ss << in.rdbuf();
                options.config_text = ss.str();
                options.config_name = file;
                options.config_dir = std::filesystem::absolute(file).parent_path().string();
            } else if (std::strcmp(argv[i], "--quick") == 0)
                options.quick = true;
            else if (std::strcmp(argv[i], "-v") == 0 || std::strcmp(argv[i], "--verbose") == 0)
                options.verbose = true;
            else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
                std::printf("usage: %s [--quick] [--rounds N] [--filter REGEX] [--config FILE] [--json FILE] [-v]\n"
                            "          [--benchmark_* flags of Google Benchmark]\n",
                            argv[0]);
                return 0;
            } else
                rest.push_back(argv[i]);
        }
        int rest_argc = static_cast<int>(rest.size());
        benchmark::Initialize(&rest_argc, rest.data());
        if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;

        Result result = run(options, std::cerr);
        print_table(result, std::cout);
        if (!json_file.empty()) {
            std::ofstream out(json_file);
            out << to_json(result);
            if (!out) throw std::runtime_error("cannot write " + json_file);
        }
        benchmark::Shutdown();
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
        return 1;
    }
}

}  // namespace lapse::bench
