// Experiment (not part of the build): does a caller's loop on CPU 0 run
// slower while another thread of the same process, on CPU 1, naps (its
// vCPU halts and wakes again and again), spins, or writes a cache line of
// its own? It asks whether the held window's extra cost on two vCPUs
// (docs/performance.md, "2026-12-07 (session 33)") could be the other
// vCPU's state rather than the lines the CPU plugin's worker touched.
//
//   g++ -O2 -pthread docs/experiments/other_vcpu_probe.cpp -o /tmp/other_vcpu_probe
//   for m in none nap spin touch; do /tmp/other_vcpu_probe $m; done
//
// Prints, three times per mode, the nanoseconds of two `rdtsc` reads, one
// uncontended `lock cmpxchg`, and 50 dependent multiply-adds.
#include <pthread.h>
#include <x86intrin.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>

namespace {

std::atomic<uint64_t> word{0};
volatile uint64_t sink;
alignas(64) std::atomic<uint64_t> others_line{0};
std::atomic<bool> stop{false};

void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

template <class F>
double ns_per(F f, int n)
{
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) f(i);
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
}

}  // namespace

int main(int argc, char** argv)
{
    const char* mode = argc > 1 ? argv[1] : "none";
    pin(0);
    std::thread other;
    if (std::strcmp(mode, "none") != 0)
        other = std::thread([mode] {
            pin(1);
            while (!stop.load(std::memory_order_relaxed)) {
                if (std::strcmp(mode, "spin") == 0) {
                    for (int i = 0; i < 1000; ++i) _mm_pause();
                    continue;
                }
                if (std::strcmp(mode, "touch") == 0) others_line.fetch_add(1);
                std::this_thread::sleep_for(std::chrono::microseconds(50));
            }
        });
    constexpr int n = 5'000'000;
    for (int round = 0; round < 3; ++round) {
        const double rdtsc = ns_per([](int) { sink = __rdtsc() + __rdtsc(); }, n);
        const double cas = ns_per(
            [](int) {
                uint64_t e = word.load(std::memory_order_relaxed);
                word.compare_exchange_strong(e, e + 1);
            },
            n);
        const double mul = ns_per(
            [](int i) {
                uint64_t x = static_cast<uint64_t>(i);
                for (int k = 0; k < 50; ++k) x = x * 3 + 1;
                sink = x;
            },
            n);
        std::printf("%-5s two rdtsc %.2f ns  lock cmpxchg %.2f ns  50 mul-add %.2f ns\n", mode, rdtsc, cas, mul);
    }
    stop = true;
    if (other.joinable()) other.join();
}
