// forward over a backend with no clock (the CPU plugin's inline mode): it
// supplies system-time windows itself, keyed on its own tokens, so they
// nest, overlap and end on other threads; and their syncs are charged to
// the windows around them.
#include "stack_support.hpp"

#include <thread>

using namespace lapse;
using namespace lapse::test;

TEST_CASE("forward over inline cpu: forward opens windows itself, in system time", "[forward][system]")
{
    Runtime runtime = make_runtime();
    Device dev = runtime.open(config(kForwardOverInlineCpu));
    const DeviceInfo& info = dev.info();
    CHECK_FALSE(info.has(LAPSE_CAP_DEVICE_CLOCK));  // the durations are system time...
    CHECK(info.has(LAPSE_CAP_HOST_TIMELINE | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS));

    Window w = dev.profile_start(0);
    CHECK(w.kind() == Window::Kind::device);  // ...yet forward never answers "no window"
    Busy b;
    submit_busy(dev, 0, 5ms, b);
    Duration d = dev.profile_end(w);
    Interval iv = ready(d);
    CHECK(iv.method == TimingMethod::system);
    CHECK(iv.domain == ClockDomain::host_monotonic);
    CHECK(holds(iv, b));
}

TEST_CASE("forward over inline cpu: system-time windows nest and overlap", "[forward][system]")
{
    Runtime runtime = make_runtime();
    Device dev = runtime.open(config(kForwardOverInlineCpu));
    Busy w1, w2, w3;
    Window a = dev.profile_start(0);
    submit_busy(dev, 0, 5ms, w1);
    Window b = dev.profile_start(0);
    submit_busy(dev, 0, 5ms, w2);
    Duration da = dev.profile_end(a);  // overlap: a closes before b
    submit_busy(dev, 0, 5ms, w3);
    Duration db = dev.profile_end(b);
    Interval ia = ready(da), ib = ready(db);
    CHECK(holds(ia, w1));
    CHECK(holds(ia, w2));
    CHECK(ia.end_ns <= w3.start_ns.load() + kClockAgreementNs);
    CHECK(ib.start_ns + kClockAgreementNs >= w1.end_ns.load());
    CHECK(holds(ib, w2));
    CHECK(holds(ib, w3));
}

TEST_CASE("forward over inline cpu: a system-time window may end on another thread", "[forward][system]")
{
    Runtime runtime = make_runtime();
    Device dev = runtime.open(config(kForwardOverInlineCpu));
    Window w = dev.profile_start(0);
    Busy b;
    submit_busy(dev, 0, 2ms, b);
    Duration d;
    std::thread([&] { d = dev.profile_end(w); }).join();
    CHECK(holds(ready(d), b));
}

TEST_CASE("forward over inline cpu: the inner window's syncs are charged to the outer", "[forward][system]")
{
    // fusion between forward and the inline CPU backend makes syncs cost
    // something: a sync runs what fusion holds queued. The inner window's
    // opening sync runs work queued before it — outside the inner window,
    // inside the outer one.
    Runtime runtime = make_runtime();
    Device dev = runtime.open(config(R"(
[backend]
plugin = "forward"
[backend.inner]
plugin = "fusion"
[backend.inner.inner]
plugin = "cpu"
mode = "inline"
)"));
    Busy before_inner, in_inner;
    Window outer = dev.profile_start(0);
    submit_busy(dev, 0, 10ms, before_inner);  // queued in fusion
    CHECK_FALSE(before_inner.ran());
    Window inner = dev.profile_start(0);      // its sync runs it
    CHECK(before_inner.ran());
    submit_busy(dev, 0, 10ms, in_inner);
    Duration di = dev.profile_end(inner);      // its sync runs this one
    Duration dout = dev.profile_end(outer);
    Interval i = ready(di), o = ready(dout);
    CHECK(i.method == TimingMethod::system);
    CHECK(i.start_ns + kClockAgreementNs >= before_inner.end_ns.load());
    CHECK(holds(i, in_inner));
    CHECK(holds(o, before_inner));
    CHECK(holds(o, in_inner));
    CHECK(o.ns() >= i.ns() + before_inner.ns());
}
