// bench_window_instructions PATH: a fixed loop of window start+end through
// one path, for counting instructions under callgrind, which is stable
// where wall time on a shared machine is not (scripts/bench-instructions.sh
// runs it and prints the table).
//
//   c_abi     the CPU plugin through its C ABI (the token stored, as a
//             caller must)
//   cpp_api   the same through the C++ host API (Window, Duration)
//   forward1  the C ABI under one forward layer
//   forward2  ... under two
//   cpp_forward1, cpp_forward2
//             the C++ API under one or two forward layers (which it calls
//             past: lapse/dispatch.h)
//
// Only lapse_counted_windows() is counted (--toggle-collect): resolving,
// opening and closing run outside it. Each round opens and ends
// kWindowsPerRound windows, then resolves them all, so the tables are
// already sized when the counted rounds after the first one run.
#include <lapse/core.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr uint32_t kWindowsPerRound = 20000;
constexpr int kRounds = 3;

// Sized for a round, so that no counted window grows a table.
constexpr const char* kCpu = "plugin = \"cpu\"\nwindow_capacity = 65536\nqueue_capacity = 65536\n";

const std::vector<std::string> kPaths = {"c_abi", "cpp_api", "forward1", "forward2", "cpp_forward1", "cpp_forward2"};

bool through_cpp_api(const std::string& path) { return path.rfind("cpp_", 0) == 0; }

std::string config_for(std::string path)
{
    if (through_cpp_api(path)) path.erase(0, 4);
    if (path == "forward1") return std::string("[backend]\nplugin = \"forward\"\n[backend.inner]\n") + kCpu;
    if (path == "forward2")
        return std::string("[backend]\nplugin = \"forward\"\n[backend.inner]\nplugin = \"forward\"\n"
                           "[backend.inner.inner]\n") +
               kCpu;
    return std::string("[backend]\n") + kCpu;
}

// The counted loops (the name is what the script's --toggle-collect matches).
[[gnu::noinline]] bool lapse_counted_windows(const lapse::Device& dev, std::vector<lapse_token>& tokens)
{
    const lapse_plugin& p = dev.plugin();
    lapse_device* h = dev.handle();
    for (uint32_t i = 0; i < kWindowsPerRound; ++i) {
        lapse_token t;
        if (p.profile_start(h, 0, &t, nullptr) != LAPSE_OK || p.profile_end(h, t, nullptr, nullptr) != LAPSE_OK)
            [[unlikely]]
            return false;
        tokens[i] = t;
    }
    return true;
}

// The index of the first window that failed, or kWindowsPerRound.
[[gnu::noinline]] uint32_t lapse_counted_windows(lapse::Device& dev, std::vector<lapse::Duration>& durations)
{
    for (uint32_t i = 0; i < kWindowsPerRound; ++i) {
        lapse::Window w = dev.profile_start(0);
        durations[i] = dev.profile_end(w);
        if (durations[i].failed()) [[unlikely]]
            return i;
    }
    return kWindowsPerRound;
}

int run(const std::string& path)
{
    lapse::Runtime runtime;
    lapse::Device dev = runtime.open(lapse::Config::from_string(config_for(path), "window_instructions", "."));
    std::vector<lapse_token> tokens(kWindowsPerRound);
    std::vector<lapse_duration> out(kWindowsPerRound);
    for (auto& o : out) o.struct_size = sizeof o;
    std::vector<lapse::Duration> durations(kWindowsPerRound);
    for (int round = 0; round < kRounds; ++round) {
        if (through_cpp_api(path)) {
            if (const uint32_t failed = lapse_counted_windows(dev, durations); failed != kWindowsPerRound) {
                const std::string_view why = durations[failed].error_message();
                std::fprintf(stderr, "bench_window_instructions: window %u failed: %.*s\n", failed,
                             static_cast<int>(why.size()), why.data());
                return 1;
            }
            dev.resolve(durations);
        } else {
            if (!lapse_counted_windows(dev, tokens)) {
                std::fprintf(stderr, "bench_window_instructions: profile_start or profile_end failed\n");
                return 1;
            }
            lapse_error error{};
            error.struct_size = sizeof error;
            if (dev.plugin().resolve(dev.handle(), tokens.data(), out.data(), kWindowsPerRound, LAPSE_WAIT_FOREVER,
                                     &error) != LAPSE_OK) {
                std::fprintf(stderr, "bench_window_instructions: resolve failed: %s\n", error.message);
                return 1;
            }
        }
    }
    std::printf("%s: %d rounds of %u windows\n", path.c_str(), kRounds, kWindowsPerRound);
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    const std::string path = argc == 2 ? argv[1] : "";
    if (std::find(kPaths.begin(), kPaths.end(), path) == kPaths.end()) {
        std::fprintf(stderr, "usage: %s c_abi|cpp_api|forward1|forward2|cpp_forward1|cpp_forward2\n", argv[0]);
        return 2;
    }
    try {
        return run(path);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_window_instructions: %s\n", e.what());
        return 1;
    }
}
