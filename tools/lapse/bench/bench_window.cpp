// Window start+end, no resolve in the timed part: the C ABI against two
// steady_clock reads (the floor of any window that reads the host clock
// twice), the C++ host API against the C ABI, and forward layers against
// the bare backend, through each of the two.
//
// Each iteration is a batch of `batch` windows timed by two clock reads
// around it (manual time: nothing but the windows is inside), then the batch
// is resolved untimed, so the backend's tables stay the size of one batch:
// the steady state, not growth.
#include "internal.hpp"

#include <lapse/sdk/error.hpp>

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define LAPSE_BENCH_HAS_RDTSC 1
#endif

namespace lapse::bench::detail {

namespace {

void two_clock_reads(benchmark::State& st, const Context& ctx)
{
    const uint32_t n = ctx.batch;
    for (auto _ : st) {
        const auto t0 = Clock::now();
        for (uint32_t i = 0; i < n; ++i) {
            auto a = Clock::now();
            auto b = Clock::now();
            benchmark::DoNotOptimize(a);
            benchmark::DoNotOptimize(b);
        }
        const auto t1 = Clock::now();
        st.SetIterationTime(seconds_between(t0, t1));
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * n);
}

// Two reads of the TSC: the floor of a window that stamps on the caller's
// thread with the cheapest clock there is (what Tracy's zones read).
void two_rdtsc(benchmark::State& st, const Context& ctx)
{
#if LAPSE_BENCH_HAS_RDTSC
    const uint32_t n = ctx.batch;
    for (auto _ : st) {
        const auto t0 = Clock::now();
        for (uint32_t i = 0; i < n; ++i) {
            uint64_t a = __rdtsc();
            uint64_t b = __rdtsc();
            benchmark::DoNotOptimize(a);
            benchmark::DoNotOptimize(b);
        }
        const auto t1 = Clock::now();
        st.SetIterationTime(seconds_between(t0, t1));
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * n);
#else
    (void)ctx;
    st.SkipWithError("no rdtsc on this architecture");
#endif
}

// A job that holds a stream's worker until the gate says kReleased. It
// sleeps on the gate rather than spinning: a spinning job keeps the other
// core busy and reads the gate's line while the batch is timed.
enum : int { kQueued, kHolding, kReleased };
void hold_worker(void* user, void* /*native*/)
{
    auto& gate = *static_cast<std::atomic<int>*>(user);
    gate.store(kHolding, std::memory_order_release);
    for (int g = gate.load(std::memory_order_acquire); g != kReleased; g = gate.load(std::memory_order_acquire))
        gate.wait(g, std::memory_order_acquire);
}

// `worker_held`: stream 0's worker is held inside a job submitted before
// each batch, so it touches none of the queue's or the records' cache lines
// while the batch is timed: what the window path itself costs the caller,
// without the lines that travel between its core and the worker's (the
// rest of cpu_window_vs_two_rdtsc). The job lets the worker go once the
// batch is timed; the batch is then resolved, untimed.
void c_abi_windows(benchmark::State& st, const Device& dev, uint32_t batch, bool worker_held = false)
{
    if (!dev) {
        st.SkipWithError("device not open");
        return;
    }
    const lapse_plugin& p = dev.plugin();
    lapse_device* h = dev.handle();
    std::vector<lapse_token> tokens(batch);
    std::vector<lapse_duration> out = duration_array(batch);
    std::string message;
    std::atomic<int> gate{kQueued};
    for (auto _ : st) {
        if (worker_held) {
            gate.store(kQueued, std::memory_order_relaxed);
            if (p.submit(h, 0, hold_worker, &gate, nullptr) != LAPSE_OK) {
                st.SkipWithError("submit of the job that holds the worker failed");
                return;
            }
            while (gate.load(std::memory_order_acquire) != kHolding) std::this_thread::yield();
        }
        bool ok = true;
        const auto t0 = Clock::now();
        for (uint32_t i = 0; i < batch && ok; ++i) {
            lapse_token t{};
            ok = p.profile_start(h, 0, &t, nullptr) == LAPSE_OK && p.profile_end(h, t, nullptr, nullptr) == LAPSE_OK;
            tokens[i] = t;
        }
        const auto t1 = Clock::now();
        gate.store(kReleased, std::memory_order_release);  // on every path: a held worker never closes
        gate.notify_one();
        if (!ok) [[unlikely]] {
            st.SkipWithError("profile_start/profile_end failed");
            return;
        }
        st.SetIterationTime(seconds_between(t0, t1));
        if (!resolve_all(dev, tokens.data(), out.data(), batch, message)) {
            st.SkipWithError(message.c_str());
            return;
        }
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * batch);
}

void cpp_api_batches(benchmark::State& st, Device& dev, uint32_t batch)
{
    if (!dev) {
        st.SkipWithError("device not open");
        return;
    }
    std::vector<Duration> durations(batch);
    for (auto _ : st) {
        const auto t0 = Clock::now();
        if (!cpp_api_windows(dev, durations)) [[unlikely]] {
            st.SkipWithError("profile_end failed");
            return;
        }
        const auto t1 = Clock::now();
        st.SetIterationTime(seconds_between(t0, t1));
        dev.resolve(durations);
    }
    st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * batch);
}

}  // namespace

