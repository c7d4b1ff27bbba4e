// fusion: a window closed without flush while its stream still held queued
// ops says so (LAPSE_DURATION_WORK_QUEUED, with how many), and only then.
#include "fusion_support.hpp"

#include <array>

using namespace lapse;
using namespace lapse::test;

namespace {

constexpr auto kCost = 2ms;

}  // namespace

TEST_CASE("fusion: a window closed without flush over queued work says so, with how many ops", "[fusion][partial]")
{
    Runtime runtime = make_runtime();
    Device dev = open_fusion(runtime, 64);
    Gate gate;
    gate.close_on(dev, 0);  // handed over when the window opens: not the window's
    std::array<Busy, 3> inside;
    Window w = dev.profile_start(0);
    for (auto& b : inside) submit_busy(dev, 0, kCost, b);
    Duration d = dev.profile_end(w);
    gate.open();
    Interval iv = ready(d);
    CHECK(d.work_queued());
    CHECK(d.queued_ops() == 3);
    CHECK(iv.work_queued());
    CHECK(iv.queued_ops == 3);
    CHECK_FALSE(iv.holds_earlier_work());
    dev.sync();
    for (auto& b : inside) CHECK(b.start_ns.load() + kClockAgreementNs >= iv.end_ns);  // the ops it says it left
}

TEST_CASE("fusion: a flushed window, or one whose work all ran, is not marked", "[fusion][partial]")
{
    Runtime runtime = make_runtime();
    SECTION("flushed")
    {
        Device dev = open_fusion(runtime, 64);
        Busy b;
        Duration d = dev.profile(0, [&] { submit_busy(dev, 0, kCost, b); }, {.flush = true});
        Interval iv = ready(d);
        CHECK_FALSE(iv.work_queued());
        CHECK(iv.queued_ops == 0);
        CHECK(holds(iv, b));
    }
    SECTION("the batch filled inside the window and went to the inner backend")
    {
        Device dev = open_fusion(runtime, 2);
        std::array<Busy, 2> ops;
        Duration d = dev.profile(0, [&] {
            for (auto& b : ops) submit_busy(dev, 0, kCost, b);
        });
        CHECK_FALSE(ready(d).work_queued());
    }
    SECTION("nothing was submitted")
    {
        Device dev = open_fusion(runtime, 64);
        Duration d = dev.profile(0, [] {});
        CHECK_FALSE(ready(d).work_queued());
    }
}

TEST_CASE("fusion: a mark goes with its window (abandoned, or resolved once)", "[fusion][partial]")
{
    Runtime runtime = make_runtime();
    Device dev = open_fusion(runtime, 64);
    for (int round = 0; round < 3; ++round) {
        Window w = dev.profile_start(0);
        dev.submit(0, [] {});
        Duration left = dev.profile_end(w);
        left.abandon();  // its mark is dropped with it
        Duration clean = dev.profile(0, [] {});
        CHECK_FALSE(ready(clean).work_queued());
    }
    // Many marked windows at once, resolved in one batch: each keeps its own count.
    std::vector<Duration> durations;
    for (int i = 0; i < 200; ++i) {
        Window w = dev.profile_start(0);
        for (int k = 0; k <= i % 5; ++k) dev.submit(0, [] {});
        durations.push_back(dev.profile_end(w));
    }
    REQUIRE(dev.resolve(durations));
    for (int i = 0; i < 200; ++i) {
        INFO("window " << i);
        REQUIRE(durations[i].ready());
        CHECK(durations[i].work_queued());
        CHECK(durations[i].queued_ops() == static_cast<uint32_t>(i % 5 + 1));
    }
}
