// capture_instructions PATH: a fixed loop of window start+end for counting
// the caller's instructions under callgrind (stable where wall time on a
// shared machine is not). Only lapse_counted_windows() is counted:
//
//   valgrind --tool=callgrind --toggle-collect='*lapse_counted_windows*' \
//       build/bin/capture_instructions named      # then Collected / 61440
//
//   unnamed   unnamed windows, no capture (the baseline of capture_named_vs_unnamed),
//             in the same loop as `named` (the two paths meet in one function)
//   plain     unnamed windows, no capture, in a loop that never names one
//   named     named windows recorded into a capture, Durations kept (as in lapse bench)
//   interned  the same, named by lapse::Name (the names interned once, before the loop)
//   dropped   named windows recorded into a capture, Durations dropped at once
//
// Each round is 1,024 windows (lapse bench's batch); between rounds,
// uncounted, the unnamed Durations are resolved and the named ones dropped
// and the collector waited for.
#include <lapse/core.hpp>
#include <lapse/core/capture.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

constexpr uint32_t kWindowsPerRound = 1024;
constexpr int kRounds = 60;
const char* const kNames[] = {"frame", "update", "physics", "render", "shadow", "post", "ui", "present"};

[[gnu::noinline]] void lapse_counted_windows(lapse::Device& dev, std::vector<lapse::Duration>& durations, bool named)
{
    for (uint32_t i = 0; i < kWindowsPerRound; ++i) {
        lapse::Window w = named ? dev.profile_start(0, kNames[i & 7]) : dev.profile_start(0);
        durations[i] = dev.profile_end(w);
    }
}

[[gnu::noinline]] void lapse_counted_windows(lapse::Device& dev, std::vector<lapse::Duration>& durations,
                                             const std::vector<lapse::Name>& names)
{
    for (uint32_t i = 0; i < kWindowsPerRound; ++i) {
        lapse::Window w = dev.profile_start(0, names[i & 7]);
        durations[i] = dev.profile_end(w);
    }
}

[[gnu::noinline]] void lapse_counted_windows(lapse::Device& dev, std::vector<lapse::Duration>& durations)
{
    for (uint32_t i = 0; i < kWindowsPerRound; ++i) {
        lapse::Window w = dev.profile_start(0);
        durations[i] = dev.profile_end(w);
    }
}

[[gnu::noinline]] void lapse_counted_windows(lapse::Device& dev)
{
    for (uint32_t i = 0; i < kWindowsPerRound; ++i) {
        lapse::Window w = dev.profile_start(0, kNames[i & 7]);
        dev.profile_end(w);
    }
}

}  // namespace

int main(int argc, char** argv)
{
    const std::string path = argc == 2 ? argv[1] : "";
    if (path != "unnamed" && path != "plain" && path != "named" && path != "interned" && path != "dropped") {
        std::fprintf(stderr, "usage: %s unnamed|plain|named|interned|dropped\n", argv[0]);
        return 2;
    }
    lapse::Runtime runtime;
    lapse::Device dev = runtime.open(lapse::Config::from_string(
        "[backend]\nplugin = \"cpu\"\nwindow_capacity = 65536\nqueue_capacity = 65536\n", "capture_instructions", "."));
    const auto file = std::filesystem::temp_directory_path() /
                      ("lapse-capture-instructions-" + std::to_string(::getpid()) + ".lapse-capture");
    std::shared_ptr<lapse::Capture> capture;
    if (path != "unnamed" && path != "plain") {
        lapse::CaptureOptions o;
        o.path = file;
        o.budget_bytes = 64u << 20;
        capture = lapse::Capture::open(o);
        dev.record_into(capture);
    }
    std::vector<lapse::Duration> durations(kWindowsPerRound);
    std::vector<lapse::Name> names;
    for (const char* n : kNames) names.emplace_back(n);
    for (int round = 0; round < kRounds; ++round) {
        if (path == "dropped") {
            lapse_counted_windows(dev);
        } else if (path == "interned") {
            lapse_counted_windows(dev, durations, names);
        } else if (path == "plain") {
            lapse_counted_windows(dev, durations);
        } else {
            lapse_counted_windows(dev, durations, path == "named");
        }
        if (!capture) {
            dev.resolve(durations);
            continue;
        }
        for (auto& d : durations) d = lapse::Duration{};
        capture->flush();
    }
    dev.close();
    int rc = 0;
    if (capture) {
        capture->close();
        const lapse::CaptureStats s = capture->stats();
        const uint64_t expected = uint64_t{kWindowsPerRound} * kRounds;
        if (s.recorded != expected) {
            std::fprintf(stderr, "capture_instructions: %llu windows recorded of %llu\n",
                         static_cast<unsigned long long>(s.recorded), static_cast<unsigned long long>(expected));
            rc = 1;
        }
        std::error_code ec;
        std::filesystem::remove(file, ec);
    }
    std::printf("%s: %d rounds of %u windows\n", path.c_str(), kRounds, kWindowsPerRound);
    return rc;
}
