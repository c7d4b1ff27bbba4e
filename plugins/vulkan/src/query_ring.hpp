// The query ring of one stream: which timestamp-query pairs belong to which
// window, and when a pair may be used again. Pure bookkeeping (no Vulkan),
// so its rules are unit-testable; the caller holds the stream's lock.
//
// Window number `position` (0, 1, 2, ... for the life of the stream) owns
// queries 2*(position % capacity) and 2*(position % capacity) + 1 of the
// stream's VkQueryPool. `head` is the next position to hand out, `tail` the
// oldest one not yet reclaimed; both are 64-bit and never wrap in practice.
// A slot is reused only after the tail has passed it, and the tail only
// passes a slot whose queries the device is finished with (resolved, or
// abandoned and known complete). So a pending query is never overwritten:
// a full ring is an error for the caller, not silent reuse.
#pragma once

#include <cstdint>
#include <memory>

namespace lapse::vulkan {

enum class SlotState : uint8_t {
    Free,            // not in use (position is kNoPosition)
    Open,            // start recorded, end not yet
    Closed,          // start and end recorded; waiting to be resolved
    Released,        // resolved: the device is done with both queries
    AbandonedOpen,   // abandoned before its end: the start may still be written
    AbandonedClosed  // abandoned after its end: both may still be written
};

struct RingSlot {
    static constexpr uint64_t kNoPosition = ~uint64_t{0};
    uint64_t position = kNoPosition;
    // Own mode: serials of the command buffers the start and end were
    // recorded in; the queries are complete once the stream's timeline
    // semaphore has reached them. Unused in attach mode.
    uint64_t start_serial = 0;
    uint64_t end_serial = 0;
    SlotState state = SlotState::Free;
    bool failed = false;  // poisoned by a device error while open
    // Attach mode: reads that found both stamps available but the end
    // before the start (see Stream::read_run).
    uint16_t out_of_order_reads = 0;
};

class QueryRing {
public:
    explicit QueryRing(uint32_t window_capacity)
        : capacity_(window_capacity),
          index_mask_((window_capacity & (window_capacity - 1)) == 0 ? window_capacity - 1 : 0),
          slots_(std::make_unique<RingSlot[]>(window_capacity))
    {
    }

    uint32_t capacity() const noexcept { return capacity_; }
    uint64_t head() const noexcept { return head_; }
    uint64_t tail() const noexcept { return tail_; }
    // Windows holding queries: open, closed, or released/abandoned but not
    // yet reclaimed because an older slot still blocks the tail.
    uint64_t in_use() const noexcept { return head_ - tail_; }
    bool full() const noexcept { return head_ - tail_ >= capacity_; }

    // A power-of-two capacity (the default ring_size) takes a mask, not a
    // division: resolve looks a slot up once per window.
    uint32_t index_of(uint64_t position) const noexcept
    {
        return static_cast<uint32_t>(index_mask_ != 0 ? position & index_mask_ : position % capacity_);
    }
    uint32_t first_query(uint64_t position) const noexcept { return 2 * index_of(position); }

    // first_query of the window a slot of this ring holds, without the
    // division by the capacity that first_query(position) takes.
    uint32_t first_query_of(const RingSlot& slot) const noexcept
    {
        return 2 * static_cast<uint32_t>(&slot - slots_.get());
    }

    // Takes the slot at head. Precondition: !full().
    RingSlot& open(uint64_t& position) noexcept
    {
        position = head_++;
        RingSlot& s = slots_[index_of(position)];
        s = RingSlot{};
        s.position = position;
        s.state = SlotState::Open;
        return s;
    }

    // The slot of a live window (open, closed, released-not-reclaimed,
    // abandoned-not-reclaimed), or null for a position never handed out or
    // already reclaimed.
    RingSlot* find(uint64_t position) noexcept
    {
        if (position >= head_ || position < tail_) return nullptr;
        RingSlot& s = slots_[index_of(position)];
        return s.position == position ? &s : nullptr;
    }

    // Resets made ahead of use (own mode records them into its command
    // buffers, a run of slots at a time). Windows at positions below
    // reset_frontier() have had their queries reset since the window before
    // them on the same slot was reclaimed, so they are written as they are.
    uint64_t reset_frontier() const noexcept { return reset_frontier_; }

    // How many windows from `from` (normally head(), at or past the
    // frontier) may have their queries reset now: at most `max`, only slots
    // whose previous window was reclaimed (the device is done with them),
    // and not across the end of the ring, so that one reset covers them.
    // At least 1 when `from` is head() and the ring is not full.
    uint32_t resettable_run(uint64_t from, uint32_t max) const noexcept
    {
        const uint64_t reclaimed_limit = tail_ + capacity_;  // below it, a slot's previous window is gone
        if (from >= reclaimed_limit) return 0;
        uint64_t n = reclaimed_limit - from;
        const uint64_t to_ring_end = capacity_ - index_of(from);
        if (n > to_ring_end) n = to_ring_end;
        if (n > max) n = max;
        return static_cast<uint32_t>(n);
    }

    // Says the windows below `to` are reset (see reset_frontier).
    void mark_reset(uint64_t to) noexcept
    {
        if (to > reset_frontier_) reset_frontier_ = to;
    }

    // Windows that are open or closed (still the caller's), for reports.
    uint64_t count_live() const noexcept
    {
        uint64_t n = 0;
        for (uint64_t p = tail_; p < head_; ++p) {
            SlotState st = slots_[index_of(p)].state;
            n += (st == SlotState::Open || st == SlotState::Closed) ? 1 : 0;
        }
        return n;
    }

    // Advances the tail over every slot the device is done with.
    // `done(slot)` says whether an abandoned slot's queries are complete;
    // `reset(first_query, query_count)` is called for each contiguous run of
    // reclaimed queries (attach mode resets them there). Returns the
    // number of slots reclaimed.
    template <class Done, class Reset>
    uint64_t reclaim(Done&& done, Reset&& reset)
    {
        const uint64_t from = tail_;
        uint32_t index = index_of(tail_);
        uint32_t run_first = index;
        while (tail_ < head_) {
            RingSlot& s = slots_[index];
            const bool ok = s.state == SlotState::Released ||
                            ((s.state == SlotState::AbandonedOpen || s.state == SlotState::AbandonedClosed) && done(s));
            if (!ok) break;
            // find() already refuses positions below the tail; open()
            // rewrites the whole slot.
            s.position = RingSlot::kNoPosition;
            s.state = SlotState::Free;
            ++tail_;
            if (++index == capacity_) {  // the ring's end ends a run of queries too
                reset(2 * run_first, 2 * (index - run_first));
                index = run_first = 0;
            }
        }
        if (index != run_first) reset(2 * run_first, 2 * (index - run_first));
        return tail_ - from;
    }

private:
    uint32_t capacity_;
    uint64_t index_mask_;  // capacity - 1 when the capacity is a power of two (and not 1), else 0
    std::unique_ptr<RingSlot[]> slots_;
    uint64_t head_ = 0;
    uint64_t tail_ = 0;
    uint64_t reset_frontier_ = 0;
};

}  // namespace lapse::vulkan
