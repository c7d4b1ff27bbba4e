// sdk/window_table.hpp on its own: ids, generations, transitions, races,
// growth, and no allocation in the steady state.
#include <lapse_test/alloc_counter.hpp>

#include <lapse/sdk/window_table.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using lapse::sdk::WindowCheck;

namespace {
struct Stamp {
    std::atomic<int64_t> value{0};
};
using Table = lapse::sdk::WindowTable<Stamp>;

int64_t read(Table& t, Table::Id id, uint32_t tag, WindowCheck* check)
{
    int64_t v = -1;
    *check = t.take(id, tag, [&](const Stamp& s) { v = s.value.load(std::memory_order_relaxed); });
    return v;
}

// Rounds of a race over 512 windows: fewer where a sanitizer slows every access.
#if defined(LAPSE_SANITIZED)
constexpr int kRaceRounds = 20;
#else
constexpr int kRaceRounds = 200;
#endif

// Three threads start a round of a race at once.
class StartLine {
public:
    void arrive() noexcept
    {
        arrived_.fetch_add(1);
        while (arrived_.load() < 3) std::this_thread::yield();
    }

private:
    std::atomic<int> arrived_{0};
};

// After the races: every record back and reused, none lost.
void check_all_ended(Table& t)
{
    const Table::Census left = t.abandon_all();
    CHECK(left.open + left.closed + left.abandoned == 0);
    CHECK(t.capacity() <= 1024);
}
}  // namespace

TEST_CASE("window_table: ids are never 0 and a reused record gets a new generation", "[window_table]")
{
    Table t(1, 16);
    Table::Id a = t.open(0, 0);
    REQUIRE(a != 0);
    REQUIRE(t.close(a, 0, 0) == WindowCheck::ok);
    WindowCheck c;
    read(t, a, 0, &c);
    REQUIRE(c == WindowCheck::ok);

    // Until the record is reused, the old id names what happened to it.
    CHECK(t.close(a, 0, 0) == WindowCheck::resolved);
    CHECK(t.check(a, 0) == WindowCheck::resolved);

    Table::Id b = t.open(0, 0);
    CHECK(b != a);
    CHECK(Table::index_of(b) == Table::index_of(a));  // LIFO free list: same record
    CHECK(Table::generation_of(b) == Table::generation_of(a) + 1);
    // Once reused, the old id is expired, and touches nothing.
    CHECK(t.close(a, 0, 0) == WindowCheck::expired);
    CHECK(t.abandon(a, 0) == WindowCheck::expired);
    read(t, a, 0, &c);
    CHECK(c == WindowCheck::expired);
    CHECK(t.check(b, 0) == WindowCheck::ok);

    // Once b ends too, a is older than one generation: expired.
    REQUIRE(t.abandon(b, 0) == WindowCheck::ok);
    Table::Id c2 = t.open(0, 0);
    CHECK(Table::index_of(c2) == Table::index_of(a));
    CHECK(t.close(a, 0, 0) == WindowCheck::expired);
    CHECK(t.close(b, 0, 0) == WindowCheck::expired);  // reused since it was forgotten

    std::set<Table::Id> ids;
    for (int i = 0; i < 10000; ++i) {
        Table::Id id = t.open(0, 0);
        REQUIRE(id != 0);
        REQUIRE(ids.insert(id).second);
        REQUIRE(t.abandon(id, 0) == WindowCheck::ok);
    }
}

TEST_CASE("window_table: every transition answers what it found", "[window_table]")
{
    Table t(2, 16);
    Table::Id id = t.open(1, 1);  // one hold: a start marker in flight
    CHECK(t.check(id, 1) == WindowCheck::ok);
    CHECK(t.close(id, 0, 1) == WindowCheck::wrong_tag);
    CHECK(t.tag_of_live(id) == 1);
    WindowCheck c;
    read(t, id, 1, &c);
    CHECK(c == WindowCheck::still_open);
    REQUIRE(t.close(id, 1, 1) == WindowCheck::ok);
    CHECK(t.close(id, 1, 1) == WindowCheck::closed);
    read(t, id, 1, &c);
    CHECK(c == WindowCheck::pending);
    t.payload(id).value.store(42);
    t.release(id);
    read(t, id, 1, &c);
    CHECK(c == WindowCheck::pending);  // still the end hold
    t.release(id);
    CHECK(read(t, id, 1, &c) == 42);
    CHECK(c == WindowCheck::ok);
    read(t, id, 1, &c);
    CHECK(c == WindowCheck::resolved);

    CHECK(t.close(0, 0, 0) == WindowCheck::unknown);
    CHECK(t.close(uint64_t{7} << 32 | 5000000, 0, 0) == WindowCheck::unknown);  // index never allocated
    CHECK(t.close(uint64_t{9} << 32 | 2, 0, 0) == WindowCheck::unknown);        // a generation not reached yet
}

