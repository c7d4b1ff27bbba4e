// fusion: the queue itself — when ops reach the inner backend, in what
// order, and that every accepted op runs exactly once.
#include "fusion_support.hpp"

#include <mutex>
#include <thread>
#include <vector>

using namespace lapse;
using namespace lapse::test;

TEST_CASE("fusion: ops stay queued until the batch fills, and sync drains", "[fusion]")
{
    Runtime runtime = make_runtime();
    Device dev = open_fusion(runtime, 8, kTwoCpuStreams);
    std::atomic<int> ran{0};
    for (int i = 0; i < 5; ++i) dev.submit(0, [&] { ran.fetch_add(1); });
    std::this_thread::sleep_for(20ms);  // a worker that had them would have run them by now
    CHECK(ran.load() == 0);
    dev.sync(0);
    CHECK(ran.load() == 5);

    // A full batch goes on its own.
    for (int i = 0; i < 8; ++i) dev.submit(0, [&] { ran.fetch_add(1); });
    const int64_t deadline = now_ns() + 5'000'000'000;
    while (ran.load() != 13 && now_ns() < deadline) std::this_thread::sleep_for(1ms);
    CHECK(ran.load() == 13);
}

TEST_CASE("fusion: sync of every stream drains every queue", "[fusion]")
{
    Runtime runtime = make_runtime();
    Device dev = open_fusion(runtime, 64, kTwoCpuStreams);
    std::atomic<int> ran{0};
    for (int i = 0; i < 3; ++i) {
        dev.submit(0, [&] { ran.fetch_add(1); });
        dev.submit(1, [&] { ran.fetch_add(1); });
    }
    dev.sync(all_streams);
    CHECK(ran.load() == 6);
}

TEST_CASE("fusion: ops run once each, in submission order, across batches and threads", "[fusion]")
{
    Runtime runtime = make_runtime();
    const int max_batch = GENERATE(1, 3, 64);
    Device dev = open_fusion(runtime, max_batch, kTwoCpuStreams);
    constexpr int kThreads = 2;
    constexpr int kPerThread = 500;
    std::mutex m;
    std::vector<std::vector<int>> seen(kThreads);  // per producer: must come out in its order
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < kPerThread; ++i) {
                dev.submit(0, [&, t, i] {
                    std::lock_guard<std::mutex> lock(m);
                    seen[t].push_back(i);
                });
                if (i % 97 == 0) dev.sync(0);
            }
        });
    for (auto& th : threads) th.join();
    dev.sync();
    for (int t = 0; t < kThreads; ++t) {
        REQUIRE(seen[t].size() == kPerThread);
        for (int i = 0; i < kPerThread; ++i) REQUIRE(seen[t][i] == i);
    }
}

TEST_CASE("fusion: closing runs what is still queued", "[fusion]")
{
    Runtime runtime = make_runtime();
    std::atomic<int> ran{0};
    {
        Device dev = open_fusion(runtime, 64, kTwoCpuStreams);
        for (int i = 0; i < 7; ++i) dev.submit(0, [&] { ran.fetch_add(1); });
        CHECK(ran.load() == 0);
        dev.close();
    }
    CHECK(ran.load() == 7);
}

TEST_CASE("fusion: an op may submit to its own stream over an inline backend", "[fusion]")
{
    // The inline CPU backend runs a batch inside fusion's hand-over; an op
    // that submits again (and fills a batch) must neither deadlock nor lose
    // work.
    Runtime runtime = make_runtime();
    Device dev = open_fusion(runtime, 2, "plugin = \"cpu\"\nmode = \"inline\"");
    std::atomic<int> ran{0};
    for (int i = 0; i < 4; ++i)
        dev.submit(0, [&] {
            ran.fetch_add(1);
            dev.submit(0, [&] { ran.fetch_add(1); });
        });
    dev.sync();
    CHECK(ran.load() == 8);
}

TEST_CASE("fusion: max_batch out of range is a config error naming the key", "[fusion]")
{
    Runtime runtime = make_runtime();
    const int bad = GENERATE(0, 65537);
    try {
        open_fusion(runtime, bad, kTwoCpuStreams);
        FAIL("opened with max_batch = " << bad);
    } catch (const Error& e) {
        CHECK(e.status() == LAPSE_ERROR_CONFIG);
        CHECK_THAT(e.what(), Catch::Contains("max_batch") && Catch::Contains("between 1 and 65536"));
    }
}
