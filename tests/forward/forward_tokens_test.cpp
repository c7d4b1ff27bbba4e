// forward over a backend that has windows (the CPU plugin's stream mode):
// its own tokens, opened_on, the flush flag on its way down, errors on
// their way up, and extensions. The misuse cases go through the raw C ABI,
// as a host written in C would.
#include "stack_support.hpp"

#include <lapse/sdk/error.hpp>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>
#include <string>

using namespace lapse;
using namespace lapse::test;

namespace {

constexpr std::string_view kBareCpu = R"(
[backend]
plugin = "cpu"
mode = "stream"
streams = 2
)";

void nothing(void*, void*) {}

}  // namespace

TEST_CASE("forward: windows keep their stream and measure device time", "[forward]")
{
    const std::string_view cfg = GENERATE(kForwardOverCpu, kForwardOwnTokensOverCpu);
    INFO(cfg);
    within_5pct_on_one_of(kAttempts, [&](Lengths& lengths) {
        Runtime runtime = make_runtime();
        Device dev = runtime.open(config(cfg));
        CHECK(dev.info().has(LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS));
        CHECK(std::string(dev.info().name).rfind("forward(", 0) == 0);
        Gate gate;
        gate.close_on(dev, 1);
        Busy b;
        Window w = dev.profile_start(1);
        REQUIRE(w.kind() == Window::Kind::device);
        CHECK(w.token().opened_on == 1);
        CHECK(w.token().id != 0);
        submit_busy(dev, 1, 5ms, b);
        Duration d = dev.profile_end(w);
        gate.open();
        Interval iv = ready(d);
        CHECK(iv.method == TimingMethod::device);
        CHECK(holds(iv, b));
        lengths.expect_within_5pct("the window", iv.ns(), b.ns());
    });
}

