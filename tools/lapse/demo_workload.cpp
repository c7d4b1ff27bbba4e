#include "demo_workload.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>

namespace lapse::cli {

namespace {

// Results land here so the compiler cannot drop the work.
volatile uint64_t g_sink = 0;

void matmul(std::size_t n, uint32_t seed)
{
    std::vector<double> a(n * n), b(n * n), c(n * n, 0.0);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (auto& x : a) x = u(rng);
    for (auto& x : b) x = u(rng);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t k = 0; k < n; ++k) {
            double aik = a[i * n + k];
            for (std::size_t j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
        }
    g_sink = g_sink + static_cast<uint64_t>(c[n + 1] * 1000.0);
}

void sort_random(std::size_t count, uint32_t seed)
{
    std::vector<uint32_t> v(count);
    std::mt19937 rng(seed);
    for (auto& x : v) x = rng();
    std::sort(v.begin(), v.end());
    if (!std::is_sorted(v.begin(), v.end())) throw std::logic_error("sort demo: not sorted");
    g_sink = g_sink + v[count / 2];
}

uint64_t fnv1a(const std::vector<unsigned char>& bytes)
{
    uint64_t h = 1469598103934665603ull;
    for (unsigned char b : bytes) {
        h ^= b;
        h *= 1099511628211ull;
    }
    return h;
}

void compute_phase(DemoContext& c)
{
    Device& d = c.device;
    Stream s = c.main_stream;
    // An outer window around four inner ones: the inner windows nest.
    c.keep(d.profile(
        s,
        [&] {
            for (uint32_t i = 0; i < 4; ++i)
                c.keep(d.profile(s, [&] { d.submit(s, [i] { matmul(96, i); }); }, {.name = "matmul 96x96", .flush = true}));
        },
        {.name = "compute (4 matmuls)", .flush = true}));
}

void sort_phase(DemoContext& c)
{
    Device& d = c.device;
    Stream s = c.second_stream;
    for (uint32_t i = 0; i < 3; ++i)
        c.keep(d.profile(s, [&] { d.submit(s, [i] { sort_random(200000, 100 + i); }); }, {.name = "sort 200k", .flush = true}));
}

void hash_phase(DemoContext& c)
{
    Device& d = c.device;
    Stream s = c.main_stream;
    auto buffer = std::make_shared<std::vector<unsigned char>>(4u << 20);
    std::iota(buffer->begin(), buffer->end(), 0);
    for (int i = 0; i < 4; ++i)
        c.keep(d.profile(s, [&] { d.submit(s, [buffer] { g_sink = g_sink + fnv1a(*buffer); }); },
                         {.name = "hash 4 MiB", .flush = true}));
}

void pipeline_phase(DemoContext& c)
{
    Device& d = c.device;
    Stream s = c.main_stream;
    auto data = std::make_shared<std::vector<uint32_t>>();
    c.keep(d.profile(
        s,
        [&] {
            c.keep(d.profile(s, [&] {
                d.submit(s, [data] {
                    std::mt19937 rng(7);
                    data->resize(300000);
                    for (auto& x : *data) x = rng() % 1000;
                });
            }, {.name = "pipeline: generate", .flush = true}));
            c.keep(d.profile(s, [&] {
                d.submit(s, [data] {
                    g_sink = g_sink + std::accumulate(data->begin(), data->end(), uint64_t{0});
                });
            }, {.name = "pipeline: reduce", .flush = true}));
        },
        {.name = "pipeline", .flush = true}));
}

void overlap_phase(DemoContext& c)
{
    // A opens, B opens, A closes, B closes.
    Device& d = c.device;
    Stream s = c.main_stream;
    Window a = d.profile_start(s, "overlap A");
    d.submit(s, [] { matmul(64, 1); });
    Window b = d.profile_start(s, "overlap B");
    d.submit(s, [] { matmul(64, 2); });
    c.keep(d.profile_end(a, {.flush = true}));
    d.submit(s, [] { matmul(64, 3); });
    c.keep(d.profile_end(b, {.flush = true}));
}

void handoff_phase(DemoContext& c)
{
    // Opened here, closed by another thread: work launched from elsewhere.
    // Closed WITHOUT flush, as production code closes a window around work
    // it does not wait for: over a batching backend the sort may still be
    // queued when the window closes, and the table says so.
    Device& d = c.device;
    Stream s = c.second_stream;
    for (uint32_t i = 0; i < 3; ++i) {
        Window w = d.profile_start(s, "handoff (closed on another thread)");
        d.submit(s, [i] { sort_random(100000, 200 + i); });
        Duration closed;
        std::thread closer([&] { closed = d.profile_end(w); });
        closer.join();
        c.keep(std::move(closed));
    }
}

}  // namespace

std::vector<DemoPhase> cpu_phases()
{
    return {
        {"compute", compute_phase},   {"sort", sort_phase},         {"hash", hash_phase},
        {"pipeline", pipeline_phase}, {"overlap", overlap_phase},   {"handoff", handoff_phase},
    };
}

}  // namespace lapse::cli
