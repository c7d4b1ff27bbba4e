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
// 64-byte events measured slower here). An event that arrives while all
// that is held is sorted, and belongs at most `max_moved` places before
// the end, is put in its place at once: a capture is mostly in order, so
// most writes need no sort at all.
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
    // Holds at least `held` events (at most max_held).
    explicit ReorderBuffer(std::size_t held = std::size_t{1} << 14) : held_(std::min(held, max_held)) {}

    // A key packs an event's slot into 16 bits (below its arrival order,
    // 48 bits), so it is 16 bytes: at most 2 * max_held slots.
    static constexpr std::size_t max_held = std::size_t{1} << 15;

    std::size_t size() const { return keys_.size(); }

    // Takes `e` (its order larger than every earlier one's, below 2^48) and calls
    // write(const HeldEvent&) for each event that leaves now.
    template <class Write>
    void add(const HeldEvent& e, Write&& write)
    {
        add(e.ns, e.order, [&](HeldEvent& to) { to = e; }, write);
    }

    // The same, the event built in place: fill(HeldEvent&) sets its bytes
    // (and size); ns and order are set here.
    // (Inlined: it runs for every event, and a call costs a fair part of it.)
    template <class Fill, class Write>
    [[gnu::always_inline]] void add(int64_t ns, uint64_t order, Fill&& fill, Write&& write)
    {
        if (keys_.size() == 2 * held_) [[unlikely]]
            write_sorted(held_, write);
        const std::size_t held_now = keys_.size();
        uint32_t slot;
        if (free_.empty()) {
            slot = static_cast<uint32_t>(slots_.size());
            slots_.emplace_back();
        } else {
            slot = free_.back();
            free_.pop_back();
        }
        HeldEvent& e = slots_[slot];
        e.ns = ns;
        e.order = order;
        fill(e);
        const Key key{ns, order << 16 | slot};
        if (sorted_ == held_now) {
            // Nothing unsorted yet: an event a few places early is put in
            // its place at once, so that the usual input, about in order,
            // never needs a sort.
            std::size_t at = held_now;
            if (at == 0 || keys_[at - 1] < key) [[likely]] {  // after everything held
                keys_.push_back(key);
                ++sorted_;
                return;
            }
            const std::size_t nearest = at > max_moved ? at - max_moved : 0;
            while (at > nearest && key < keys_[at - 1]) --at;
            if (at == 0 || keys_[at - 1] < key) {
                keys_.insert(keys_.begin() + static_cast<std::ptrdiff_t>(at), key);
                ++sorted_;
                return;
            }
        }
        keys_.push_back(key);
    }

    template <class Write>
    void drain(Write&& write)
    {
        write_sorted(keys_.size(), write);
    }

private:
    struct Key {
        int64_t ns;
        uint64_t order_slot;  // arrival order << 16 | slot: ordered by arrival
        bool operator<(const Key& o) const { return ns != o.ns ? ns < o.ns : order_slot < o.order_slot; }
        uint32_t slot() const { return static_cast<uint32_t>(order_slot & 0xffff); }
    };

    // Sorts what is held and writes its first n events.
    template <class Write>
    void write_sorted(std::size_t n, Write& write)
    {
        const auto middle = keys_.begin() + static_cast<std::ptrdiff_t>(sorted_);
        if (middle != keys_.end()) {
            std::sort(middle, keys_.end());
            if (middle != keys_.begin() && *middle < *(middle - 1)) std::inplace_merge(keys_.begin(), middle, keys_.end());
        }
        for (std::size_t i = 0; i < n; ++i) {
            write(slots_[keys_[i].slot()]);
            free_.push_back(keys_[i].slot());
        }
        keys_.erase(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(n));
        sorted_ = keys_.size();
    }

    // How far back an arriving event is moved into the sorted events, at
    // most; one further back waits for the next sort.
    static constexpr std::size_t max_moved = 64;

    std::size_t held_;
    std::size_t sorted_ = 0;       // keys_[0, sorted_) are in order
    std::vector<Key> keys_;
    std::vector<HeldEvent> slots_;  // the events' bytes, at most 2 * held
    std::vector<uint32_t> free_;
};

}  // namespace lapse::cli
