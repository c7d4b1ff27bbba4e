// forward over a backend that holds one window at a time per stream: the
// segments forward cuts must add up, for each window, to the work it
// covered — nested, overlapping, across threads, and around abandons.
//
// Each window's expected length is the span of the busy intervals it held,
// as the work itself recorded them; the window may exceed that by its
// markers' cost and 5%, never fall short of it. A worker preempted inside
// a window rightly makes it read long, so each scenario runs again when a
// window reads long, never when one reads short (within_5pct_on_one_of).
#include "stack_support.hpp"

#include <array>
#include <random>
#include <thread>
#include <vector>

using namespace lapse;
using namespace lapse::test;

TEST_CASE("single_window fixture: really holds one window at a time", "[forward][single_window]")
{
    // Without this, the tests below would prove nothing.
    Runtime runtime = make_runtime();
    Device bare = runtime.open(config(R"(
[backend]
plugin = "single_window"
)"));
    REQUIRE(bare.info().has(LAPSE_CAP_SINGLE_WINDOW | LAPSE_CAP_DEVICE_CLOCK));
    Window a = bare.profile_start(0);
    REQUIRE(a.kind() == Window::Kind::device);
    Window b = bare.profile_start(0);
    CHECK(b.kind() == Window::Kind::failed);
    CHECK(b.error_status() == LAPSE_ERROR_CAPACITY);
}

TEST_CASE("forward over single_window: capabilities are whole", "[forward][single_window]")
{
    Runtime runtime = make_runtime();
    Device dev = runtime.open(config(kForwardOverSingleWindow));
    const DeviceInfo& info = dev.info();
    CHECK(info.plugin == "forward");
    CHECK(info.stream_count == 2);
    CHECK(info.has(LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS | LAPSE_CAP_DEVICE_CLOCK));
    CHECK_FALSE(info.has(LAPSE_CAP_SINGLE_WINDOW));
}

TEST_CASE("forward over single_window: nested windows read what they covered", "[forward][single_window]")
{
    within_5pct_on_one_of(kAttempts, [](Lengths& lengths) {
        Runtime runtime = make_runtime();
        Device dev = runtime.open(config(kForwardOverSingleWindow));
        Gate gate;
        gate.close_on(dev, 0);
        Busy before, inside, after;
        Window outer = dev.profile_start(0);
        REQUIRE(outer.kind() == Window::Kind::device);
        submit_busy(dev, 0, 10ms, before);
        Window inner = dev.profile_start(0);
        REQUIRE(inner.kind() == Window::Kind::device);
        submit_busy(dev, 0, 20ms, inside);
        Duration di = dev.profile_end(inner);
        submit_busy(dev, 0, 10ms, after);
        Duration dout = dev.profile_end(outer);
        gate.open();

        Interval i = ready(di);
        Interval o = ready(dout);
        CHECK(i.method == TimingMethod::device);
        CHECK(o.method == TimingMethod::device);
        CHECK(i.ns() <= o.ns());
        lengths.expect_within_5pct("inner", i.ns(), inside.ns());
        lengths.expect_within_5pct("outer", o.ns(), span_ns(before, after));
        CHECK(o.start_ns <= before.start_ns.load() + kClockAgreementNs);
        CHECK(i.start_ns + kClockAgreementNs >= before.end_ns.load());
    });
}

TEST_CASE("forward over single_window: overlapping windows read what they covered", "[forward][single_window]")
{
    within_5pct_on_one_of(kAttempts, [](Lengths& lengths) {
        Runtime runtime = make_runtime();
        Device dev = runtime.open(config(kForwardOverSingleWindow));
        // all: |------------------------------------|
        // a:   |------- w1 ------|------ w2 ------|
        // b:                     |------ w2 ------|------ w3 ------|
        Gate gate;
        gate.close_on(dev, 0);
        Busy w1, w2, w3;
        Window all = dev.profile_start(0);
        Window a = dev.profile_start(0);
        submit_busy(dev, 0, 15ms, w1);
        Window b = dev.profile_start(0);
        submit_busy(dev, 0, 15ms, w2);
        Duration da = dev.profile_end(a);
        submit_busy(dev, 0, 15ms, w3);
        Duration db = dev.profile_end(b);
        Duration dall = dev.profile_end(all);
        gate.open();

        const int64_t ta = ready(da).ns(), tb = ready(db).ns(), tall = ready(dall).ns();
        lengths.expect_within_5pct("a", ta, span_ns(w1, w2));
        lengths.expect_within_5pct("b", tb, span_ns(w2, w3));
        lengths.expect_within_5pct("all", tall, span_ns(w1, w3));
        // The overlap, counted twice by a and b, is what `all` does not repeat:
        // w2, give or take 400 us of the markers' own gaps.
        const int64_t overlap = ta + tb - tall;
        lengths.expect_near("the overlap", overlap, w2.ns(), 400'000);
    });
}

TEST_CASE("forward over single_window: streams keep their own segments", "[forward][single_window]")
{
    Runtime runtime = make_runtime();
    Device dev = runtime.open(config(kForwardOverSingleWindow));
    within_5pct_on_one_of(kAttempts, [&](Lengths& lengths) {
        Gate gate;
        gate.close_on(dev, 0);
        gate.close_on(dev, 1);
        Busy on0, on1;
        Window a = dev.profile_start(0);
        Window b = dev.profile_start(1);
        submit_busy(dev, 0, 10ms, on0);
        submit_busy(dev, 1, 20ms, on1);
        Window c = dev.profile_start(1);  // a boundary on stream 1 only
        Duration dc = dev.profile_end(c);
        Duration db = dev.profile_end(b);
        Duration da = dev.profile_end(a);
        gate.open();
        const Interval ia = ready(da), ib = ready(db), ic = ready(dc);
        CHECK(holds(ia, on0));
        CHECK(holds(ib, on1));
        lengths.expect_within_5pct("a, on stream 0", ia.ns(), on0.ns());
        lengths.expect_within_5pct("b, on stream 1", ib.ns(), on1.ns());
        // c opened after stream 1's work was queued: it holds none of it.
        lengths.expect_within_5pct("c, empty", ic.ns(), 0, 1'000'000);
    });
}

TEST_CASE("forward over single_window: a window may end on another thread", "[forward][single_window]")
{
    within_5pct_on_one_of(kAttempts, [](Lengths& lengths) {
        Runtime runtime = make_runtime();
        Device dev = runtime.open(config(kForwardOverSingleWindow));
        Gate gate;
        gate.close_on(dev, 0);
        Busy work;
        Window w = dev.profile_start(0);
        submit_busy(dev, 0, 10ms, work);
        Duration d;
        std::thread([&] { d = dev.profile_end(w); }).join();
        gate.open();
        const Interval iv = ready(d);
        CHECK(holds(iv, work));
        lengths.expect_within_5pct("the window", iv.ns(), work.ns());
    });
}

TEST_CASE("forward over single_window: an abandoned window leaves the others whole", "[forward][single_window]")
{
    within_5pct_on_one_of(kAttempts, [](Lengths& lengths) {
        Runtime runtime = make_runtime();
        Device dev = runtime.open(config(kForwardOverSingleWindow));
        Gate gate;
        gate.close_on(dev, 0);
        Busy w1, w2, w3;
        Window outer = dev.profile_start(0);
        submit_busy(dev, 0, 5ms, w1);
        {
            Window doomed = dev.profile_start(0);
            submit_busy(dev, 0, 5ms, w2);
        }  // abandoned here
        submit_busy(dev, 0, 5ms, w3);
        Duration d = dev.profile_end(outer);
        gate.open();
        const int64_t outer_ns = ready(d).ns();  // first: the work has run once it resolves
        lengths.expect_within_5pct("the outer window", outer_ns, span_ns(w1, w3));

        // A closed window abandoned before it resolved releases its segments too.
        Window x = dev.profile_start(0);
        Duration dx = dev.profile_end(x);
        dx.abandon();
        Gate gate2;
        gate2.close_on(dev, 0);
        Window y = dev.profile_start(0);
        Busy w4;
        submit_busy(dev, 0, 5ms, w4);
        Duration dy = dev.profile_end(y);
        gate2.open();
        const int64_t after_ns = ready(dy).ns();
        lengths.expect_within_5pct("the window after the abandon", after_ns, w4.ns());
    });
}

TEST_CASE("forward over single_window: random nests and overlaps each read their work", "[forward][single_window]")
{
    // A random schedule of opens, closes and 1 ms work items on one stream;
    // every window must read the sum of the work items submitted while it
    // was open, give or take 1 ms of its markers.
    const unsigned seed = GENERATE(1u, 2u, 3u);
    INFO("seed " << seed);
    constexpr int kWork = 40;
    within_5pct_on_one_of(kAttempts, [&](Lengths& lengths) {
        Runtime runtime = make_runtime();
        Device dev = runtime.open(config(kForwardOverSingleWindow));
        std::mt19937 rng(seed);
        Gate gate;
        gate.close_on(dev, 0);
        std::array<Busy, kWork> work;
        struct Open {
            Window window;
            std::vector<int> covers;
        };
        std::vector<Open> open;
        std::vector<std::pair<Duration, std::vector<int>>> closed;
        int next = 0;
        while (next < kWork || !open.empty()) {
            const int r = static_cast<int>(rng() % 3);
            if (r == 0 && open.size() < 6) {
                open.push_back({dev.profile_start(0), {}});
            } else if (r == 1 && next < kWork) {
                submit_busy(dev, 0, 1ms, work[next]);
                for (auto& o : open) o.covers.push_back(next);
                ++next;
            } else if (!open.empty()) {
                const size_t k = rng() % open.size();  // not only the innermost: overlap
                closed.emplace_back(dev.profile_end(open[k].window), std::move(open[k].covers));
                open.erase(open.begin() + static_cast<long>(k));
            }
        }
        gate.open();
        for (auto& [d, covers] : closed) {
            const Interval iv = ready(d);  // first: the work it covered has run once it resolves
            int64_t expected = 0;
            for (int i : covers) expected += work[i].ns();
            lengths.expect_within_5pct("a window covering " + std::to_string(covers.size()) + " work items", iv.ns(),
                                       expected, 1'000'000);
        }
    });
}
