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
        : capacity_(window_capacity), slots_(std::make_unique<RingSlot[]>(window_capacity))
    {
    }

    uint32_t capacity() const noexcept { return capacity_; }
    uint64_t head() const noexcept { return head_; }
    uint64_t tail() const noexcept { return tail_; }
    // Windows holding queries: open, closed, or released/abandoned but not
    // yet reclaimed because an older slot still blocks the tail.
    uint64_t in_use() const noexcept { return head_ - tail_; }
    bool full() const noexcept { return head_ - tail_ >= capacity_; }

    uint32_t index_of(uint64_t position) const noexcept { return static_cast<uint32_t>(position % capacity_); }
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
    // reclaimed queries (the host-reset path resets them there). Returns the
    // number of slots reclaimed.
    template <class Done, class Reset>
    uint64_t reclaim(Done&& done, Reset&& reset)
    {
        uint64_t reclaimed = 0;
        uint32_t run_first = 0, run_len = 0;
        while (tail_ < head_) {
            RingSlot& s = slots_[index_of(tail_)];
            bool ok = s.state == SlotState::Released ||
                      ((s.state == SlotState::AbandonedOpen || s.state == SlotState::AbandonedClosed) && done(s));
            if (!ok) break;
            uint32_t idx = index_of(tail_);
            if (run_len > 0 && idx != run_first + run_len) {
                reset(2 * run_first, 2 * run_len);
                run_len = 0;
            }
            if (run_len == 0) run_first = idx;
            ++run_len;
            s = RingSlot{};
            ++tail_;
            ++reclaimed;
        }
        if (run_len > 0) reset(2 * run_first, 2 * run_len);
        return reclaimed;
    }

private:
    uint32_t capacity_;
    std::unique_ptr<RingSlot[]> slots_;
    uint64_t head_ = 0;
    uint64_t tail_ = 0;
};

}  // namespace lapse::vulkan
