// What a forward layer costs: a window start+end through the C ABI on the
// CPU plugin (stream mode, no resolve inside the timed loop), bare and under
// one and two forward layers, in the same run. Prints the ratios the
// performance target is stated in (each layer <= 1.1x the bare plugin).
//
// Windows are resolved, untimed, every kBatch iterations so the plugin's
// tables stay the size of a batch (a steady state, not growth).
#include <lapse/core.hpp>
#include <lapse/sdk/error.hpp>

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr size_t kBatch = 1024;

// Arg 0..2: that many forward layers; arg 3: one layer that keeps its own
// token map (own_tokens = true), as it must over a backend that is not whole.
std::string stack(int arg)
{
    const int forward_layers = arg == 3 ? 1 : arg;
    std::string text;
    std::string table = "backend";
    for (int i = 0; i < forward_layers; ++i) {
        text += "[" + table + "]\nplugin = \"forward\"\n";
        if (arg == 3) text += "own_tokens = true\n";
        table += ".inner";
    }
    return text + "[" + table + "]\nplugin = \"cpu\"\nmode = \"stream\"\nstreams = 1\n";
}

void start_end(benchmark::State& state)
{
    lapse::Runtime runtime;
    lapse::Device dev =
        runtime.open(lapse::Config::from_string(stack(static_cast<int>(state.range(0))), "<bench>", {}));
    const lapse_plugin& p = dev.plugin();
    lapse_device* h = dev.handle();
    std::vector<lapse_token> tokens;
    tokens.reserve(kBatch);
    std::vector<lapse_duration> out(kBatch);
    // A finite wait: a backend that loses a window must fail the run, not hang it.
    auto drain = [&] {
        for (auto& d : out) d.struct_size = sizeof d;
        lapse_status status = p.resolve(h, tokens.data(), out.data(), static_cast<uint32_t>(tokens.size()),
                                        10'000'000'000ull, nullptr);
        tokens.clear();
        return status == LAPSE_OK;
    };
    for (auto _ : state) {
        lapse_token t;
        if (p.profile_start(h, 0, &t, nullptr) != LAPSE_OK || p.profile_end(h, t, nullptr, nullptr) != LAPSE_OK) {
            state.SkipWithError("window failed");
            break;
        }
        tokens.push_back(t);
        if (tokens.size() == kBatch) {
            state.PauseTiming();
            const bool resolved = drain();
            state.ResumeTiming();
            if (!resolved) {
                state.SkipWithError("resolve did not finish within 10 s");
                break;
            }
        }
    }
    drain();
}

// Forward layers over the CPU plugin: 0 is the bare plugin (see stack()).
BENCHMARK(start_end)->Arg(0)->Arg(1)->Arg(2)->Arg(3)->Repetitions(7)->ReportAggregatesOnly(true)->MinTime(0.2);

class RatioReporter : public benchmark::ConsoleReporter {
public:
    void ReportRuns(const std::vector<Run>& runs) override
    {
        for (const Run& r : runs)
            if (r.aggregate_name == "median") median_ns[r.run_name.args] = r.GetAdjustedRealTime();
        ConsoleReporter::ReportRuns(runs);
    }
    std::map<std::string, double> median_ns;  // by argument ("0", "1", "2")
};

}  // namespace

int main(int argc, char** argv)
{
    benchmark::Initialize(&argc, argv);
    RatioReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    auto& m = reporter.median_ns;
    if (m.count("0") && m.count("1") && m.count("2")) {
        std::printf("\nwindow start+end, median: bare cpu %.1f ns, forward>cpu %.1f ns, forward>forward>cpu %.1f ns\n",
                    m["0"], m["1"], m["2"]);
        std::printf("one forward layer:  %.3fx the bare plugin (target <= 1.1x)\n", m["1"] / m["0"]);
        std::printf("two forward layers: %.3fx the bare plugin, %.3fx per layer\n", m["2"] / m["0"],
                    std::sqrt(m["2"] / m["0"]));
        if (m.count("3"))
            std::printf("one layer keeping its own token map (own_tokens = true): %.1f ns, %.3fx the bare plugin\n",
                        m["3"], m["3"] / m["0"]);
    }
    benchmark::Shutdown();
    return 0;
}
