// Experiment (not part of the build): the CPU plugin's compact resolve
// (lapse.resolve_compact/1), nanoseconds a window against how many windows
// one call resolves, to tell whether `resolve_vs_read_stamps` is bound by
// memory or by the walk's instructions (docs/performance.md, "2026-12-07
// (session 33)"). Each size: five rounds of opening and closing the
// windows, syncing the stream, then timing one resolve; the best round is
// printed, and again after a 40-byte-a-window walk of other memory between
// the sync and the resolve.
//
// Build against a configured tree (build/ holds liblapse_core.so and the
// plugins), from the project root, as one command:
//   g++ -O2 -std=c++20 -Icore/include -Isdk/include -Lbuild/lib -Wl,-rpath,$PWD/build/lib
//       docs/experiments/compact_resolve_scaling.cpp -llapse_core -o /tmp/compact_resolve_scaling
// then:
//   LAPSE_PLUGIN_PATH=$PWD/build/lib/lapse/ /tmp/compact_resolve_scaling
#include <lapse/core.hpp>
#include <lapse/sdk/resolve_compact.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

int main()
{
    lapse::Runtime runtime;
    lapse::Device dev = runtime.open(lapse::Config::from_string(
        "[backend]\nplugin = \"cpu\"\nwindow_capacity = 1048576\nqueue_capacity = 65536\n", "compact_resolve_scaling",
        "."));
    const lapse_plugin& p = dev.plugin();
    lapse_device* h = dev.handle();
    const lapse_resolve_compact* compact = lapse::sdk::resolve_compact_of(&p, h);
    if (compact == nullptr) {
        std::fprintf(stderr, "the device offers no lapse.resolve_compact/1\n");
        return 1;
    }
    for (uint32_t n : {4096u, 65536u, 262144u, 1000000u}) {
        std::vector<lapse_token> tokens(n);
        std::vector<lapse_stamp_pair> pairs(n);
        std::vector<uint8_t> states(n);
        std::vector<int64_t> other(static_cast<std::size_t>(n) * 5);
        double best = 1e9;
        double best_after_walk = 1e9;
        for (int round = 0; round < 5; ++round) {
            for (bool walk : {false, true}) {
                for (uint32_t i = 0; i < n; ++i) {
                    if (p.profile_start(h, 0, &tokens[i], nullptr) != LAPSE_OK ||
                        p.profile_end(h, tokens[i], nullptr, nullptr) != LAPSE_OK) {
                        std::fprintf(stderr, "window %u failed\n", i);
                        return 1;
                    }
                }
                p.sync(h, 0, nullptr);
                if (walk) {
                    int64_t sum = 0;
                    for (int64_t v : other) sum += v;
                    std::printf("%s", sum == 1 ? " " : "");
                }
                const auto t0 = std::chrono::steady_clock::now();
                const lapse_status status =
                    compact->resolve_compact(h, tokens.data(), pairs.data(), states.data(), n, 0, nullptr);
                const auto t1 = std::chrono::steady_clock::now();
                if (status != LAPSE_OK) {
                    std::fprintf(stderr, "resolve_compact: status %d\n", status);
                    return 1;
                }
                const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
                (walk ? best_after_walk : best) = std::min(walk ? best_after_walk : best, ns);
            }
        }
        std::printf("%8u windows: %.2f ns a window (after walking other memory: %.2f)\n", n, best, best_after_walk);
    }
}