TEST_CASE("window_table: an abandoned record is not reused while the device holds it", "[window_table]")
{
    Table t(1, 16);
    Table::Id held = t.open(0, 1);
    REQUIRE(t.close(held, 0, 1) == WindowCheck::ok);
    REQUIRE(t.abandon(held, 0) == WindowCheck::ok);
    CHECK(t.abandon(held, 0) == WindowCheck::abandoned);
    CHECK(t.close(held, 0, 1) == WindowCheck::abandoned);
    std::vector<Table::Id> others;
    for (int i = 0; i < 100; ++i) {
        others.push_back(t.open(0, 0));
        REQUIRE(Table::index_of(others.back()) != Table::index_of(held));
    }
    t.release(held);
    CHECK(t.check(held, 0) == WindowCheck::abandoned);  // one hold left
    t.release(held);
    CHECK(t.check(held, 0) == WindowCheck::forgotten);  // now free
    Table::Id reuse = t.open(0, 0);
    CHECK(Table::index_of(reuse) == Table::index_of(held));
}

TEST_CASE("window_table: release drops several holds at once, freeing an abandoned record when they were the last",
          "[window_table]")
{
    Table t(1, 16);
    // A closed window with both markers in flight, both stamped together.
    Table::Id both = t.open(0, 1);
    REQUIRE(t.close(both, 0, 1) == WindowCheck::ok);
    CHECK(t.check(both, 0) == WindowCheck::pending);
    t.release(both, 2);
    WindowCheck check = WindowCheck::unknown;
    read(t, both, 0, &check);
    CHECK(check == WindowCheck::ok);
    // Abandoned with three holds: two dropped leave it held, the last frees it.
    Table::Id abandoned = t.open(0, 1);
    REQUIRE(t.close(abandoned, 0, 2) == WindowCheck::ok);
    REQUIRE(t.abandon(abandoned, 0) == WindowCheck::ok);
    t.release(abandoned, 2);
    CHECK(t.check(abandoned, 0) == WindowCheck::abandoned);
    t.release(abandoned, 1);
    CHECK(t.check(abandoned, 0) == WindowCheck::forgotten);
    // Abandoned with two, both dropped at once: freed as well.
    Table::Id pair = t.open(0, 1);
    REQUIRE(t.close(pair, 0, 1) == WindowCheck::ok);
    REQUIRE(t.abandon(pair, 0) == WindowCheck::ok);
    t.release(pair, 2);
    CHECK(t.check(pair, 0) == WindowCheck::forgotten);
}

TEST_CASE("window_table: growth keeps records in place and ids distinct", "[window_table]")
{
    Table t(1, 16);
    Table::Id first = t.open(0, 0);
    Stamp* where = &t.payload(first);
    std::set<Table::Id> ids{first};
    for (int i = 0; i < 5000; ++i) REQUIRE(ids.insert(t.open(0, 0)).second);
    CHECK(&t.payload(first) == where);
    CHECK(t.capacity() >= 5001);
    CHECK(t.capacity() < 2 * 5001 + 16);
    for (Table::Id id : ids) REQUIRE(t.check(id, 0) == WindowCheck::ok);
    const auto census = t.abandon_all();
    CHECK(census.open == 5001);
    CHECK(census.closed == 0);
}

TEST_CASE("window_table: an id whose index word is 0 is unknown, whatever its generation and however far the table grew",
          "[window_table]")
{
    // Id 0's index is UINT32_MAX, which no chunk may hold: find() has no
    // test of its own for it.
    Table t(1, 16);
    for (int i = 0; i < 100000; ++i) REQUIRE(t.open(0, 0) != 0);
    for (uint64_t generation : {uint64_t{0}, uint64_t{1}, uint64_t{0xFFFFFFFF}}) {
        const Table::Id zero = generation << 32;
        CHECK(t.check(zero, 0) == WindowCheck::unknown);
        CHECK(t.close(zero, 0, 1) == WindowCheck::unknown);
        CHECK(!t.try_close(zero, 0, 1));
        CHECK(t.abandon(zero, 0) == WindowCheck::unknown);
        WindowCheck taken = WindowCheck::ok;
        CHECK(read(t, zero, 0, &taken) == -1);
        CHECK(taken == WindowCheck::unknown);
        CHECK(t.locate(zero) == nullptr);
    }
    CHECK(t.abandon_all().open == 100000);
}

