// TrackLanes: every lane, written in arrival order and sorted stably by
// time the way a viewer reads it, rebuilds exactly the windows put in it,
// also when the lanes forget their oldest windows.
#include "export/track_lanes.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

using lapse::cli::TrackLanes;

namespace {

struct Interval {
    int64_t start, end;
    auto operator<=>(const Interval&) const = default;
};

// What a viewer rebuilds from one lane's BEGIN/END events in write order.
std::vector<Interval> rebuild(const std::vector<Interval>& written)
{
    struct Event {
        int64_t ts;
        bool begin;
    };
    std::vector<Event> events;
    for (const Interval& i : written) {
        events.push_back({i.start, true});
        events.push_back({i.end, false});
    }
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.ts < b.ts; });
    std::vector<int64_t> stack;
    std::vector<Interval> out;
    for (const Event& e : events) {
        if (e.begin) {
            stack.push_back(e.ts);
        } else {
            if (stack.empty()) return {};  // mis-nested
            out.push_back({stack.back(), e.ts});
            stack.pop_back();
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

void check_lanes(const std::vector<Interval>& windows, std::size_t kept)
{
    TrackLanes lanes(kept);
    std::map<uint32_t, std::vector<Interval>> by_lane;
    for (const Interval& w : windows) by_lane[lanes.place(w.start, w.end)].push_back(w);
    for (auto& [lane, list] : by_lane) {
        std::vector<Interval> sorted = list;
        std::sort(sorted.begin(), sorted.end());
        INFO("lane " << lane << " of " << lanes.lane_count());
        CHECK(rebuild(list) == sorted);
    }
}

}  // namespace

TEST_CASE("track lanes: nested and disjoint windows share lane 0, overlapping ones do not", "[export][lanes]")
{
    TrackLanes lanes;
    CHECK(lanes.place(0, 100) == 0);
    CHECK(lanes.place(10, 20) == 0);   // nested
    CHECK(lanes.place(100, 150) == 0); // touches the end of the first: written after it, fine
    CHECK(lanes.place(50, 120) == 1);  // overlaps without nesting
    CHECK(lanes.place(-10, 0) == 1);   // ends where lane 0's first window (written earlier) starts
    CHECK(lanes.place(200, 300) == 0);
    CHECK(lanes.place(200, 400) == 1); // same start, contains the earlier one
    CHECK(lanes.lane_count() == 2);
}

TEST_CASE("track lanes: random arrivals rebuild exactly, with and without forgetting", "[export][lanes]")
{
    const std::size_t kept = GENERATE(std::size_t{4}, std::size_t{4096});
    std::mt19937_64 rng(GENERATE(11u, 12u, 13u));
    std::uniform_int_distribution<int64_t> start(0, 2000), len(0, 300);
    std::vector<Interval> windows;
    for (int i = 0; i < 2000; ++i) {
        const int64_t s = start(rng) / 10 * 10;
        windows.push_back({s, s + len(rng) / 10 * 10});
    }
    check_lanes(windows, kept);
    // Mostly in order, as a recorder delivers them: few lanes.
    std::sort(windows.begin(), windows.end(), [](const Interval& a, const Interval& b) { return a.end < b.end; });
    check_lanes(windows, kept);
}

TEST_CASE("track lanes: many overlapping windows cost a bounded number of tries each, not one per lane",
          "[export][lanes]")
{
    // Every window overlaps every other without nesting (a staircase): each
    // needs its own lane. Trying every lane would be n^2 / 2 = 2 * 10^8 tries.
    constexpr int n = 20'000;
    std::vector<Interval> stair;
    for (int i = 0; i < n; ++i) stair.push_back({i * 10, i * 10 + 1'000'000'000});
    for (const bool reversed : {false, true}) {
        TrackLanes lanes;
        if (reversed) std::reverse(stair.begin(), stair.end());
        for (const Interval& w : stair) lanes.place(w.start, w.end);
        CHECK(lanes.lane_count() == n);
        CHECK(lanes.probes() <= (TrackLanes::first_fit_lanes + 2) * uint64_t{n});
    }
    check_lanes({stair.begin(), stair.begin() + 500}, 4096);
}

TEST_CASE("track lanes: windows in time order, 100 open at a time, take about 100 lanes", "[export][lanes]")
{
    constexpr int n = 50'000, open = 100;
    std::vector<Interval> windows;
    for (int i = 0; i < n; ++i) windows.push_back({i * 10, i * 10 + open * 10 - 1});
    TrackLanes lanes;
    for (const Interval& w : windows) lanes.place(w.start, w.end);
    CHECK(lanes.lane_count() >= open);
    CHECK(lanes.lane_count() <= open + TrackLanes::first_fit_lanes);
    CHECK(lanes.probes() <= (TrackLanes::first_fit_lanes + 2) * uint64_t{n});
    check_lanes(windows, 4096);
}
