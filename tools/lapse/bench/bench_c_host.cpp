// Window start+end through the C host API (lapse/host_api.h) against the
// C++ API in the same run: what a C, Rust or Python-over-cffi host pays for
// crossing the C layer. The C host opens its own device from the subject's
// config (the C API hands out opaque handles only), so both run on the same
// backend, configured alike.
//
// The two paths are timed in short interleaved batches (C++, C, C++, C,
// ...), each C batch against the mean of the C++ batches on either side, and
// the figure is the median of those ratios: a change of load between
// batches cancels out, and a batch hit by a preemption is an outlier, not a
// shift. Time is the calling thread's CPU time (the host's cost, not the
// time another process held the core); the wall-clock ratio is reported
// beside it. Each batch is resolved untimed, as in the window concern.
#include "internal.hpp"

#include <lapse/host_api.h>

#include <algorithm>
#include <ctime>
#include <memory>

namespace lapse::bench::detail {

namespace {

// The C host's handles, alive while its benchmarks are registered.
struct CHost {
    lapse_host_runtime* runtime = nullptr;
    lapse_host_config* config = nullptr;
    lapse_host_device* device = nullptr;
    std::string error;  // why it did not open

    CHost(const Context& ctx)
    {
        lapse_error e{sizeof(lapse_error), 0, {}};
        if (lapse_host_runtime_create(nullptr, &runtime, &e) != LAPSE_OK ||
            lapse_host_config_from_string(ctx.subject_config.c_str(), ctx.config_name.c_str(),
                                          ctx.config_dir.empty() ? nullptr : ctx.config_dir.c_str(), &config,
                                          &e) != LAPSE_OK ||
            lapse_host_open(runtime, config, &device, &e) != LAPSE_OK)
            error = e.message;
    }
    CHost(const CHost&) = delete;
    CHost& operator=(const CHost&) = delete;
    ~CHost()
    {
        lapse_host_device_destroy(device);
        lapse_host_config_destroy(config);
        lapse_host_runtime_destroy(runtime);
    }
};

int64_t thread_cpu_ns() noexcept
{
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// One batch's cost per window: thread CPU ns and wall ns.
struct BatchTime {
    double cpu_ns = 0;
    double wall_ns = 0;
};

// A batch through the C host API; false (with `why`) when a call failed.
bool c_host_batch(lapse_host_device* dev, std::vector<lapse_host_duration>& durations, BatchTime& time,
                  std::string& why)
{
    const auto n = static_cast<uint32_t>(durations.size());
    const int64_t c0 = thread_cpu_ns();
    const auto t0 = Clock::now();
    for (uint32_t i = 0; i < n; ++i) {
        lapse_host_window w;
        if (lapse_host_profile_start(dev, 0, nullptr, &w, nullptr) != LAPSE_OK ||
            lapse_host_profile_end(dev, &w, 0, &durations[i], nullptr) != LAPSE_OK) [[unlikely]] {
            why = "lapse_host_profile_start/end failed";
            return false;
        }
    }
    const auto t1 = Clock::now();
    const int64_t c1 = thread_cpu_ns();
    time.cpu_ns = static_cast<double>(c1 - c0) / n;
    time.wall_ns = seconds_between(t0, t1) * 1e9 / n;
    if (lapse_host_resolve(dev, durations.data(), n, LAPSE_WAIT_FOREVER, nullptr, nullptr) != LAPSE_OK) {
        why = "lapse_host_resolve failed";
        return false;
    }
    return true;
}

// The same through the C++ API, exactly as the window concern runs it.
bool cpp_batch(Device& dev, std::vector<Duration>& durations, BatchTime& time, std::string& why)
{
    const auto n = static_cast<uint32_t>(durations.size());
    const int64_t c0 = thread_cpu_ns();
    const auto t0 = Clock::now();
    if (!cpp_api_windows(dev, durations)) [[unlikely]] {
        why = "profile_end failed";
        return false;
    }
    const auto t1 = Clock::now();
    const int64_t c1 = thread_cpu_ns();
    time.cpu_ns = static_cast<double>(c1 - c0) / n;
    time.wall_ns = seconds_between(t0, t1) * 1e9 / n;
    dev.resolve(durations);
    return true;
}

double median(std::vector<double> v)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

void interleaved(benchmark::State& st, Device& cpp, const CHost& host, uint32_t batch, int pairs)
{
    if (host.device == nullptr) {
        st.SkipWithError(("C host device not open: " + host.error).c_str());
        return;
    }
    if (!cpp) {
        st.SkipWithError("device not open");
        return;
    }
    std::vector<lapse_host_duration> c_durations(batch);
    for (auto& d : c_durations) lapse_host_duration_init(&d);
    std::vector<Duration> cpp_durations(batch);
    std::vector<double> cpu_ratio, wall_ratio, c_cpu, cpp_cpu;
    std::string why;
    bool ok = true;
    for (auto _ : st) {
        const auto t0 = Clock::now();
        BatchTime before, c, after;
        ok = cpp_batch(cpp, cpp_durations, before, why);
        for (int i = 0; ok && i < pairs; ++i) {
            ok = c_host_batch(host.device, c_durations, c, why) && cpp_batch(cpp, cpp_durations, after, why);
            if (!ok) break;
            const double cpu_base = (before.cpu_ns + after.cpu_ns) / 2;
            const double wall_base = (before.wall_ns + after.wall_ns) / 2;
            if (cpu_base > 0) cpu_ratio.push_back(c.cpu_ns / cpu_base);
            if (wall_base > 0) wall_ratio.push_back(c.wall_ns / wall_base);
            c_cpu.push_back(c.cpu_ns);
            cpp_cpu.push_back(cpu_base);
            before = after;
        }
        st.SetIterationTime(seconds_between(t0, Clock::now()));
        if (!ok) break;
    }
    for (auto& d : c_durations) lapse_host_duration_release(&d);
    if (!ok) {
        st.SkipWithError(why.c_str());
        return;
    }
    st.counters["ratio"] = median(cpu_ratio);
    st.counters["wall_ratio"] = median(wall_ratio);
    st.counters["c_host_ns"] = median(c_cpu);
    st.counters["cpp_api_ns"] = median(cpp_cpu);
}

}  // namespace

void add_c_host(Context& ctx, std::vector<FigureSpec>& figures)
{
    auto host = std::make_shared<CHost>(ctx);
    const int pairs = ctx.quick ? 20 : 200;
    add("c_host.interleaved", [&ctx, host, pairs](benchmark::State& st) {
        interleaved(st, ctx.subject, *host, ctx.batch, pairs);
    })->UseManualTime()->Iterations(1);

    FigureSpec f;
    f.figure.key = "c_host_vs_cpp_api";
    f.figure.title = "window start+end, C host API (lapse/host_api.h)";
    f.figure.baseline = "the same through the C++ API (thread CPU time, median of interleaved batches)";
    f.figure.unit = "x";
    f.figure.target = Target::at_most;
    f.figure.limit = 1.1;
    f.formula = Formula::counter;
    f.counter = "ratio";
    f.subject = "c_host.interleaved";
    if (host->device == nullptr) f.unavailable = "the C host could not open the subject: " + host->error;
    figures.push_back(f);
}

}  // namespace lapse::bench::detail
