// Experiment (not part of the build): the floor under every window figure
// of the C ABI, a host's loop calling a start and an end through function
// pointers (as `lapse bench` calls a plugin's table) that do nothing but
// hand out and check a token, timed beside two `rdtsc` reads as
// `cpu_window_vs_two_rdtsc` is. docs/performance.md, "2026-12-07 (later)",
// has the figure.
//
//   g++ -O2 -std=c++20 docs/experiments/window_call_floor.cpp -o /tmp/window_call_floor && /tmp/window_call_floor
#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

struct Token {
    uint64_t id;
    uint32_t opened_on, reserved;
};

// Out of line, as a plugin's entry points are.
[[gnu::noinline]] int start(void* device, uint32_t stream, Token* token, void*)
{
    token->id = ++*static_cast<uint64_t*>(device);
    token->opened_on = stream;
    token->reserved = 0;
    return 0;
}

[[gnu::noinline]] int end(void*, Token token, void*, void*) { return token.id == 0; }

struct Table {
    int (*start)(void*, uint32_t, Token*, void*);
    int (*end)(void*, Token, void*, void*);
};

double ns_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b)
{
    return std::chrono::duration<double, std::nano>(b - a).count();
}

}  // namespace

int main()
{
    constexpr int kBatch = 1024;
    // Read through a volatile copy, so the calls stay indirect.
    volatile Table through{start, end};
    const Table table{through.start, through.end};
    uint64_t device = 0;
    std::vector<Token> tokens(kBatch);
    for (int round = 0; round < 5; ++round) {
        double best_window = 1e9, best_rdtsc = 1e9;
        for (int batch = 0; batch < 2000; ++batch) {
            const auto t0 = std::chrono::steady_clock::now();
            bool ok = true;
            for (int i = 0; i < kBatch && ok; ++i) {
                Token t{};
                ok = table.start(&device, 0, &t, nullptr) == 0 && table.end(&device, t, nullptr, nullptr) == 0;
                tokens[i] = t;
            }
            const auto t1 = std::chrono::steady_clock::now();
            for (int i = 0; i < kBatch; ++i) {
                const uint64_t a = __rdtsc(), b = __rdtsc();
                asm volatile("" ::"r"(a), "r"(b));
            }
            const auto t2 = std::chrono::steady_clock::now();
            if (!ok) return 1;
            best_window = std::min(best_window, ns_between(t0, t1) / kBatch);
            best_rdtsc = std::min(best_rdtsc, ns_between(t1, t2) / kBatch);
        }
        std::printf("calls alone %.2f ns a window, two rdtsc %.2f ns: %.2fx\n", best_window, best_rdtsc,
                    best_window / best_rdtsc);
    }
    return 0;
}
