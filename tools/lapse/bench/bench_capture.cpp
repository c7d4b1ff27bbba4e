// Captures: what recording costs the caller, how fast the collector keeps
// up, how small the file is, how fast it reads back, and what a disabled
// window costs.
//
//   capture_named_vs_unnamed   a named window recorded into a capture (its
//                              Duration kept, the collector resolving) /
//                              the same window unnamed and unrecorded, C++ API
//   capture_interned_vs_unnamed  the same, named by lapse::Name (reported)
//   capture_windows_per_s      named windows per second through a capture,
//                              sustained (policy block: none dropped), the
//                              final drain included
//   capture_bytes_per_window   file bytes per window of that run (8 names,
//                              2 streams; chunk headers and tables included)
//   report_windows_per_s       a capture of 10,000,000 windows (1,000,000
//                              quick) streamed through CaptureReader with a
//                              per-name tally, and the resident set it added
//   disabled_window_ns         an unnamed window under LAPSE_DISABLE=1
#include "recording.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <unistd.h>

namespace lapse::bench::detail {

namespace {

double rss_mib()
{
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        std::fclose(f);
    }
    return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

enum class Naming { none, text, interned };

// Start+end of `batch` windows, Durations kept; named ones (by their text or
// by lapse::Name) into a capture.
void api_windows(benchmark::State& st, Context& ctx, Naming naming)
{
    const bool named = naming != Naming::none;
    std::vector<Name> names;
    for (const char* n : recorded_names) names.emplace_back(n);
    Recording r;
    const auto file = scratch_file("named.lapse-capture");
    try {
        if (named)
            r = open_recording(ctx, budgeted_capture(file));
        else
            r.device = ctx.runtime->open(ctx.config(ctx.subject_config));
    } catch (const std::exception& e) {
        st.SkipWithError(e.what());
        return;
    }
    Device& dev = r.device;
    const uint32_t n = ctx.batch;
    std::vector<Duration> durations(n);
    for (auto _ : st) {
        const auto t0 = Clock::now();
        for (uint32_t i = 0; i < n; ++i) {
            Window w = naming == Naming::interned ? dev.profile_start(0, names[i & 7])
                       : named                    ? dev.profile_start(0, recorded_names[i & 7])
                                                  : dev.profile_start(0);
            durations[i] = dev.profile_end(w);
        }
        const auto t1 = Clock::now();
        st.SetIterationTime(seconds_between(t0, t1));
        // Untimed: the unnamed ones resolved by the caller, the named ones
        // left to the collector (the caller's cost is what is measured).
        if (named) {
            for (auto& d : durations) d = Duration{};
            wait_drained(*r.capture);
        } else {
            dev.resolve(durations);
        }
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * n);
    durations.clear();
    dev.close();
    if (r.capture) r.capture->close();
    std::error_code ec;
    std::filesystem::remove(file, ec);
}

void sustained(benchmark::State& st, Context& ctx)
{
    const double seconds = ctx.quick ? 0.2 : 1.0;
    const auto file = scratch_file("sustained.lapse-capture");
    double rate = 0, bytes_per = 0, dropped = 0;
    for (auto _ : st) {
        Recording r;
        try {
            CaptureOptions o;
            o.path = file;
            o.policy = CapturePolicy::block;
            r = open_recording(ctx, o);
        } catch (const std::exception& e) {
            st.SkipWithError(e.what());
            return;
        }
        Device& dev = r.device;
        const auto t0 = Clock::now();
        const auto until = t0 + std::chrono::duration<double>(seconds);
        uint64_t opened = 0;
        while (Clock::now() < until)
            for (uint32_t i = 0; i < 1024; ++i, ++opened) dev.profile(i & 1, [] {}, {.name = recorded_names[i & 7]});
        dev.close();  // drains
        const auto t1 = Clock::now();
        r.capture->close();
        const CaptureStats s = r.capture->stats();
        st.SetIterationTime(seconds_between(t0, t1));
        rate = static_cast<double>(s.recorded) / seconds_between(t0, t1);
        bytes_per = s.recorded > 0 ? static_cast<double>(s.bytes_written) / static_cast<double>(s.recorded) : 0;
        dropped = static_cast<double>(s.dropped);
        if (s.recorded != opened) {
            st.SkipWithError("the capture did not record every window");
            return;
        }
    }
    st.counters["windows_per_s"] = rate;
    st.counters["bytes_per_window"] = bytes_per;
    st.counters["dropped"] = dropped;
    std::error_code ec;
    std::filesystem::remove(file, ec);
}

// The big capture report_windows_per_s reads: written once per process.
const std::filesystem::path& big_capture(Context& ctx, std::string& error)
{
    static std::filesystem::path file;
    static std::string why;
    if (!file.empty() || !why.empty()) {
        error = why;
        return file;
    }
    const std::size_t n = ctx.quick ? 1000000 : 10000000;
    const auto path = scratch_file("big.lapse-capture");
    try {
        CaptureOptions o;
        o.path = path;
        o.policy = CapturePolicy::block;
        Recording r = open_recording(ctx, o);
        for (std::size_t i = 0; i < n; ++i) r.device.profile(i & 1, [] {}, {.name = recorded_names[i & 7]});
        r.device.close();
        r.capture->close();
        file = path;
        std::atexit([] {
            std::error_code ec;
            std::filesystem::remove(file, ec);
        });
    } catch (const std::exception& e) {
        why = e.what();
    }
    error = why;
    return file;
}

void report_read(benchmark::State& st, Context& ctx)
{
    std::string error;
    const std::filesystem::path& file = big_capture(ctx, error);
    if (file.empty()) {
        st.SkipWithError(error.c_str());
        return;
    }
    double rate = 0, rss_added = 0;
    for (auto _ : st) {
        const double rss0 = rss_mib();
        double rss_peak = rss0;
        const auto t0 = Clock::now();
        CaptureReader reader(file);
        std::map<std::string, std::pair<uint64_t, __int128>, std::less<>> tally;
        CapturedWindow w;
        uint64_t n = 0;
        while (reader.next(w)) {
            auto it = tally.find(w.name);
            if (it == tally.end()) it = tally.emplace(std::string(w.name), std::pair<uint64_t, __int128>{0, 0}).first;
            ++it->second.first;
            it->second.second += w.ns();
            if ((++n & 0xffff) == 0) rss_peak = std::max(rss_peak, rss_mib());
        }
        const auto t1 = Clock::now();
        st.SetIterationTime(seconds_between(t0, t1));
        rate = static_cast<double>(n) / seconds_between(t0, t1);
        rss_added = rss_peak - rss0;
        benchmark::DoNotOptimize(tally);
    }
    st.counters["windows_per_s"] = rate;
    st.counters["rss_mib"] = rss_added;
}

void disabled_windows(benchmark::State& st, Context& ctx)
{
    ::setenv("LAPSE_DISABLE", "1", 1);
    Runtime runtime;
    ::unsetenv("LAPSE_DISABLE");
    Device dev = runtime.open_default();
    const uint32_t n = ctx.batch;
    double ns = 0;
    for (auto _ : st) {
        const auto t0 = Clock::now();
        for (uint32_t i = 0; i < n; ++i) {
            Window w = dev.profile_start(0);
            Duration d = dev.profile_end(w);
            benchmark::DoNotOptimize(d);
        }
        const auto t1 = Clock::now();
        st.SetIterationTime(seconds_between(t0, t1));
        ns = seconds_between(t0, t1) * 1e9 / n;
    }
    st.counters["ns_per_window"] = ns;
}

}  // namespace

void add_capture(Context& ctx, std::vector<FigureSpec>& figures)
{
    const double mt = ctx.min_time;
    auto windows = [&ctx](Naming naming) { return [&ctx, naming](benchmark::State& st) { api_windows(st, ctx, naming); }; };
    add("capture.unnamed", windows(Naming::none))->UseManualTime()->MinTime(mt);
    add("capture.named", windows(Naming::text))->UseManualTime()->MinTime(mt);
    add("capture.interned", windows(Naming::interned))->UseManualTime()->MinTime(mt);
    add("capture.unnamed_b", windows(Naming::none))->UseManualTime()->MinTime(mt);
    add("capture.sustained", [&ctx](benchmark::State& st) { sustained(st, ctx); })->UseManualTime()->Iterations(1);
    add("capture.report", [&ctx](benchmark::State& st) { report_read(st, ctx); })->UseManualTime()->Iterations(1);
    add("capture.disabled", [&ctx](benchmark::State& st) { disabled_windows(st, ctx); })->UseManualTime()->MinTime(mt);

    FigureSpec f = time_ratio_at_most(
        "capture_named_vs_unnamed",
        "named window recorded into a capture, C++ API, caller's cost",
        "the same window unnamed, unrecorded",
        1.3,
        "capture.named",
        "capture.unnamed|capture.unnamed_b",
        ctx.batch);
    figures.push_back(f);
    FigureSpec interned = f;
    interned.figure.key = "capture_interned_vs_unnamed";
    interned.figure.title = "window named by a lapse::Name recorded into a capture, C++ API, caller's cost";
    interned.figure.target = Target::report;
    interned.subject = "capture.interned";
    figures.push_back(interned);

    FigureSpec r;
    r.figure.key = "capture_windows_per_s";
    r.figure.title = "named windows recorded per second, sustained, none dropped";
    r.figure.unit = "/s";
    r.figure.target = Target::at_least;
    r.figure.limit = 2e6;
    r.formula = Formula::counter;
    r.counter = "windows_per_s";
    r.subject = "capture.sustained";
    figures.push_back(r);

    FigureSpec b = r;
    b.figure.key = "capture_bytes_per_window";
    b.figure.title = "capture file bytes per window (8 names, 2 streams)";
    b.figure.unit = "B";
    b.figure.target = Target::at_most;
    b.figure.limit = 24;
    b.counter = "bytes_per_window";
    figures.push_back(b);

    FigureSpec rep = r;
    rep.figure.key = "report_windows_per_s";
    rep.figure.title = std::string("capture read back (CaptureReader + per-name tally), ") +
                       (ctx.quick ? "1,000,000" : "10,000,000") + " windows";
    rep.subject = "capture.report";
    figures.push_back(rep);

    FigureSpec rss = rep;
    rss.figure.key = "report_rss_mib";
    rss.figure.title = "resident set added while reading it";
    rss.figure.unit = "MiB";
    rss.figure.target = Target::at_most;
    rss.figure.limit = 64;
    rss.counter = "rss_mib";
    figures.push_back(rss);

    FigureSpec dis;
    dis.figure.key = "disabled_window_ns";
    dis.figure.title = "unnamed window start+end under LAPSE_DISABLE=1";
    dis.figure.unit = "ns";
    dis.figure.target = Target::at_most;
    dis.figure.limit = 2;
    dis.formula = Formula::counter;
    dis.counter = "ns_per_window";
    dis.subject = "capture.disabled";
    figures.push_back(dis);
}

}  // namespace lapse::bench::detail
