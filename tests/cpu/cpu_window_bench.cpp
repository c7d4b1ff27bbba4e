// Not a test: the figures for the report. Window start+end through the C ABI
// (no resolve inside the timed region) against two steady_clock::now()
// calls, and the contention shapes of issue 8. The benchmark suite proper
// lives in tests/bench (another engineer's); this is the plugin author's
// quick check.
#include <lapse/lapse.h>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <vector>

namespace {

// The least a host must offer for open() with defaults.
lapse_status cfg_string(const lapse_host*, const lapse_config*, const char*, const char* fb, const char** out, lapse_error*)
{
    *out = fb;
    return LAPSE_OK;
}
lapse_status cfg_int(const lapse_host*, const lapse_config*, const char* key, int64_t fb, int64_t* out, lapse_error*)
{
    *out = std::strcmp(key, "streams") == 0 ? 2 : std::strcmp(key, "window_capacity") == 0 ? 8192 : fb;
    return LAPSE_OK;
}
lapse_status cfg_error(const lapse_host*, const lapse_config*, const char*, const char*, lapse_error*)
{
    return LAPSE_ERROR_CONFIG;
}
void log_fn(const lapse_host*, lapse_log_level, const char* m) { std::fprintf(stderr, "[cpu] %s\n", m); }

struct Plugin {
    lapse_host host{};
    const lapse_plugin* p = nullptr;
    lapse_device* d = nullptr;
    Plugin()
    {
        host.struct_size = sizeof host;
        host.abi_major = LAPSE_ABI_MAJOR;
        host.abi_minor = LAPSE_ABI_MINOR;
        host.log = log_fn;
        host.config_string = cfg_string;
        host.config_int = cfg_int;
        host.config_error = cfg_error;
        void* h = dlopen(LAPSE_CPU_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
        if (!h) std::abort();
        auto entry = reinterpret_cast<lapse_plugin_entry_fn>(dlsym(h, LAPSE_ENTRY_SYMBOL));
        p = entry(&host);
        if (p->open(&host, nullptr, &d, nullptr) != LAPSE_OK) std::abort();
    }
    ~Plugin() { p->close(d); }
};

Plugin& plugin()
{
    static Plugin instance;
    return instance;
}

void BM_two_steady_clock_now(benchmark::State& state)
{
    for (auto _ : state) {
        auto a = std::chrono::steady_clock::now();
        auto b = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(a);
        benchmark::DoNotOptimize(b);
    }
}
BENCHMARK(BM_two_steady_clock_now)->ThreadRange(1, 2)->UseRealTime();

// Arg(0): thread i on stream i % 2 (2 threads on 2 streams); Arg(1): every
// thread on stream 0.
void BM_cpu_window_start_end(benchmark::State& state)
{
    Plugin& pl = plugin();
    const lapse_stream stream = state.range(0) == 1 ? 0 : lapse_stream(state.thread_index() % 2);
    constexpr size_t kBatch = 4096;
    std::vector<lapse_token> tokens(kBatch);
    std::vector<lapse_duration> out(kBatch);
    for (auto& d : out) d.struct_size = sizeof d;
    size_t n = 0;
    for (auto _ : state) {
        pl.p->profile_start(pl.d, stream, &tokens[n], nullptr);
        pl.p->profile_end(pl.d, tokens[n], nullptr, nullptr);
        if (++n == kBatch) {
            state.PauseTiming();
            if (pl.p->resolve(pl.d, tokens.data(), out.data(), uint32_t(n), LAPSE_WAIT_FOREVER, nullptr) != LAPSE_OK)
                state.SkipWithError("resolve failed");
            n = 0;
            state.ResumeTiming();
        }
    }
    pl.p->resolve(pl.d, tokens.data(), out.data(), uint32_t(n), LAPSE_WAIT_FOREVER, nullptr);
}
BENCHMARK(BM_cpu_window_start_end)->Arg(0)->ThreadRange(1, 2)->UseRealTime();
BENCHMARK(BM_cpu_window_start_end)->Arg(1)->Threads(2)->UseRealTime();

// Start+end+resolve amortised, batch of 256 (what a hot loop that reads its
// numbers pays).
void BM_cpu_window_with_resolve(benchmark::State& state)
{
    Plugin& pl = plugin();
    constexpr size_t kBatch = 256;
    std::vector<lapse_token> tokens(kBatch);
    std::vector<lapse_duration> out(kBatch);
    for (auto& d : out) d.struct_size = sizeof d;
    size_t n = 0;
    for (auto _ : state) {
        pl.p->profile_start(pl.d, 0, &tokens[n], nullptr);
        pl.p->profile_end(pl.d, tokens[n], nullptr, nullptr);
        if (++n == kBatch) {
            pl.p->resolve(pl.d, tokens.data(), out.data(), uint32_t(n), LAPSE_WAIT_FOREVER, nullptr);
            n = 0;
        }
    }
    pl.p->resolve(pl.d, tokens.data(), out.data(), uint32_t(n), LAPSE_WAIT_FOREVER, nullptr);
}
BENCHMARK(BM_cpu_window_with_resolve)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
