// fusion: which queued work a window holds.
//
// Every check is made twice: on the window's length against the busy work
// it should hold, and on the stamps themselves (the CPU plugin stamps
// windows with CLOCK_MONOTONIC, as the work records itself), so a window
// that reads the right length around the wrong work fails too.
#include "fusion_support.hpp"

#include <array>

using namespace lapse;
using namespace lapse::test;

namespace {

constexpr auto kCost = 4ms;

}  // namespace

TEST_CASE("fusion: flush runs the queue inside the window", "[fusion]")
{
    within_5pct_on_one_of(kAttempts, [](Lengths& lengths) {
        Runtime runtime = make_runtime();
        Device dev = open_fusion(runtime, 64);
        REQUIRE(dev.info().has(LAPSE_CAP_BATCHING));
        constexpr int N = 6;

        Gate gate;
        gate.close_on(dev, 0);  // queued in fusion: the window's start hands it to the worker
        std::array<Busy, N> with;
        Window w = dev.profile_start(0);
        REQUIRE(w.kind() == Window::Kind::device);
        for (auto& b : with) submit_busy(dev, 0, kCost, b);
        Duration flushed = dev.profile_end(w, {.flush = true});
        gate.open();
        Interval f = ready(flushed);
        for (auto& b : with) CHECK(holds(f, b));
        lengths.expect_within_5pct("the flushed window", f.ns(), span_ns(with.front(), with.back()));
        CHECK(f.ns() >= N * std::chrono::nanoseconds(kCost).count());

        std::array<Busy, N> without;
        Gate gate2;
        gate2.close_on(dev, 0);
        Window w2 = dev.profile_start(0);
        for (auto& b : without) submit_busy(dev, 0, kCost, b);
        Duration unflushed = dev.profile_end(w2);
        gate2.open();
        Interval u = ready(unflushed);  // its end marker does not wait for the queue
        dev.sync();
        for (auto& b : without) {
            REQUIRE(b.ran());
            CHECK(b.start_ns.load() + kClockAgreementNs >= u.end_ns);  // the closure's ops ran after the window
        }
        CHECK(u.ns() < std::chrono::nanoseconds(kCost).count());  // "much less": not even one op
    });
}

TEST_CASE("fusion: earlier work stays out", "[fusion]")
{
    within_5pct_on_one_of(kAttempts, [](Lengths& lengths) {
        Runtime runtime = make_runtime();
        Device dev = open_fusion(runtime, 64);
        Gate gate;
        gate.close_on(dev, 0);
        std::array<Busy, 4> earlier;
        for (auto& b : earlier) submit_busy(dev, 0, kCost, b);
        CHECK_FALSE(earlier[0].ran());  // still queued in fusion when the window opens

        Busy inside;
        Window w = dev.profile_start(0);
        submit_busy(dev, 0, kCost, inside);
        Duration d = dev.profile_end(w, {.flush = true});
        gate.open();
        Interval iv = ready(d);
        for (auto& b : earlier) CHECK(b.end_ns.load() <= iv.start_ns + kClockAgreementNs);
        CHECK(holds(iv, inside));
        lengths.expect_within_5pct("the window", iv.ns(), inside.ns());
        // Opening handed the earlier work over first, so the window holds none
        // of it and must not say it does.
        CHECK_FALSE(iv.holds_earlier_work());
        CHECK_FALSE(iv.work_queued());
    });
}

TEST_CASE("fusion: later work stays out, with flush and without", "[fusion]")
{
    Runtime runtime = make_runtime();
    Device dev = open_fusion(runtime, 64);
    const bool flush = GENERATE(true, false);
    INFO("flush " << flush);
    within_5pct_on_one_of(kAttempts, [&](Lengths& lengths) {
        Gate gate;
        gate.close_on(dev, 0);
        std::array<Busy, 2> inside;
        std::array<Busy, 3> later;
        Window w = dev.profile_start(0);
        for (auto& b : inside) submit_busy(dev, 0, kCost, b);
        Duration d = dev.profile_end(w, {.flush = flush});
        for (auto& b : later) submit_busy(dev, 0, kCost, b);
        gate.open();
        dev.sync();
        Interval iv = ready(d);
        for (auto& b : later) CHECK(b.start_ns.load() + kClockAgreementNs >= iv.end_ns);
        if (flush) {
            for (auto& b : inside) CHECK(holds(iv, b));
            lengths.expect_within_5pct("the flushed window", iv.ns(), span_ns(inside[0], inside[1]));
        } else {
            for (auto& b : inside) CHECK(b.start_ns.load() + kClockAgreementNs >= iv.end_ns);
        }
    });
}

TEST_CASE("fusion: a batch boundary inside a window", "[fusion]")
{
    Runtime runtime = make_runtime();
    Device dev = open_fusion(runtime, 4);
    const bool flush = GENERATE(true, false);
    INFO("flush " << flush);
    within_5pct_on_one_of(kAttempts, [&](Lengths& lengths) {
        // Six ops: the fourth fills a batch, which runs inside the window; the
        // last two are still queued when the window closes.
        Gate gate;
        gate.close_on(dev, 0);
        std::array<Busy, 6> ops;
        Window w = dev.profile_start(0);
        for (auto& b : ops) submit_busy(dev, 0, kCost, b);
        Duration d = dev.profile_end(w, {.flush = flush});
        gate.open();
        dev.sync();
        Interval iv = ready(d);
        const int last_held = flush ? 5 : 3;
        for (int i = 0; i < 6; ++i) {
            INFO("op " << i);
            REQUIRE(ops[i].ran());
            if (i <= last_held) {
                CHECK(holds(iv, ops[i]));
            } else {
                CHECK(ops[i].start_ns.load() + kClockAgreementNs >= iv.end_ns);
            }
        }
        lengths.expect_within_5pct("the window", iv.ns(), span_ns(ops[0], ops[last_held]));
    });
}

TEST_CASE("fusion: durations say what the inner backend measured with", "[fusion]")
{
    Runtime runtime = make_runtime();
    SECTION("a device-clocked inner backend")
    {
        Device dev = open_fusion(runtime, 8);
        Duration d = dev.profile(0, [] {}, {.flush = true});
        CHECK(ready(d).method == TimingMethod::device);
    }
    SECTION("an inner backend with no windows: the caller falls back to system time")
    {
        Device dev = runtime.open(config(R"(
[backend]
plugin = "fusion"
[backend.inner]
plugin = "cpu"
mode = "inline"
)"));
        CHECK_FALSE(dev.info().has(LAPSE_CAP_DEVICE_CLOCK));
        CHECK(dev.info().has(LAPSE_CAP_BATCHING));
        Busy b;
        Duration d = dev.profile(0, [&] { submit_busy(dev, 0, kCost, b); }, {.flush = true});
        Interval iv = ready(d);
        CHECK(iv.method == TimingMethod::system);
        CHECK(holds(iv, b));
    }
}
