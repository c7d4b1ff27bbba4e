// The query ring on a real device: a full ring is a clear error, resolving
// or abandoning frees it, a reused slot never yields a stale stamp, on both
// reset paths (host vkResetQueryPool, and vkCmdResetQueryPool).
#include "busy_kernel.hpp"
#include "plugin_fixture.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace lapse::test;

namespace {

std::unique_ptr<BusyKernel> kernel_for(OpenDevice& dev)
{
    lapse_vulkan_handles h{};
    h.struct_size = sizeof h;
    REQUIRE(dev.commands()->handles(dev.get(), 0, &h, nullptr) == LAPSE_OK);
    return std::make_unique<BusyKernel>(h.physical_device, h.device);
}

}  // namespace

TEST_CASE("a ring of 8 queries holds 4 windows, and the 5th is a capacity error until one is resolved", "[vulkan][ring]")
{
    OpenDevice dev(base_config({{"ring_size", int64_t{8}}}));
    REQUIRE(dev.open_status() == LAPSE_OK);
    lapse_token t[4];
    for (auto& x : t) REQUIRE(dev.start(0, x) == LAPSE_OK);
    REQUIRE(dev.end(t[0]) == LAPSE_OK);
    REQUIRE(dev.end(t[1]) == LAPSE_OK);

    lapse_token extra{};
    lapse_error e = make_error();
    REQUIRE(dev.start(0, extra, &e) == LAPSE_ERROR_CAPACITY);
    const std::string message = e.message;
    INFO(message);
    CHECK(message.find("4 windows pending") != std::string::npos);
    CHECK(message.find("ring_size") != std::string::npos);
    CHECK(message.find("profile_start") != std::string::npos);

    // Resolving the oldest frees its slot.
    lapse_duration d{};
    REQUIRE(dev.resolve_one(t[0], d) == LAPSE_OK);
    CHECK(d.state == LAPSE_DURATION_READY);
    REQUIRE(dev.start(0, extra) == LAPSE_OK);
    CHECK(dev.start(0, extra, &e) == LAPSE_ERROR_CAPACITY);

    // Abandoning frees too, once the device is done with the slot; the
    // windows still open are untouched.
    dev.plugin().profile_abandon(dev.get(), t[1]);
    REQUIRE(dev.sync(0) == LAPSE_OK);
    lapse_token again{};
    CHECK(dev.start(0, again) == LAPSE_OK);
    for (lapse_token x : {t[2], t[3], again}) {
        REQUIRE(dev.end(x) == LAPSE_OK);
        REQUIRE(dev.resolve_one(x, d) == LAPSE_OK);
        CHECK(d.state == LAPSE_DURATION_READY);
    }
    dev.plugin().profile_abandon(dev.get(), extra);
    CHECK(dev.validation_messages() == 0);
    dev.close();
    CHECK(dev.host().errors() == 0);
}

TEST_CASE("a reused slot never reads the previous window's stamps", "[vulkan][ring]")
{
    auto reset_path = GENERATE(true, false);
    DYNAMIC_SECTION((reset_path ? "host query reset" : "command query reset"))
    {
        OpenDevice dev(base_config({{"ring_size", int64_t{4}}, {"host_query_reset", reset_path}}));
        REQUIRE(dev.open_status() == LAPSE_OK);
        auto busy = kernel_for(dev);
        auto small = [&](VkCommandBuffer cb) { busy->record(cb, 1000); };
        REQUIRE(dev.submit(0, small) == LAPSE_OK);  // warm-up (compile)
        REQUIRE(dev.sync(0) == LAPSE_OK);

        // Lap the ring several times with short windows, then put a long
        // job in a reused slot and poll it: the slot's old stamps are
        // available, so a plugin that trusted availability alone would
        // answer READY with the old (short) duration here.
        int64_t last_start = 0;
        for (int i = 0; i < 9; ++i) {
            lapse_token t{};
            REQUIRE(dev.start(0, t) == LAPSE_OK);
            REQUIRE(dev.end(t) == LAPSE_OK);
            lapse_duration d{};
            REQUIRE(dev.resolve_one(t, d) == LAPSE_OK);
            REQUIRE(d.state == LAPSE_DURATION_READY);
            CHECK(d.start_ns >= last_start);
            last_start = d.start_ns;
        }
        lapse_token t{};
        REQUIRE(dev.start(0, t) == LAPSE_OK);
        auto long_job = [&](VkCommandBuffer cb) { busy->record(cb, 3000000); };
        REQUIRE(dev.submit(0, long_job) == LAPSE_OK);
        REQUIRE(dev.end(t) == LAPSE_OK);
        lapse_duration d{};
        if (dev.resolve_one(t, d, 0) == LAPSE_OK)
            FAIL("a poll right after submitting a long job read READY: stale stamps of the slot's last window");
        CHECK(d.state == LAPSE_DURATION_PENDING);
        REQUIRE(dev.resolve_one(t, d) == LAPSE_OK);
        CHECK(d.state == LAPSE_DURATION_READY);
        CHECK(d.start_ns >= last_start);
        CHECK(d.end_ns - d.start_ns > 1000000);
        CHECK(dev.validation_messages() == 0);
        busy.reset();
        dev.close();
        INFO(dev.host().joined_lines());
        CHECK(dev.host().errors() == 0);
    }
}

