// submit = "host": host code runs in stream order between the command
// buffers that carry the stamps, so a window times it on the device clock.
#include "plugin_fixture.hpp"
#include "tolerance.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

using namespace lapse::test;

namespace {

int64_t spin(int64_t ns)
{
    const int64_t t0 = now_ns();
    while (now_ns() - t0 < ns) {
    }
    return now_ns() - t0;
}

}  // namespace

TEST_CASE("host work runs in stream order and a window around it reads its length", "[vulkan][host-work]")
{
    OpenDevice dev(base_config({{"submit", std::string("host")}}));
    REQUIRE(dev.open_status() == LAPSE_OK);
    // The window also holds two thread wake-ups (the worker when the GPU
    // reaches the work, lavapipe's queue when the work signals), which a
    // loaded 2-core machine can delay by a millisecond or more: 60 ms of
    // work keeps that under the tolerance, and one of up to ten attempts
    // must agree.
    double best_error = 1e9;
    for (int attempt = 0; attempt < 10 && best_error > kAccuracyTolerance; ++attempt) {
        std::atomic<int64_t> spun{0};
        std::atomic<bool> native_null{false};
        lapse_token t{};
        REQUIRE(dev.start(0, t) == LAPSE_OK);
        auto work = [&](VkCommandBuffer cb) {
            native_null = cb == VK_NULL_HANDLE;
            spun = spin(60000000);
        };
        REQUIRE(dev.submit(0, work) == LAPSE_OK);
        REQUIRE(dev.end(t) == LAPSE_OK);
        lapse_duration d{};
        // The work is asynchronous: right after submit, the window is pending.
        if (attempt == 0) {
            CHECK(dev.resolve_one(t, d, 0) == LAPSE_NOT_READY);
            CHECK(d.state == LAPSE_DURATION_PENDING);
        }
        REQUIRE(dev.resolve_one(t, d) == LAPSE_OK);
        REQUIRE(d.state == LAPSE_DURATION_READY);
        REQUIRE(dev.sync(0) == LAPSE_OK);
        CHECK(native_null);
        const double window = static_cast<double>(d.end_ns - d.start_ns);
        const double truth = static_cast<double>(spun.load());
        INFO("window " << window / 1e6 << " ms, work " << truth / 1e6 << " ms");
        best_error = std::min(best_error, std::fabs(window - truth) / truth);
    }
    CHECK(best_error <= kAccuracyTolerance);
    CHECK(dev.validation_messages() == 0);
}

TEST_CASE("sync waits for host work submitted last, and close runs what is still queued", "[vulkan][host-work]")
{
    std::atomic<int> ran{0};
    {
        OpenDevice dev(base_config({{"submit", std::string("host")}}));
        REQUIRE(dev.open_status() == LAPSE_OK);
        auto slow = [&](VkCommandBuffer) {
            spin(5000000);
            ++ran;
        };
        REQUIRE(dev.submit(0, slow) == LAPSE_OK);
        REQUIRE(dev.sync(0) == LAPSE_OK);
        CHECK(ran == 1);
        // Sync from inside host work would wait for itself: refused.
        lapse_status inner = LAPSE_OK;
        auto nested = [&](VkCommandBuffer) { inner = dev.sync(0); };
        REQUIRE(dev.submit(0, nested) == LAPSE_OK);
        REQUIRE(dev.sync(0) == LAPSE_OK);
        CHECK(inner == LAPSE_ERROR_INVALID_ARGUMENT);
        for (int i = 0; i < 3; ++i) REQUIRE(dev.submit(0, slow) == LAPSE_OK);
        dev.close();
        CHECK(dev.host().errors() == 0);
    }
    CHECK(ran == 4);
}
