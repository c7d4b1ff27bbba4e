// The CPU plugin's stream queue on its own (compiled in from the plugin):
// order, wide entries, wrap-around, growth, what a queued marker costs, and
// many producers against one consumer (run under TSan by CI's subset).
#include "mpsc_queue.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

using lapse::cpu::MpscQueue;
using lapse::cpu::QueueEntry;

namespace {

// Entry i of a test sequence: markers and wide entries mixed, wide words
// with both halves set (and zero halves, which a free cell also reads as).
struct Expected {
    uint32_t kind;
    uint64_t a;
    uint64_t b;
};

Expected expected_at(uint64_t i)
{
    switch (i % 4) {
    case 0: return {MpscQueue::kStart, (i % MpscQueue::max_key) + 1, 0};
    case 1: return {MpscQueue::kWork, 0xF00D000000000000u | i, i << 32};
    case 2: return {MpscQueue::kEnd, MpscQueue::max_key - (i % 1000), 0};
    default: return {MpscQueue::kFence, i, ~uint64_t{0}};
    }
}

bool push_expected(MpscQueue& q, uint64_t i)
{
    const Expected e = expected_at(i);
    if (e.kind == MpscQueue::kStart || e.kind == MpscQueue::kEnd)
        return q.push_marker(e.kind, static_cast<uint32_t>(e.a));
    return q.push_wide(e.kind, e.a, e.b);
}

void check_expected(const QueueEntry& got, uint64_t i)
{
    const Expected e = expected_at(i);
    INFO("entry " << i);
    CHECK(got.kind == e.kind);
    CHECK(got.a == e.a);
    CHECK(got.b == e.b);
}

}  // namespace

TEST_CASE("the queue hands entries back in push order, markers and wide entries mixed, as its ring wraps", "[queue]")
{
    MpscQueue q(16);
    QueueEntry got{};
    CHECK_FALSE(q.pop(got));
    CHECK_FALSE(q.has_claims());
    // Three entries at a time (up to 11 cells) on a 16-cell ring, 2,000
    // times: wide entries straddle the ring's end in every alignment.
    uint64_t pushed = 0, popped = 0;
    for (int round = 0; round < 2000; ++round) {
        for (int k = 0; k < 3; ++k) REQUIRE(push_expected(q, pushed++));
        CHECK(q.has_claims());
        while (q.pop(got)) check_expected(got, popped++);
        CHECK(popped == pushed);
        CHECK_FALSE(q.has_claims());
    }
    // A consumer that keeps up never makes it grow.
    CHECK(q.cells_allocated() == 16);
}

TEST_CASE("a full ring grows by linking a larger one, and the order holds across the segments", "[queue]")
{
    MpscQueue q(16);
    constexpr uint64_t n = 5000;
    for (uint64_t i = 0; i < n; ++i) REQUIRE(push_expected(q, i));
    CHECK(q.cells_allocated() > 16);
    QueueEntry got{};
    for (uint64_t i = 0; i < n; ++i) {
        REQUIRE(q.pop(got));
        check_expected(got, i);
    }
    CHECK_FALSE(q.pop(got));
    CHECK_FALSE(q.has_claims());
    // Still usable after the growth.
    REQUIRE(push_expected(q, 0));
    REQUIRE(q.pop(got));
    check_expected(got, 0);
}

TEST_CASE("a queued window marker costs one 4-byte cell: a million left queued hold about 4 MB", "[queue][memory]")
{
    MpscQueue q(4096);
    constexpr uint32_t n = 1000000;
    for (uint32_t i = 1; i <= n; ++i) REQUIRE(q.push_marker(MpscQueue::kStart, i));
    const double bytes_per_marker = static_cast<double>(q.cells_allocated() * MpscQueue::cell_bytes) / n;
    INFO("bytes per queued marker: " << bytes_per_marker);
    // Doubling segments: at most twice what is queued, plus the first ring.
    CHECK(bytes_per_marker >= 4.0);
    CHECK(bytes_per_marker <= 8.0 + 4096.0 * 4 / n);
    QueueEntry got{};
    for (uint32_t i = 1; i <= n; ++i) {
        REQUIRE(q.pop(got));
        if (got.kind != MpscQueue::kStart || got.a != i) FAIL("marker " << i << " came back as kind " << got.kind << " key " << got.a);
    }
    CHECK_FALSE(q.pop(got));
}

