// Host-clock placement through the anchor: refreshed on its own about once
// per `anchor_period_ms`, and windows placed correctly whether their anchor
// is fresh, several refreshes old, or recycled out of the ring.
#include "cuda_support.hpp"

using namespace lapse::test;

namespace {
constexpr int64_t kMs = 1000000;
}

TEST_CASE("cuda: the anchor refreshes itself periodically", "[cuda][anchor]")
{
    FakeDevice d({{"anchor_period_ms", int64_t{20}}});
    int64_t before = counters().event_synchronizes;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    // One cuEventSynchronize per refresh; ~10 are due, the machine may be slow.
    CHECK(counters().event_synchronizes - before >= 4);
}

TEST_CASE("cuda: windows are placed on the host clock across anchor refreshes", "[cuda][anchor]")
{
    FakeDevice d({{"anchor_period_ms", int64_t{10}}});
    int64_t t0 = now_ns();
    lapse_token t = d.start(0);
    int64_t t1 = now_ns();
    // Several refreshes between start and end, and more than the ring holds
    // before resolve: its own anchor is gone, the newest one places it.
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    int64_t t2 = now_ns();
    d.end(t);
    int64_t t3 = now_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    lapse_duration r = d.resolve(t);
    REQUIRE(r.state == LAPSE_DURATION_READY);
    CHECK(r.start_ns >= t0 - 1000);
    CHECK(r.start_ns <= t1 + 2 * kMs);
    CHECK(r.end_ns >= t2 - 1000);
    CHECK(r.end_ns <= t3 + 2 * kMs);
}

TEST_CASE("cuda: a window's placement uses the anchor it captured when still there", "[cuda][anchor]")
{
    FakeDevice d({{"anchor_period_ms", int64_t{30}}});
    std::vector<lapse_token> tokens;
    std::vector<std::pair<int64_t, int64_t>> bounds;
    for (int i = 0; i < 6; ++i) {
        int64_t a = now_ns();
        lapse_token t = d.start(0);
        d.busy(0, kMs);
        d.end(t);
        bounds.push_back({a, now_ns()});
        tokens.push_back(t);
        std::this_thread::sleep_for(std::chrono::milliseconds(12));
    }
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        lapse_duration r = d.resolve(tokens[i]);
        REQUIRE(r.state == LAPSE_DURATION_READY);
        CHECK(r.start_ns >= bounds[i].first - 1000);
        CHECK(r.start_ns <= bounds[i].second + 2 * kMs);
        CHECK(r.end_ns - r.start_ns >= kMs - 1000);
    }
}
