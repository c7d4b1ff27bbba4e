// Config and availability: bad values are config errors naming the key,
// a missing device is "unavailable" with the reason, a queue without
// timestamps opens no window, and a narrow mask still measures right.
#include "busy_kernel.hpp"
#include "plugin_fixture.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace lapse::test;

TEST_CASE("bad config values are refused with the key named", "[vulkan][config]")
{
    struct Case {
        const char* key;
        TestHost::Value value;
    };
    auto c = GENERATE(Case{"ring_size", int64_t{7}}, Case{"ring_size", int64_t{0}}, Case{"queues", int64_t{0}},
                      Case{"mode", std::string("borrowed")}, Case{"start_stage", std::string("compute")},
                      Case{"validation", std::string("yes")}, Case{"device", true});
    OpenDevice dev(TestHost::Config{{c.key, c.value}});
    INFO(dev.open_message());
    CHECK(dev.open_status() == LAPSE_ERROR_CONFIG);
    CHECK(dev.get() == nullptr);
    CHECK(dev.open_message().find(c.key) != std::string::npos);
}

TEST_CASE("a device that is not there is unavailable, with the devices found", "[vulkan][config]")
{
    SECTION("by name")
    {
        OpenDevice dev(TestHost::Config{{"device", std::string("no-such-gpu")}});
        CHECK(dev.open_status() == LAPSE_ERROR_UNAVAILABLE);
        CHECK(dev.open_message().find("no-such-gpu") != std::string::npos);
        CHECK(dev.open_message().find("llvmpipe") != std::string::npos);
    }
    SECTION("by index")
    {
        OpenDevice dev(TestHost::Config{{"device", int64_t{99}}});
        CHECK(dev.open_status() == LAPSE_ERROR_UNAVAILABLE);
        CHECK(dev.open_message().find("99") != std::string::npos);
    }
    SECTION("by a name substring, any case")
    {
        OpenDevice dev(TestHost::Config{{"device", std::string("LLVMpipe")}});
        CHECK(dev.open_status() == LAPSE_OK);
    }
}

TEST_CASE("a queue with zero valid timestamp bits opens no window, and work still runs", "[vulkan][config]")
{
    OpenDevice dev(base_config({{"simulate_valid_bits", int64_t{0}}}));
    REQUIRE(dev.open_status() == LAPSE_OK);
    lapse_device_info info = dev.describe();
    CHECK((info.capabilities & LAPSE_CAP_DEVICE_CLOCK) == 0);
    CHECK((info.capabilities & LAPSE_CAP_HOST_TIMELINE) == 0);
    lapse_token t{};
    CHECK(dev.start(0, t) == LAPSE_NO_WINDOW);
    // The caller's system-time fallback needs submit and sync to work.
    bool ran = false;
    auto work = [&](VkCommandBuffer cb) { ran = cb != VK_NULL_HANDLE; };
    REQUIRE(dev.submit(0, work) == LAPSE_OK);
    CHECK(ran);
    CHECK(dev.sync(0) == LAPSE_OK);
    CHECK(dev.validation_messages() == 0);
    dev.close();
    CHECK(dev.host().errors() == 0);
}

TEST_CASE("with a 36-bit mask the stamps wrap and windows still measure and place right", "[vulkan][config]")
{
    // lavapipe's clock is CLOCK_MONOTONIC in ns: after 68 s of uptime its
    // low 36 bits have wrapped, so both the subtraction and the placement
    // on the host timeline go through the masked arithmetic.
    OpenDevice dev(base_config({{"simulate_valid_bits", int64_t{36}}}));
    REQUIRE(dev.open_status() == LAPSE_OK);
    lapse_vulkan_handles h{};
    h.struct_size = sizeof h;
    REQUIRE(dev.commands()->handles(dev.get(), 0, &h, nullptr) == LAPSE_OK);
    CHECK(h.timestamp_valid_bits == 36);
    BusyKernel busy(h.physical_device, h.device);
    auto warm = [&](VkCommandBuffer cb) { busy.record(cb, 1000); };
    REQUIRE(dev.submit(0, warm) == LAPSE_OK);
    REQUIRE(dev.sync(0) == LAPSE_OK);

    lapse_token t{};
    const int64_t t0 = now_ns();
    REQUIRE(dev.start(0, t) == LAPSE_OK);
    auto work = [&](VkCommandBuffer cb) { busy.record(cb, 2000000); };
    REQUIRE(dev.submit(0, work) == LAPSE_OK);
    REQUIRE(dev.end(t) == LAPSE_OK);
    REQUIRE(dev.sync(0) == LAPSE_OK);
    const int64_t t1 = now_ns();
    lapse_duration d{};
    REQUIRE(dev.resolve_one(t, d) == LAPSE_OK);
    REQUIRE(d.state == LAPSE_DURATION_READY);
    CHECK(d.clock_domain == LAPSE_CLOCK_HOST_MONOTONIC);
    CHECK(d.start_ns >= t0 - 100000);
    CHECK(d.end_ns <= t1 + 100000);
    CHECK(d.end_ns - d.start_ns > 0);
    CHECK(dev.validation_messages() == 0);
}

TEST_CASE("without calibration durations stay in the device domain and say so", "[vulkan][config]")
{
    OpenDevice dev(base_config({{"calibrate", false}}));
    REQUIRE(dev.open_status() == LAPSE_OK);
    CHECK((dev.describe().capabilities & LAPSE_CAP_HOST_TIMELINE) == 0);
    lapse_token t{};
    REQUIRE(dev.start(0, t) == LAPSE_OK);
    REQUIRE(dev.end(t) == LAPSE_OK);
    lapse_duration d{};
    REQUIRE(dev.resolve_one(t, d) == LAPSE_OK);
    CHECK(d.state == LAPSE_DURATION_READY);
    CHECK(d.clock_domain == LAPSE_CLOCK_DEVICE);
    CHECK(d.method == LAPSE_TIMING_DEVICE);
}

TEST_CASE("closing with windows still open abandons them and says how many", "[vulkan][config]")
{
    OpenDevice dev(base_config());
    REQUIRE(dev.open_status() == LAPSE_OK);
    lapse_token a{}, b{};
    REQUIRE(dev.start(0, a) == LAPSE_OK);
    REQUIRE(dev.start(0, b) == LAPSE_OK);
    REQUIRE(dev.end(b) == LAPSE_OK);
    dev.close();
    CHECK(dev.host().errors() == 0);
    CHECK(dev.host().joined_lines().find("abandoned 2 window") != std::string::npos);
}
