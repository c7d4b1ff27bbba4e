// Host-clock placement through the anchor: refreshed on its own about once
// per `anchor_period_ms`, and windows placed correctly whether their anchor
// is fresh, several refreshes old, or recycled out of the ring.
#include "cuda_support.hpp"

#include <thread>

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
    const int64_t t4 = now_ns();
    REQUIRE(r.state == LAPSE_DURATION_READY);
    // The fake stamps events on its driver thread, which a loaded 2-core
    // machine can schedule milliseconds late: the upper bounds allow 10 ms.
    // Placed through an anchor up to t4 - t0 later, a stamp carries the
    // device clock's drift over that distance (the double's 20 ppm; 50 ppm
    // allowed) and its 500 ns resolution, in either direction.
    const int64_t early = 1000 + (t4 - t0) / 20000;
    INFO("placed through an anchor up to " << (t4 - t0) / kMs << " ms away: " << early << " ns early allowed");
    CHECK(r.start_ns >= t0 - early);
    CHECK(r.start_ns <= t1 + 10 * kMs);
    CHECK(r.end_ns >= t2 - early);
    CHECK(r.end_ns <= t3 + 10 * kMs);
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

TEST_CASE("cuda: a resolve with a timeout never waits behind an anchor refresh stuck on the device", "[cuda][anchor]")
{
    FakeDevice d({{"anchor_period_ms", int64_t{20}}});
    lapse_token t = d.start(0);
    d.busy(0, kMs);
    d.end(t);
    REQUIRE(d.p().sync(d.device, 0, nullptr) == LAPSE_OK);  // the window's own events are done

    // The anchor's stream now shares a hardware queue with busy work: its
    // cuEventSynchronize blocks. (Lifted after 3 s in any case, so a
    // resolve that waits behind it shows as slow rather than hanging.)
    fake_cuda_stall_event_synchronize(1);
    std::thread lifter([] {
        std::this_thread::sleep_for(std::chrono::seconds(3));
        fake_cuda_stall_event_synchronize(0);
    });
    int64_t give_up = now_ns() + 2000 * kMs;
    while (counters().event_syncs_stalled == 0 && now_ns() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(counters().event_syncs_stalled == 1);  // the refresh is stuck in it

    int64_t t0 = now_ns();
    lapse_status st = LAPSE_OK;
    lapse_duration r = d.resolve(t, 20 * kMs, &st);
    int64_t took = now_ns() - t0;
    fake_cuda_stall_event_synchronize(0);
    lifter.join();
    CHECK(st == LAPSE_OK);
    CHECK(r.state == LAPSE_DURATION_READY);
    CHECK(took < 500 * kMs);  // 20 ms asked; generous for a loaded machine, far below the 3 s stall
}

TEST_CASE("cuda: placement stays on the host clock over a drifting device clock of another epoch", "[cuda][anchor]")
{
    FakeDevice d({{"anchor_period_ms", int64_t{10}}}, false);
    // Exaggerated (real GPUs drift by a few ppm): 0.5 per mille slow.
    fake_cuda_set_clock(-500.0, 500);
    d.open();
    for (int i = 0; i < 5; ++i) {
        int64_t t0 = now_ns();
        lapse_token t = d.start(0);
        d.busy(0, 5 * kMs);
        int64_t t1 = now_ns();
        d.end(t);
        int64_t t2 = now_ns();
        lapse_duration r = d.resolve(t);
        REQUIRE(r.state == LAPSE_DURATION_READY);
        // Device time: 5 ms read 0.05 % short, less one 0.5 us tick.
        CHECK(r.end_ns - r.start_ns >= 5 * kMs - 5 * kMs / 2000 - 1000);
        CHECK(r.end_ns - r.start_ns <= 5 * kMs + (t1 - t0) + 1000);
        // Placed through an anchor at most a few refreshes old: the drift
        // moves it by microseconds, the device's epoch not at all.
        CHECK(r.start_ns >= t0 - 50000);
        CHECK(r.start_ns <= t1 + 2 * kMs);
        CHECK(r.end_ns <= t2 + 5 * kMs + 2 * kMs);
        std::this_thread::sleep_for(std::chrono::milliseconds(7));
    }
}
