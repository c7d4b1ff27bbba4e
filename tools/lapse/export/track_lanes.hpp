// Lanes for one track of a slice-stack viewer (Perfetto), assigned as
// windows arrive in any order: within a lane every two windows are either
// disjoint or nested, and when they are written in arrival order and a
// viewer sorts BEGIN/END events by time (stably), every lane rebuilds into
// exactly the windows that went in. A window that would break that goes to
// the next lane that takes it, or to a new one; none is dropped.
//
// Ties are where a stable sort can mis-nest: a window that ends exactly
// where an earlier-written one starts, or that shares its start with an
// earlier-written window it contains, must go to another lane.
//
// Cost: a window is tried on the first `first_fit_lanes` lanes, then on
// the lanes an ordered index says it fits after or before (the latest end
// at or before its start, the earliest start after its end), and otherwise
// opens a lane: a bounded number of tries per window whatever the number of
// lanes, so many overlapping windows cost O(n log n), not O(n^2). With few
// lanes this is plain first fit.
//
// Memory: each lane keeps at most `kept_per_lane` windows (the earliest are
// forgotten); a window that starts before the latest end forgotten cannot
// be checked against that lane and goes to another, so the bound never
// costs correctness, only an extra lane for very late arrivals.
#pragma once

#include "lane_windows.hpp"

#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace lapse::cli {

class TrackLanes {
public:
    explicit TrackLanes(std::size_t kept_per_lane = 4096) : kept_per_lane_(kept_per_lane) {}

    // The lane for [start_ns, end_ns] (0 = the track itself); lanes are
    // numbered in the order they are opened. Requires start_ns <= end_ns.
    uint32_t place(int64_t start_ns, int64_t end_ns);
    uint32_t lane_count() const { return static_cast<uint32_t>(lanes_.size()); }
    // How many times a lane was tried for a window, in all (the cost measure).
    uint64_t probes() const { return probes_; }

    static constexpr uint32_t first_fit_lanes = 8;

private:
    struct Lane {
        LaneWindows windows;
        int64_t forgotten_end = INT64_MIN;  // latest end among the forgotten windows
        int64_t latest_end = INT64_MIN;     // over every window it took
    };
    // Whether the window fits the lane; `top` says whether it would be top
    // level there, `first` is the index of the lane's first window that
    // starts at or after `start`.
    bool fits(uint32_t lane, int64_t start, int64_t end, bool& top, std::size_t& first);
    bool try_lane(uint32_t lane, int64_t start, int64_t end);
    void insert(uint32_t lane, int64_t start, int64_t end, bool top, std::size_t first);

    std::size_t kept_per_lane_;
    std::vector<Lane> lanes_;
    // Lanes past the first fit ones, by their latest end and by their
    // earliest kept start.
    std::set<std::pair<int64_t, uint32_t>> by_latest_end_, by_earliest_start_;
    uint64_t probes_ = 0;
};

}  // namespace lapse::cli