TEST_CASE("four producers and one consumer: every entry arrives once, each producer's in its own order", "[queue][threads]")
{
    MpscQueue q(16);  // small, so that producers race over growing it
    constexpr int producers = 4;
    constexpr uint64_t per_producer = 20000;
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
        threads.emplace_back([&q, &go, p] {
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            for (uint64_t i = 0; i < per_producer; ++i) {
                // Markers carry producer and sequence in their 30-bit key;
                // wide entries in both words.
                const uint32_t key = static_cast<uint32_t>(p) << 24 | static_cast<uint32_t>(i + 1);
                const bool ok = i % 3 == 2 ? q.push_wide(MpscQueue::kWork, uint64_t(p) << 32 | (i + 1), ~(i + 1))
                                           : q.push_marker(i % 3 == 0 ? MpscQueue::kStart : MpscQueue::kEnd, key);
                if (!ok) std::abort();
            }
        });
    }
    std::vector<uint64_t> next(producers, 1);  // sequence (i + 1) expected next from each producer
    uint64_t received = 0;
    bool in_order = true;
    go.store(true, std::memory_order_release);
    QueueEntry got{};
    while (received < producers * per_producer) {
        if (!q.pop(got)) {
            std::this_thread::yield();
            continue;
        }
        uint64_t p = 0, seq = 0;
        if (got.kind == MpscQueue::kWork) {
            p = got.a >> 32;
            seq = got.a & 0xFFFFFFFF;
            if (got.b != ~seq) in_order = false;
        } else {
            p = got.a >> 24;
            seq = got.a & 0xFFFFFF;
        }
        if (p >= producers || seq != next[p]) {
            in_order = false;
            break;
        }
        ++next[p];
        ++received;
    }
    for (auto& t : threads) t.join();
    CHECK(in_order);
    CHECK(received == producers * per_producer);
    CHECK_FALSE(q.pop(got));
    CHECK_FALSE(q.has_claims());
}

TEST_CASE("pop_markers takes the markers ready at the head, in order, and stops before a wide entry", "[queue]")
{
    MpscQueue q(64);
    REQUIRE(q.push_marker(MpscQueue::kStart, 1));
    REQUIRE(q.push_marker(MpscQueue::kEnd, 1));
    REQUIRE(q.push_marker(MpscQueue::kStart, 2));
    REQUIRE(q.push_wide(MpscQueue::kWork, 7, 8));
    REQUIRE(q.push_marker(MpscQueue::kEnd, 2));
    uint32_t cells[8] = {};
    bool held = true;
    REQUIRE(q.pop_markers(cells, 8, false, held) == 3);
    CHECK_FALSE(held);
    CHECK(cells[0] == MpscQueue::marker_cell(MpscQueue::kStart, 1));
    CHECK(cells[1] == MpscQueue::marker_cell(MpscQueue::kEnd, 1));
    CHECK(cells[2] == MpscQueue::marker_cell(MpscQueue::kStart, 2));
    // The work is pop()'s to take, and nothing is held back for it.
    CHECK(q.pop_markers(cells, 8, false, held) == 0);
    CHECK_FALSE(held);
    QueueEntry got{};
    REQUIRE(q.pop(got));
    CHECK(got.kind == MpscQueue::kWork);
    CHECK(got.a == 7);
    REQUIRE(q.pop_markers(cells, 8, false, held) == 1);
    CHECK(cells[0] == MpscQueue::marker_cell(MpscQueue::kEnd, 2));
    CHECK(q.pop_markers(cells, 8, false, held) == 0);
    CHECK_FALSE(q.has_claims());
}

