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

// Runs body(0) .. body(count - 1), each on a thread of its own whose lane
// slot (MarkerLanes::slot_of) differs from the others' and from the calling
// thread's, so that each can have a lane. Candidates are started together
// and kept alive until chosen (a joined thread's control block, and so its
// thread pointer, is often the next thread's); those not chosen leave.
// Returns how many ran (count: 32 candidates in 64 slots are never short
// in practice).
template <class Body>
uint32_t on_threads_with_own_slots(uint32_t count, Body body)
{
    constexpr uint32_t kCandidates = 32;
    constexpr int kUndecided = -1, kLeave = -2;
    std::vector<std::atomic<uint32_t>> slots(kCandidates);
    std::vector<std::atomic<int>> roles(kCandidates);
    for (uint32_t c = 0; c < kCandidates; ++c) {
        slots[c].store(MarkerLanes::kSlots);
        roles[c].store(kUndecided);
    }
    std::vector<std::thread> candidates;
    for (uint32_t c = 0; c < kCandidates; ++c)
        candidates.emplace_back([&, c] {
            slots[c].store(MarkerLanes::slot_of(MarkerLanes::thread_pointer()));
            int role;
            while ((role = roles[c].load()) == kUndecided) std::this_thread::yield();
            if (role >= 0) body(static_cast<uint32_t>(role));
        });
    std::set<uint32_t> taken{MarkerLanes::slot_of(MarkerLanes::thread_pointer())};
    uint32_t chosen = 0;
    for (uint32_t c = 0; c < kCandidates; ++c) {
        uint32_t slot;
        while ((slot = slots[c].load()) == MarkerLanes::kSlots) std::this_thread::yield();
        const bool choose = chosen < count && taken.insert(slot).second;
        roles[c].store(choose ? static_cast<int>(chosen++) : kLeave);
    }
    for (auto& t : candidates) t.join();
    return chosen;
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
    MarkerLane* found = nullptr;
    REQUIRE(on_threads_with_own_slots(1, [&](uint32_t) {
        theirs = lanes.claim();
        found = lanes.find();
    }) == 1);
    REQUIRE(theirs != nullptr);
    CHECK(theirs != mine);
    CHECK(found == theirs);
    CHECK(lanes.find() == mine);
    CHECK(lanes.cells_allocated() == 512u);
}

TEST_CASE("a thread whose lane slot another thread holds gets no lane, and the holder keeps its own", "[lane]")
{
    MarkerLanes lanes(256, true);
    if (!lanes.enabled()) {
        CHECK(lanes.claim() == nullptr);
        return;
    }
    const uintptr_t first = 0x7f0000001000;
    uintptr_t second = first + 0x1000;
    while (MarkerLanes::slot_of(second) != MarkerLanes::slot_of(first)) second += 0x1000;
    MarkerLane* held = lanes.claim_for(first);
    REQUIRE(held != nullptr);
    CHECK(held->owner() == first);
    CHECK(lanes.claim_for(second) == nullptr);  // it pushes through the queue instead
    CHECK(lanes.claim_for(first) == held);
    CHECK(lanes.cells_allocated() == 256u);
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
    std::atomic<bool> done{false};
    std::atomic<uint32_t> without_lane{0};
    std::atomic<uint32_t> ran{0};
    // The producers run on threads of their own while this one takes.
    std::thread producers([&] {
        ran = on_threads_with_own_slots(kProducers, [&](uint32_t p) {
            MarkerLane* lane = lanes.claim();
            if (lane == nullptr) {
                without_lane.fetch_add(1);
            } else {
                for (uint32_t i = 0; i < kEach; ++i)
                    while (!lane->try_push(start_cell(p * kEach + i + 1), 0)) std::this_thread::yield();
            }
        });
        done = true;  // every producer has pushed all it will
    });
    std::vector<uint32_t> last(kProducers, 0);
    uint64_t taken = 0;
    bool in_order = true;
    std::vector<uint32_t> out(512);
    for (;;) {
        const bool finished = done.load();
        bool held = false;
        const uint32_t n = lanes.take(out.data(), static_cast<uint32_t>(out.size()), 0, false, held);
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t key = MpscQueue::marker_key(out[i]) - 1;
            const uint32_t p = key / kEach;
            if (p >= kProducers) {  // not a key any producer pushed
                in_order = false;
                continue;
            }
            if (key % kEach + 1 <= last[p] && last[p] != 0) in_order = false;
            last[p] = key % kEach + 1;
        }
        taken += n;
        if (n == 0 && finished) break;
    }
    producers.join();
    REQUIRE(ran.load() == kProducers);
    CHECK(without_lane.load() == 0);
    CHECK(in_order);
    CHECK(taken == uint64_t{kProducers} * kEach);
    for (uint32_t p = 0; p < kProducers; ++p) CHECK(last[p] == kEach);
}