void add_window(Context& ctx, std::vector<FigureSpec>& figures)
{
    const double mt = ctx.min_time;
    auto manual = [&](benchmark::internal::Benchmark* b) { b->UseManualTime()->MinTime(mt); };

    manual(add("window.two_clock_reads", [&ctx](benchmark::State& st) { two_clock_reads(st, ctx); }));
    manual(add("window.c_abi", [&ctx](benchmark::State& st) { c_abi_windows(st, ctx.subject, ctx.batch); }));
    manual(add("window.two_rdtsc", [&ctx](benchmark::State& st) { two_rdtsc(st, ctx); }));
    manual(add("window.cpp_api", [&ctx](benchmark::State& st) { cpp_api_batches(st, ctx.subject, ctx.batch); }));
    manual(add("window.c_abi_b", [&ctx](benchmark::State& st) { c_abi_windows(st, ctx.subject, ctx.batch); }));
    if (ctx.forward1) {
        manual(add("window.forward1", [&ctx](benchmark::State& st) { c_abi_windows(st, ctx.forward1, ctx.batch); }));
        manual(add("window.forward2", [&ctx](benchmark::State& st) { c_abi_windows(st, ctx.forward2, ctx.batch); }));
        manual(add("window.c_abi_c", [&ctx](benchmark::State& st) { c_abi_windows(st, ctx.subject, ctx.batch); }));
        manual(add("window.cpp_forward1",
                   [&ctx](benchmark::State& st) { cpp_api_batches(st, ctx.forward1, ctx.batch); }));
        manual(add("window.cpp_forward2",
                   [&ctx](benchmark::State& st) { cpp_api_batches(st, ctx.forward2, ctx.batch); }));
        manual(add("window.cpp_api_b", [&ctx](benchmark::State& st) { cpp_api_batches(st, ctx.subject, ctx.batch); }));
    }

    const bool cpu = ctx.plugin == "cpu";
    if (cpu)
        manual(add("window.c_abi_worker_held",
                   [&ctx](benchmark::State& st) { c_abi_windows(st, ctx.subject, ctx.batch, true); }));
    {
        FigureSpec f;
        f.figure.key = ctx.plugin + "_window_vs_two_clock_reads";
        f.figure.title = ctx.plugin + " window start+end, C ABI, no resolve";
        f.figure.baseline = "2x steady_clock::now()";
        f.figure.unit = "x";
        f.figure.target = cpu ? Target::at_most : Target::report;
        f.figure.limit = 1.5;
        f.figure.aim = cpu ? "aim <= 1.0x" : "";
        f.subject = "window.c_abi";
        f.baseline = "window.two_clock_reads";
        f.ops_per_iteration = ctx.batch;
        figures.push_back(f);
    }
    {
        FigureSpec f;
        f.figure.key = ctx.plugin + "_window_vs_two_rdtsc";
        f.figure.title = ctx.plugin + " window start+end, C ABI, no resolve";
        f.figure.baseline = "2x rdtsc";
        f.figure.unit = "x";
        f.figure.target = cpu ? Target::at_most : Target::report;
        f.figure.limit = 1.2;
        f.subject = "window.c_abi";
        f.baseline = "window.two_rdtsc";
        f.ops_per_iteration = ctx.batch;
#if !LAPSE_BENCH_HAS_RDTSC
        f.unavailable = "no rdtsc on this architecture";
#endif
        figures.push_back(f);
    }
    {
        FigureSpec f;
        f.figure.key = "cpu_window_worker_held_vs_two_rdtsc";
        f.figure.title = "cpu window start+end, C ABI, no resolve, the stream's worker held in a job";
        f.figure.baseline = "2x rdtsc";
        f.figure.unit = "x";
        f.figure.target = Target::report;
        f.subject = "window.c_abi_worker_held";
        f.baseline = "window.two_rdtsc";
        f.ops_per_iteration = ctx.batch;
#if !LAPSE_BENCH_HAS_RDTSC
        f.unavailable = "no rdtsc on this architecture";
#endif
        if (!cpu) f.unavailable = "only the cpu plugin's stream worker can be held by a job";
        figures.push_back(f);
    }
    {
        FigureSpec f;
        f.figure.key = "cpp_api_vs_c_abi";
        f.figure.title = "window start+end, C++ API (Window/Duration)";
        f.figure.baseline = "the same through the C ABI";
        f.figure.unit = "x";
        f.figure.target = Target::at_most;
        f.figure.limit = 1.1;
        f.subject = "window.cpp_api";
        // The bare runs either side of it, so both see the same load.
        f.baseline = "window.c_abi|window.c_abi_b";
        f.ops_per_iteration = ctx.batch;
        figures.push_back(f);
    }
    // Forward layers, as a host pays for them (the C++ API, which calls
    // past a layer that adds nothing to a window: lapse/dispatch.h), and as
    // a plugin stacked on forward pays for them (its C entry points: one
    // trampoline, however deep the stack below it collapses).
    for (const bool host_api : {true, false}) {
        for (int layers = 1; layers <= 2; ++layers) {
            FigureSpec f;
            const std::string key = layers == 1 ? "forward_layer_vs_bare" : "forward_2_layers_per_layer";
            const std::string title =
                layers == 1 ? "window start+end under 1 forward layer" : "under 2 forward layers, per layer (sqrt)";
            f.figure.key = host_api ? key : key + "_c_abi";
            f.figure.title = title + (host_api ? ", C++ API" : ", C ABI");
            f.figure.baseline = "the bare " + ctx.plugin + " plugin, " + (host_api ? "C++ API" : "C ABI");
            f.figure.unit = "x";
            // The 1.1x per layer is held to what a host pays; what
            // a stacked plugin pays is reported beside it.
            f.figure.target = host_api ? Target::at_most : Target::report;
            f.figure.limit = 1.1;
            f.formula = layers == 1 ? Formula::time_ratio : Formula::sqrt_time_ratio;
            if (host_api) {
                f.subject = layers == 1 ? "window.cpp_forward1" : "window.cpp_forward2";
                f.baseline = "window.cpp_api|window.cpp_api_b";
            } else {
                f.subject = layers == 1 ? "window.forward1" : "window.forward2";
                f.baseline = "window.c_abi_b|window.c_abi_c";
            }
            f.ops_per_iteration = ctx.batch;
            if (!ctx.forward1) f.unavailable = "forward not available: " + ctx.forward_error;
            figures.push_back(f);
        }
    }
}

}  // namespace lapse::bench::detail
