// A plugin built without the SDK may let a C++ exception cross the C ABI.
// Whatever it throws, the host sees a lapse::Error (or a FAILED duration)
// naming the plugin, profile() still runs the closure, and a throwing
// abandon does not terminate the process. Against the misbehaving test
// double (fixtures/test_double_misbehaving.cpp), whose raw entry points
// throw.
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>

using test::config;

namespace {

lapse::Device open_throwing(const std::string& call, const std::string& kind = "std")
{
    static lapse::Runtime runtime(lapse::RuntimeOptions{{test::fixture_dir()}, nullptr});
    return runtime.open(config("[backend]\nplugin = \"misbehaving\"\nthrows = \"" + call + "\"\nthrow_kind = \"" +
                               kind + "\"\n"));
}

bool names_plugin(std::string_view message)
{
    return message.find("plugin 'misbehaving'") != std::string_view::npos &&
           message.find("threw") != std::string_view::npos;
}

}  // namespace

TEST_CASE("a throwing profile_start fails the window and profile() still runs the closure", "[throws]")
{
    const char* kind = GENERATE("std", "int");
    lapse::Device device = open_throwing("profile_start", kind);
    bool ran = false;
    lapse::Duration d = device.profile(0, [&] { ran = true; });
    CHECK(ran);
    REQUIRE(d.failed());
    CHECK(d.error_status() == LAPSE_ERROR_INTERNAL);
    CHECK(names_plugin(d.error_message()));
    CHECK(std::string(d.error_message()).find("profile_start") != std::string::npos);
    // Named windows start out of line: the same there.
    lapse::Duration named = device.profile(0, [&] {}, {.name = "named"});
    CHECK(named.failed());
    CHECK(names_plugin(named.error_message()));
}

TEST_CASE("a throwing profile_end fails the duration", "[throws]")
{
    lapse::Device device = open_throwing("profile_end");
    bool ran = false;
    lapse::Duration d = device.profile(0, [&] { ran = true; });
    CHECK(ran);
    REQUIRE(d.failed());
    CHECK(names_plugin(d.error_message()));
    lapse::Duration named = device.profile(0, [&] {}, {.name = "named"});
    CHECK(named.failed());
    CHECK(names_plugin(named.error_message()));
}

TEST_CASE("a throwing resolve fails the durations it did not answer", "[throws]")
{
    lapse::Device device = open_throwing("resolve");
    lapse::Duration d = device.profile(0, [] {});
    CHECK_FALSE(d.resolve().has_value());
    REQUIRE(d.failed());
    CHECK(names_plugin(d.error_message()));
}

TEST_CASE("a throwing sync or submit is a lapse::Error naming the plugin", "[throws]")
{
    {
        lapse::Device device = open_throwing("sync");
        lapse::Error e = test::error_of([&] { device.sync(); });
        CHECK(e.status() == LAPSE_ERROR_INTERNAL);
        CHECK(names_plugin(e.what()));
    }
    {
        lapse::Device device = open_throwing("submit");
        auto owned = std::make_shared<int>(1);
        lapse::Error e = test::error_of([&] { device.submit(0, [owned] {}); });
        CHECK(names_plugin(e.what()));
        CHECK(owned.use_count() == 1);  // the refused work was destroyed, not leaked
    }
}

TEST_CASE("a throwing abandon does not terminate the host", "[throws]")
{
    lapse::Device device = open_throwing("abandon");
    {
        lapse::Window w = device.profile_start(0);
        REQUIRE(w.open());
    }  // the destructor abandons
    {
        lapse::Duration d = device.profile(0, [] {});
    }  // a pending duration dropped unresolved abandons too
    lapse::Window w = device.profile_start(0);
    device.profile_abandon(w);
    CHECK_FALSE(w.open());
    CHECK_THROWS_AS(device.profile(0, [] { throw std::runtime_error("closure"); }), std::runtime_error);
}

TEST_CASE("a throwing get_extension reads as no extension", "[throws]")
{
    lapse::Device device = open_throwing("extension");
    CHECK(device.extension("lapse.anything/1") == nullptr);
}

TEST_CASE("a plugin under forward or fusion that throws from abandon does not terminate the host", "[throws]")
{
    static lapse::Runtime runtime(lapse::RuntimeOptions{{test::fixture_dir()}, nullptr});
    const char* layer = GENERATE("plugin = \"forward\"\nown_tokens = true\n", "plugin = \"forward\"\n",
                                 "plugin = \"fusion\"\n");
    const char* inner = GENERATE("", "single_window = true\n");
    INFO(layer << inner);
    lapse::Device device = runtime.open(config(std::string("[backend]\n") + layer +
                                               "[backend.inner]\nplugin = \"misbehaving\"\nthrows = \"abandon\"\n" +
                                               inner));
    {
        lapse::Window w = device.profile_start(0);
    }
    {
        lapse::Duration d = device.profile(0, [] {});
    }
    lapse::Duration kept = device.profile(0, [] {});
    CHECK(kept.resolve().has_value());
}
