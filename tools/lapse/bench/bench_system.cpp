// A device-timed window against a system-time window on the same stream.
//
// Device window: start + end through the C ABI, and its share of a batched
// resolve: everything the caller pays for one measurement. The batch
// resolved is the one before the batch just closed (stamped by now), as a
// steady loop of windows would do, so this is cost, not hand-off latency.
// System-time window: what a caller does when the backend has no clock:
// sync the stream, read the host clock, (work), sync, read the clock.
// The factor is the reason device windows exist; there is no target.
#include "internal.hpp"

namespace lapse::bench::detail {

namespace {

constexpr uint32_t kWindows = 64;  // per iteration, both sides

void device_windows(benchmark::State& st, const Device& dev)
{
    std::vector<lapse_token> tokens[2] = {std::vector<lapse_token>(kWindows), std::vector<lapse_token>(kWindows)};
    std::vector<lapse_duration> out = duration_array(kWindows);
    std::string message;
    bool held = false;
    uint64_t k = 0;
    for (auto _ : st) {
        std::vector<lapse_token>& now = tokens[k % 2];
        std::vector<lapse_token>& before = tokens[(k + 1) % 2];
        if (!open_close(dev, 0, now.data(), kWindows, message) ||
            (held && !resolve_all(dev, before.data(), out.data(), kWindows, message))) {
            st.SkipWithError(message.c_str());
            return;
        }
        held = true;
        ++k;
    }
    if (held && !resolve_all(dev, tokens[(k + 1) % 2].data(), out.data(), kWindows, message))
        st.SkipWithError(message.c_str());
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * kWindows);
}

void system_windows(benchmark::State& st, const Device& dev)
{
    const lapse_plugin& p = dev.plugin();
    lapse_device* h = dev.handle();
    int64_t sum = 0;
    for (auto _ : st) {
        for (uint32_t i = 0; i < kWindows; ++i) {
            if (p.sync(h, 0, nullptr) != LAPSE_OK) [[unlikely]] {
                st.SkipWithError("sync failed");
                return;
            }
            const auto t0 = Clock::now();
            if (p.sync(h, 0, nullptr) != LAPSE_OK) [[unlikely]] {
                st.SkipWithError("sync failed");
                return;
            }
            const auto t1 = Clock::now();
            sum += (t1 - t0).count();
        }
    }
    benchmark::DoNotOptimize(sum);
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * kWindows);
}

}  // namespace

void add_system(Context& ctx, std::vector<FigureSpec>& figures)
{
    add("system.device_window", [&ctx](benchmark::State& st) { device_windows(st, ctx.subject); })
        ->MinTime(ctx.min_time)
        ->UseRealTime();
    add("system.system_window", [&ctx](benchmark::State& st) { system_windows(st, ctx.subject); })
        ->MinTime(ctx.min_time)
        ->UseRealTime();

    FigureSpec f;
    f.figure.key = "device_vs_system_window";
    f.figure.title = "device window (start+end+resolve share)";
    f.figure.baseline = "system-time window (sync,clock,sync,clock)";
    f.figure.unit = "x";
    f.figure.target = Target::report;
    f.subject = "system.device_window";
    f.baseline = "system.system_window";
    f.ops_per_iteration = kWindows;
    figures.push_back(f);
}

}  // namespace lapse::bench::detail
