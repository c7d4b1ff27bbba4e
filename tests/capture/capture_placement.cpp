// capture_placement PATH [CALLER WORKER COLLECTOR] [BATCHES]: the caller's
// time per window, batch by batch, with the process's threads pinned to
// the CPUs given (or left to the scheduler), for finding out how much of
// capture_named_vs_unnamed is where the threads run rather than what the
// named window does (docs/performance.md, "the named window and where its
// threads run"):
//
//   capture_placement named 0 1 0    # caller on CPU 0, stream 0's worker on 1, collector on 0
//   capture_placement unnamed 0 1 0
//
//   PATH       named (recorded into a capture, Durations kept, as in
//              lapse bench) or unnamed (no capture, the bench's baseline)
//   CALLER ... the CPUs the calling thread, the CPU plugin's stream-0
//              worker (lapse-cpu-0) and the capture's collector
//              (lapse-capture) are pinned to; omitted: not pinned
//   BATCHES    how many batches of 1,024 windows (3,000 unless given)
//
// It prints the mean and the 10th, 50th and 90th percentiles of the
// batches' nanoseconds per window. Between batches, untimed, the unnamed
// Durations are resolved, the named ones dropped and the collector waited
// for, as lapse bench does.
#include <lapse/core.hpp>
#include <lapse/core/capture.hpp>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kWindowsPerBatch = 1024;
const char* const kNames[] = {"frame", "update", "physics", "render", "shadow", "post", "ui", "present"};

// Pins the thread of this process called `name` (its comm) to `cpu`;
// false when there is none.
bool pin_thread_named(const std::string& name, int cpu)
{
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream in(task.path() / "comm");
        std::string comm;
        std::getline(in, comm);
        if (comm != name) continue;
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        const pid_t tid = static_cast<pid_t>(std::stol(task.path().filename().string()));
        return sched_setaffinity(tid, sizeof set, &set) == 0;
    }
    return false;
}

bool pin_this_thread(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

}  // namespace

int main(int argc, char** argv)
{
    const std::string path = argc >= 2 ? argv[1] : "";
    const bool pinned = argc >= 5;
    if ((path != "named" && path != "unnamed") || (argc != 2 && argc != 3 && argc != 5 && argc != 6)) {
        std::fprintf(stderr, "usage: %s named|unnamed [CALLER WORKER COLLECTOR] [BATCHES]\n", argv[0]);
        return 2;
    }
    const int batches = argc == 3 ? std::atoi(argv[2]) : argc == 6 ? std::atoi(argv[5]) : 3000;
    if (batches <= 0) {
        std::fprintf(stderr, "capture_placement: BATCHES must be a positive number\n");
        return 2;
    }
    const bool named = path == "named";
    lapse::Runtime runtime;
    lapse::Device dev =
        runtime.open(lapse::Config::from_string("[backend]\nplugin = \"cpu\"\n", "capture_placement", "."));
    const auto file = std::filesystem::temp_directory_path() /
                      ("lapse-capture-placement-" + std::to_string(::getpid()) + ".lapse-capture");
    std::shared_ptr<lapse::Capture> capture;
    if (named) {
        lapse::CaptureOptions o;
        o.path = file;
        o.budget_bytes = 256u << 20;  // as lapse bench: no batch fills it
        capture = lapse::Capture::open(o);
        dev.record_into(capture);
    }
    if (pinned) {
        const int caller = std::atoi(argv[2]), worker = std::atoi(argv[3]), collector = std::atoi(argv[4]);
        bool ok = pin_this_thread(caller) && pin_thread_named("lapse-cpu-0", worker);
        if (named) ok = ok && pin_thread_named("lapse-capture", collector);
        if (!ok) {
            std::fprintf(stderr, "capture_placement: could not pin the threads to CPUs %d %d %d\n", caller, worker,
                         collector);
            return 1;
        }
    }
    std::vector<lapse::Duration> durations(kWindowsPerBatch);
    std::vector<double> ns;
    ns.reserve(static_cast<std::size_t>(batches));
    for (int b = 0; b < batches; ++b) {
        const auto t0 = Clock::now();
        for (uint32_t i = 0; i < kWindowsPerBatch; ++i) {
            lapse::Window w = named ? dev.profile_start(0, kNames[i & 7]) : dev.profile_start(0);
            durations[i] = dev.profile_end(w);
        }
        const auto t1 = Clock::now();
        ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kWindowsPerBatch);
        if (named) {
            for (auto& d : durations) d = lapse::Duration{};
            while (capture->stats().queued > 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
        } else {
            dev.resolve(durations);
        }
    }
    dev.close();
    int rc = 0;
    if (capture) {
        capture->close();
        const uint64_t expected = uint64_t{kWindowsPerBatch} * static_cast<uint64_t>(batches);
        if (capture->stats().recorded != expected) {
            std::fprintf(stderr, "capture_placement: %llu windows recorded of %llu\n",
                         static_cast<unsigned long long>(capture->stats().recorded),
                         static_cast<unsigned long long>(expected));
            rc = 1;
        }
        std::error_code ec;
        std::filesystem::remove(file, ec);
    }
    double mean = 0;
    for (double x : ns) mean += x;
    mean /= static_cast<double>(ns.size());
    std::sort(ns.begin(), ns.end());
    auto at = [&](double q) { return ns[static_cast<std::size_t>(q * static_cast<double>(ns.size() - 1))]; };
    std::printf("%s: %d batches of %u windows, ns a window: mean %.1f p10 %.1f p50 %.1f p90 %.1f\n", path.c_str(),
                batches, kWindowsPerBatch, mean, at(0.1), at(0.5), at(0.9));
    return rc;
}
