// forward's window dispatch (lapse/dispatch.h): over a whole backend it
// names the device its windows really open on, tokens cross between the
// two either way, a stack of passing layers collapses to its bottom, and
// the host's hot path calls past it. Where forward keeps its own tokens it
// must not offer it: a caller would then bypass its token map.
#include "stack_support.hpp"

#include <lapse/dispatch.h>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/window_dispatch.hpp>

#include <string>

using namespace lapse;
using namespace lapse::test;

namespace {

constexpr std::string_view kTwoForwardsOverCpu = R"(
[backend]
plugin = "forward"
[backend.inner]
plugin = "forward"
[backend.inner.inner]
plugin = "cpu"
streams = 2
)";

const lapse_window_dispatch* dispatch_of(const Device& dev)
{
    return static_cast<const lapse_window_dispatch*>(dev.extension(LAPSE_WINDOW_DISPATCH_EXTENSION));
}

lapse_duration resolve_one(const Device& dev, lapse_token token)
{
    lapse_duration d{};
    d.struct_size = sizeof d;
    lapse_error e = sdk::make_error();
    const lapse_status s = dev.plugin().resolve(dev.handle(), &token, &d, 1, LAPSE_WAIT_FOREVER, &e);
    INFO(e.message);
    CHECK(s == LAPSE_OK);
    return d;
}

}  // namespace

TEST_CASE("forward over a whole backend: its windows open on the inner device", "[forward][dispatch]")
{
    const std::string_view cfg = GENERATE(kForwardOverCpu, kTwoForwardsOverCpu);
    INFO(cfg);
    Runtime runtime = make_runtime();
    Device fwd = runtime.open(config(cfg));
    const lapse_window_dispatch* hot = dispatch_of(fwd);
    REQUIRE(hot != nullptr);
    CHECK(hot->struct_size >= sizeof(lapse_window_dispatch));
    REQUIRE(hot->plugin != nullptr);
    REQUIRE(hot->device != nullptr);
    // The bottom of the stack, however deep: one query, one call past.
    CHECK(std::string(hot->plugin->name) == "cpu");
    CHECK(hot->device != fwd.handle());
    lapse_error e = sdk::make_error();

    SECTION("a token opened on the target closes and resolves through forward")
    {
        lapse_token t{};
        REQUIRE(hot->plugin->profile_start(hot->device, 1, &t, &e) == LAPSE_OK);
        CHECK(fwd.plugin().profile_end(fwd.handle(), t, nullptr, &e) == LAPSE_OK);
        fwd.sync(1);
        const lapse_duration d = resolve_one(fwd, t);
        CHECK(d.state == LAPSE_DURATION_READY);
        CHECK(d.method == LAPSE_TIMING_DEVICE);
        CHECK(d.end_ns >= d.start_ns);
    }
    SECTION("a token opened through forward closes on the target")
    {
        lapse_token t{};
        REQUIRE(fwd.plugin().profile_start(fwd.handle(), 0, &t, &e) == LAPSE_OK);
        CHECK(hot->plugin->profile_end(hot->device, t, nullptr, &e) == LAPSE_OK);
        fwd.sync(0);
        CHECK(resolve_one(fwd, t).state == LAPSE_DURATION_READY);
    }
    SECTION("an abandon on the target is seen through forward")
    {
        lapse_token t{};
        REQUIRE(fwd.plugin().profile_start(fwd.handle(), 0, &t, &e) == LAPSE_OK);
        hot->plugin->profile_abandon(hot->device, t);
        CHECK(fwd.plugin().profile_end(fwd.handle(), t, nullptr, &e) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(std::string(e.message).rfind("forward: ", 0) == 0);  // forward's own call still names it
    }
}

TEST_CASE("forward keeping its own tokens offers no window dispatch", "[forward][dispatch]")
{
    // Each of these maps its tokens: a caller past it would hand the inner
    // backend ids it never issued.
    const std::string_view cfg = GENERATE(kForwardOwnTokensOverCpu, kForwardOverInlineCpu, kForwardOverSingleWindow);
    INFO(cfg);
    Runtime runtime = make_runtime();
    Device fwd = runtime.open(config(cfg));
    CHECK(dispatch_of(fwd) == nullptr);
    const lapse_window_dispatch self = sdk::window_dispatch_target(&fwd.plugin(), fwd.handle());
    CHECK(self.plugin == &fwd.plugin());
    CHECK(self.device == fwd.handle());
}

TEST_CASE("forward over forward that keeps its own tokens: the outer passes to the inner forward",
          "[forward][dispatch]")
{
    Runtime runtime = make_runtime();
    Device fwd = runtime.open(config(R"(
[backend]
plugin = "forward"
[backend.inner]
plugin = "forward"
own_tokens = true
[backend.inner.inner]
plugin = "cpu"
)"));
    const lapse_window_dispatch* hot = dispatch_of(fwd);
    REQUIRE(hot != nullptr);
    // The chain stops where the tokens stop being shared.
    CHECK(std::string(hot->plugin->name) == "forward");
    CHECK(hot->device != fwd.handle());
}

TEST_CASE("the host calls past passing layers: window errors are the bottom backend's own", "[forward][dispatch]")
{
    Runtime runtime = make_runtime();
    Device fwd = runtime.open(config(kTwoForwardsOverCpu));

    SECTION("a stream that does not exist, for an unnamed (inline) and a named (out of line) window")
    {
        const std::string_view name = GENERATE(std::string_view(), std::string_view("named"));
        Window w = fwd.profile_start(7, name);
        REQUIRE(w.kind() == Window::Kind::failed);
        // Through forward this would read "forward: forward: profile_start: ...".
        CHECK(std::string(w.error_message()) == "profile_start: stream 7 does not exist (the device has 2)");
    }
    SECTION("windows still measure, and resolve through the top device")
    {
        Busy b;
        Window w = fwd.profile_start(1);
        REQUIRE(w.kind() == Window::Kind::device);
        submit_busy(fwd, 1, 5ms, b);
        Duration d = fwd.profile_end(w);
        Interval iv = ready(d);
        CHECK(iv.method == TimingMethod::device);
        CHECK(holds(iv, b));
    }
    SECTION("a named window (the host's slow path, through the top device) closes and resolves too")
    {
        Busy b;
        Duration d = fwd.profile(0, [&] { submit_busy(fwd, 0, 2ms, b); }, {.name = "named"});
        Interval iv = ready(d);
        CHECK(holds(iv, b));
    }
}