TEST_CASE("window_table: a tag's free list found once opens what opening by the tag opens", "[window_table]")
{
    Table t(2, 16);  // the 16 first records sit on shard 0
    Table::FreeList& zero = t.free_list(0);
    Table::FreeList& one = t.free_list(1);
    CHECK(&t.free_list(2) == &zero);  // tags share shards modulo their count
    CHECK(t.try_open(one, 1, 0) == 0);  // empty: try_open looks nowhere else
    std::vector<Table::Id> ids;
    for (int i = 0; i < 16; ++i) {
        const Table::Id id = t.try_open(zero, 1, 1);
        REQUIRE(id != 0);
        CHECK(t.check(id, 1) == WindowCheck::ok);  // opened on the tag given, whichever list it came from
        ids.push_back(id);
    }
    CHECK(t.try_open(zero, 0, 0) == 0);
    CHECK(t.capacity() == 16);
    for (Table::Id id : ids) REQUIRE(t.abandon(id, 1) == WindowCheck::ok);
    for (Table::Id id : ids) t.release(id);  // freed onto tag 1's list
    CHECK(t.try_open(one, 1, 0) != 0);
}

TEST_CASE("window_table: an empty shard takes records from the others before growing", "[window_table]")
{
    Table t(2, 16);  // all 16 first records sit on shard 0
    std::vector<Table::Id> ids;
    for (int i = 0; i < 16; ++i) ids.push_back(t.open(1, 0));
    CHECK(t.capacity() == 16);
    for (Table::Id id : ids) REQUIRE(t.abandon(id, 1) == WindowCheck::ok);
    for (int i = 0; i < 16; ++i) t.open(0, 0);  // back from shard 1
    CHECK(t.capacity() == 16);
}

TEST_CASE("window_table: a resolver's batch frees its records in one step, at flush", "[window_table]")
{
    Table t(1, 16);
    std::vector<Table::Id> ids;
    for (int i = 0; i < 16; ++i) {
        ids.push_back(t.open(0, 0));
        t.payload(ids.back()).value.store(i, std::memory_order_relaxed);
        REQUIRE(t.close(ids.back(), 0, 0) == WindowCheck::ok);
    }
    Table::FreeBatch batch;
    for (int i = 0; i < 16; ++i) {
        int64_t v = -1;
        REQUIRE(t.take(ids[i], 0, [&](const Stamp& s) { v = s.value.load(std::memory_order_relaxed); }, batch) ==
                WindowCheck::ok);
        CHECK(v == i);
        // Resolved at once, whether or not its record is back on a list yet.
        CHECK(t.check(ids[i], 0) == WindowCheck::resolved);
    }
    CHECK(batch.size() == 16);
    // Not flushed: the records are on no free list, so opening grows.
    Table::Id extra = t.open(0, 0);
    CHECK(t.capacity() == 48);
    REQUIRE(t.abandon(extra, 0) == WindowCheck::ok);

    t.flush(batch);
    CHECK(batch.size() == 0);
    std::set<Table::Id> reopened;
    for (int i = 0; i < 47; ++i) REQUIRE(reopened.insert(t.open(0, 0)).second);
    CHECK(t.capacity() == 48);  // all 16 came back, nothing leaked or doubled
    for (Table::Id id : ids) CHECK(reopened.count(id) == 0);
}

TEST_CASE("window_table: a batch hands its records back every flush_every records", "[window_table]")
{
    const uint32_t n = Table::flush_every + 10;
    Table t(1, 16);
    std::vector<Table::Id> ids;
    for (uint32_t i = 0; i < n; ++i) {
        ids.push_back(t.open(0, 0));
        REQUIRE(t.close(ids.back(), 0, 0) == WindowCheck::ok);
    }
    const std::size_t capacity = t.capacity();
    Table::FreeBatch batch;
    for (Table::Id id : ids) REQUIRE(t.take(id, 0, [](const Stamp&) {}, batch) == WindowCheck::ok);
    CHECK(batch.size() == 10);  // the first flush_every went back already
    for (uint32_t i = 0; i < Table::flush_every; ++i) REQUIRE(t.open(0, 0) != 0);
    CHECK(t.capacity() == capacity);
    t.flush(batch);
}

TEST_CASE("window_table: the ready fast path takes only what take() would take", "[window_table]")
{
    Table t(2, 16);
    Table::FreeBatch batch;
    auto nothing = [](const Stamp&) {};

    Table::Id open = t.open(1, 0);
    CHECK_FALSE(t.try_take_ready(open, 1, nothing, batch));  // still open
    CHECK(t.check(open, 1) == WindowCheck::ok);

    Table::Id held = t.open(1, 1);
    REQUIRE(t.close(held, 1, 0) == WindowCheck::ok);
    CHECK_FALSE(t.try_take_ready(held, 1, nothing, batch));  // the device still holds it
    CHECK(t.check(held, 1) == WindowCheck::pending);
    t.release(held);

    CHECK_FALSE(t.try_take_ready(held, 0, nothing, batch));  // another stream's token
    CHECK_FALSE(t.try_take_ready(held, 0x10001, nothing, batch));  // a tag that aliases 1 in 16 bits
    CHECK_FALSE(t.try_take_ready(0, 1, nothing, batch));  // never an id
    CHECK(batch.size() == 0);

    t.payload(held).value.store(42, std::memory_order_relaxed);
    int64_t v = -1;
    CHECK(t.try_take_ready(held, 1, [&](const Stamp& s) { v = s.value.load(std::memory_order_relaxed); }, batch));
    CHECK(v == 42);
    CHECK(batch.size() == 1);
    CHECK_FALSE(t.try_take_ready(held, 1, nothing, batch));  // once
    CHECK(t.take(held, 1, nothing, batch) == WindowCheck::resolved);
    t.flush(batch);
    REQUIRE(t.abandon(open, 1) == WindowCheck::ok);
}

