#include "track_lanes.hpp"

#include <algorithm>
#include <iterator>

namespace lapse::cli {

bool TrackLanes::fits(uint32_t index, int64_t s, int64_t e, bool& top)
{
    ++probes_;
    const Lane& lane = lanes_[index];
    if (s <= lane.forgotten_end) return false;
    top = true;
    auto first_at_or_after = lane.windows.lower_bound(Key{s, INT64_MAX});
    // Windows starting in [s, e]: W must contain them, or touch them at its start.
    for (auto it = first_at_or_after; it != lane.windows.end() && it->first.start <= e; ++it) {
        const int64_t a = it->first.start, b = it->first.end;
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
    for (auto it = first_at_or_after; it != lane.windows.begin();) {
        --it;
        const int64_t b = it->first.end;
        if (b <= s) {
            if (it->second) break;  // a top-level window before s: nothing earlier reaches s
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

void TrackLanes::insert(uint32_t index, int64_t s, int64_t e, bool top)
{
    Lane& lane = lanes_[index];
    const bool indexed = index >= first_fit_lanes;
    const int64_t earliest_before = lane.windows.empty() ? INT64_MAX : lane.windows.begin()->first.start;
    const int64_t latest_before = lane.latest_end;
    auto [pos, inserted] = lane.windows.emplace(Key{s, e}, top);
    if (inserted) {  // (an identical window: same BEGIN/END stamps, rebuilds either way)
        for (auto it = std::next(pos); it != lane.windows.end() && it->first.start <= e; ++it)
            if (it->first.end <= e) it->second = false;  // now inside W
        if (lane.windows.size() > kept_per_lane_) {
            auto oldest = lane.windows.begin();
            lane.forgotten_end = std::max(lane.forgotten_end, oldest->first.end);
            lane.windows.erase(oldest);
        }
    }
    lane.latest_end = std::max(lane.latest_end, e);
    if (!indexed) return;
    const int64_t earliest = lane.windows.begin()->first.start;
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
    if (!fits(lane, start, end, top)) return false;
    insert(lane, start, end, top);
    return true;
}

uint32_t TrackLanes::place(int64_t start_ns, int64_t end_ns)
{
    const auto count = static_cast<uint32_t>(lanes_.size());
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
    insert(lane, start_ns, end_ns, true);
    return lane;
}

}  // namespace lapse::cli
