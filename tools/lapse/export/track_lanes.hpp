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
// Memory: each lane keeps at most `kept_per_lane` windows (the earliest are
// forgotten); a window that starts before the latest end forgotten cannot
// be checked against that lane and goes to another, so the bound never
// costs correctness, only an extra lane for very late arrivals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace lapse::cli {

class TrackLanes {
public:
    explicit TrackLanes(std::size_t kept_per_lane = 4096) : kept_per_lane_(kept_per_lane) {}

    // The lane for [start_ns, end_ns] (0 = the track itself); lanes are
    // numbered in the order they are opened. Requires start_ns <= end_ns.
    uint32_t place(int64_t start_ns, int64_t end_ns);
    uint32_t lane_count() const { return static_cast<uint32_t>(lanes_.size()); }

private:
    struct Key {
        int64_t start;
        int64_t end;
        // Start ascending, then end descending: a container before what it holds.
        bool operator<(const Key& o) const { return start != o.start ? start < o.start : end > o.end; }
    };
    struct Lane {
        std::map<Key, bool> windows;  // value: top level (no container in the lane)
        int64_t forgotten_end = INT64_MIN;  // latest end among the forgotten windows
    };
    bool fits(Lane& lane, int64_t start, int64_t end, bool& top) const;
    void insert(Lane& lane, int64_t start, int64_t end, bool top);

    std::size_t kept_per_lane_;
    std::vector<Lane> lanes_;
};

}  // namespace lapse::cli
