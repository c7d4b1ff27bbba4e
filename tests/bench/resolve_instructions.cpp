// bench_resolve_instructions PATH: resolves of synced batches through one
// path, for counting instructions under callgrind (stable where the wall
// time of cpp_resolve_vs_c_resolve on a shared machine is not;
// scripts/bench-instructions.sh runs it and prints the table).
//
//   c_full     the C ABI resolve (40-byte lapse_duration answers): the
//              baseline of cpp_resolve_vs_c_resolve
//   c_compact  the C ABI lapse.resolve_compact/1 (16-byte stamp pairs)
//   cpp_span   Device::resolve over a span of Durations
//
// Only lapse_counted_resolve() is counted (--toggle-collect): opening,
// closing and the sync that lets the worker stamp every window run outside
// it, so what is counted is the resolve alone, as in `lapse bench`. Each
// round is kBatch windows (lapse bench's batch).
#include <lapse/core.hpp>
#include <lapse/sdk/resolve_compact.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kBatch = 1024;
constexpr int kRounds = 40;

const std::vector<std::string> kPaths = {"c_full", "c_compact", "cpp_span"};

[[gnu::noinline]] bool lapse_counted_resolve(const lapse::Device& dev, const std::vector<lapse_token>& tokens,
                                             std::vector<lapse_duration>& out)
{
    return dev.plugin().resolve(dev.handle(), tokens.data(), out.data(), kBatch, LAPSE_WAIT_FOREVER, nullptr) ==
           LAPSE_OK;
}

[[gnu::noinline]] bool lapse_counted_resolve(const lapse::Device& dev, const lapse_resolve_compact& compact,
                                             const std::vector<lapse_token>& tokens,
                                             std::vector<lapse_stamp_pair>& pairs, std::vector<uint8_t>& states)
{
    return compact.resolve_compact(dev.handle(), tokens.data(), pairs.data(), states.data(), kBatch,
                                   LAPSE_WAIT_FOREVER, nullptr) == LAPSE_OK;
}

[[gnu::noinline]] bool lapse_counted_resolve(lapse::Device& dev, std::vector<lapse::Duration>& durations)
{
    return dev.resolve(durations);
}

int run(const std::string& path)
{
    lapse::Runtime runtime;
    lapse::Device dev = runtime.open(lapse::Config::from_string(
        "[backend]\nplugin = \"cpu\"\nwindow_capacity = 65536\nqueue_capacity = 65536\n", "resolve_instructions",
        "."));
    const lapse_plugin& p = dev.plugin();
    const lapse_resolve_compact* compact = lapse::sdk::resolve_compact_of(&p, dev.handle());
    if (path == "c_compact" && compact == nullptr) {
        std::fprintf(stderr, "bench_resolve_instructions: the cpu plugin offers no %s\n",
                     LAPSE_RESOLVE_COMPACT_EXTENSION);
        return 1;
    }
    std::vector<lapse_token> tokens(kBatch);
    std::vector<lapse_duration> out(kBatch);
    for (auto& o : out) o.struct_size = sizeof o;
    std::vector<lapse_stamp_pair> pairs(kBatch);
    std::vector<uint8_t> states(kBatch);
    std::vector<lapse::Duration> durations(kBatch);
    for (int round = 0; round < kRounds; ++round) {
        for (uint32_t i = 0; i < kBatch; ++i) {
            if (path == "cpp_span") {
                lapse::Window w = dev.profile_start(0);
                durations[i] = dev.profile_end(w);
                continue;
            }
            if (p.profile_start(dev.handle(), 0, &tokens[i], nullptr) != LAPSE_OK ||
                p.profile_end(dev.handle(), tokens[i], nullptr, nullptr) != LAPSE_OK) {
                std::fprintf(stderr, "bench_resolve_instructions: a window failed to open or close\n");
                return 1;
            }
        }
        if (p.sync(dev.handle(), 0, nullptr) != LAPSE_OK) {
            std::fprintf(stderr, "bench_resolve_instructions: sync failed\n");
            return 1;
        }
        const bool ok = path == "c_full"      ? lapse_counted_resolve(dev, tokens, out)
                        : path == "c_compact" ? lapse_counted_resolve(dev, *compact, tokens, pairs, states)
                                              : lapse_counted_resolve(dev, durations);
        if (!ok) {
            std::fprintf(stderr, "bench_resolve_instructions: %s left a window unresolved\n", path.c_str());
            return 1;
        }
    }
    std::printf("%s: %d rounds of %u windows\n", path.c_str(), kRounds, kBatch);
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    const std::string path = argc == 2 ? argv[1] : "";
    if (std::find(kPaths.begin(), kPaths.end(), path) == kPaths.end()) {
        std::fprintf(stderr, "usage: %s c_full|c_compact|cpp_span\n", argv[0]);
        return 2;
    }
    try {
        return run(path);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_resolve_instructions: %s\n", e.what());
        return 1;
    }
}
