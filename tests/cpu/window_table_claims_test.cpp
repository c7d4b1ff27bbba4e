// sdk/window_table.hpp's claims (what forward and CUDA use): a claimed
// record is the claimer's alone until it publishes, frees or parks it; a
// parked record waits for the device; max_records bounds the table.
#include <lapse/sdk/window_table.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

using lapse::sdk::WindowCheck;

namespace {
struct Events {
    int64_t value = 0;
    bool done = false;  // stands for "the device finished with what this record names"
};
using Table = lapse::sdk::WindowTable<Events>;
using Live = Table::Live;
constexpr unsigned kOpen = Table::mask(Live::open);
constexpr unsigned kClosed = Table::mask(Live::closed);
constexpr unsigned kEither = kOpen | kClosed;
}  // namespace

TEST_CASE("window_table claims: a claimed record answers busy to everyone else and changes nothing",
          "[window_table][claims]")
{
    Table t(2, 16);
    Table::Id id = t.open(1, 0);
    Live was{};
    REQUIRE(t.claim(id, 1, kOpen, was) == WindowCheck::ok);
    CHECK(was == Live::open);
    Live again{};
    CHECK(t.claim(id, 1, kEither, again) == WindowCheck::busy);
    CHECK(t.close(id, 1, 0) == WindowCheck::busy);
    CHECK(t.abandon(id, 1) == WindowCheck::busy);
    CHECK(t.check(id, 1) == WindowCheck::busy);
    CHECK(t.take(id, 1, [](const Events&) {}) == WindowCheck::busy);
    t.payload(id).value = 42;
    t.publish(id, Live::closed);
    CHECK(t.check(id, 1) == WindowCheck::closed);
    int64_t seen = 0;
    CHECK(t.take(id, 1, [&](const Events& e) { seen = e.value; }) == WindowCheck::ok);
    CHECK(seen == 42);  // what the claimer wrote is what the next owner reads
}

TEST_CASE("window_table claims: a claim says why it cannot be had", "[window_table][claims]")
{
    Table t(2, 16);
    Table::Id id = t.open(0, 0);
    Live was{};
    CHECK(t.claim(id, 1, kEither, was) == WindowCheck::wrong_tag);
    CHECK(t.tag_of_live(id) == 0);
    CHECK(t.claim(id, 0, kClosed, was) == WindowCheck::still_open);
    REQUIRE(t.close(id, 0, 0) == WindowCheck::ok);
    CHECK(t.claim(id, 0, kOpen, was) == WindowCheck::closed);
    CHECK(t.claim(uint64_t{7} << 32 | 100000, 0, kEither, was) == WindowCheck::unknown);

    REQUIRE(t.claim(id, 0, kClosed, was) == WindowCheck::ok);
    CHECK(was == Live::closed);
    t.free_claimed(id, true);
    CHECK(t.claim(id, 0, kEither, was) == WindowCheck::resolved);

    Table::Id forgotten = t.open(0, 0);
    REQUIRE(t.claim(forgotten, 0, kOpen, was) == WindowCheck::ok);
    t.free_claimed(forgotten, false);
    CHECK(t.claim(forgotten, 0, kEither, was) == WindowCheck::forgotten);
    Table::Id reuse = t.open(0, 0);
    CHECK(Table::index_of(reuse) == Table::index_of(forgotten));  // freed records are reused...
    CHECK(t.claim(forgotten, 0, kEither, was) == WindowCheck::expired);  // ...and old tokens stay dead
}

TEST_CASE("window_table claims: a parked record is reused only once the device is done with it",
          "[window_table][claims][park]")
{
    Table t(1, 16, 16);  // exactly 16 records
    Table::Id parked = t.open(0, 0);
    Live was{};
    REQUIRE(t.claim(parked, 0, kEither, was) == WindowCheck::ok);
    t.payload(parked).done = false;
    t.park(parked);
    CHECK(t.check(parked, 0) == WindowCheck::abandoned);  // its window is over for the host
    CHECK(t.claim(parked, 0, kEither, was) == WindowCheck::abandoned);
    CHECK(t.abandon(parked, 0) == WindowCheck::abandoned);

    std::vector<Table::Id> live;
    for (int i = 0; i < 15; ++i) live.push_back(t.open(0, 0));
    for (Table::Id id : live) REQUIRE(id != 0);
    CHECK(t.open(0, 0) == 0);  // full: the parked record is not free yet
    CHECK_FALSE(t.reclaim_parked([](const Events& e) { return e.done; }, 4));
    CHECK(t.open(0, 0) == 0);

    // Only the reclaimer reads a parked record: the device finished.
    t.payload(parked).done = true;
    CHECK(t.reclaim_parked([](const Events& e) { return e.done; }, 4));
    Table::Id reuse = t.open(0, 0);
    REQUIRE(reuse != 0);
    CHECK(Table::index_of(reuse) == Table::index_of(parked));
    CHECK(t.check(parked, 0) == WindowCheck::expired);
    CHECK(t.abandon_all().open == 16);
}

TEST_CASE("window_table claims: max_records bounds the table across chunks", "[window_table][claims]")
{
    Table t(1, 16, 40);  // chunks of 16 and 32: the second one only partly handed out
    std::set<uint32_t> indices;
    for (int i = 0; i < 40; ++i) {
        Table::Id id = t.open(0, 0);
        REQUIRE(id != 0);
        indices.insert(Table::index_of(id));
    }
    CHECK(indices.size() == 40);
    CHECK(*indices.rbegin() < 40);
    CHECK(t.open(0, 0) == 0);
}

TEST_CASE("window_table claims: many threads claiming one record: one at a time, nothing lost",
          "[window_table][claims][race]")
{
    Table t(4, 64);
    Table::Id id = t.open(0, 0);
    constexpr int kThreads = 4, kRounds = 20000;
    std::atomic<int> inside{0};
    std::atomic<bool> overlap{false};
    std::vector<std::thread> threads;
    for (int k = 0; k < kThreads; ++k)
        threads.emplace_back([&] {
            for (int i = 0; i < kRounds;) {
                Live was{};
                const WindowCheck c = t.claim(id, 0, kEither, was);
                if (c == WindowCheck::busy) continue;
                if (c != WindowCheck::ok) {  // Catch2's macros are not for other threads
                    overlap = true;
                    return;
                }
                if (inside.fetch_add(1) != 0) overlap = true;
                ++t.payload(id).value;  // the claimer's alone: no atomic needed
                inside.fetch_sub(1);
                t.publish(id, was == Live::open ? Live::closed : Live::open);
                ++i;
            }
        });
    for (auto& th : threads) th.join();
    CHECK_FALSE(overlap.load());
    int64_t total = 0;
    if (t.check(id, 0) == WindowCheck::ok) REQUIRE(t.close(id, 0, 0) == WindowCheck::ok);
    CHECK(t.take(id, 0, [&](const Events& e) { total = e.value; }) == WindowCheck::ok);
    CHECK(total == int64_t{kThreads} * kRounds);
}
