// A Duration or Window that outlives its Device is safe: it resolves
// FAILED with LAPSE_ERROR_CLOSED (and its destructor does nothing more),
// where it used to call into a closed plugin's unloaded code.
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using test::config;

namespace {

lapse::Device open_clock()
{
    static lapse::Runtime runtime(lapse::RuntimeOptions{{test::fixture_dir()}, nullptr});
    return runtime.open(config("[backend]\nplugin = \"clock\"\n"));
}

void work(lapse::Device& device)
{
    device.submit(0, [] { test::spin_for_ns(10000); });
}

}  // namespace

TEST_CASE("a duration resolved after close reads FAILED with LAPSE_ERROR_CLOSED", "[lifetime]")
{
    lapse::Device device = open_clock();
    lapse::Duration d = device.profile(0, [&] { work(device); }, {.name = "named"});
    lapse::Duration unnamed = device.profile(0, [&] { work(device); });
    REQUIRE(d.pending());
    device.close();
    CHECK_FALSE(d.resolve().has_value());
    CHECK(d.failed());
    CHECK(d.error_status() == LAPSE_ERROR_CLOSED);
    CHECK(std::string(d.error_message()).find("closed") != std::string::npos);
    CHECK(d.name() == "named");
    CHECK_FALSE(unnamed.resolve().has_value());
    CHECK(unnamed.error_status() == LAPSE_ERROR_CLOSED);
}

TEST_CASE("a batch resolve after close fails every pending duration", "[lifetime]")
{
    std::vector<lapse::Duration> durations;
    lapse::Device device = open_clock();
    for (int i = 0; i < 20; ++i) durations.push_back(device.profile(0, [&] { work(device); }));
    lapse::Device other = open_clock();
    device.close();
    CHECK(other.resolve(durations));
    for (const lapse::Duration& d : durations) CHECK(d.error_status() == LAPSE_ERROR_CLOSED);
}

TEST_CASE("pending durations in a vector declared before the Device are destroyed after it safely", "[lifetime]")
{
    std::vector<lapse::Duration> durations;
    lapse::Window open_window;
    {
        lapse::Device device = open_clock();
        for (int i = 0; i < 8; ++i) durations.push_back(device.profile(0, [&] { work(device); }));
        open_window = device.profile_start(0);
        REQUIRE(open_window.open());
    }  // the device closes here, its windows and durations still pending
    CHECK(durations.front().pending());
    durations.clear();  // destructors: nothing to call into
    CHECK(open_window.open());
}

TEST_CASE("ending a window after its device closed reads LAPSE_ERROR_CLOSED", "[lifetime]")
{
    lapse::Device device = open_clock();
    lapse::Window w = device.profile_start(0);
    lapse::Window named = device.profile_start(0, "named");
    device.close();
    lapse::Duration d = device.profile_end(w);
    CHECK(d.failed());
    CHECK(d.error_status() == LAPSE_ERROR_CLOSED);
    CHECK_FALSE(w.open());
    lapse::Device other = open_clock();
    lapse::Duration n = other.profile_end(named);
    CHECK(n.error_status() == LAPSE_ERROR_CLOSED);
    CHECK(n.name() == "named");
}

TEST_CASE("a device moved from and closed leaves the moved-to device working", "[lifetime]")
{
    lapse::Device a = open_clock();
    lapse::Duration before = a.profile(0, [&] { work(a); });
    lapse::Device b = std::move(a);
    a.close();  // a no-op: it holds nothing now
    CHECK(before.resolve().has_value());
}
