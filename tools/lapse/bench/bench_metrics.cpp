// Live metrics: what serving Prometheus metrics of the recorded windows
// adds to the caller's cost of a recorded window.
//
//   capture_metrics_vs_capture   a named window recorded into a capture that
//                                also serves metrics (127.0.0.1, any port) /
//                                the same window into a capture with none;
//                                C++ API, Durations kept, the collector
//                                resolving (its work, metrics included, is
//                                off the caller's thread: what is left is
//                                the contention it causes)
#include "recording.hpp"

#include <filesystem>

namespace lapse::bench::detail {

namespace {

void recorded_windows(benchmark::State& st, Context& ctx, bool metrics)
{
    const auto file = scratch_file(metrics ? "metrics.lapse-capture" : "plain.lapse-capture");
    Recording r;
    try {
        CaptureOptions o = budgeted_capture(file);
        if (metrics) o.metrics.listen = "127.0.0.1:0";
        r = open_recording(ctx, o);
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
            Window w = dev.profile_start(i & 1, recorded_names[i & 7]);
            durations[i] = dev.profile_end(w);
        }
        const auto t1 = Clock::now();
        st.SetIterationTime(seconds_between(t0, t1));
        // Untimed: left to the collector, which writes (and observes) them.
        for (auto& d : durations) d = Duration{};
        wait_drained(*r.capture);
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * n);
    durations.clear();
    dev.close();
    r.capture->close();
    std::error_code ec;
    std::filesystem::remove(file, ec);
}

}  // namespace

void add_metrics(Context& ctx, std::vector<FigureSpec>& figures)
{
    const double mt = ctx.min_time;
    // The baseline on both sides of the subject: the pair sees the same load.
    add("metrics.capture_only", [&ctx](benchmark::State& st) { recorded_windows(st, ctx, false); })->UseManualTime()->MinTime(mt);
    add("metrics.served", [&ctx](benchmark::State& st) { recorded_windows(st, ctx, true); })->UseManualTime()->MinTime(mt);
    add("metrics.capture_only_b", [&ctx](benchmark::State& st) { recorded_windows(st, ctx, false); })->UseManualTime()->MinTime(mt);

    FigureSpec f = time_ratio_at_most(
        "capture_metrics_vs_capture",
        "named recorded window with the metrics sink on, C++ API, caller's cost",
        "the same window into a capture without metrics",
        1.10,
        "metrics.served",
        "metrics.capture_only|metrics.capture_only_b",
        ctx.batch);
    figures.push_back(f);
}

}  // namespace lapse::bench::detail