TEST_CASE("window_table: a record cache opens from records it took from its tag's list in one go", "[window_table][cache]")
{
    Table t(2, 256);  // all 256 first records sit on shard 0
    Table::RecordCache cache;
    CHECK(t.try_open(cache, 0, 0) == 0);  // empty until refilled
    std::set<uint32_t> indices;
    std::vector<Table::Id> ids;
    for (uint32_t i = 0; i < Table::cache_refill; ++i) {
        const Table::Id id = i == 0 ? t.open(cache, 0, 1) : t.try_open(cache, 0, 1);
        REQUIRE(id != 0);
        indices.insert(Table::index_of(id));
        ids.push_back(id);
    }
    CHECK(indices.size() == Table::cache_refill);
    CHECK(t.try_open(cache, 0, 1) == 0);  // exactly one refill's worth
    // The cache's records were taken off the list: another thread's opens
    // get the rest, and none of these.
    for (uint32_t i = 0; i < 256 - Table::cache_refill; ++i) {
        const Table::Id id = t.open(0, 0);
        REQUIRE(id != 0);
        CHECK(indices.count(Table::index_of(id)) == 0);
    }
    CHECK(t.capacity() == 256);
    // Opened from a cache, a window lives as any other.
    REQUIRE(t.close(ids[0], 0, 0) == WindowCheck::ok);
    t.release(ids[0]);
    WindowCheck c{};
    read(t, ids[0], 0, &c);
    CHECK(c == WindowCheck::ok);
}

TEST_CASE("window_table: a record cache whose tag's list is empty opens from the others, then grows", "[window_table][cache]")
{
    Table t(2, 16);  // all 16 first records sit on shard 0
    Table::RecordCache cache;
    std::vector<Table::Id> ids;
    for (int i = 0; i < 16; ++i) ids.push_back(t.open(cache, 1, 0));  // shard 1 is empty: from shard 0
    for (Table::Id id : ids) CHECK(id != 0);
    CHECK(t.capacity() == 16);
    CHECK(t.open(cache, 1, 0) != 0);  // nothing free anywhere: grows
    CHECK(t.capacity() > 16);
}

TEST_CASE("window_table: threads refilling caches from one list while a resolver frees into it share every record once",
          "[window_table][cache][race]")
{
    Table t(1, 1024);
    constexpr int kThreads = 3;
    constexpr int kWindows = 20000;
    std::atomic<int> wrong{0};
    std::mutex m;
    std::deque<Table::Id> closed;
    std::atomic<int> producing{kThreads};
    std::vector<std::thread> openers;
    for (int p = 0; p < kThreads; ++p)
        openers.emplace_back([&] {
            Table::RecordCache cache;
            for (int i = 0; i < kWindows; ++i) {
                Table::Id id = t.try_open(cache, 0, 0);
                if (id == 0) id = t.open(cache, 0, 0);
                if (id == 0 || t.close(id, 0, 0) != WindowCheck::ok) wrong.fetch_add(1);
                std::lock_guard lock(m);
                closed.push_back(id);
            }
            producing.fetch_sub(1);
        });
    std::thread resolver([&] {
        Table::FreeBatch batch;
        for (;;) {
            Table::Id id = 0;
            {
                std::lock_guard lock(m);
                if (!closed.empty()) {
                    id = closed.front();
                    closed.pop_front();
                }
            }
            if (id == 0) {
                t.flush(batch);
                if (producing.load() == 0) {
                    std::lock_guard lock(m);
                    if (closed.empty()) break;
                }
                std::this_thread::yield();
                continue;
            }
            // A record handed out twice would be taken twice, or found closed
            // by one opener while another still has it open.
            if (t.take(id, 0, [](const Stamp&) {}, batch) != WindowCheck::ok) wrong.fetch_add(1);
            if (batch.size() >= 16) t.flush(batch);
        }
        t.flush(batch);
    });
    for (auto& o : openers) o.join();
    resolver.join();
    CHECK(wrong.load() == 0);
}

