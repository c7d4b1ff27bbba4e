// Resolve of 1,000,000 closed windows (all stamped: the stream was synced,
// so this is the cost of resolving, not of waiting) in one C ABI call,
// against a loop that only reads their stamps: the start and end of each
// of the same 1,000,000 durations, 40 bytes apart, as a caller that kept
// the stamps itself would read them. The out array is set up once (its
// struct_size fields) and reused, as a caller resolving every frame does.
// When the device offers lapse.resolve_compact/1 (lapse/resolve_compact.h),
// `resolve_vs_read_stamps` times that call (16-byte stamp pairs and a state
// byte per window, anything not READY answered in full after it), and
// `resolve_full_vs_read_stamps` the full resolve, so both stay in view; a
// device without it is timed with the full resolve under both keys. The
// baseline is the same loop over 40-byte durations in both.
//
// And Device::resolve over a span of Durations against the C ABI resolve
// of as many windows, both of a synced batch, so that only the resolve is
// timed: what the C++ API adds to a resolve.
//
// And a batch resolved straight after its last profile_end (resolve does
// the waiting for the worker) against the same batch synced, then resolved:
// the timed part of both starts after the last profile_end, so the cost of
// resolve's own wait (polling, wake-ups) is what the ratio shows.
#include "internal.hpp"

#include <lapse/sdk/resolve_compact.hpp>

