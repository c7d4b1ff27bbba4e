// lapse::Name (lapse/core/name.hpp): a window named by an interned Name is
// recorded under its text exactly as one named by a string, through every
// way of opening it (profile_start, profile, ScopedWindow,
// LAPSE_SCOPE_STATIC), and the capture's string tables stay right when
// Names and strings mix, cross chunks and span captures.
#include "capture_test_support.hpp"

#include <catch2/catch.hpp>

#include <lapse/core/name.hpp>
#include <lapse/core/scope.hpp>
#include <lapse/core/session.hpp>

#include <set>
#include <thread>
#include <vector>

using namespace capture_test;

TEST_CASE("Names of one text share one entry, made once even when threads race to make it", "[capture][name]")
{
    const lapse::Name a("shared text");
    const lapse::Name b(std::string("shared ") + "text");
    CHECK(a.entry() == b.entry());
    CHECK(a.text() == "shared text");
    CHECK(lapse::Name("other text").entry() != a.entry());

    std::vector<const void*> seen(8);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < seen.size(); ++t)
        threads.emplace_back([&seen, t] { seen[t] = lapse::Name("raced text").entry(); });
    for (auto& th : threads) th.join();
    CHECK(std::set<const void*>(seen.begin(), seen.end()).size() == 1);

    const lapse::Name empty("");
    CHECK(empty.empty());
    CHECK(empty.text().empty());
}

TEST_CASE("windows named by a Name are recorded under its text, their Durations dropped, through every way of opening them",
          "[capture][name][recording]")
{
    TempDir dir;
    const auto file = dir.path / "names.lapse-capture";
    static const lapse::Name step("step");
    {
        lapse::Device device = lapse::Runtime().open(cpu_config());
        device.record_into(open_capture(file));
        for (int i = 0; i < 1000; ++i) {
            lapse::Window w = device.profile_start(i % 2, step);
            device.submit(i % 2, [] {});
            device.profile_end(w);  // the Duration is dropped at once
        }
        for (int i = 0; i < 500; ++i) {
            LAPSE_SCOPE_STATIC(device, 0, "static scope");
            device.submit(0, [] {});
        }
        for (int i = 0; i < 250; ++i) lapse::ScopedWindow guard(device, 1, step);
        int ran = 0;
        for (int i = 0; i < 125; ++i) device.profile(0, step, [&] { ++ran; }, {.flush = i % 2 == 0});
        CHECK(ran == 125);
        // An empty Name opens an unnamed window: measured, not recorded.
        lapse::Window unnamed = device.profile_start(0, lapse::Name(""));
        CHECK(device.profile_end(unnamed).resolve().has_value());
    }
    const ReadBack r = read_all(file);
    CHECK(r.damage.empty());
    CHECK(r.complete);
    CHECK(r.count_by_name() == std::map<std::string, uint64_t>{{"static scope", 500}, {"step", 1375}});
    for (const ReadWindow& w : r.windows) CHECK(w.w.state == lapse::DurationState::ready);
}

TEST_CASE("Names and strings mixed over many chunks and two captures keep each window's own name",
          "[capture][name][recording]")
{
    // More windows than one chunk holds, so each chunk's string table is
    // built anew; a Name's string id kept from an earlier chunk (or
    // capture) would name another string, or one the chunk lacks. Each
    // name has its own count, so any mix-up shows in the counts.
    TempDir dir;
    const lapse::Name names[] = {lapse::Name("alpha"), lapse::Name("beta"), lapse::Name("gamma")};
    // Of every 10 windows: alpha 1, beta 2, gamma 3 by Name; beta 1 by the
    // same text as a string; delta 3, a text only strings use.
    const char* const pattern[10] = {"alpha", "beta", "beta", "gamma", "gamma", "gamma", "beta*", "delta", "delta", "delta"};
    for (const char* file_name : {"first.lapse-capture", "second.lapse-capture"}) {
        const auto file = dir.path / file_name;
        constexpr int n = 30000;
        {
            lapse::Device device = lapse::Runtime().open(cpu_config());
            device.record_into(open_capture(file, 64u << 20));  // room for all: none dropped
            for (int i = 0; i < n; ++i) {
                const std::string_view p = pattern[i % 10];
                lapse::Window w = p == "beta*"   ? device.profile_start(0, std::string("beta"))
                                  : p == "delta" ? device.profile_start(0, "delta")
                                                 : device.profile_start(0, names[p == "alpha" ? 0 : p == "beta" ? 1 : 2]);
                device.profile_end(w);
            }
        }
        const ReadBack r = read_all(file);
        INFO(file_name);
        CHECK(r.damage.empty());
        CHECK(r.dropped.empty());
        CHECK(r.count_by_name() ==
              std::map<std::string, uint64_t>{{"alpha", 3000}, {"beta", 9000}, {"delta", 9000}, {"gamma", 9000}});
    }
}

TEST_CASE("a window named by a Name reaches the session under its text", "[capture][name][session]")
{
    lapse::Device device = lapse::Runtime().open(cpu_config());
    auto session = std::make_shared<lapse::Session>();
    device.record_into(session);
    const lapse::Name phase("phase");
    lapse::Window w = device.profile_start(1, phase);
    lapse::Duration d = device.profile_end(w);
    CHECK(d.name() == "phase");
    REQUIRE(d.resolve());
    const auto windows = session->windows();
    REQUIRE(windows.size() == 1);
    CHECK(windows[0].name == "phase");
}

TEST_CASE("a window named by a text of any length from 1 to 64 bytes keeps that text, in its Duration, session and capture",
          "[capture][name][recording]")
{
    // A note copies a short name into itself with overlapping copies of 8,
    // 4 or single bytes, and a longer one onto the heap: each length has
    // its own text (every byte distinct from its neighbours), so a byte
    // lost, doubled or read past the end shows.
    std::vector<std::string> texts;
    for (std::size_t size = 1; size <= 64; ++size) {
        std::string t;
        for (std::size_t i = 0; i < size; ++i) t.push_back(static_cast<char>('!' + (i * 7 + size) % 90));
        texts.push_back(t);
    }
    TempDir dir;
    const auto file = dir.path / "lengths.lapse-capture";
    auto session = std::make_shared<lapse::Session>();
    std::map<std::string, uint64_t> expected;
    {
        lapse::Device device = lapse::Runtime().open(cpu_config());
        device.record_into(session);
        device.record_into(open_capture(file));
        for (int round = 0; round < 3; ++round)  // the second and third reuse notes
            for (const std::string& t : texts) {
                // The caller's copy of the text goes before the window ends.
                lapse::Window w = device.profile_start(round % 2, std::string(t));
                CHECK(w.name() == t);
                lapse::Duration d = device.profile_end(w);
                CHECK(d.name() == t);
                ++expected[t];
            }
    }
    std::map<std::string, uint64_t> in_session;
    for (const auto& w : session->windows()) ++in_session[w.name];
    CHECK(in_session == expected);
    const ReadBack r = read_all(file);
    CHECK(r.damage.empty());
    CHECK(r.count_by_name() == expected);
}
