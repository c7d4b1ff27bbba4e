// The query ring's rules, without a device: never hand out a slot whose
// queries may still be written, reclaim in order, reset what is reclaimed.
#include "query_ring.hpp"

#include <catch2/catch.hpp>

#include <utility>
#include <vector>

using namespace lapse::vulkan;

namespace {

struct Resets {
    std::vector<std::pair<uint32_t, uint32_t>> runs;  // (first query, count)
};

uint64_t reclaim(QueryRing& ring, Resets& resets, bool abandoned_done = true)
{
    return ring.reclaim([&](const RingSlot&) { return abandoned_done; },
                        [&](uint32_t first, uint32_t count) { resets.runs.emplace_back(first, count); });
}

}  // namespace

TEST_CASE("a ring of 4 windows is full after 4 opens and never reuses a pending slot", "[vulkan][ring]")
{
    QueryRing ring(4);
    uint64_t p[4];
    for (int i = 0; i < 4; ++i) ring.open(p[i]);
    CHECK(ring.full());
    CHECK(ring.in_use() == 4);
    Resets r;
    CHECK(reclaim(ring, r) == 0);  // all open: nothing may be reclaimed
    CHECK(ring.full());
    CHECK(r.runs.empty());
}

TEST_CASE("the tail only passes released slots, in order", "[vulkan][ring]")
{
    QueryRing ring(4);
    uint64_t p[4];
    for (int i = 0; i < 4; ++i) ring.open(p[i]);
    // Release the second one first: the first still blocks the tail.
    ring.find(p[1])->state = SlotState::Released;
    Resets r;
    CHECK(reclaim(ring, r) == 0);
    CHECK(ring.full());
    ring.find(p[0])->state = SlotState::Released;
    CHECK(reclaim(ring, r) == 2);
    CHECK_FALSE(ring.full());
    REQUIRE(r.runs.size() == 1);
    CHECK(r.runs[0] == std::make_pair(0u, 4u));  // queries 0..3 of windows 0 and 1
    // Reclaimed windows are gone: a stale token finds nothing.
    CHECK(ring.find(p[0]) == nullptr);
    CHECK(ring.find(p[1]) == nullptr);
    CHECK(ring.find(p[2]) != nullptr);
}

TEST_CASE("abandoned slots wait until the device is done with them", "[vulkan][ring]")
{
    QueryRing ring(2);
    uint64_t a, b;
    ring.open(a);
    ring.open(b);
    ring.find(a)->state = SlotState::AbandonedOpen;
    Resets r;
    CHECK(reclaim(ring, r, /*abandoned_done=*/false) == 0);
    CHECK(ring.full());
    CHECK(reclaim(ring, r, /*abandoned_done=*/true) == 1);
    CHECK_FALSE(ring.full());
}

TEST_CASE("positions keep growing across laps and resets split at the wrap", "[vulkan][ring]")
{
    QueryRing ring(3);
    Resets r;
    uint64_t last = 0;
    for (int lap = 0; lap < 5; ++lap) {
        for (int i = 0; i < 3; ++i) {
            REQUIRE_FALSE(ring.full());
            ring.open(last);
        }
        for (uint64_t p = last - 2; p <= last; ++p) ring.find(p)->state = SlotState::Released;
        reclaim(ring, r);
    }
    CHECK(last == 14);
    CHECK(ring.head() == 15);
    CHECK(ring.tail() == 15);
    // Open two, release both, wrap: 15 % 3 = 0, so no split; then a split one.
    uint64_t x, y, z;
    ring.open(x);  // index 0
    ring.open(y);  // index 1
    ring.find(x)->state = SlotState::Released;
    ring.find(y)->state = SlotState::Released;
    r.runs.clear();
    reclaim(ring, r);
    ring.open(z);   // index 2
    ring.open(x);   // index 0 (wrapped)
    ring.find(z)->state = SlotState::Released;
    ring.find(x)->state = SlotState::Released;
    r.runs.clear();
    reclaim(ring, r);
    REQUIRE(r.runs.size() == 2);
    CHECK(r.runs[0] == std::make_pair(4u, 2u));
    CHECK(r.runs[1] == std::make_pair(0u, 2u));
    CHECK(ring.count_live() == 0);
}

TEST_CASE("a reset ahead covers only reclaimed slots and stops at the ring's end", "[vulkan][ring]")
{
    QueryRing ring(4);
    Resets r;
    CHECK(ring.reset_frontier() == 0);
    // A fresh ring: every slot may be reset, at most `max` of them.
    CHECK(ring.resettable_run(0, 3) == 3);
    CHECK(ring.resettable_run(0, 100) == 4);
    ring.mark_reset(4);
    CHECK(ring.reset_frontier() == 4);
    ring.mark_reset(2);  // the frontier never moves back
    CHECK(ring.reset_frontier() == 4);

    uint64_t p[4];
    for (auto& x : p) ring.open(x);
    // Full: position 4 is slot 0, still held by window 0.
    CHECK(ring.resettable_run(4, 100) == 0);
    ring.find(p[0])->state = SlotState::Released;
    ring.find(p[1])->state = SlotState::Released;
    REQUIRE(reclaim(ring, r) == 2);
    // Windows 4 and 5 take slots 0 and 1, whose windows are reclaimed;
    // slot 2 is still window 2's.
    CHECK(ring.resettable_run(4, 100) == 2);
    CHECK(ring.resettable_run(5, 100) == 1);
    CHECK(ring.resettable_run(6, 100) == 0);

    ring.find(p[2])->state = SlotState::Released;
    ring.find(p[3])->state = SlotState::Released;
    REQUIRE(reclaim(ring, r) == 2);
    uint64_t q[2];
    ring.open(q[0]);
    ring.open(q[1]);
    ring.find(q[0])->state = SlotState::Released;
    ring.find(q[1])->state = SlotState::Released;
    REQUIRE(reclaim(ring, r) == 2);
    // Windows 6..9 all have reclaimed slots, but a run from window 6
    // (slot 2) stops at slot 3, the ring's end; window 8 starts at slot 0.
    CHECK(ring.resettable_run(6, 100) == 2);
    CHECK(ring.resettable_run(7, 100) == 1);
    CHECK(ring.resettable_run(8, 100) == 2);
}
