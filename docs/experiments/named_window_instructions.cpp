// Experiment (not part of the build): instructions per window of a named
// window recorded into a capture, against the same window unnamed and
// resolved by its caller, through the C++ API, counted by callgrind in the
// steady state (the first round, which allocates every note, is not
// counted). What capture_named_vs_unnamed compares in wall time
// (docs/performance.md, "2026-12-06 (midday)").
//
//   g++ -O2 -g -std=c++20 -Icore/include -Isdk/include docs/experiments/named_window_instructions.cpp \
//       -Lbuild/lib -llapse_core -Wl,-rpath,$PWD/build/lib -o /tmp/named_window_instructions
//   export LAPSE_PLUGIN_PATH=$PWD/build/lib/lapse
//   for m in unnamed named interned; do
//       valgrind --tool=callgrind --toggle-collect='*lapse_counted_*' /tmp/named_window_instructions $m 2>&1 |
//           sed -n "s/.*Collected : //p" | awk -v m=$m '{print m, $1 / 40000}'
//   done
//
// callgrind_annotate on the output file splits the named window's extra
// instructions by function.
#include <lapse/core.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr uint32_t kWindows = 20000;  // a round; 3 rounds, the last 2 counted
const char* const kNames[8] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"};

[[gnu::noinline]] void named_windows(lapse::Device& dev, std::vector<lapse::Duration>& d)
{
    for (uint32_t i = 0; i < kWindows; ++i) {
        lapse::Window w = dev.profile_start(0, kNames[i & 7]);
        d[i] = dev.profile_end(w);
    }
}

[[gnu::noinline]] void lapse_counted_named(lapse::Device& dev, std::vector<lapse::Duration>& d)
{
    named_windows(dev, d);
}

[[gnu::noinline]] void interned_windows(lapse::Device& dev, std::vector<lapse::Duration>& d,
                                        const std::vector<lapse::Name>& names)
{
    for (uint32_t i = 0; i < kWindows; ++i) {
        lapse::Window w = dev.profile_start(0, names[i & 7]);
        d[i] = dev.profile_end(w);
    }
}

[[gnu::noinline]] void lapse_counted_interned(lapse::Device& dev, std::vector<lapse::Duration>& d,
                                              const std::vector<lapse::Name>& names)
{
    interned_windows(dev, d, names);
}

[[gnu::noinline]] void unnamed_windows(lapse::Device& dev, std::vector<lapse::Duration>& d)
{
    for (uint32_t i = 0; i < kWindows; ++i) {
        lapse::Window w = dev.profile_start(0);
        d[i] = dev.profile_end(w);
    }
}

[[gnu::noinline]] void lapse_counted_unnamed(lapse::Device& dev, std::vector<lapse::Duration>& d)
{
    unnamed_windows(dev, d);
}

}  // namespace

int main(int argc, char** argv)
{
    const std::string mode = argc == 2 ? argv[1] : "";
    if (mode != "unnamed" && mode != "named" && mode != "interned") {
        std::fprintf(stderr, "usage: %s unnamed|named|interned\n", argv[0]);
        return 2;
    }
    lapse::Runtime runtime;
    lapse::Device dev = runtime.open(lapse::Config::from_string(
        "[backend]\nplugin = \"cpu\"\nwindow_capacity = 65536\nqueue_capacity = 65536\n", "named_window_instructions", "."));
    std::shared_ptr<lapse::Capture> capture;
    if (mode != "unnamed") {
        lapse::CaptureOptions options;
        options.path = "/tmp/named_window_instructions.lapse-capture";
        options.budget_bytes = 256u << 20;
        capture = lapse::Capture::open(options);
        dev.record_into(capture);
    }
    std::vector<lapse::Name> names;
    for (const char* n : kNames) names.emplace_back(n);
    std::vector<lapse::Duration> durations(kWindows);
    for (int round = 0; round < 3; ++round) {
        const bool counted = round > 0;
        if (mode == "named")
            counted ? lapse_counted_named(dev, durations) : named_windows(dev, durations);
        else if (mode == "interned")
            counted ? lapse_counted_interned(dev, durations, names) : interned_windows(dev, durations, names);
        else
            counted ? lapse_counted_unnamed(dev, durations) : unnamed_windows(dev, durations);
        if (!capture) {
            dev.resolve(durations);
            continue;
        }
        // The collector resolves them; wait until it has taken them all.
        for (auto& d : durations) d = lapse::Duration{};
        while (capture->stats().queued > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::printf("%s: 2 counted rounds of %u windows\n", mode.c_str(), kWindows);
    return 0;
}
