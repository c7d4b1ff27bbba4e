#include "track_lanes.hpp"

#include <algorithm>
#include <iterator>

namespace lapse::cli {

bool TrackLanes::fits(uint32_t index, int64_t s, int64_t e, bool& top, std::size_t& first)
{
    ++probes_;
    const Lane& lane = lanes_[index];
    if (s <= lane.forgotten_end) return false;
    top = true;
    const LaneWindows& w = lane.windows;
    first = w.first_starting_at_or_after(s);
    // Windows starting in [s, e]: W must contain them, or touch them at its start.
    for (std::size_t i = first; i < w.size() && w[i].start <= e; ++i) {
        const int64_t a = w[i].start, b = w[i].end;
        if (a == e && a != s) return false;          // W ends where a window written earlier starts
        if (b > e) {
            if (a == s) {                            // X contains W with an equal start: W inside, fine
                top = false;
                continue;
            }
            return false;                            // partial overlap
        }
        if (a == s && b < e) return false;           // W contains X with an equal start, written later
    }
    // Windows starting before s: disjoint (or touching at s) or containing W.
    for (std::size_t i = first; i > 0;) {
        --i;
        const int64_t b = w[i].end;
        if (b <= s) {
            if (w[i].top) break;  // a top-level window before s: nothing earlier reaches s
            continue;
        }
        if (b >= e) {
            top = false;  // contained; no earlier window can partially overlap W (laminar)
            break;
        }
        return false;  // ends inside W
    }
    return true;
}

void TrackLanes::insert(uint32_t index, int64_t s, int64_t e, bool top, std::size_t first)
{
    Lane& lane = lanes_[index];
    LaneWindows& w = lane.windows;
    const bool indexed = index >= first_fit_lanes;
    const int64_t earliest_before = w.empty() ? INT64_MAX : w.front().start;
    const int64_t latest_before = lane.latest_end;
    // Its place among the windows with its start: after those that end later.
    std::size_t pos = first;
    while (pos < w.size() && w[pos].start == s && w[pos].end > e) ++pos;
    // (An identical window, same BEGIN/END stamps, rebuilds either way: kept once.)
    if (pos == w.size() || w[pos].start != s || w[pos].end != e) {
        w.insert(pos, LaneWindow{s, e, top});
        for (std::size_t i = pos + 1; i < w.size() && w[i].start <= e; ++i)
            if (w[i].end <= e) w[i].top = false;  // now inside W
        if (w.size() > kept_per_lane_) {
            lane.forgotten_end = std::max(lane.forgotten_end, w.front().end);
            w.pop_front();
        }
    }
    lane.latest_end = std::max(lane.latest_end, e);
    if (!indexed) return;
    const int64_t earliest = w.empty() ? INT64_MAX : w.front().start;
    if (earliest != earliest_before) {
        by_earliest_start_.erase({earliest_before, index});
        by_earliest_start_.insert({earliest, index});
    }
    if (lane.latest_end != latest_before) {
        by_latest_end_.erase({latest_before, index});
        by_latest_end_.insert({lane.latest_end, index});
    }
}

bool TrackLanes::try_lane(uint32_t lane, int64_t start, int64_t end)
{
    bool top = true;
    std::size_t first = 0;
    if (!fits(lane, start, end, top, first)) return false;
    insert(lane, start, end, top, first);
    return true;
}

uint32_t TrackLanes::place(int64_t start_ns, int64_t end_ns)
{
    const auto count = static_cast<uint32_t>(lanes_.size());
    if (count > 0) {
        // The usual window: after everything on lane 0, its latest window
        // top level and ended by the start. fits() would say yes at its
        // first look, and insert() would append it.
        Lane& lane = lanes_[0];
        LaneWindows& w = lane.windows;
        if (!w.empty() && start_ns > lane.forgotten_end && w.back().start < start_ns && w.back().end <= start_ns &&
            w.back().top) {
            ++probes_;
            w.push_back(LaneWindow{start_ns, end_ns, true});
            if (w.size() > kept_per_lane_) {
                lane.forgotten_end = std::max(lane.forgotten_end, w.front().end);
                w.pop_front();
            }
            lane.latest_end = std::max(lane.latest_end, end_ns);
            return 0;
        }
    }
    for (uint32_t l = 0; l < std::min(count, first_fit_lanes); ++l)
        if (try_lane(l, start_ns, end_ns)) return l;
    if (count > first_fit_lanes) {
        // The lane whose latest end is the latest at or before the start:
        // the window comes after everything there.
        auto after = by_latest_end_.upper_bound({start_ns, UINT32_MAX});
        if (after != by_latest_end_.begin()) {
            const uint32_t lane = std::prev(after)->second;
            if (try_lane(lane, start_ns, end_ns)) return lane;
        }
        // The lane whose earliest start is the earliest after the end: the
        // window comes before everything there.
        auto before = by_earliest_start_.upper_bound({end_ns, UINT32_MAX});
        if (before != by_earliest_start_.end()) {
            const uint32_t lane = before->second;
            if (try_lane(lane, start_ns, end_ns)) return lane;
        }
    }
    lanes_.emplace_back();
    const auto lane = static_cast<uint32_t>(lanes_.size() - 1);
    insert(lane, start_ns, end_ns, true, 0);
    return lane;
}

}  // namespace lapse::cli
