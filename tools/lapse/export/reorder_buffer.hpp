// The events of one packet sequence put back in time order before they
// are written, within a bounded buffer, so that the sequence's incremental
// stamps stay small: a capture's records arrive only about in order (one
// stream's batch of windows behind another's, a container after what it
// holds).
//
// The buffer holds at least `held` events: when it holds twice that, it
// sorts what arrived since its last write (by stamp, then arrival order),
// merges it with the rest, which is sorted already, and writes the earlier
// half. Sorting and merging walk memory in order (a heap over the same
// 64-byte events measured slower here).
// Events leave in (stamp, arrival) order, so events with equal stamps keep
// their arrival order and a viewer's stable sort by time sees what it
// would have seen without the buffer; one that arrives after a later one
// has left is written anyway (the caller stamps it absolutely).
//
// Thread safety: one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lapse::cli {

struct HeldEvent {
    int64_t ns;
    uint64_t order;  // arrival order
    uint8_t size;
    char bytes[47];  // the encoded TrackEvent
};

class ReorderBuffer {
public:
    explicit ReorderBuffer(std::size_t held = std::size_t{1} << 14) : held_(held) {}

    std::size_t size() const { return keys_.size(); }

    // Takes `e` (its order larger than every earlier one's) and calls
    // write(const HeldEvent&) for each event that leaves now.
    template <class Write>
    void add(const HeldEvent& e, Write&& write)
    {
        if (keys_.size() == 2 * held_) write_sorted(held_, write);
        uint32_t slot;
        if (free_.empty()) {
            slot = static_cast<uint32_t>(slots_.size());
            slots_.push_back(e);
        } else {
            slot = free_.back();
            free_.pop_back();
            slots_[slot] = e;
        }
        keys_.push_back({e.ns, e.order, slot});
    }

    template <class Write>
    void drain(Write&& write)
    {
        write_sorted(keys_.size(), write);
    }

private:
    struct Key {
        int64_t ns;
        uint64_t order;
        uint32_t slot;
        bool operator<(const Key& o) const { return ns != o.ns ? ns < o.ns : order < o.order; }
    };

    // Sorts what is held and writes its first n events.
    template <class Write>
    void write_sorted(std::size_t n, Write& write)
    {
        const auto middle = keys_.begin() + static_cast<std::ptrdiff_t>(sorted_);
        std::sort(middle, keys_.end());
        std::inplace_merge(keys_.begin(), middle, keys_.end());
        for (std::size_t i = 0; i < n; ++i) {
            write(slots_[keys_[i].slot]);
            free_.push_back(keys_[i].slot);
        }
        keys_.erase(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(n));
        sorted_ = keys_.size();
    }

    std::size_t held_;
    std::size_t sorted_ = 0;       // keys_[0, sorted_) are in order
    std::vector<Key> keys_;
    std::vector<HeldEvent> slots_;  // the events' bytes, at most 2 * held
    std::vector<uint32_t> free_;
};

}  // namespace lapse::cli
