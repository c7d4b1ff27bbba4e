#include "track_lanes.hpp"

#include <algorithm>
#include <iterator>

namespace lapse::cli {

bool TrackLanes::fits(Lane& lane, int64_t s, int64_t e, bool& top) const
{
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

void TrackLanes::insert(Lane& lane, int64_t s, int64_t e, bool top)
{
    auto [pos, inserted] = lane.windows.emplace(Key{s, e}, top);
    if (!inserted) return;  // an identical window: same BEGIN/END stamps, rebuilds either way
    for (auto it = std::next(pos); it != lane.windows.end() && it->first.start <= e; ++it)
        if (it->first.end <= e) it->second = false;  // now inside W
    if (lane.windows.size() > kept_per_lane_) {
        auto oldest = lane.windows.begin();
        lane.forgotten_end = std::max(lane.forgotten_end, oldest->first.end);
        lane.windows.erase(oldest);
    }
}

uint32_t TrackLanes::place(int64_t start_ns, int64_t end_ns)
{
    for (uint32_t l = 0; l < lanes_.size(); ++l) {
        bool top = true;
        if (fits(lanes_[l], start_ns, end_ns, top)) {
            insert(lanes_[l], start_ns, end_ns, top);
            return l;
        }
    }
    lanes_.emplace_back();
    insert(lanes_.back(), start_ns, end_ns, true);
    return static_cast<uint32_t>(lanes_.size() - 1);
}

}  // namespace lapse::cli