TEST_CASE("forward: the flush flag travels down to a batching backend", "[forward]")
{
    Runtime runtime = make_runtime();
    Device dev = runtime.open(config(R"(
[backend]
plugin = "forward"
[backend.inner]
plugin = "fusion"
max_batch = 64
[backend.inner.inner]
plugin = "cpu"
mode = "stream"
streams = 1
)"));
    CHECK(dev.info().has(LAPSE_CAP_BATCHING));
    Busy a, b;
    Duration flushed = dev.profile(0, [&] { submit_busy(dev, 0, 5ms, a); }, {.flush = true});
    Duration left = dev.profile(0, [&] { submit_busy(dev, 0, 5ms, b); });
    dev.sync();
    Interval f = ready(flushed), l = ready(left);
    CHECK(holds(f, a));
    CHECK(b.start_ns.load() + kClockAgreementNs >= l.end_ns);  // without flush the op stayed queued past the close
}

TEST_CASE("forward: inner errors pass through, intact, with forward's name", "[forward][errors]")
{
    const std::string_view cfg = GENERATE(kForwardOverCpu, kForwardOwnTokensOverCpu);
    INFO(cfg);
    Runtime runtime = make_runtime();
    Device bare = runtime.open(config(kBareCpu));
    Device fwd = runtime.open(config(cfg));

    lapse_error inner = sdk::make_error();
    lapse_error outer = sdk::make_error();
    SECTION("submit to a stream that does not exist")
    {
        lapse_status si = bare.plugin().submit(bare.handle(), 7, &nothing, nullptr, &inner);
        lapse_status so = fwd.plugin().submit(fwd.handle(), 7, &nothing, nullptr, &outer);
        REQUIRE(si < 0);
        CHECK(so == si);
    }
    SECTION("sync of a stream that does not exist")
    {
        lapse_status si = bare.plugin().sync(bare.handle(), 7, &inner);
        lapse_status so = fwd.plugin().sync(fwd.handle(), 7, &outer);
        REQUIRE(si < 0);
        CHECK(so == si);
    }
    CHECK(outer.code == inner.code);
    CHECK(std::string(outer.message) == "forward: " + std::string(inner.message));
}

TEST_CASE("forward: its tokens refuse misuse", "[forward][errors]")
{
    const std::string_view cfg = GENERATE(kForwardOverCpu, kForwardOwnTokensOverCpu);
    INFO(cfg);
    Runtime runtime = make_runtime();
    Device fwd = runtime.open(config(cfg));
    const lapse_plugin& p = fwd.plugin();
    lapse_device* h = fwd.handle();
    lapse_error e = sdk::make_error();

    SECTION("an unknown token")
    {
        CHECK(p.profile_end(h, lapse_token{0x123456789, 0, 0}, nullptr, &e) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(std::string(e.message).rfind("forward: ", 0) == 0);
        p.profile_abandon(h, lapse_token{0x123456789, 0, 0});  // ignored, cannot fail
    }
    SECTION("a token whose stream does not match, then the right one")
    {
        lapse_token t{};
        REQUIRE(p.profile_start(h, 1, &t, &e) == LAPSE_OK);
        CHECK(t.opened_on == 1);
        lapse_token wrong = t;
        wrong.opened_on = 0;
        CHECK(p.profile_end(h, wrong, nullptr, &e) == LAPSE_ERROR_WRONG_STREAM);
        CHECK(std::string(e.message).rfind("forward: ", 0) == 0);
        p.profile_abandon(h, wrong);  // acts on nothing: the stream does not match
        CHECK(p.profile_end(h, t, nullptr, &e) == LAPSE_OK);
        CHECK(p.profile_end(h, t, nullptr, &e) == LAPSE_ERROR_INVALID_TOKEN);  // closed twice
        lapse_duration d{};
        d.struct_size = sizeof d;
        CHECK(p.resolve(h, &t, &d, 1, LAPSE_WAIT_FOREVER, &e) == LAPSE_OK);
        CHECK(d.state == LAPSE_DURATION_READY);
        CHECK(p.resolve(h, &t, &d, 1, 0, &e) == LAPSE_ERROR_INVALID_TOKEN);  // resolved twice
        CHECK(d.state == LAPSE_DURATION_FAILED);
        CHECK(d.failure == LAPSE_ERROR_INVALID_TOKEN);
    }
    SECTION("a stream that does not exist")
    {
        lapse_token t{};
        CHECK(p.profile_start(h, 9, &t, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
        CHECK(std::string(e.message).rfind("forward: ", 0) == 0);
    }
    SECTION("an abandoned window is gone")
    {
        lapse_token t{};
        REQUIRE(p.profile_start(h, 0, &t, &e) == LAPSE_OK);
        p.profile_abandon(h, t);
        CHECK(p.profile_end(h, t, nullptr, &e) == LAPSE_ERROR_INVALID_TOKEN);
    }
    SECTION("ids are not reused")
    {
        lapse_token a{}, b{};
        REQUIRE(p.profile_start(h, 0, &a, &e) == LAPSE_OK);
        p.profile_abandon(h, a);
        REQUIRE(p.profile_start(h, 0, &b, &e) == LAPSE_OK);  // takes the same slot
        CHECK(b.id != a.id);
        CHECK(p.profile_end(h, a, nullptr, &e) == LAPSE_ERROR_INVALID_TOKEN);
        p.profile_abandon(h, b);
    }
}

TEST_CASE("forward: extensions it does not wrap are not supported", "[forward]")
{
    Runtime runtime = make_runtime();
    Device fwd = runtime.open(config(kForwardOverCpu));
    CHECK(fwd.extension("lapse.cpu.workers/1") == nullptr);
    CHECK(fwd.extension("lapse.vulkan.commands/1") == nullptr);
    CHECK(fwd.extension("") == nullptr);
}

TEST_CASE("forward: many windows in flight resolve in one batch", "[forward]")
{
    // More windows than forward's resolve batch, some pending at once.
    const std::string_view cfg = GENERATE(kForwardOverCpu, kForwardOwnTokensOverCpu);
    INFO(cfg);
    Runtime runtime = make_runtime();
    Device fwd = runtime.open(config(cfg));
    std::vector<Duration> durations;
    for (int i = 0; i < 300; ++i) durations.push_back(fwd.profile(static_cast<Stream>(i % 2), [] {}));
    REQUIRE(fwd.resolve(durations));
    for (auto& d : durations) {
        REQUIRE(d.ready());
        CHECK(d.interval()->ns() >= 0);
    }
}

TEST_CASE("forward: abandon reaches the inner window", "[forward]")
{
    // The CPU plugin says, when it closes, how many windows were left open
    // in it. A window abandoned through forward must not be one of them; a
    // window left open through forward must (the control that shows the
    // check can fail).
    const bool abandon = GENERATE(true, false);
    const std::string_view cfg = GENERATE(kForwardOverCpu, kForwardOwnTokensOverCpu);
    INFO("abandon " << abandon << "\n" << cfg);
    std::ostringstream log;
    RuntimeOptions options;
    options.search_paths = {LAPSE_TEST_PLUGIN_DIR};
    options.logger = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
    {
        Runtime runtime(options);
        Device fwd = runtime.open(config(cfg));
        lapse_token t{};
        REQUIRE(fwd.plugin().profile_start(fwd.handle(), 0, &t, nullptr) == LAPSE_OK);
        if (abandon) fwd.plugin().profile_abandon(fwd.handle(), t);
        fwd.close();
    }
    options.logger->flush();
    const std::string text = log.str();
    INFO(text);
    const bool cpu_saw_it_open = text.find("[cpu] closed with 1 window(s) still open") != std::string::npos;
    CHECK(cpu_saw_it_open == !abandon);
}
