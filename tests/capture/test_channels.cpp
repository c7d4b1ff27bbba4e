// How windows reach the collector: each thread's own channel to each
// capture (core/src/capture/note_queue.hpp). Threads that exit, threads
// that move on to other captures, and many threads at once lose nothing.
#include "capture_test_support.hpp"

#include <catch2/catch.hpp>

#include <thread>
#include <vector>

using namespace capture_test;

TEST_CASE("threads that exit right after their windows still have every window recorded", "[capture][channels][threads]")
{
    TempDir dir;
    const auto file = dir.path / "exited.lapse-capture";
    auto capture = open_capture(file);
    {
        lapse::Runtime runtime;
        lapse::Device device = runtime.open(cpu_config());
        device.record_into(capture);
        for (int round = 0; round < 3; ++round) {
            std::vector<std::thread> threads;
            for (int t = 0; t < 6; ++t)
                threads.emplace_back([&device, t] {
                    const std::string name = "thread " + std::to_string(t);
                    for (int i = 0; i < 300; ++i) device.profile(t % 2, [] {}, {.name = name});
                });
            for (auto& th : threads) th.join();  // gone before the collector pulls their channels
        }
    }
    capture->close();
    const lapse::CaptureStats s = capture->stats();
    CHECK(s.dropped == 0);
    CHECK(s.recorded == 3 * 6 * 300);
    CHECK(s.queued == 0);
    CHECK(s.held_bytes == 0);
    const ReadBack r = read_all(file);
    std::map<std::string, uint64_t> expected;
    for (int t = 0; t < 6; ++t) expected["thread " + std::to_string(t)] = 3 * 300;
    CHECK(r.count_by_name() == expected);
}

TEST_CASE("a thread that records into many captures one after another loses no window of any", "[capture][channels]")
{
    TempDir dir;
    lapse::Runtime runtime;
    lapse::Device device = runtime.open(cpu_config());
    // More captures than a thread keeps channels for: the oldest are let go.
    for (int c = 0; c < 7; ++c) {
        const auto file = dir.path / ("many-" + std::to_string(c) + ".lapse-capture");
        auto capture = open_capture(file);
        device.record_into(capture);
        for (int i = 0; i < 200 + c; ++i) device.profile(0, [] {}, {.name = "w"});
        device.record_into(std::shared_ptr<lapse::Capture>());  // drains this device's windows first
        capture->close();
        INFO("capture " << c);
        CHECK(capture->stats().recorded == uint64_t(200 + c));
        CHECK(read_all(file).count_by_name() == std::map<std::string, uint64_t>{{"w", uint64_t(200 + c)}});
    }
}

TEST_CASE("many threads share one budget: what is reserved never passes it, and nothing is lost under block", "[capture][channels][budget]")
{
    TempDir dir;
    const auto file = dir.path / "shared-budget.lapse-capture";
    lapse::CaptureOptions o;
    o.path = file;
    o.budget_bytes = 64 * 1024;
    o.policy = lapse::CapturePolicy::block;
    auto capture = lapse::Capture::open(o);
    {
        lapse::Runtime runtime;
        lapse::Device device = runtime.open(cpu_config());
        device.record_into(capture);
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&device, t] {
                for (int i = 0; i < 3000; ++i) device.profile(t % 2, [] {}, {.name = "shared"});
            });
        for (auto& th : threads) th.join();
    }
    capture->close();
    const lapse::CaptureStats s = capture->stats();
    CHECK(s.dropped == 0);
    CHECK(s.recorded == 4 * 3000);
    CHECK(s.peak_held_bytes > 0);
    CHECK(s.peak_held_bytes <= o.budget_bytes);
    CHECK(read_all(file).windows.size() == 4 * 3000);
}
