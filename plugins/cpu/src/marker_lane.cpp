#include "marker_lane.hpp"

#include "asymmetric_fence.hpp"
#include "mpsc_queue.hpp"

#include <algorithm>
#include <bit>
#include <new>

#include <pthread.h>
#include <signal.h>

namespace lapse::cpu {

static_assert(MpscQueue::marker_kind(MpscQueue::marker_cell(MpscQueue::kStart, 1)) != MarkerLane::kEpochTag &&
                  MpscQueue::marker_kind(MpscQueue::marker_cell(MpscQueue::kEnd, 1)) != MarkerLane::kEpochTag,
              "an epoch tag must not read as a marker");

std::size_t MarkerLane::cells_for(std::size_t capacity) noexcept { return std::bit_ceil(std::max<std::size_t>(capacity, 64)); }

MarkerLane::MarkerLane(uintptr_t owner, std::size_t capacity)
    : owner_(owner),
      capacity_(cells_for(capacity)),
      mask_(capacity_ - 1),
      cells_(static_cast<std::atomic<uint32_t>*>(::operator new(capacity_ * sizeof(uint32_t), std::align_val_t{64}))),
      room_end_(capacity_)
{
    for (uint64_t i = 0; i < capacity_; ++i) new (&cells_[i]) std::atomic<uint32_t>(0);
}

MarkerLane::~MarkerLane() { ::operator delete(cells_, std::align_val_t{64}); }

uint32_t MarkerLane::take(uint32_t* out, uint32_t max, uint64_t position, bool spare_producer, bool& held) noexcept
{
    held = false;
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head == tail) return 0;
    uint64_t limit = tail;
    if (spare_producer) {
        const bool moved = tail != unwritten_seen_;
        unwritten_seen_ = tail;
        // As MpscQueue::pop_markers: a short run, or one whose producer has
        // stopped, is taken whole.
        if (moved && tail - head > kCellsPerLine) {
            const uint64_t behind = tail > kSparedCells ? (tail - kSparedCells) & ~(kCellsPerLine - 1) : 0;
            limit = std::max(behind, head);
            held = true;
        }
    }
    uint32_t n = 0;
    uint64_t at = head;          // the next cell to read
    uint64_t taken_to = head;    // the head once the cells read so far are taken
    uint64_t last_marker = head; // where the last marker taken sits
    while (at < limit && n < max) {
        const uint32_t cell = cells_[at & mask_].load(std::memory_order_relaxed);
        if (cell == kEpochTag) {
            // Published with its two words: tail_ is past them.
            const uint64_t epoch = cells_[(at + 1) & mask_].load(std::memory_order_relaxed) |
                                   static_cast<uint64_t>(cells_[(at + 2) & mask_].load(std::memory_order_relaxed)) << 32;
            if (epoch > position) break;  // queued after an entry the worker has not reached
            at += kEpochCells;
            taken_to = at;
            continue;
        }
        last_marker = at;
        out[n++] = cell;
        taken_to = ++at;
    }
    // Nor after a start marker while the producer goes on: the window it
    // opens most likely ends in the next cells (see MpscQueue::pop_markers).
    if (held && n > 0 && MpscQueue::marker_kind(out[n - 1]) == MpscQueue::kStart) {
        --n;
        taken_to = last_marker;
    }
    // Release: the producer may write over these cells once it reads this.
    if (taken_to != head) head_.store(taken_to, std::memory_order_release);
    return n;
}

MarkerLanes::MarkerLanes(std::size_t lane_capacity, bool wanted)
    : lane_capacity_(MarkerLane::cells_for(lane_capacity)), enabled_(wanted && asymmetric_fence::available())
{
}

MarkerLanes::~MarkerLanes()
{
    const uint32_t count = count_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < count; ++i) delete made_[i].load(std::memory_order_relaxed);
}

MarkerLane* MarkerLanes::claim_for(uintptr_t self) noexcept
{
    if (!enabled_) return nullptr;
    std::atomic<MarkerLane*>& slot = slots_[slot_of(self)];
    // A slot another thread holds stays its: no lock for finding that out.
    if (MarkerLane* lane = slot.load(std::memory_order_acquire)) return lane->owner() == self ? lane : nullptr;
    // Once a thread and stream: no signal handler on this thread runs
    // while it holds the mutex, which a window opened in the handler would
    // wait for for ever.
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &before);
    MarkerLane* lane = make_for(self, slot);
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    return lane;
}

MarkerLane* MarkerLanes::make_for(uintptr_t self, std::atomic<MarkerLane*>& slot) noexcept
{
    std::lock_guard<std::mutex> lock(claim_mutex_);
    if (MarkerLane* lane = slot.load(std::memory_order_relaxed)) return lane->owner() == self ? lane : nullptr;
    MarkerLane* lane = nullptr;
    try {
        lane = new MarkerLane(self, lane_capacity_);
    } catch (...) {
        return nullptr;  // out of memory: the queue still takes the marker
    }
    const uint32_t count = count_.load(std::memory_order_relaxed);
    made_[count].store(lane, std::memory_order_relaxed);
    count_.store(count + 1, std::memory_order_release);  // the worker looks at it from now on
    cells_allocated_.fetch_add(lane->capacity(), std::memory_order_relaxed);
    slot.store(lane, std::memory_order_release);
    return lane;
}

uint32_t MarkerLanes::take(uint32_t* out, uint32_t max, uint64_t position, bool spare_producer, bool& held) noexcept
{
    held = false;
    const uint32_t count = count_.load(std::memory_order_acquire);
    uint32_t n = 0;
    for (uint32_t i = 0; i < count && n < max; ++i) {
        bool lane_held = false;
        n += made_[i].load(std::memory_order_relaxed)->take(out + n, max - n, position, spare_producer, lane_held);
        held = held || lane_held;
    }
    return n;
}

bool MarkerLanes::has_cells() const noexcept
{
    const uint32_t count = count_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < count; ++i)
        if (made_[i].load(std::memory_order_relaxed)->has_cells()) return true;
    return false;
}

}  // namespace lapse::cpu
