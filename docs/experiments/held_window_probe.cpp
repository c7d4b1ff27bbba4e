// Experiment (not part of the build): the CPU plugin's window with its
// worker held (what `cpu_window_worker_held_vs_two_rdtsc` times), each
// window timed alone with the TSC, and what the machine did just before
// the batch. docs/performance.md, "2026-12-07 (later): the caller's window
// is set by the other core", has the figures.
//
// Build against a configured tree (build/ holds liblapse_core.so and the
// plugins), from the project root, as one command:
//   g++ -O2 -std=c++20 -Icore/include -Isdk/include -Lbuild/lib -Wl,-rpath,$PWD/build/lib
//       docs/experiments/held_window_probe.cpp -llapse_core -o /tmp/held_window_probe
// then:
//   LAPSE_PLUGIN_PATH=$PWD/build/lib/lapse/ /tmp/held_window_probe [settle_us] [batches]
//   (LAPSE_CPU_LANES=1: the windows through each thread's lane)
//
// Each batch: a job submitted to stream 0 holds its worker (it waits on a
// futex, as the bench's job does), 1,024 windows are opened and closed
// through the C ABI, the job lets go, and the batch is resolved. With
// `settle_us` (default 0) the caller sleeps that long between the resolve
// and the next submit. Prints the mean TSC ticks a window (one `rdtsc` a
// window included) and the means by the window's place in the batch.
// Compare `taskset -c 0` (the worker and the caller on one CPU) and a
// settle of 200 us against neither.
#include <lapse/core.hpp>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

enum : int { kQueued, kHolding, kReleased };

long futex(std::atomic<int>& word, int op, int value)
{
    return syscall(SYS_futex, reinterpret_cast<int*>(&word), op, value, nullptr, nullptr, 0);
}

void hold_worker(void* user, void* /*native*/)
{
    auto& gate = *static_cast<std::atomic<int>*>(user);
    gate.store(kHolding, std::memory_order_release);
    for (int g = gate.load(std::memory_order_acquire); g != kReleased; g = gate.load(std::memory_order_acquire))
        futex(gate, FUTEX_WAIT_PRIVATE, g);
}

}  // namespace

int main(int argc, char** argv)
{
    const int settle_us = argc > 1 ? std::atoi(argv[1]) : 0;
    const int batches = argc > 2 ? std::atoi(argv[2]) : 3000;
    constexpr int kWarmup = 100;
    if (batches <= kWarmup) {
        std::fprintf(stderr, "batches must be more than %d\n", kWarmup);
        return 2;
    }
    constexpr uint32_t kBatch = 1024;
    lapse::Runtime runtime;
    lapse::Device dev = runtime.open(lapse::Config::from_string("[backend]\nplugin = \"cpu\"\n", "probe", "."));
    const lapse_plugin& p = dev.plugin();
    lapse_device* h = dev.handle();
    std::vector<lapse_token> tokens(kBatch);
    std::vector<lapse_duration> out(kBatch);
    for (auto& o : out) o.struct_size = sizeof o;
    std::vector<uint64_t> ticks(kBatch + 1);
    std::vector<double> by_place(kBatch, 0);
    double total = 0;
    std::atomic<int> gate{kQueued};
    for (int b = 0; b < batches; ++b) {
        if (settle_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(settle_us));
        gate.store(kQueued);
        if (p.submit(h, 0, hold_worker, &gate, nullptr) != LAPSE_OK) return 1;
        while (gate.load(std::memory_order_acquire) != kHolding) std::this_thread::yield();
        for (uint32_t i = 0; i < kBatch; ++i) {
            ticks[i] = __rdtsc();
            lapse_token t{};
            if (p.profile_start(h, 0, &t, nullptr) != LAPSE_OK || p.profile_end(h, t, nullptr, nullptr) != LAPSE_OK)
                return 1;
            tokens[i] = t;
        }
        ticks[kBatch] = __rdtsc();
        gate.store(kReleased, std::memory_order_release);
        futex(gate, FUTEX_WAKE_PRIVATE, 1);
        if (p.resolve(h, tokens.data(), out.data(), kBatch, LAPSE_WAIT_FOREVER, nullptr) != LAPSE_OK) return 1;
        if (b < kWarmup) continue;
        for (uint32_t i = 0; i < kBatch; ++i) by_place[i] += double(ticks[i + 1] - ticks[i]);
        total += double(ticks[kBatch] - ticks[0]);
    }
    const int counted = batches - kWarmup;
    std::printf("settle %d us: %.1f TSC ticks a window (mean of %d batches of %u)\n", settle_us,
                total / counted / kBatch, counted, kBatch);
    for (uint32_t lo = 0; lo < kBatch; lo = lo < 8 ? lo + 4 : lo * 2) {
        const uint32_t hi = lo < 8 ? lo + 4 : lo * 2;
        double sum = 0;
        for (uint32_t i = lo; i < hi; ++i) sum += by_place[i];
        std::printf("  windows %4u-%4u: %.1f\n", lo, hi - 1, sum / counted / (hi - lo));
    }
    return 0;
}
