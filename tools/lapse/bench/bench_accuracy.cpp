// Accuracy: a window around one known busy interval on stream 0. The work
// spins on the host monotonic clock for 1 ms (or 20 ms) and records the
// interval it actually spun, by its own two clock reads; the window must
// read that interval. The error of one window is
//   |window - interval| / interval,
// and a run reports the median over its windows (and the worst one).
// Comparing with the interval the work measured, not with the nominal 1 ms,
// keeps a preempted spin (these machines are shared) from counting against
// the window, which correctly reads the longer interval.
//
// Only for backends whose work runs on a host thread (native == NULL, the
// CPU plugin): a Vulkan or CUDA stream hands the work a command buffer or a
// stream to record into, and a host spin is not device work.
#include "internal.hpp"

#include <lapse/sdk/host.hpp>

#include <algorithm>
#include <cmath>

namespace lapse::bench::detail {

namespace {

struct Busy {
    int64_t want_ns;
    int64_t began = 0, ended = 0;
};

void spin(void* user, void* /*native*/)
{
    auto* b = static_cast<Busy*>(user);
    const int64_t t0 = sdk::monotonic_ns();
    int64_t t = t0;
    while (t - t0 < b->want_ns) t = sdk::monotonic_ns();
    b->began = t0;
    b->ended = t;
}

void busy_windows(benchmark::State& st, Context& ctx, int64_t want_ns)
{
    Device& dev = ctx.subject;
    const lapse_plugin& p = dev.plugin();
    lapse_device* h = dev.handle();
    std::vector<double> errors;
    errors.reserve(static_cast<std::size_t>(st.max_iterations));
    Busy busy{want_ns};
    lapse_duration out{};
    for (auto _ : st) {
        lapse_token t;
        lapse_error e = sdk::make_error();
        if (p.profile_start(h, 0, &t, &e) != LAPSE_OK || p.submit(h, 0, &spin, &busy, &e) != LAPSE_OK ||
            p.profile_end(h, t, nullptr, &e) != LAPSE_OK) {
            st.SkipWithError(e.message);
            return;
        }
        out.struct_size = sizeof out;
        if (p.resolve(h, &t, &out, 1, LAPSE_WAIT_FOREVER, &e) != LAPSE_OK || out.state != LAPSE_DURATION_READY) {
            st.SkipWithError("the window did not resolve as ready");
            return;
        }
        const double window = static_cast<double>(out.end_ns - out.start_ns);
        const double interval = static_cast<double>(busy.ended - busy.began);
        errors.push_back(std::abs(window - interval) / interval * 100.0);
    }
    std::sort(errors.begin(), errors.end());
    st.counters["error_pct"] = errors.empty() ? 0.0 : errors[errors.size() / 2];
    st.counters["worst_error_pct"] = errors.empty() ? 0.0 : errors.back();
}

}  // namespace

void add_accuracy(Context& ctx, std::vector<FigureSpec>& figures)
{
    if (ctx.host_work) {
        add("accuracy.busy_1ms", [&ctx](benchmark::State& st) { busy_windows(st, ctx, 1000000); })
            ->UseRealTime()
            ->Iterations(ctx.accuracy_runs_1ms);
        add("accuracy.busy_20ms", [&ctx](benchmark::State& st) { busy_windows(st, ctx, 20000000); })
            ->UseRealTime()
            ->Iterations(ctx.accuracy_runs_20ms);
    }
    for (int ms : {1, 20}) {
        FigureSpec f;
        f.figure.key = "accuracy_" + std::to_string(ms) + "ms_error_pct";
        f.figure.title = "window around a " + std::to_string(ms) + " ms busy interval, median |error|";
        f.figure.baseline = "the interval the work measured";
        f.figure.unit = "%";
        f.figure.target = Target::at_most;
        f.figure.limit = 1.0;
        f.formula = Formula::counter;
        f.counter = "error_pct";
        f.subject = "accuracy.busy_" + std::to_string(ms) + "ms";
        if (!ctx.host_work)
            f.unavailable = "the subject's work does not run on a host thread (use the backend's own accuracy test)";
        figures.push_back(f);

        FigureSpec w = f;
        w.figure.key = "accuracy_" + std::to_string(ms) + "ms_worst_error_pct";
        w.figure.title = "  worst window of a run";
        w.figure.target = Target::report;
        w.counter = "worst_error_pct";
        figures.push_back(w);
    }
}

}  // namespace lapse::bench::detail
