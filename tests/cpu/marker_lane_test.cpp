// The CPU plugin's per-thread marker lanes on their own (compiled in from
// the plugin): order, epochs against the stream's queue, a full lane, the
// producer spared while it writes, and one lane per thread.
#include "marker_lane.hpp"
#include "mpsc_queue.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

using lapse::cpu::MarkerLane;
using lapse::cpu::MarkerLanes;
using lapse::cpu::MpscQueue;

namespace {

uint32_t start_cell(uint32_t key) { return MpscQueue::marker_cell(MpscQueue::kStart, key); }
uint32_t end_cell(uint32_t key) { return MpscQueue::marker_cell(MpscQueue::kEnd, key); }

std::vector<uint32_t> take_all(MarkerLane& lane, uint64_t position, bool spare = false, bool* held_out = nullptr)
{
    std::vector<uint32_t> out(4096);
    bool held = false;
    const uint32_t n = lane.take(out.data(), static_cast<uint32_t>(out.size()), position, spare, held);
    out.resize(n);
    if (held_out != nullptr) *held_out = held;
    return out;
}

}  // namespace

TEST_CASE("a lane hands its markers back in the order they were pushed", "[lane]")
{
    MarkerLane lane(1, 64);
    for (uint32_t k = 1; k <= 20; ++k) REQUIRE(lane.try_push(k % 2 ? start_cell(k) : end_cell(k), 0));
    const auto got = take_all(lane, 0);
    REQUIRE(got.size() == 20);
    for (uint32_t k = 1; k <= 20; ++k) CHECK(got[k - 1] == (k % 2 ? start_cell(k) : end_cell(k)));
    CHECK_FALSE(lane.has_cells());
}

TEST_CASE("a lane holds back the markers pushed after a queue entry the worker has not reached", "[lane]")
{
    MarkerLane lane(1, 64);
    REQUIRE(lane.try_push(start_cell(1), 0));  // before the queue's entry 0
    REQUIRE(lane.try_push(end_cell(1), 5));    // after the queue's entries 0..4
    REQUIRE(lane.try_push(start_cell(2), 5));
    REQUIRE(lane.try_push(end_cell(2), 9));
    CHECK(take_all(lane, 0) == std::vector<uint32_t>{start_cell(1)});
    CHECK(take_all(lane, 4).empty());  // entry 4 not run yet
    CHECK(take_all(lane, 5) == (std::vector<uint32_t>{end_cell(1), start_cell(2)}));
    CHECK(take_all(lane, 8).empty());
    CHECK(take_all(lane, 100) == std::vector<uint32_t>{end_cell(2)});
    CHECK_FALSE(lane.has_cells());
}

TEST_CASE("a full lane refuses a marker, and takes markers again once the worker took cells", "[lane]")
{
    MarkerLane lane(1, 64);
    uint32_t pushed = 0;
    while (lane.try_push(start_cell(pushed + 1), 0)) ++pushed;
    CHECK(pushed == lane.capacity());
    CHECK_FALSE(lane.try_push(start_cell(999), 0));
    CHECK(take_all(lane, 0).size() == pushed);
    // An epoch costs cells too: room for it is checked with the marker.
    for (uint32_t i = 0; i < lane.capacity() - MarkerLane::kEpochCells; ++i) REQUIRE(lane.try_push(end_cell(i + 1), 7));
    CHECK_FALSE(lane.try_push(end_cell(1), 7));
}

TEST_CASE("a worker sparing a lane's producer takes whole lines well behind it, never ending on a start marker",
          "[lane]")
{
    MarkerLane lane(1, 4096);
    // 300 windows: start, end, start, end ...
    for (uint32_t k = 1; k <= 300; ++k) {
        REQUIRE(lane.try_push(start_cell(k), 0));
        REQUIRE(lane.try_push(end_cell(k), 0));
    }
    bool held = false;
    const auto first = take_all(lane, 0, true, &held);
    CHECK(held);
    CHECK(first.size() <= 600 - 64);  // the last four lines stay with the producer
    CHECK(first.size() >= 600 - 64 - 16);
    REQUIRE_FALSE(first.empty());
    CHECK(MpscQueue::marker_kind(first.back()) == MpscQueue::kEnd);
    // The producer stopped: the next look takes the rest.
    const auto rest = take_all(lane, 0, true, &held);
    CHECK_FALSE(held);
    CHECK(first.size() + rest.size() == 600);
    CHECK(rest.back() == end_cell(300));
}

TEST_CASE("each thread finds its own lane, made on its first claim", "[lane]")
{
    MarkerLanes lanes(256, true);
    if (!lanes.enabled()) {  // membarrier refused: every marker uses the queue
        CHECK(lanes.claim() == nullptr);
        return;
    }
    CHECK(lanes.find() == nullptr);
    MarkerLane* mine = lanes.claim();
    REQUIRE(mine != nullptr);
    CHECK(lanes.find() == mine);
    CHECK(lanes.claim() == mine);
    MarkerLane* theirs = nullptr;
    std::thread([&] { theirs = lanes.claim(); }).join();
    CHECK(theirs != mine);  // nullptr when its slot is this thread's: then it uses the queue
    CHECK(lanes.cells_allocated() == (theirs != nullptr ? 512u : 256u));
}

TEST_CASE("lanes of four producers: the worker takes every marker once, each lane's in its own order", "[lane][threads]")
{
    MarkerLanes lanes(256, true);
    if (!lanes.enabled()) {  // membarrier refused: every marker uses the queue
        CHECK(lanes.claim() == nullptr);
        return;
    }
    constexpr uint32_t kProducers = 4;
    constexpr uint32_t kEach = 20000;
    std::atomic<uint32_t> done{0};
    std::vector<std::thread> producers;
    for (uint32_t p = 0; p < kProducers; ++p)
        producers.emplace_back([&, p] {
            MarkerLane* lane = lanes.claim();
            for (uint32_t i = 0; i < kEach; ++i) {
                const uint32_t cell = start_cell(p * kEach + i + 1);
                while (lane == nullptr || !lane->try_push(cell, 0)) {
                    if (lane == nullptr) break;  // its slot is another's: nothing to test for it
                    std::this_thread::yield();
                }
            }
            done.fetch_add(1);
        });
    std::vector<uint32_t> last(kProducers, 0);
    uint64_t taken = 0;
    bool in_order = true;
    std::vector<uint32_t> out(512);
    for (;;) {
        const bool finished = done.load() == kProducers;
        bool held = false;
        const uint32_t n = lanes.take(out.data(), static_cast<uint32_t>(out.size()), 0, false, held);
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t key = MpscQueue::marker_key(out[i]) - 1;
            const uint32_t p = key / kEach;
            if (key % kEach + 1 <= last[p] && last[p] != 0) in_order = false;
            last[p] = key % kEach + 1;
        }
        taken += n;
        if (n == 0 && finished) break;
    }
    for (auto& t : producers) t.join();
    CHECK(in_order);
    CHECK(taken % kEach == 0);
    CHECK(taken >= kEach);
}