namespace lapse::bench::detail {

namespace {

// Opens and closes ctx.big windows and lets the stream stamp them all
// (untimed), then times `resolve(message)` of them: false skips the run
// with the message.
template <class Resolve>
void time_big_resolve(benchmark::State& st, Context& ctx, Resolve&& resolve)
{
    const Device& dev = ctx.subject;
    const uint32_t n = static_cast<uint32_t>(ctx.big);
    std::string message;
    for (auto _ : st) {
        if (!open_close(dev, 0, ctx.big_tokens.data(), n, message)) {
            st.SkipWithError(message.c_str());
            return;
        }
        if (dev.plugin().sync(dev.handle(), 0, nullptr) != LAPSE_OK) {
            st.SkipWithError("sync failed");
            return;
        }
        const auto t0 = Clock::now();
        const bool ok = resolve(message);
        const auto t1 = Clock::now();
        if (!ok) {
            st.SkipWithError(message.c_str());
            return;
        }
        st.SetIterationTime(seconds_between(t0, t1));
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * n);
}

void resolve_big(benchmark::State& st, Context& ctx)
{
    const uint32_t n = static_cast<uint32_t>(ctx.big);
    time_big_resolve(st, ctx, [&](std::string& message) {
        return resolve_all(ctx.subject, ctx.big_tokens.data(), ctx.big_out.data(), n, message);
    });
}

void resolve_big_compact(benchmark::State& st, Context& ctx, const lapse_resolve_compact& compact)
{
    const uint32_t n = static_cast<uint32_t>(ctx.big);
    // Value-initialised, so their pages are touched before timing.
    std::vector<lapse_stamp_pair> stamps(n);
    std::vector<uint8_t> states(n);
    time_big_resolve(st, ctx, [&](std::string& message) {
        return resolve_compact_all(ctx.subject, compact, ctx.big_tokens.data(), stamps.data(), states.data(), n,
                                   message);
    });
}

// A synced batch of `ctx.batch` windows resolved in one call, through the
// C++ API (`cpp`) or the C ABI; only the resolve is timed.
void resolve_synced_batch(benchmark::State& st, Context& ctx, bool cpp)
{
    Device& dev = ctx.subject;
    const uint32_t n = ctx.batch;
    std::vector<lapse_token> tokens(n);
    std::vector<lapse_duration> out = duration_array(n);
    std::vector<Duration> durations(n);
    std::string message;
    for (auto _ : st) {
        const bool opened = cpp ? cpp_api_windows(dev, durations) : open_close(dev, 0, tokens.data(), n, message);
        if (!opened) {
            st.SkipWithError(cpp ? "a window failed" : message.c_str());
            return;
        }
        if (dev.plugin().sync(dev.handle(), 0, nullptr) != LAPSE_OK) {
            st.SkipWithError("sync failed");
            return;
        }
        const auto t0 = Clock::now();
        const bool ok = cpp ? dev.resolve(durations) : resolve_all(dev, tokens.data(), out.data(), n, message);
        const auto t1 = Clock::now();
        if (!ok) {
            st.SkipWithError(cpp ? "Device::resolve left a window unresolved" : message.c_str());
            return;
        }
        st.SetIterationTime(seconds_between(t0, t1));
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * n);
}

void resolve_batch(benchmark::State& st, Context& ctx, bool sync_first)
{
    const Device& dev = ctx.subject;
    const uint32_t n = ctx.batch;
    std::vector<lapse_token> tokens(n);
    std::vector<lapse_duration> out = duration_array(n);
    std::string message;
    for (auto _ : st) {
        if (!open_close(dev, 0, tokens.data(), n, message)) {
            st.SkipWithError(message.c_str());
            return;
        }
        const auto t0 = Clock::now();
        if (sync_first && dev.plugin().sync(dev.handle(), 0, nullptr) != LAPSE_OK) {
            st.SkipWithError("sync failed");
            return;
        }
        const bool ok = resolve_all(dev, tokens.data(), out.data(), n, message);
        const auto t1 = Clock::now();
        if (!ok) {
            st.SkipWithError(message.c_str());
            return;
        }
        st.SetIterationTime(seconds_between(t0, t1));
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * n);
}

void read_stamps(benchmark::State& st, Context& ctx)
{
    const lapse_duration* d = ctx.big_out.data();
    const std::size_t n = ctx.big;
    for (auto _ : st) {
        const auto t0 = Clock::now();
        int64_t sum = 0;
        for (std::size_t i = 0; i < n; ++i) sum += d[i].end_ns - d[i].start_ns;
        benchmark::DoNotOptimize(sum);
        const auto t1 = Clock::now();
        st.SetIterationTime(seconds_between(t0, t1));
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(n));
}

}  // namespace

void add_resolve(Context& ctx, std::vector<FigureSpec>& figures)
{
    const int iterations = ctx.quick ? 1 : 3;
    add("resolve.read_stamps", [&ctx](benchmark::State& st) { read_stamps(st, ctx); })
        ->UseManualTime()
        ->Iterations(iterations);
    add("resolve.resolve_all", [&ctx](benchmark::State& st) { resolve_big(st, ctx); })
        ->UseManualTime()
        ->Iterations(iterations);

    add("resolve.cpp_span", [&ctx](benchmark::State& st) { resolve_synced_batch(st, ctx, true); })
        ->UseManualTime()
        ->MinTime(ctx.min_time);
    add("resolve.c_abi_batch", [&ctx](benchmark::State& st) { resolve_synced_batch(st, ctx, false); })
        ->UseManualTime()
        ->MinTime(ctx.min_time);
    figures.push_back(time_ratio_at_most("cpp_resolve_vs_c_resolve",
                                         "Device::resolve over a span of " + std::to_string(ctx.batch) +
                                             " synced windows",
                                         "the C ABI resolve of as many", 1.15, "resolve.cpp_span",
                                         "resolve.c_abi_batch", ctx.batch));

    add("resolve.after_close", [&ctx](benchmark::State& st) { resolve_batch(st, ctx, false); })
        ->UseManualTime()
        ->MinTime(ctx.min_time);
    add("resolve.sync_then_resolve", [&ctx](benchmark::State& st) { resolve_batch(st, ctx, true); })
        ->UseManualTime()
        ->MinTime(ctx.min_time);
    {
        FigureSpec f = time_ratio_at_most(
            "resolve_after_close_vs_sync_then_resolve",
            "resolve " + std::to_string(ctx.batch) + " windows straight after closing them",
            "sync, then resolve",
            1.3,
            "resolve.after_close",
            "resolve.sync_then_resolve",
            ctx.batch);
        figures.push_back(f);
    }

    // The compact call when the subject offers it (asked once, before any
    // round); the full resolve otherwise, and always under the _full key.
    const lapse_resolve_compact* compact =
        ctx.subject ? sdk::resolve_compact_of(&ctx.subject.plugin(), ctx.subject.handle()) : nullptr;
    if (compact != nullptr)
        add("resolve.compact_all", [&ctx, compact](benchmark::State& st) { resolve_big_compact(st, ctx, *compact); })
            ->UseManualTime()
            ->Iterations(iterations);
    const std::string windows = std::to_string(ctx.big) + " closed windows (one call)";
    FigureSpec f = time_ratio_at_most(
        "resolve_vs_read_stamps",
        compact != nullptr ? "resolve " + windows + " into stamp pairs (lapse.resolve_compact/1)"
                           : "resolve " + windows + " (the device offers no lapse.resolve_compact/1)",
        "a loop reading their stamps",
        3.0,
        compact != nullptr ? "resolve.compact_all" : "resolve.resolve_all",
        "resolve.read_stamps",
        static_cast<double>(ctx.big));
    if (!ctx.big_error.empty()) f.unavailable = ctx.big_error;
    figures.push_back(f);
    FigureSpec full = time_ratio_at_most("resolve_full_vs_read_stamps",
                                         "resolve " + windows + " into full durations",
                                         "a loop reading their stamps", 3.0, "resolve.resolve_all",
                                         "resolve.read_stamps", static_cast<double>(ctx.big));
    if (!ctx.big_error.empty()) full.unavailable = ctx.big_error;
    figures.push_back(full);
}

}  // namespace lapse::bench::detail
