// The windows one lane of TrackLanes remembers, sorted by start ascending,
// then end descending (a container before what it holds), in one array
// that slides: most windows arrive after everything in their lane, so they
// are appended at the back, and forgetting the oldest moves the front on;
// when the back reaches the end of the array, the windows kept move to its
// start (at most one move per insertion, on average). A window that arrives
// out of order is put in place by moving the windows on its shorter side
// by one slot, contiguous memory, so its cost is bounded by the number of
// windows a lane keeps, never by the input.
//
// Thread safety: one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lapse::cli {

struct LaneWindow {
    int64_t start;
    int64_t end;
    bool top;  // no window of the lane contains it
};

class LaneWindows {
public:
    std::size_t size() const { return tail_ - head_; }
    bool empty() const { return tail_ == head_; }
    // The i-th window in order (0: the earliest start).
    LaneWindow& operator[](std::size_t i) { return slots_[head_ + i]; }
    const LaneWindow& operator[](std::size_t i) const { return slots_[head_ + i]; }
    const LaneWindow& front() const { return slots_[head_]; }
    const LaneWindow& back() const { return slots_[tail_ - 1]; }

    // Appends `w` (it sorts after every window here).
    void push_back(const LaneWindow& w)
    {
        if (tail_ == slots_.size()) make_room();
        slots_[tail_++] = w;
    }

    // The index of the first window that starts at or after `start`.
    std::size_t first_starting_at_or_after(int64_t start) const
    {
        if (empty() || slots_[tail_ - 1].start < start) return size();  // the usual case: after everything
        const auto at = std::partition_point(slots_.begin() + static_cast<std::ptrdiff_t>(head_),
                                             slots_.begin() + static_cast<std::ptrdiff_t>(tail_),
                                             [start](const LaneWindow& w) { return w.start < start; });
        return static_cast<std::size_t>(at - slots_.begin()) - head_;
    }

    // Puts `w` before the window now at index i (i == size(): at the back).
    void insert(std::size_t i, const LaneWindow& w)
    {
        const auto first = slots_.begin() + static_cast<std::ptrdiff_t>(head_);
        if (head_ > 0 && i < size() / 2) {  // move [0, i) one slot towards the front
            std::move(first, first + static_cast<std::ptrdiff_t>(i), first - 1);
            --head_;
            slots_[head_ + i] = w;
            return;
        }
        if (tail_ == slots_.size()) make_room();
        const auto at = slots_.begin() + static_cast<std::ptrdiff_t>(head_ + i);
        std::move_backward(at, slots_.begin() + static_cast<std::ptrdiff_t>(tail_),
                           slots_.begin() + static_cast<std::ptrdiff_t>(tail_ + 1));
        *at = w;
        ++tail_;
    }

    void pop_front() { ++head_; }

private:
    // Room for one more at the back: the windows moved to the start when
    // they fill at most half the slots (so a compaction moves at most one
    // window per slot it frees), else twice the slots.
    void make_room()
    {
        if (size() <= slots_.size() / 2 && head_ > 0) {
            std::move(slots_.begin() + static_cast<std::ptrdiff_t>(head_), slots_.end(), slots_.begin());
            tail_ -= head_;
            head_ = 0;
            return;
        }
        slots_.resize(slots_.empty() ? 16 : 2 * slots_.size());
    }

    std::vector<LaneWindow> slots_;  // the windows are slots_[head_, tail_)
    std::size_t head_ = 0;
    std::size_t tail_ = 0;
};

}  // namespace lapse::cli