// Own mode resets a slot when it is taken again, and resets several slots
// ahead with one command in its own segment. A window opened inside a
// submit callback sits in an earlier command buffer than the segment
// recorded meanwhile by another thread: a reset of its slot recorded there
// would run after its stamps were written and erase them (NOT_MEASURED,
// and the validation layer would see a write to an unreset query).
TEST_CASE("a window opened in a submit callback keeps its stamps while another thread records resets",
          "[vulkan][ring]")
{
    auto reset_path = GENERATE(true, false);
    DYNAMIC_SECTION((reset_path ? "host query reset" : "command query reset"))
    {
        OpenDevice dev(base_config({{"ring_size", int64_t{16}}, {"host_query_reset", reset_path}}));
        REQUIRE(dev.open_status() == LAPSE_OK);
        const auto* ext = dev.commands();
        REQUIRE(ext != nullptr);
        // Lap the 8-window ring once so that every slot needs a reset again.
        for (int i = 0; i < 8; ++i) {
            lapse_token t{};
            REQUIRE(dev.start(0, t) == LAPSE_OK);
            REQUIRE(dev.end(t) == LAPSE_OK);
            lapse_duration d{};
            REQUIRE(dev.resolve_one(t, d) == LAPSE_OK);
            REQUIRE(d.state == LAPSE_DURATION_READY);
        }
        lapse_token outside{}, inside{};
        lapse_status other = LAPSE_ERROR_INTERNAL, st = LAPSE_ERROR_INTERNAL, en = LAPSE_ERROR_INTERNAL;
        auto work = [&](VkCommandBuffer cb) {
            // Another thread opens a window first: it goes to the segment
            // after this callback's buffer.
            std::thread([&] {
                other = dev.start(0, outside);
                if (other == LAPSE_OK) other = dev.end(outside);
            }).join();
            st = ext->cmd_profile_start(dev.get(), cb, 0, &inside, nullptr);
            if (st == LAPSE_OK) en = ext->cmd_profile_end(dev.get(), cb, inside, nullptr);
        };
        REQUIRE(dev.submit(0, work) == LAPSE_OK);
        REQUIRE(other == LAPSE_OK);
        REQUIRE(st == LAPSE_OK);
        REQUIRE(en == LAPSE_OK);
        lapse_token both[2] = {inside, outside};
        lapse_duration d[2] = {make_duration(), make_duration()};
        REQUIRE(dev.resolve(both, d, 2, LAPSE_WAIT_FOREVER) == LAPSE_OK);
        CHECK(d[0].state == LAPSE_DURATION_READY);
        CHECK(d[1].state == LAPSE_DURATION_READY);
        // And the ring keeps working: more laps, all measured.
        for (int i = 0; i < 20; ++i) {
            lapse_token t{};
            REQUIRE(dev.start(0, t) == LAPSE_OK);
            REQUIRE(dev.end(t) == LAPSE_OK);
            lapse_duration r{};
            REQUIRE(dev.resolve_one(t, r) == LAPSE_OK);
            CHECK(r.state == LAPSE_DURATION_READY);
        }
        CHECK(dev.validation_messages() == 0);
        dev.close();
        INFO(dev.host().joined_lines());
        CHECK(dev.host().errors() == 0);
    }
}

// Own mode reads stamps from the copies each segment's end makes of the
// queries stamped in it (plugins/vulkan/src/stamp_copies.cpp). An outer
// window whose start and end land in different segments, around inner
// windows spread over several segments, round after round until the
// ranges cross the ring's end: every window must read both its stamps,
// in order, from copies made by different command buffers.
TEST_CASE("a window open across segments and the ring's end reads the stamps each segment copied",
          "[vulkan][ring][resolve]")
{
    auto reset_path = GENERATE(true, false);
    DYNAMIC_SECTION((reset_path ? "host query reset" : "command query reset"))
    {
        // 16 windows in the ring, a segment submitted every 3 windows.
        OpenDevice dev(base_config(
            {{"ring_size", int64_t{32}}, {"batch_windows", int64_t{3}}, {"host_query_reset", reset_path}}));
        REQUIRE(dev.open_status() == LAPSE_OK);
        for (int round = 0; round < 5; ++round) {
            INFO("round " << round);
            lapse_token outer{};
            REQUIRE(dev.start(0, outer) == LAPSE_OK);
            std::vector<lapse_token> inner(11);
            for (auto& t : inner) {
                REQUIRE(dev.start(0, t) == LAPSE_OK);
                REQUIRE(dev.end(t) == LAPSE_OK);
            }
            REQUIRE(dev.end(outer) == LAPSE_OK);
            lapse_duration o{};
            REQUIRE(dev.resolve_one(outer, o) == LAPSE_OK);
            REQUIRE(o.state == LAPSE_DURATION_READY);
            int64_t last_start = o.start_ns;
            for (const lapse_token& t : inner) {
                lapse_duration d{};
                REQUIRE(dev.resolve_one(t, d) == LAPSE_OK);
                REQUIRE(d.state == LAPSE_DURATION_READY);
                CHECK(d.start_ns >= last_start);
                CHECK(d.end_ns >= d.start_ns);
                CHECK(d.end_ns <= o.end_ns);
                last_start = d.start_ns;
            }
        }
        CHECK(dev.validation_messages() == 0);
        dev.close();
        INFO(dev.host().joined_lines());
        CHECK(dev.host().errors() == 0);
    }
}