TEST_CASE("window_table: one thread opening and another resolving reuse records, not grow", "[window_table][race]")
{
    Table t(1, 64);
    constexpr int kWindows = 20000;
    constexpr std::size_t kInFlight = 32;
    std::mutex m;
    std::condition_variable cv;
    std::deque<Table::Id> handed;
    std::atomic<int> wrong{0};
    std::thread resolver([&] {
        Table::FreeBatch batch;
        for (int done = 0; done < kWindows; ++done) {
            Table::Id id;
            {
                std::unique_lock lock(m);
                cv.wait(lock, [&] { return !handed.empty(); });
                id = handed.front();
                handed.pop_front();
            }
            cv.notify_all();
            if (t.take(id, 0, [](const Stamp&) {}, batch) != WindowCheck::ok) wrong.fetch_add(1);
            if (batch.size() >= 8) t.flush(batch);
        }
        t.flush(batch);
    });
    for (int i = 0; i < kWindows; ++i) {
        Table::Id id = t.open(0, 0);
        if (id == 0 || t.close(id, 0, 0) != WindowCheck::ok) wrong.fetch_add(1);
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return handed.size() < kInFlight; });
        handed.push_back(id);
        cv.notify_all();
    }
    resolver.join();
    CHECK(wrong.load() == 0);
    // At most kInFlight handed over, a batch of 8 and the windows being
    // opened and taken at the moment: far below kWindows, whatever the timing.
    CHECK(t.capacity() <= 256);
}

TEST_CASE("window_table: end racing abandon on one id lets exactly one win", "[window_table][race]")
{
    Table t(2, 64);
    const int rounds = 3000;
    int closes = 0;
    for (int i = 0; i < rounds; ++i) {
        Table::Id id = t.open(i % 2, 1);
        StartLine start;
        WindowCheck closed = WindowCheck::unknown, abandoned = WindowCheck::unknown;
        std::thread worker([&] {
            start.arrive();
            t.release(id);  // the start marker lands meanwhile
        });
        std::thread a([&] {
            start.arrive();
            closed = t.close(id, i % 2, 0);
        });
        start.arrive();
        abandoned = t.abandon(id, i % 2);
        a.join();
        worker.join();
        REQUIRE(abandoned == WindowCheck::ok);  // abandon forgets open and closed windows alike
        REQUIRE((closed == WindowCheck::ok || closed == WindowCheck::forgotten || closed == WindowCheck::abandoned));
        closes += closed == WindowCheck::ok;
        // Whatever the order, the record is free again exactly once.
        REQUIRE(t.check(id, i % 2) == WindowCheck::forgotten);
    }
    INFO("close won " << closes << " of " << rounds);
    CHECK(t.capacity() == 64);  // nothing leaked
}

