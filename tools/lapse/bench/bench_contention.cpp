// Contention: total window throughput (start + end + a batched resolve,
// the whole life of a window, all threads together, per second of wall
// time). Each thread resolves the batch before the one it just closed, so
// the worker has long stamped it: the figure is throughput, not the latency
// of a hand-off to the worker. Measured for
//   1x1  one thread on stream 0 (the baseline),
//   2x2  two threads, each on its own stream,
//   2x1  two threads on stream 0,
// on the same device. No global lock means 2x2 is at least 1x1; 2x1 shares
// one stream's queue and worker, and must not collapse. The CPU plugin's
// streams are worker threads, so on a machine with few cores the workers
// compete with the callers: read the figure with nproc.
#include "internal.hpp"

namespace lapse::bench::detail {

namespace {

constexpr uint32_t kBatch = 256;

void windows(benchmark::State& st, Context& ctx, bool own_stream)
{
    const Device& dev = ctx.subject;
    const lapse_stream stream = own_stream ? static_cast<lapse_stream>(st.thread_index()) : 0;
    std::vector<lapse_token> tokens[2] = {std::vector<lapse_token>(kBatch), std::vector<lapse_token>(kBatch)};
    std::vector<lapse_duration> out = duration_array(kBatch);
    std::string message;
    bool held = false;  // tokens[(k + 1) % 2] holds the previous, unresolved batch
    uint64_t k = 0;
    for (auto _ : st) {
        std::vector<lapse_token>& now = tokens[k % 2];
        std::vector<lapse_token>& before = tokens[(k + 1) % 2];
        if (!open_close(dev, stream, now.data(), kBatch, message) ||
            (held && !resolve_all(dev, before.data(), out.data(), kBatch, message))) {
            st.SkipWithError(message.c_str());
            return;
        }
        held = true;
        ++k;
    }
    if (held && !resolve_all(dev, tokens[(k + 1) % 2].data(), out.data(), kBatch, message))
        st.SkipWithError(message.c_str());
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * kBatch);
}

}  // namespace

void add_contention(Context& ctx, std::vector<FigureSpec>& figures)
{
    const bool two_streams = ctx.streams >= 2;
    add("contention.1x1", [&ctx](benchmark::State& st) { windows(st, ctx, false); })
        ->Threads(1)
        ->UseRealTime()
        ->MinTime(ctx.min_time);
    if (two_streams)
        add("contention.2x2", [&ctx](benchmark::State& st) { windows(st, ctx, true); })
            ->Threads(2)
            ->UseRealTime()
            ->MinTime(ctx.min_time);
    add("contention.2x1", [&ctx](benchmark::State& st) { windows(st, ctx, false); })
        ->Threads(2)
        ->UseRealTime()
        ->MinTime(ctx.min_time);
    add("contention.1x1_b", [&ctx](benchmark::State& st) { windows(st, ctx, false); })
        ->Threads(1)
        ->UseRealTime()
        ->MinTime(ctx.min_time);

    for (const char* which : {"2x2", "2x1"}) {
        FigureSpec f;
        f.figure.key = std::string("contention_") + which + "_vs_1x1";
        f.figure.title = std::string("window throughput, ") +
                         (which[2] == '2' ? "2 threads on 2 streams" : "2 threads on 1 stream");
        f.figure.baseline = "1 thread on 1 stream";
        f.figure.unit = "x";
        f.figure.target = Target::at_least;
        f.figure.limit = 1.0;
        f.formula = Formula::rate_ratio;
        f.counter = "items_per_second";
        f.subject = std::string("contention.") + which;
        f.baseline = "contention.1x1|contention.1x1_b";
        if (which[2] == '2' && !two_streams) f.unavailable = "the subject has one stream";
        figures.push_back(f);
    }
}

}  // namespace lapse::bench::detail
