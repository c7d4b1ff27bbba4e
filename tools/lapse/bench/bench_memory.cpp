// Memory per pending window: a freshly opened subject device, 1,000,000
// windows opened on stream 0 and left open, and the growth of
//   - the heap (glibc mallinfo2: bytes in use, mmapped chunks included, all
//     arenas, so the plugin's and its worker threads' allocations count), and
//   - the resident set (VmRSS), which also sees memory not from malloc,
// divided by the number of windows. The windows are then abandoned and the
// device closed. The token array is the caller's, allocated and touched
// before the first measurement, and not counted.
//
// Two ways of opening them:
//   paced  the caller syncs the stream every 1024 windows, so the stream's
//          queue never holds more than a batch of start markers: what an
//          open window itself costs (the figure with the 64-byte target);
//   burst  1,000,000 starts back to back: the stream's queue also grows to
//          hold the markers the worker has not reached yet (queues never
//          shrink), so this depends on how far the worker falls behind.
#include "internal.hpp"

#include <cstdio>
#include <malloc.h>
#include <unistd.h>

namespace lapse::bench::detail {

namespace {

std::size_t heap_bytes()
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

std::size_t rss_bytes()
{
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        std::fclose(f);
    }
    return static_cast<std::size_t>(resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

void pending_windows(benchmark::State& st, Context& ctx, bool paced)
{
    const std::size_t n = ctx.big;
    double heap_per = 0, rss_per = 0;
    for (auto _ : st) {
        Device dev;
        try {
            dev = ctx.runtime->open(ctx.config(ctx.subject_config));
        } catch (const std::exception& e) {
            st.SkipWithError(e.what());
            return;
        }
        const lapse_plugin& p = dev.plugin();
        lapse_device* h = dev.handle();
        // Let the fresh device settle (threads started, first chunks in place).
        p.sync(h, LAPSE_ALL_STREAMS, nullptr);
        const std::size_t heap0 = heap_bytes(), rss0 = rss_bytes();
        const auto t0 = Clock::now();
        std::size_t opened = 0;
        for (; opened < n; ++opened) {
            if (p.profile_start(h, 0, &ctx.big_tokens[opened], nullptr) != LAPSE_OK) break;
            if (paced && opened % 1024 == 1023) p.sync(h, 0, nullptr);
        }
        const auto t1 = Clock::now();
        p.sync(h, LAPSE_ALL_STREAMS, nullptr);
        const std::size_t heap1 = heap_bytes(), rss1 = rss_bytes();
        for (std::size_t i = 0; i < opened; ++i) p.profile_abandon(h, ctx.big_tokens[i]);
        dev.close();
        if (opened < n) {
            st.SkipWithError("profile_start failed before 1,000,000 windows were open");
            return;
        }
        st.SetIterationTime(seconds_between(t0, t1));
        heap_per = (static_cast<double>(heap1) - static_cast<double>(heap0)) / static_cast<double>(n);
        rss_per = (static_cast<double>(rss1) - static_cast<double>(rss0)) / static_cast<double>(n);
    }
    st.counters["heap_bytes_per_window"] = heap_per;
    st.counters["rss_bytes_per_window"] = rss_per;
}

}  // namespace

void add_memory(Context& ctx, std::vector<FigureSpec>& figures)
{
    add("memory.pending_windows", [&ctx](benchmark::State& st) { pending_windows(st, ctx, true); })
        ->UseManualTime()
        ->Iterations(1);
    add("memory.pending_burst", [&ctx](benchmark::State& st) { pending_windows(st, ctx, false); })
        ->UseManualTime()
        ->Iterations(1);

    FigureSpec f;
    f.figure.key = "bytes_per_pending_window";
    f.figure.title = "heap per pending window (" + std::to_string(ctx.big) + " open, paced)";
    f.figure.unit = "B";
    f.figure.target = Target::at_most;
    f.figure.limit = 64;
    f.formula = Formula::counter;
    f.counter = "heap_bytes_per_window";
    f.subject = "memory.pending_windows";
    if (!ctx.big_error.empty()) f.unavailable = ctx.big_error;
    figures.push_back(f);

    FigureSpec r = f;
    r.figure.key = "rss_bytes_per_pending_window";
    r.figure.title = "resident set per pending window";
    r.figure.target = Target::report;
    r.counter = "rss_bytes_per_window";
    figures.push_back(r);

    FigureSpec b = f;
    b.figure.key = "burst_bytes_per_pending_window";
    b.figure.title = "heap per pending window, opened in one burst (queue growth included)";
    b.figure.limit = 40;
    b.subject = "memory.pending_burst";
    figures.push_back(b);
}

}  // namespace lapse::bench::detail