TEST_CASE("window_table: many threads, every window taken exactly once", "[window_table][race]")
{
    Table t(4, 64);
    constexpr int kThreads = 4;
#if defined(LAPSE_SANITIZED)
    constexpr int kPerThread = 20000;
#else
    constexpr int kPerThread = 200000;
#endif
    std::atomic<int> taken{0};
    std::atomic<int> wrong{0};  // Catch2 assertions are not thread-safe: count, check after
    std::vector<std::thread> threads;
    for (int k = 0; k < kThreads; ++k) {
        threads.emplace_back([&, k] {
            std::vector<std::pair<Table::Id, uint32_t>> live;
            for (int i = 0; i < kPerThread; ++i) {
                const uint32_t tag = (k + i) % 4;
                Table::Id id = t.open(tag, 1);
                if (id == 0) {
                    wrong.fetch_add(1);
                    continue;
                }
                t.payload(id).value.store(i, std::memory_order_relaxed);
                t.release(id);
                if (t.close(id, tag, 0) != WindowCheck::ok) wrong.fetch_add(1);
                live.emplace_back(id, tag);
                if (live.size() == 64 || i + 1 == kPerThread) {
                    for (auto [x, xtag] : live) {
                        int64_t v = -1;
                        WindowCheck c = t.take(x, xtag, [&](const Stamp& s) { v = s.value.load(std::memory_order_relaxed); });
                        if (c != WindowCheck::ok || v < 0) wrong.fetch_add(1);
                        if (t.take(x, xtag, [](const Stamp&) {}) != WindowCheck::resolved &&
                            t.check(x, xtag) != WindowCheck::expired)
                            wrong.fetch_add(1);
                        taken.fetch_add(1, std::memory_order_relaxed);
                    }
                    live.clear();
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    CHECK(wrong.load() == 0);
    CHECK(taken.load() == kThreads * kPerThread);
    CHECK(t.abandon_all().open == 0);
}

TEST_CASE("window_table: an abandon of a closed window waits for a batch taking on its shard, and no longer",
          "[window_table][race]")
{
    Table t(2, 16);
    const Table::Id taken = t.open(0, 0);
    const Table::Id dropped = t.open(0, 0);
    const Table::Id other_shard = t.open(1, 0);
    for (auto [id, tag] : {std::pair{taken, 0u}, std::pair{dropped, 0u}, std::pair{other_shard, 1u}})
        REQUIRE(t.close(id, tag, 0) == WindowCheck::ok);

    Table::FreeBatch batch;
    REQUIRE(t.take(taken, 0, [](const Stamp&) {}, batch) == WindowCheck::ok);  // the batch holds shard 0's lock
    // Another shard's closed window is abandoned at once.
    CHECK(t.abandon(other_shard, 1) == WindowCheck::ok);
    std::atomic<bool> abandoned{false};
    std::thread dropper([&] {
        if (t.abandon(dropped, 0) == WindowCheck::ok) abandoned.store(true);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK_FALSE(abandoned.load());  // still waiting for the batch's lock
    t.flush(batch);
    dropper.join();
    CHECK(abandoned.load());
    CHECK(t.check(dropped, 0) == WindowCheck::forgotten);
    CHECK(t.check(taken, 0) == WindowCheck::resolved);
}

TEST_CASE("window_table: a batch that takes from another shard hands back what it holds first", "[window_table]")
{
    Table t(2, 16);
    const Table::Id first = t.open(0, 0);
    const Table::Id second = t.open(1, 0);
    REQUIRE(t.close(first, 0, 0) == WindowCheck::ok);
    REQUIRE(t.close(second, 1, 0) == WindowCheck::ok);
    Table::FreeBatch batch;
    REQUIRE(t.take(first, 0, [](const Stamp&) {}, batch) == WindowCheck::ok);
    CHECK(batch.size() == 1);
    REQUIRE(t.take(second, 1, [](const Stamp&) {}, batch) == WindowCheck::ok);
    CHECK(batch.size() == 1);  // the first went back to shard 0 when the batch moved to shard 1
    t.flush(batch);
    // Neither shard's lock is left held: both abandon at once.
    const Table::Id a = t.open(0, 0), b = t.open(1, 0);
    REQUIRE(t.close(a, 0, 0) == WindowCheck::ok);
    REQUIRE(t.close(b, 1, 0) == WindowCheck::ok);
    CHECK(t.abandon(a, 0) == WindowCheck::ok);
    CHECK(t.abandon(b, 1) == WindowCheck::ok);
}

TEST_CASE("window_table: resolvers in batches and an abandoner racing over the same windows end each exactly once",
          "[window_table][race]")
{
    // A take frees a closed, unheld record with a plain store under its
    // shard's take lock; every other way out of that state must hold the
    // lock too, or two of them could both win. Two resolvers (one walking
    // forwards, one backwards, each into a batch) and an abandoner (a host
    // dropping Durations) go over the same closed windows at once.
    Table t(2, 64);
    constexpr uint32_t kWindows = 512;
    std::atomic<int> wrong{0};  // Catch2 assertions are not thread-safe: count, check after
    for (int round = 0; round < kRaceRounds; ++round) {
        std::vector<Table::Id> ids(kWindows);
        std::vector<uint32_t> tags(kWindows);
        for (uint32_t i = 0; i < kWindows; ++i) {
            tags[i] = i % 2;
            ids[i] = t.open(tags[i], 0);
            REQUIRE(ids[i] != 0);
            t.payload(ids[i]).value.store(i + 1, std::memory_order_relaxed);
            REQUIRE(t.close(ids[i], tags[i], 0) == WindowCheck::ok);
        }
        std::vector<std::atomic<int>> ends(kWindows);
        StartLine start;
        auto resolver = [&](bool backwards) {
            start.arrive();
            Table::FreeBatch batch;
            for (uint32_t k = 0; k < kWindows; ++k) {
                const uint32_t i = backwards ? kWindows - 1 - k : k;
                int64_t v = -1;
                // A slow read: it widens the moment between a take's look at
                // the word and its store, where an unlocked rival would slip in.
                auto read = [&](const Stamp& s) {
                    for (int spin = 0; spin < 200; ++spin) asm volatile("" ::: "memory");
                    v = s.value.load(std::memory_order_relaxed);
                };
                bool took = t.try_take_ready(ids[i], tags[i], read, batch);
                if (!took) {
                    const WindowCheck c = t.take(ids[i], tags[i], read, batch);
                    took = c == WindowCheck::ok;
                    if (!took && c != WindowCheck::resolved && c != WindowCheck::forgotten) wrong.fetch_add(1);
                }
                if (took) {
                    if (v != int64_t{i} + 1) wrong.fetch_add(1);
                    ends[i].fetch_add(1);
                }
            }
            t.flush(batch);
        };
        std::thread forwards(resolver, false);
        std::thread backwards(resolver, true);
        start.arrive();
        for (uint32_t i = 0; i < kWindows; ++i)
            if (t.abandon(ids[i], tags[i]) == WindowCheck::ok) ends[i].fetch_add(1);
        forwards.join();
        backwards.join();
        for (uint32_t i = 0; i < kWindows; ++i) {
            INFO("round " << round << ", window " << i);
            REQUIRE(ends[i].load() == 1);
        }
    }
    CHECK(wrong.load() == 0);
    check_all_ended(t);
}

TEST_CASE("window_table: no allocation once warmed up", "[window_table][alloc]")
{
    Table t(2, 1024);
    std::vector<Table::Id> ids(512);
    auto cycle = [&] {
        for (auto& id : ids) {
            id = t.open(1, 1);
            t.release(id);
            (void)t.close(id, 1, 1);
            t.release(id);
        }
        for (auto id : ids) {
            WindowCheck c;
            read(t, id, 1, &c);
            REQUIRE(c == WindowCheck::ok);
        }
    };
    // The counter must be live, or the comparison below passes on zeros.
    REQUIRE(lapse_test::counting_allocations());
    cycle();
    const uint64_t before = lapse_test::allocations();
    for (int i = 0; i < 100; ++i) cycle();
    CHECK(lapse_test::allocations() == before);
}

TEST_CASE("window_table: a million open windows of a 24-byte payload cost at most 64 bytes each", "[window_table][memory]")
{
    struct Payload24 {
        std::atomic<int64_t> a{0}, b{0};
        std::atomic<uint32_t> c{0}, d{0};
    };
    lapse::sdk::WindowTable<Payload24> t(2, 1024);
    constexpr int kOpen = 1'000'000;
    int failed = 0;
    for (int i = 0; i < kOpen; ++i) failed += t.open(i % 2, 1) == 0;
    REQUIRE(failed == 0);
    const double per_window = double(t.memory_bytes()) / kOpen;
    INFO(per_window << " bytes per open window");
    CHECK(per_window <= 64.0);
    CHECK(t.abandon_all().open == std::size_t(kOpen));
}

TEST_CASE("window_table: a release run drops holds, open or closed, and frees an abandoned record at its last",
          "[window_table]")
{
    Table t(2, 16);
    const Table::Id open = t.open(0, 1);        // its start marker in flight
    const Table::Id closed = t.open(0, 1);      // ... and its end marker too
    const Table::Id abandoned = t.open(0, 1);
    REQUIRE(t.close(closed, 0, 1) == WindowCheck::ok);
    REQUIRE(t.abandon(abandoned, 0) == WindowCheck::ok);
    Table::ReleaseRun run;
    t.begin_releases(run, 0);
    t.release(open, 1, run);
    t.release(closed, 2, run);
    t.release(abandoned, 1, run);
    t.end_releases(run);
    CHECK(t.check(open, 0) == WindowCheck::ok);
    CHECK(t.check(closed, 0) == WindowCheck::closed);
    CHECK(t.check(abandoned, 0) == WindowCheck::forgotten);
    // Open, then closed with a hold, then released again: takeable.
    REQUIRE(t.close(open, 0, 1) == WindowCheck::ok);
    t.begin_releases(run, 0);
    t.release(open, 1, run);
    t.end_releases(run);
    WindowCheck c{};
    read(t, open, 0, &c);
    CHECK(c == WindowCheck::ok);
    read(t, closed, 0, &c);
    CHECK(c == WindowCheck::ok);
}

TEST_CASE("window_table: a release run that finds its shard's lock held still drops every hold", "[window_table]")
{
    Table t(2, 16);
    const Table::Id taken = t.open(0, 0);
    const Table::Id held = t.open(0, 1);
    REQUIRE(t.close(taken, 0, 0) == WindowCheck::ok);
    REQUIRE(t.close(held, 0, 1) == WindowCheck::ok);
    Table::FreeBatch batch;
    REQUIRE(t.take(taken, 0, [](const Stamp&) {}, batch) == WindowCheck::ok);  // the batch holds shard 0's lock
    Table::ReleaseRun run;
    t.begin_releases(run, 0);  // does not wait for it
    t.release(held, 2, run);
    t.end_releases(run);
    t.flush(batch);
    CHECK(t.check(held, 0) == WindowCheck::closed);
    // The run did not let go of a lock it never held: the batch's is free.
    const Table::Id other = t.open(0, 0);
    REQUIRE(t.close(other, 0, 0) == WindowCheck::ok);
    CHECK(t.abandon(other, 0) == WindowCheck::ok);
}

TEST_CASE("window_table: a release run never begun takes no lock and drops each hold on its own", "[window_table]")
{
    // What a device side does for a single release: the lock's try, fence
    // and unlock would cost more than the one locked operation.
    Table t(2, 16);
    const Table::Id abandoned = t.open(0, 1);
    REQUIRE(t.close(abandoned, 0, 1) == WindowCheck::ok);
    const Table::Id held = t.open(0, 1);
    REQUIRE(t.close(held, 0, 1) == WindowCheck::ok);
    Table::ReleaseRun run;  // not begun
    t.release(held, 1, run);
    // No lock held: an abandon of a closed record on the run's shard (which
    // takes that lock) does not wait for end_releases.
    CHECK(t.abandon(abandoned, 0) == WindowCheck::ok);
    t.release(abandoned, 2, run);  // its last holds: freed now, not at end_releases
    CHECK(t.check(abandoned, 0) == WindowCheck::forgotten);
    t.end_releases(run);
    CHECK(t.check(held, 0) == WindowCheck::pending);  // one hold left
}

TEST_CASE("window_table: an abandon of a closed window the device still holds waits for a release run on its shard",
          "[window_table][race]")
{
    // A release run drops a closed record's holds with a plain store: an
    // abandon that changed the word meanwhile would be lost, so it takes the
    // shard's lock as a take does.
    Table t(2, 16);
    const Table::Id dropped = t.open(0, 1);
    REQUIRE(t.close(dropped, 0, 1) == WindowCheck::ok);
    const Table::Id other_shard = t.open(1, 1);
    REQUIRE(t.close(other_shard, 1, 1) == WindowCheck::ok);
    Table::ReleaseRun run;
    t.begin_releases(run, 0);
    CHECK(t.abandon(other_shard, 1) == WindowCheck::ok);  // another shard: at once
    std::atomic<bool> abandoned{false};
    std::thread dropper([&] {
        if (t.abandon(dropped, 0) == WindowCheck::ok) abandoned.store(true);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK_FALSE(abandoned.load());  // still waiting for the run's lock
    t.release(dropped, 1, run);
    t.end_releases(run);
    dropper.join();
    CHECK(abandoned.load());
    // Abandoned with one hold left: the device's last release frees it.
    CHECK(t.check(dropped, 0) == WindowCheck::abandoned);
    t.release(dropped, 1);
    CHECK(t.check(dropped, 0) == WindowCheck::forgotten);
    t.release(other_shard, 2);
    CHECK(t.check(other_shard, 1) == WindowCheck::forgotten);
}

TEST_CASE("window_table: a device releasing in runs, a resolver and an abandoner racing end each window exactly once",
          "[window_table][race]")
{
    Table t(2, 64);
    constexpr uint32_t kWindows = 512;
    constexpr uint32_t kRun = 32;
    std::atomic<int> wrong{0};  // Catch2 assertions are not thread-safe: count, check after
    for (int round = 0; round < kRaceRounds; ++round) {
        std::vector<Table::Id> ids(kWindows);
        for (uint32_t i = 0; i < kWindows; ++i) {
            ids[i] = t.open(0, 2);  // start and end markers in flight
            REQUIRE(ids[i] != 0);
            if (i % 2 == 0) REQUIRE(t.close(ids[i], 0, 0) == WindowCheck::ok);  // the rest close while released
        }
        std::vector<std::atomic<int>> ends(kWindows);
        StartLine start;
        std::thread device([&] {
            start.arrive();
            for (uint32_t first = 0; first < kWindows; first += kRun) {
                Table::ReleaseRun run;
                t.begin_releases(run, 0);
                for (uint32_t i = first; i < first + kRun; ++i) {
                    t.payload(ids[i]).value.store(i + 1, std::memory_order_relaxed);
                    t.release(ids[i], 2, run);
                }
                t.end_releases(run);
            }
        });
        std::thread resolver([&] {
            start.arrive();
            Table::FreeBatch batch;
            for (int pass = 0; pass < 4; ++pass) {
                for (uint32_t i = 0; i < kWindows; ++i) {
                    int64_t v = -1;
                    if (t.try_take_ready(ids[i], 0, [&](const Stamp& s) { v = s.value.load(std::memory_order_relaxed); },
                                         batch)) {
                        if (v != int64_t{i} + 1) wrong.fetch_add(1);
                        ends[i].fetch_add(1);
                    }
                }
                t.flush(batch);  // before anything that waits
            }
        });
        start.arrive();
        for (uint32_t i = 0; i < kWindows; ++i) {
            if (i % 2 == 1) t.close(ids[i], 0, 0);  // may find it abandoned: no matter
            if (i % 3 == 0 && t.abandon(ids[i], 0) == WindowCheck::ok) ends[i].fetch_add(1);
        }
        device.join();
        resolver.join();
        // What neither resolved nor abandoned is closed and unheld now.
        for (uint32_t i = 0; i < kWindows; ++i) {
            WindowCheck c{};
            if (ends[i].load() == 0 && read(t, ids[i], 0, &c) == int64_t{i} + 1 && c == WindowCheck::ok)
                ends[i].fetch_add(1);
            INFO("round " << round << ", window " << i);
            REQUIRE(ends[i].load() == 1);
        }
    }
    CHECK(wrong.load() == 0);
    check_all_ended(t);
}
