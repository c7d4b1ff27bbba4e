// What a plugin answers is checked before it reaches the caller: an
// impossible duration is that plugin's error, never a number; a FAILED
// duration reads the same whichever plugin failed it; the flags that say a
// number is partial reach the caller through every layer. Against the
// misbehaving test double (fixtures/test_double_misbehaving.cpp).
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <lapse/core/session.hpp>

#include <string>

using test::config;

namespace {

lapse::Device open(const std::string& backend) { return test::open_backend(backend); }

lapse::Duration one_window(lapse::Device& device)
{
    lapse::Duration d = device.profile(0, [] {});
    d.resolve();
    return d;
}

}  // namespace

TEST_CASE("an impossible duration is refused as the plugin's error, never handed up as a number",
          "[answers][impossible]")
{
    const char* answer = GENERATE("int64_extremes", "end_before_start", "bad_state", "bad_method", "bad_domain");
    INFO("answer = " << answer);
    lapse::Device device = open("plugin = \"misbehaving\"\nanswer = \"" + std::string(answer) + "\"\n");
    lapse::Duration d = one_window(device);
    CHECK(d.failed());
    CHECK_FALSE(d.interval().has_value());
    CHECK(d.error_status() == LAPSE_ERROR_INTERNAL);
    CHECK(std::string(d.error_message()).find("plugin 'misbehaving'") != std::string::npos);
    CHECK(std::string(d.error_message()).find("impossible") != std::string::npos);
}

TEST_CASE("a duration from INT64_MIN to INT64_MAX is refused: its span does not fit", "[answers][impossible]")
{
    lapse::Device device = open("plugin = \"misbehaving\"\nanswer = \"int64_extremes\"\n");
    lapse::Duration d = one_window(device);
    REQUIRE(d.failed());
    CHECK(std::string(d.error_message()).find("does not fit") != std::string::npos);
}

TEST_CASE("an impossible duration from below forward is refused too", "[answers][impossible]")
{
    lapse::Device device = open("plugin = \"forward\"\nown_tokens = true\n[backend.inner]\nplugin = \"misbehaving\"\n"
                                "answer = \"int64_extremes\"\n");
    lapse::Duration d = one_window(device);
    CHECK(d.failed());
    CHECK(d.error_status() == LAPSE_ERROR_INTERNAL);
}

TEST_CASE("a FAILED duration carries method none, whatever the plugin wrote", "[answers][failed]")
{
    lapse::Device device = open("plugin = \"misbehaving\"\nanswer = \"failed_device\"\n");
    lapse::Duration d = one_window(device);
    REQUIRE(d.failed());
    CHECK(d.method() == lapse::TimingMethod::none);
    CHECK(d.error_status() == LAPSE_ERROR_DEVICE);
    CHECK_FALSE(d.interval().has_value());
}

TEST_CASE("a good answer reads as it was written (the double itself is sound)", "[answers]")
{
    lapse::Device device = open("plugin = \"misbehaving\"\n");
    lapse::Duration d = one_window(device);
    REQUIRE(d.ready());
    CHECK(d.interval()->ns() == 1000);
    CHECK_FALSE(d.work_queued());
    CHECK_FALSE(d.holds_earlier_work());
    CHECK(d.queued_ops() == 0);
}

TEST_CASE("the partial-duration flags reach the caller bare and through every mode of forward", "[answers][flags]")
{
    const char* stack = GENERATE("plugin = \"misbehaving\"\nanswer = \"flags\"\n",
                                 // forward passes the inner tokens through
                                 "plugin = \"forward\"\n[backend.inner]\nplugin = \"misbehaving\"\nanswer = \"flags\"\n",
                                 // forward maps its own tokens
                                 "plugin = \"forward\"\nown_tokens = true\n[backend.inner]\nplugin = \"misbehaving\"\n"
                                 "answer = \"flags\"\n",
                                 // forward cuts segments over a single-window backend
                                 "plugin = \"forward\"\n[backend.inner]\nplugin = \"misbehaving\"\nanswer = \"flags\"\n"
                                 "single_window = true\n");
    INFO(stack);
    lapse::Device device = open(stack);
    auto session = std::make_shared<lapse::Session>();
    device.record_into(session);
    lapse::Duration d = device.profile(0, [] {}, {.name = "w"});
    std::optional<lapse::Interval> iv = d.resolve();
    REQUIRE(iv.has_value());
    CHECK(d.work_queued());
    CHECK(d.holds_earlier_work());
    CHECK(d.queued_ops() == 7);
    CHECK(iv->work_queued());
    CHECK(iv->holds_earlier_work());
    CHECK(iv->queued_ops == 7);
    CHECK(iv->ns() == 1000);
    std::vector<lapse::WindowRecord> records = session->windows();
    REQUIRE(records.size() == 1);
    CHECK(records[0].flags == (LAPSE_DURATION_WORK_QUEUED | LAPSE_DURATION_HOLDS_EARLIER_WORK));
    CHECK(records[0].queued_ops == 7);
}

TEST_CASE("forward refuses an inner backend claiming 4294967295 streams, naming it", "[answers][streams]")
{
    lapse::Error e = test::error_of([] {
        open("plugin = \"forward\"\n[backend.inner]\nplugin = \"misbehaving\"\nstreams = 4294967295\n");
    });
    CHECK(std::string(e.what()).find("misbehaving") != std::string::npos);
    CHECK(std::string(e.what()).find("4294967295 streams") != std::string::npos);
    CHECK(std::string(e.what()).find("at most 65536") != std::string::npos);
}

TEST_CASE("fusion refuses an inner backend claiming 10 million streams, naming it", "[answers][streams]")
{
    lapse::Error e = test::error_of([] {
        open("plugin = \"fusion\"\n[backend.inner]\nplugin = \"misbehaving\"\nstreams = 10000000\n");
    });
    CHECK(std::string(e.what()).find("misbehaving") != std::string::npos);
    CHECK(std::string(e.what()).find("10000000 streams") != std::string::npos);
}

TEST_CASE("fusion over the most streams it allows opens without a batch per stream", "[answers][streams]")
{
    lapse::Device device =
        open("plugin = \"fusion\"\n[backend.inner]\nplugin = \"misbehaving\"\nstreams = 65536\n");
    CHECK(device.info().stream_count == 65536);
    bool ran = false;
    device.submit(65535, [&] { ran = true; });
    device.sync(65535);
    CHECK(ran);
}