TEST_CASE("pop_markers takes at most what it is asked for, across the ring's end and into a grown segment", "[queue]")
{
    MpscQueue q(16);
    uint32_t cells[5] = {};
    bool held = false;
    uint32_t next_taken = 1;
    // 13 markers at a time on a 16-cell ring: runs wrap at every offset.
    for (int round = 0; round < 50; ++round) {
        for (uint32_t k = 0; k < 13; ++k) REQUIRE(q.push_marker(MpscQueue::kStart, round * 13 + k + 1));
        uint32_t taken = 0;
        while (const uint32_t n = q.pop_markers(cells, 5, false, held)) {
            CHECK(n <= 5);
            for (uint32_t i = 0; i < n; ++i) CHECK(MpscQueue::marker_key(cells[i]) == next_taken++);
            taken += n;
        }
        CHECK(taken == 13);
    }
    // Grown: the full ring is taken first, then pop() moves on to the next
    // segment, and the markers there come in order too.
    for (uint32_t k = 1; k <= 40; ++k) REQUIRE(q.push_marker(MpscQueue::kEnd, k));
    REQUIRE(q.cells_allocated() > 16);
    uint32_t expected = 1;
    QueueEntry got{};
    for (int guard = 0; guard < 100 && expected <= 40; ++guard) {
        if (const uint32_t n = q.pop_markers(cells, 5, false, held)) {
            for (uint32_t i = 0; i < n; ++i) CHECK(MpscQueue::marker_key(cells[i]) == expected++);
        } else if (q.pop(got)) {
            CHECK(got.a == expected++);
        }
    }
    CHECK(expected == 41);
    CHECK_FALSE(q.has_claims());
}

TEST_CASE("a consumer sparing its producer leaves the lines being written until they stop moving", "[queue]")
{
    MpscQueue q(1024);
    uint32_t cells[1024] = {};
    bool held = false;
    // A short run is taken whole: the producer is slower than the
    // consumer looks, or has stopped.
    for (uint32_t k = 1; k <= 10; ++k) REQUIRE(q.push_marker(MpscQueue::kStart, k));
    CHECK(q.pop_markers(cells, 1024, true, held) == 10);
    CHECK_FALSE(held);
    // A long one that grew since the last look: whole lines only, and at
    // least four lines (64 cells) behind the cell the producer writes next.
    for (uint32_t k = 11; k <= 210; ++k) REQUIRE(q.push_marker(MpscQueue::kEnd, k));
    const uint32_t first = q.pop_markers(cells, 1024, true, held);
    CHECK(held);
    CHECK(first > 0);
    CHECK(first <= 200 - 64);
    CHECK((10 + first) % 16 == 0);  // it stops at a line boundary
    CHECK(MpscQueue::marker_key(cells[0]) == 11);
    // The producer wrote nothing since: the rest is taken.
    const uint32_t rest = q.pop_markers(cells, 1024, true, held);
    CHECK_FALSE(held);
    CHECK(first + rest == 200);
    CHECK(MpscQueue::marker_key(cells[rest - 1]) == 210);
    // Not sparing (right after work, or a resolver waits): all at once.
    for (uint32_t k = 1; k <= 300; ++k) REQUIRE(q.push_marker(MpscQueue::kEnd, k));
    CHECK(q.pop_markers(cells, 1024, false, held) == 300);
    CHECK_FALSE(held);
}

TEST_CASE("a consumer sparing its producer does not end what it takes on a start marker", "[queue]")
{
    // Windows opened and closed back to back, one line plus one cell off
    // the line grid: each line boundary falls between a window's start
    // and its end.
    MpscQueue q(1024);
    uint32_t cells[1024] = {};
    bool held = false;
    REQUIRE(q.push_marker(MpscQueue::kEnd, 1));
    REQUIRE(q.pop_markers(cells, 1024, true, held) == 1);
    for (uint32_t k = 1; k <= 100; ++k) {
        REQUIRE(q.push_marker(MpscQueue::kStart, k));
        REQUIRE(q.push_marker(MpscQueue::kEnd, k));
    }
    const uint32_t first = q.pop_markers(cells, 1024, true, held);
    CHECK(held);
    REQUIRE(first > 0);
    CHECK(MpscQueue::marker_kind(cells[first - 1]) == MpscQueue::kEnd);
    CHECK((1 + first + 1) % 16 == 0);  // one cell short of the line boundary: the start it left
    // The start left behind comes first in the next run, with its end.
    const uint32_t rest = q.pop_markers(cells, 1024, true, held);
    CHECK_FALSE(held);
    CHECK(first + rest == 200);
    CHECK(cells[0] == MpscQueue::marker_cell(MpscQueue::kStart, MpscQueue::marker_key(cells[1])));
}
