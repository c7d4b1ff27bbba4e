// forward over a batching backend (fusion) over a single-window one: a
// window reads the same whichever way forward cut it into segments, and
// says when it left work queued.
#include "stack_support.hpp"

#include <array>

using namespace lapse;
using namespace lapse::test;

namespace {

constexpr std::string_view kForwardFusionSingleWindow = R"(
[backend]
plugin = "forward"
[backend.inner]
plugin = "fusion"
max_batch = 64
[backend.inner.inner]
plugin = "single_window"
streams = 1
)";

constexpr std::string_view kForwardFusionCpu = R"(
[backend]
plugin = "forward"
[backend.inner]
plugin = "fusion"
max_batch = 16
[backend.inner.inner]
plugin = "cpu"
streams = 2
)";

constexpr auto kCost = 3ms;

}  // namespace

TEST_CASE("forward over fusion: an unflushed window reads the same whether forward cut it or not",
          "[forward][batching]")
{
    Runtime runtime = make_runtime();
    Device dev = runtime.open(config(kForwardFusionSingleWindow));
    const bool cut = GENERATE(false, true);
    INFO((cut ? "inside an outer window: forward cuts it into segments" : "alone: one inner window"));

    Gate gate;
    gate.close_on(dev, 0);
    std::array<Busy, 2> ops;
    Window outer;
    if (cut) outer = dev.profile_start(0);
    Window w = dev.profile_start(0);
    for (auto& b : ops) submit_busy(dev, 0, kCost, b);
    Duration d = dev.profile_end(w);  // without flush: the ops are still queued in fusion
    Duration o = cut ? dev.profile_end(outer, {.flush = true}) : Duration{};
    gate.open();
    dev.sync();

    Interval iv = ready(d);
    CHECK(iv.work_queued());
    CHECK(iv.queued_ops == 2);
    for (auto& b : ops) {
        REQUIRE(b.ran());
        CHECK(b.start_ns.load() + kClockAgreementNs >= iv.end_ns);  // the ops it left ran after it, in both cases
    }
    CHECK(iv.ns() < std::chrono::nanoseconds(kCost).count());
    if (cut) {
        // The window still open holds the work the inner one left queued
        // (it ran before the outer window closed), as over fusion alone.
        Interval ov = ready(o);
        CHECK_FALSE(ov.work_queued());
        for (auto& b : ops) CHECK(holds(ov, b));
        CHECK(ov.ns() >= ops[0].ns() + ops[1].ns());
    }
}

TEST_CASE("forward over fusion: a flushed window holds its work whether forward cut it or not", "[forward][batching]")
{
    Runtime runtime = make_runtime();
    Device dev = runtime.open(config(kForwardFusionSingleWindow));
    const bool cut = GENERATE(false, true);
    INFO((cut ? "cut" : "alone"));
    within_5pct_on_one_of(kAttempts, [&](Lengths& lengths) {
        Gate gate;
        gate.close_on(dev, 0);
        std::array<Busy, 2> ops;
        Window outer;
        if (cut) outer = dev.profile_start(0);
        Window w = dev.profile_start(0);
        for (auto& b : ops) submit_busy(dev, 0, kCost, b);
        Duration d = dev.profile_end(w, {.flush = true});
        Duration o = cut ? dev.profile_end(outer, {.flush = true}) : Duration{};
        gate.open();
        dev.sync();
        Interval iv = ready(d);
        CHECK_FALSE(iv.work_queued());
        for (auto& b : ops) CHECK(holds(iv, b));
        lengths.expect_within_5pct("the flushed window", iv.ns(), span_ns(ops[0], ops[1]));
        if (cut) CHECK_FALSE(ready(o).work_queued());
    });
}

TEST_CASE("forward over fusion: a window opened over work an earlier window left queued holds none of it, cut or not",
          "[forward][batching]")
{
    // The stack of examples/forward-fusion-cpu.toml, and the same over a
    // single-window backend, where forward cuts windows into segments.
    const std::string_view cfg = GENERATE(kForwardFusionCpu, kForwardFusionSingleWindow);
    const bool cut = GENERATE(false, true);
    INFO(cfg << (cut ? "inside an outer window" : "alone"));
    within_5pct_on_one_of(kAttempts, [&](Lengths& lengths) {
        Runtime runtime = make_runtime();
        Device dev = runtime.open(config(cfg));

        Gate gate;
        gate.close_on(dev, 0);
        Window outer;
        if (cut) outer = dev.profile_start(0);
        std::array<Busy, 2> left;  // closed over without flush: still queued in fusion
        Window first = dev.profile_start(0);
        for (auto& b : left) submit_busy(dev, 0, kCost, b);
        Duration d_first = dev.profile_end(first);
        CHECK_FALSE(left[0].ran());

        Busy inside;
        Window later = dev.profile_start(0);  // opens over the queued work
        submit_busy(dev, 0, kCost, inside);
        Duration d_later = dev.profile_end(later, {.flush = true});
        Duration d_outer = cut ? dev.profile_end(outer, {.flush = true}) : Duration{};
        gate.open();
        dev.sync();

        Interval f = ready(d_first);
        CHECK(f.work_queued());
        Interval l = ready(d_later);
        for (auto& b : left) {
            REQUIRE(b.ran());
            CHECK(b.end_ns.load() <= l.start_ns + kClockAgreementNs);  // ran before the later window opened
        }
        CHECK(holds(l, inside));
        lengths.expect_within_5pct("the later window", l.ns(), inside.ns());
        CHECK_FALSE(l.holds_earlier_work());
        CHECK_FALSE(l.work_queued());
        if (cut) {
            // The outer window was open when that work was registered: it is
            // its own work, not earlier work.
            Interval o = ready(d_outer);
            for (auto& b : left) CHECK(holds(o, b));
            CHECK_FALSE(o.holds_earlier_work());
        }
    });
}
