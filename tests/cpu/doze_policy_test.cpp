// How long the CPU worker dozes through a burst of markers (DozePolicy,
// header-only in the plugin): the arithmetic on its own, with times given.
#include "doze_policy.hpp"

#include <catch2/catch.hpp>

using lapse::cpu::DozePolicy;

namespace {

constexpr int64_t kUs = 1000;
constexpr uint64_t kRing = 4096;

}  // namespace

TEST_CASE("doze: the first look of a burst pauses, to measure the rate", "[doze]")
{
    DozePolicy doze;
    CHECK(doze.on_pushing(1'000'000, 5000, kRing) == 0);
}

TEST_CASE("doze: as long as the producer takes to fill half the ring at the rate since the last look", "[doze]")
{
    DozePolicy doze;
    REQUIRE(doze.on_pushing(1'000'000, 1000, kRing) == 0);
    // 1,000 cells in 20 us: 20 ns a cell, so half of 4,096 cells in 40.96 us.
    CHECK(doze.on_pushing(1'000'000 + 20 * kUs, 2000, kRing) == 40'960);
    // A ring twice as large, twice as long.
    CHECK(doze.on_pushing(1'000'000 + 40 * kUs, 3000, 2 * kRing) == 81'920);
}

TEST_CASE("doze: never longer than its bound, never shorter than what pays for it", "[doze]")
{
    DozePolicy doze;
    REQUIRE(doze.on_pushing(0, 100, kRing) == 0);
    // 100 cells in 100 us (1 us a cell): 2 ms to fill half the ring.
    CHECK(doze.on_pushing(100 * kUs, 200, kRing) == DozePolicy::kMaxDozeNs);
    // 1,000 cells in 5 us: 10 us to fill it, shorter than a doze is worth.
    CHECK(doze.on_pushing(105 * kUs, 1200, kRing) == 0);
}

TEST_CASE("doze: what dozes overran is asked for less, and a doze that came back early teaches nothing", "[doze]")
{
    DozePolicy doze;
    REQUIRE(doze.on_pushing(0, 1000, kRing) == 0);
    const int64_t asked = doze.on_pushing(20 * kUs, 2000, kRing);
    REQUIRE(asked == 40'960);
    // Four dozes that each lasted 40 us longer than asked.
    int64_t now = 20 * kUs;
    for (int i = 0; i < 4; ++i) {
        doze.on_woke(now, asked, now + asked + 40 * kUs, false);
        now += asked + 40 * kUs;
    }
    const int64_t overrun = doze.overrun_ns();
    CHECK(overrun > 20 * kUs);
    CHECK(overrun <= 40 * kUs);
    // Same rate: asks for the fill time less the overrun.
    const int64_t look = now + 40 * kUs;
    CHECK(doze.on_pushing(look, 2000 + static_cast<uint64_t>(look - 20 * kUs) / 20, 2 * kRing) == 81'920 - overrun);
    // A spurious early return leaves the overrun as it was, or shrinks it.
    doze.on_woke(now, asked, now + 1 * kUs, false);
    CHECK(doze.overrun_ns() <= overrun);
    CHECK(doze.overrun_ns() >= 0);
}

TEST_CASE("doze: a doze the scheduler kept off a CPU for milliseconds does not stop the worker dozing", "[doze]")
{
    DozePolicy doze;
    REQUIRE(doze.on_pushing(0, 1000, kRing) == 0);
    const int64_t asked = doze.on_pushing(20 * kUs, 2000, kRing);
    REQUIRE(asked == 40'960);
    // Woken 4 ms late (preempted): counted as an overrun of kMaxDozeNs at most.
    doze.on_woke(20 * kUs, asked, 20 * kUs + asked + 4'000 * kUs, false);
    CHECK(doze.overrun_ns() <= DozePolicy::kMaxDozeNs / 4);
    // The same rate: the overrun is longer than the doze would be, and the
    // worker still dozes the least that pays, so it learns again.
    int64_t now = 20 * kUs + asked + 4'000 * kUs;
    uint64_t cells = 3000;
    REQUIRE(doze.on_pushing(now, cells, kRing) == 0);  // so long after the last look: a new burst
    now += 20 * kUs;
    cells += 1000;
    CHECK(doze.on_pushing(now, cells, kRing) == DozePolicy::kMinDozeNs);
    // Dozes that end on time bring it back.
    int64_t d = DozePolicy::kMinDozeNs;
    for (int i = 0; i < 16; ++i) {
        doze.on_woke(now, d, now + d, false);
        now += d + 20 * kUs;
        cells += static_cast<uint64_t>(d + 20 * kUs) / 20;
        d = doze.on_pushing(now, cells, kRing);
        REQUIRE(d >= DozePolicy::kMinDozeNs);
    }
    CHECK(doze.overrun_ns() < 5 * kUs);
    CHECK(d > 35 * kUs);
}

TEST_CASE("doze: a doze a waker cut short makes the worker pause for a while, then doze again", "[doze]")
{
    DozePolicy doze;
    REQUIRE(doze.on_pushing(0, 1000, kRing) == 0);
    REQUIRE(doze.on_pushing(20 * kUs, 2000, kRing) > 0);
    doze.on_woke(20 * kUs, 40'960, 30 * kUs, true);  // a resolver woke it after 10 us
    // The same rate, within the quiet time: pause.
    CHECK(doze.on_pushing(50 * kUs, 3000, kRing) == 0);
    CHECK(doze.on_pushing(30 * kUs + DozePolicy::kQuietAfterHurryNs - 20 * kUs,
                          3000 + (DozePolicy::kQuietAfterHurryNs - 70 * kUs) / 20, kRing) == 0);
    // After it: doze.
    const int64_t later = 30 * kUs + DozePolicy::kQuietAfterHurryNs + 10 * kUs;
    CHECK(doze.on_pushing(later, 3000 + (DozePolicy::kQuietAfterHurryNs - 20 * kUs) / 20, kRing) > 0);
}

TEST_CASE("doze: looks far apart start a new burst, which pauses first", "[doze]")
{
    DozePolicy doze;
    REQUIRE(doze.on_pushing(0, 1000, kRing) == 0);
    REQUIRE(doze.on_pushing(20 * kUs, 2000, kRing) > 0);
    CHECK(doze.on_pushing(20 * kUs + DozePolicy::kRateWindowNs + 1, 2500, kRing) == 0);
    // Nothing taken since the last look: no rate either.
    CHECK(doze.on_pushing(40 * kUs + DozePolicy::kRateWindowNs, 2500, kRing) == 0);
}
