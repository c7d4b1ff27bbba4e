// Many threads opening, closing, abandoning and resolving at once on shared
// streams: no lost or doubled window, no race (run it under TSan).
#include "cuda_support.hpp"

#include <atomic>
#include <thread>
#include <vector>

using namespace lapse::test;

TEST_CASE("cuda: concurrent windows from many threads all resolve", "[cuda][concurrency]")
{
    FakeDevice d({{"streams", int64_t{2}}, {"anchor_period_ms", int64_t{10}}});
    constexpr int kThreads = 4;
    constexpr int kIterations = 400;
    std::atomic<int> ready{0}, abandoned{0}, bad{0};
    std::vector<std::thread> threads;
    for (int k = 0; k < kThreads; ++k)
        threads.emplace_back([&, k] {
            const lapse_plugin& p = d.p();
            for (int i = 0; i < kIterations; ++i) {
                lapse_stream s = static_cast<lapse_stream>((k + i) % 2);
                lapse_token a{}, b{};
                if (p.profile_start(d.device, s, &a, nullptr) != LAPSE_OK) { ++bad; continue; }
                if (p.profile_start(d.device, s, &b, nullptr) != LAPSE_OK) { ++bad; continue; }
                if (i % 5 == 0) {
                    p.profile_abandon(d.device, b);
                    ++abandoned;
                } else if (p.profile_end(d.device, b, nullptr, nullptr) != LAPSE_OK) {
                    ++bad;
                }
                if (p.profile_end(d.device, a, nullptr, nullptr) != LAPSE_OK) ++bad;
                lapse_token tokens[2] = {a, b};
                lapse_duration out[2] = {make_duration(), make_duration()};
                uint32_t n = i % 5 == 0 ? 1 : 2;
                if (p.resolve(d.device, tokens, out, n, LAPSE_WAIT_FOREVER, nullptr) != LAPSE_OK) ++bad;
                for (uint32_t j = 0; j < n; ++j) {
                    if (out[j].state == LAPSE_DURATION_READY && out[j].end_ns >= out[j].start_ns) ++ready;
                    else ++bad;
                }
            }
        });
    for (auto& t : threads) t.join();
    CHECK(bad.load() == 0);
    CHECK(ready.load() + abandoned.load() == 2 * kThreads * kIterations);
}

TEST_CASE("cuda: racing end against abandon on one token: exactly one wins", "[cuda][concurrency]")
{
    FakeDevice d;
    for (int i = 0; i < 200; ++i) {
        lapse_token t = d.start(0);
        std::atomic<bool> go{false};
        lapse_status ended = LAPSE_OK;
        std::thread closer([&] {
            while (!go.load()) {
            }
            ended = d.p().profile_end(d.device, t, nullptr, nullptr);
        });
        std::thread abandoner([&] {
            while (!go.load()) {
            }
            d.p().profile_abandon(d.device, t);
        });
        go = true;
        closer.join();
        abandoner.join();
        // Whatever the order, the token is gone afterwards.
        lapse_status st = LAPSE_OK;
        d.resolve(t, 0, &st);
        CHECK(st == LAPSE_ERROR_INVALID_TOKEN);
        CHECK((ended == LAPSE_OK || ended == LAPSE_ERROR_INVALID_TOKEN));
    }
}
