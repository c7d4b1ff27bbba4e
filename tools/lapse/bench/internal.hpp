// lapse benchmark suite — what the concerns share (not a public header).
#pragma once

#include "suite.hpp"

#include <lapse/core.hpp>
#include <lapse/resolve_compact.h>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace lapse::bench::detail {

using Clock = std::chrono::steady_clock;

inline double seconds_between(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double>(b - a).count();
}

// One run of one benchmark (one round).
struct Sample {
    double ns_per_iteration = 0;  // real time
    std::map<std::string, double> counters;
};

// How a figure's per-round value is made from its benchmarks' samples.
enum class Formula {
    time_ratio,       // subject time / baseline time
    sqrt_time_ratio,  // sqrt(subject time / baseline time): per layer of two
    counter,          // subject's counter `counter`
    rate_ratio,       // subject's counter `counter` / baseline's counter `counter`
    time_ms           // subject time per iteration, in ms
};

struct FigureSpec {
    Figure figure;
    Formula formula = Formula::time_ratio;
    std::string subject;   // benchmark name
    std::string baseline;  // benchmark name, or ""
    std::string counter;   // for counter / rate_ratio
    double ops_per_iteration = 1;  // to report subject_ns / baseline_ns per operation
    std::string unavailable;  // set when the figure cannot be measured here (and why)
};

// The usual figure: the subject benchmark's time over the baseline's (each
// per iteration; `ops_per_iteration` only scales the ns shown beside it),
// held to at most `limit`.
inline FigureSpec time_ratio_at_most(std::string key, std::string title, std::string baseline_text, double limit,
                                     std::string subject, std::string baseline, double ops_per_iteration = 1)
{
    FigureSpec f;
    f.figure.key = std::move(key);
    f.figure.title = std::move(title);
    f.figure.baseline = std::move(baseline_text);
    f.figure.unit = "x";
    f.figure.target = Target::at_most;
    f.figure.limit = limit;
    f.subject = std::move(subject);
    f.baseline = std::move(baseline);
    f.ops_per_iteration = ops_per_iteration;
    return f;
}

// The devices and buffers every benchmark of a run shares. Opened once,
// before the first round, warmed, and closed after the last.
struct Context {
    Options options;
    bool quick = false;
    uint32_t batch = 1024;       // windows per timed batch
    std::size_t big = 1000000;   // windows for the resolve and memory figures
    double min_time = 0.2;       // seconds per benchmark run
    int accuracy_runs_1ms = 40;  // windows per accuracy run
    int accuracy_runs_20ms = 6;
    int load_iterations = 8;

    std::string subject_config;  // TOML
    std::string config_name;
    std::string config_dir;

    std::unique_ptr<Runtime> runtime;
    Device subject;
    std::string plugin;  // descriptor name of the subject's top plugin
    uint32_t streams = 0;
    bool host_work = false;  // submitted work runs on a host thread (native == NULL): accuracy applies

    Device forward1, forward2;
    std::string forward_error;  // why the forward stacks did not open

    // A cuda device for the CUDA figure when the subject is not one
    // (bench_cuda.cpp); closed when the run ends.
    Device cuda;

    // Big buffers, touched before timing (fresh pages cost ~11 us each here).
    std::vector<lapse_token> big_tokens;
    std::vector<lapse_duration> big_out;
    std::string big_error;  // why the subject cannot hold `big` windows, if it cannot

    // A config wrapping the subject in `layers` forward plugins.
    std::string wrapped(int layers) const;
    Config config(const std::string& text) const;
};

Context& context();

// A concern registers its benchmarks (in the order they run) and its figures.
struct Concern {
    const char* name;
    void (*add)(Context& ctx, std::vector<FigureSpec>& figures);
};

void add_window(Context&, std::vector<FigureSpec>&);      // C ABI vs clock, C++ API, forward layers
void add_system(Context&, std::vector<FigureSpec>&);      // device window vs system-time window
void add_resolve(Context&, std::vector<FigureSpec>&);     // resolve 1M vs reading stamps
void add_memory(Context&, std::vector<FigureSpec>&);      // bytes per pending window
void add_accuracy(Context&, std::vector<FigureSpec>&);    // 1 ms and 20 ms busy intervals
void add_load(Context&, std::vector<FigureSpec>&);        // load + negotiate + open
void add_contention(Context&, std::vector<FigureSpec>&);  // 1x1, 2x2, 2x1
void add_c_host(Context&, std::vector<FigureSpec>&);      // the C host API vs the C++ API
void add_capture(Context&, std::vector<FigureSpec>&);     // recording cost, rate, size, read back, disabled
void add_worker(Context&, std::vector<FigureSpec>&);      // cpu worker's thread CPU time per window
void add_vulkan(Context&, std::vector<FigureSpec>&);      // vulkan recording and readback vs bare Vulkan
void add_cuda(Context&, std::vector<FigureSpec>&);        // a CUDA window vs two bare cuEventRecord
void add_metrics(Context&, std::vector<FigureSpec>&);     // the Prometheus sink's cost to the caller

// Registers a benchmark that runs `fn` and reports the skip reason when the
// context says the figure cannot run.
benchmark::internal::Benchmark* add(const std::string& name, std::function<void(benchmark::State&)> fn);

// An out array for resolve, set up once: every struct_size set. Plugins
// leave struct_size alone, so a benchmark resolves into it again and again
// the way a caller reusing its buffer does.
std::vector<lapse_duration> duration_array(std::size_t count);

// Resolves `count` closed windows of `dev` through the C ABI into `out` (a
// duration_array), waiting. False (and a message) when something failed.
bool resolve_all(const Device& dev, const lapse_token* tokens, lapse_duration* out, uint32_t count,
                 std::string& message);

// Resolves `count` closed windows compactly (lapse.resolve_compact/1),
// waiting; any window the compact call did not answer READY is resolved in
// full (it should not happen here: every window measured), and what
// resolve said is the message. False when a window did not measure.
bool resolve_compact_all(const Device& dev, const lapse_resolve_compact& compact, const lapse_token* tokens,
                         lapse_stamp_pair* stamps, uint8_t* states, uint32_t count, std::string& message);

// Start+end of durations.size() windows through the C++ API on stream 0,
// each Duration kept: the loop the C++-API figures time (window.cpp_api*,
// c_host_vs_cpp_api's baseline). False when a window failed.
[[gnu::always_inline]] inline bool cpp_api_windows(Device& dev, std::vector<Duration>& durations)
{
    const std::size_t n = durations.size();
    for (std::size_t i = 0; i < n; ++i) {
        Window w = dev.profile_start(0);
        durations[i] = dev.profile_end(w);
        if (durations[i].failed()) [[unlikely]]
            return false;
    }
    return true;
}

// Start+end of `count` windows through the C ABI on `stream`, tokens kept.
// False (and a message) when a call failed.
bool open_close(const Device& dev, lapse_stream stream, lapse_token* tokens, uint32_t count,
                std::string& message);

}  // namespace lapse::bench::detail
