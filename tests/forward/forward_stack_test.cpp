// Stacks: any depth opens, measures and closes; a stack that refers back
// to itself is refused with the path of the cycle; a stack whose bottom
// fails reports every layer on the way down.
#include "stack_support.hpp"

#include <string>
#include <vector>

using namespace lapse;
using namespace lapse::test;

namespace {

// [backend] plugin = layers[0], [backend.inner] plugin = layers[1], ...
// then `bottom`'s keys in the deepest table.
std::string stack_config(const std::vector<std::string>& layers, const std::string& bottom_keys)
{
    std::string text;
    std::string table = "backend";
    for (size_t i = 0; i < layers.size(); ++i) {
        text += "[" + table + "]\nplugin = \"" + layers[i] + "\"\n";
        if (i + 1 == layers.size()) text += bottom_keys;
        table += ".inner";
    }
    return text;
}

}  // namespace

TEST_CASE("stacks of depth 8 open, measure and close", "[forward][stack]")
{
    const std::vector<std::string> layers = GENERATE(
        std::vector<std::string>{"forward", "forward", "forward", "forward", "forward", "forward", "forward", "cpu"},
        std::vector<std::string>{"forward", "fusion", "forward", "fusion", "forward", "fusion", "forward", "cpu"},
        std::vector<std::string>{"fusion", "forward", "forward", "fusion", "fusion", "forward", "forward",
                                 "single_window"});
    const std::string bottom = layers.back() == "cpu" ? "mode = \"stream\"\nstreams = 2\n" : "streams = 2\n";
    INFO(stack_config(layers, bottom));
    within_5pct_on_one_of(kAttempts, [&](Lengths& lengths) {
        Runtime runtime = make_runtime();
        Device dev = runtime.open(config(stack_config(layers, bottom)));
        CHECK(dev.info().plugin == layers.front());
        CHECK(dev.info().stream_count == 2);
        CHECK(dev.info().has(LAPSE_CAP_DEVICE_CLOCK));

        Gate gate;
        gate.close_on(dev, 1);  // through fusion layers it reaches the worker when the window opens
        Busy outer_only, both;
        Window outer = dev.profile_start(1);
        submit_busy(dev, 1, 4ms, outer_only);
        Duration inner = dev.profile(1, [&] { submit_busy(dev, 1, 4ms, both); }, {.flush = true});
        Duration d = dev.profile_end(outer, {.flush = true});
        gate.open();
        Interval o = ready(d), i = ready(inner);
        CHECK(i.method == TimingMethod::device);
        CHECK(holds(i, both));
        CHECK(holds(o, outer_only));
        CHECK(holds(o, both));
        lengths.expect_within_5pct("the inner window", i.ns(), both.ns(), 1'000'000);
        dev.close();
    });
}

TEST_CASE("a stack that refers back to itself is refused with the path of the cycle", "[forward][stack]")
{
    // loopback (a test plugin) asks the host to open its own config node as
    // its inner backend: forward -> loopback -> loopback -> ...
    Runtime runtime = make_runtime();
    try {
        runtime.open(config(R"(
[backend]
plugin = "forward"
[backend.inner]
plugin = "loopback"
)"));
        FAIL("a cyclic stack opened");
    } catch (const Error& e) {
        INFO(e.what());
        CHECK(e.status() == LAPSE_ERROR_CONFIG);
        CHECK_THAT(e.what(), Catch::Contains("cycle"));
        CHECK_THAT(e.what(), Catch::Contains("forward (backend)") && Catch::Contains("loopback (backend.inner)"));
    }
}

TEST_CASE("a stack whose bottom fails reports every layer", "[forward][stack]")
{
    Runtime runtime = make_runtime();
    SECTION("the bottom plugin does not exist")
    {
        try {
            runtime.open(config(stack_config({"forward", "fusion", "forward", "no_such_plugin"}, "")));
            FAIL("opened a stack over a plugin that does not exist");
        } catch (const Error& e) {
            INFO(e.what());
            CHECK_THAT(e.what(), Catch::Contains("forward (backend)") && Catch::Contains("fusion (backend.inner)") &&
                                     Catch::Contains("forward (backend.inner.inner)") &&
                                     Catch::Contains("no_such_plugin"));
        }
    }
    SECTION("the bottom plugin refuses its config")
    {
        try {
            runtime.open(config(stack_config({"fusion", "forward", "cpu"}, "mode = \"stream\"\nstreamz = 2\n")));
            FAIL("opened a stack whose bottom has a misspelt key");
        } catch (const Error& e) {
            INFO(e.what());
            CHECK(e.status() == LAPSE_ERROR_CONFIG);
            CHECK_THAT(e.what(), Catch::Contains("fusion (backend)") && Catch::Contains("forward (backend.inner)") &&
                                     Catch::Contains("cpu (backend.inner.inner)") && Catch::Contains("streamz"));
        }
    }
    SECTION("a stacking plugin with no inner backend")
    {
        try {
            runtime.open(config("[backend]\nplugin = \"forward\"\n"));
            FAIL("forward opened with nothing under it");
        } catch (const Error& e) {
            INFO(e.what());
            CHECK(e.status() == LAPSE_ERROR_CONFIG);
            CHECK_THAT(e.what(), Catch::Contains("inner"));
        }
    }
}
