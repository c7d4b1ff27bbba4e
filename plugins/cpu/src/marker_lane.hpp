// cpu plugin — a producer thread's own lane of window markers into one
// stream.
//
// The stream's queue (MpscQueue) makes every producer claim its cell with a
// locked operation, two per window. A lane is a ring of cells that one
// thread writes and the stream's worker reads, so pushing a marker is two
// plain stores. Work and fences still go through the queue, and a marker
// must still be stamped in order with them: each marker carries the
// queue's tail position as its producer read it (its epoch), and the
// worker stamps a lane marker only once its own position in the queue has
// reached that epoch, and before it runs the entry at that position (see
// MarkerLanes::take). A marker pushed after some work was queued (the push
// of the work happened before it) read a tail past that work, so it is
// stamped after the work runs; one pushed before some work was queued read
// a tail at or before the work, so it is stamped before. The epoch is
// written only when it changed since the producer's last marker, as three
// cells: a burst of windows around no work carries none.
//
// The lane also keeps the thread's free window records (a RecordCache), so
// that one lookup gives profile_start both its record and its lane.
//
// A lane belongs to the thread whose thread pointer it records, for good:
// a thread that exits leaves it to the next thread given the same thread
// control block (glibc reuses them with the stacks), which is then its one
// producer. A stream has at most kSlots lanes, found by a hash of the
// thread pointer; a thread whose slot another thread holds, a full lane,
// or a process where the asymmetric fence is refused, pushes through the
// queue as before. The worker's sleep is announced with that fence, so a
// producer checks for it with a plain load (WorkerStream). Lanes are a
// device setting (`lanes`, off by default: plugins/cpu/README.md). A
// signal handler that opens or closes a window while the thread it
// interrupted is inside its lane would break the lane's one producer: the
// owner marks itself inside (enter(), leave()), and a handler that finds
// it so uses the queue.
#pragma once

#include "cpu_window.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace lapse::cpu {

class MarkerLane {
public:
    // `capacity`: cells, rounded up to a power of two (64 at least:
    // cells_for()). Throws std::bad_alloc.
    MarkerLane(uintptr_t owner, std::size_t capacity);
    static std::size_t cells_for(std::size_t capacity) noexcept;
    ~MarkerLane();
    MarkerLane(const MarkerLane&) = delete;
    MarkerLane& operator=(const MarkerLane&) = delete;

    uintptr_t owner() const noexcept { return owner_; }

    // [the owner thread] Its free records on this lane's stream.
    CpuWindowTable::RecordCache records;

    // [the owner thread] The lane and its records are one thread's, which
    // re-enters the window path only from a signal handler that interrupts
    // it there. enter() marks the thread inside them (false: it already
    // is, and this call is the handler's, which then uses the stream's
    // queue and shared free list); leave() when done with both. Plain
    // stores: a handler runs on the thread it interrupts.
    [[gnu::always_inline]] bool enter() noexcept
    {
        if (inside_.load(std::memory_order_relaxed)) [[unlikely]]
            return false;
        inside_.store(true, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        return true;
    }
    [[gnu::always_inline]] void leave() noexcept
    {
        std::atomic_signal_fence(std::memory_order_seq_cst);
        inside_.store(false, std::memory_order_relaxed);
    }

    // [the owner thread] Appends the marker `cell` (MpscQueue::marker_cell)
    // read at queue position `epoch`. False when the lane is full: nothing
    // was appended.
    [[gnu::always_inline]] bool try_push(uint32_t cell, uint64_t epoch) noexcept
    {
        uint64_t t = tail_.load(std::memory_order_relaxed);
        const bool new_epoch = epoch != last_epoch_.load(std::memory_order_relaxed);
        const uint64_t need = new_epoch ? 1 + kEpochCells : 1;
        if (t + need > room_end_.load(std::memory_order_relaxed)) [[unlikely]] {
            // Acquire: the worker has read the cells it says it is past.
            room_end_.store(head_.load(std::memory_order_acquire) + capacity_, std::memory_order_relaxed);
            if (t + need > room_end_.load(std::memory_order_relaxed)) return false;
        }
        if (new_epoch) [[unlikely]] {
            cells_[t & mask_].store(kEpochTag, std::memory_order_relaxed);
            cells_[(t + 1) & mask_].store(static_cast<uint32_t>(epoch), std::memory_order_relaxed);
            cells_[(t + 2) & mask_].store(static_cast<uint32_t>(epoch >> 32), std::memory_order_relaxed);
            t += kEpochCells;
            last_epoch_.store(epoch, std::memory_order_relaxed);
        }
        cells_[t & mask_].store(cell, std::memory_order_relaxed);
        tail_.store(t + 1, std::memory_order_release);
        return true;
    }

    // [worker] Takes the markers ready in the lane whose epoch is at most
    // `position` (the worker's place in the queue), at most `max`, into
    // `out`. With `spare_producer`, a run that its producer is still
    // extending is cut as MpscQueue::pop_markers cuts one (whole lines
    // kSparedCells behind the producer, never ending on a start marker);
    // `held` says so.
    uint32_t take(uint32_t* out, uint32_t max, uint64_t position, bool spare_producer, bool& held) noexcept;

    // [worker] Whether the lane holds a cell not taken yet. Acquire.
    bool has_cells() const noexcept { return tail_.load(std::memory_order_acquire) != head_.load(std::memory_order_relaxed); }

    std::size_t capacity() const noexcept { return capacity_; }

    // Cells of an epoch: its tag, then the position's low and high words.
    static constexpr uint32_t kEpochCells = 3;
    // A marker cell's kind is 1 or 2 (MpscQueue::kStart, kEnd), never 3.
    static constexpr uint32_t kEpochTag = 3;

private:
    static constexpr uint64_t kCellsPerLine = 16;
    static constexpr uint64_t kSparedCells = 4 * kCellsPerLine;

    const uintptr_t owner_;
    const uint64_t capacity_;
    const uint64_t mask_;
    // Owned, cache-line aligned. Atomics (relaxed, plain moves) for the
    // same reason as the owner's fields below.
    std::atomic<uint32_t>* const cells_;
    // The owner's line. Atomics (relaxed) although one thread writes them:
    // the next thread given the same thread pointer takes them over.
    alignas(64) std::atomic<uint64_t> tail_{0};      // cells written; release
    std::atomic<uint64_t> room_end_;                 // head_ as the owner last read it, plus capacity_
    std::atomic<uint64_t> last_epoch_{0};            // the epoch of the owner's last marker
    std::atomic<bool> inside_{false};                // enter()ed and not left
    // The worker's line.
    alignas(64) std::atomic<uint64_t> head_{0};      // cells the worker took; release
    uint64_t unwritten_seen_ = UINT64_MAX;           // worker only: tail_ at the last look that held back
};

// The lanes of one stream.
class MarkerLanes {
public:
    static constexpr uint32_t kSlots = 64;

    // `wanted`: the device's `lanes` setting; lanes are on when it is true
    // and the asymmetric fence works in this process.
    MarkerLanes(std::size_t lane_capacity, bool wanted);
    ~MarkerLanes();
    MarkerLanes(const MarkerLanes&) = delete;
    MarkerLanes& operator=(const MarkerLanes&) = delete;

    // [any thread] The calling thread's lane, or nullptr (it has none yet:
    // see claim(); where lanes are off, no thread has one).
    [[gnu::always_inline]] MarkerLane* find() const noexcept
    {
        const uintptr_t self = thread_pointer();
        MarkerLane* lane = slots_[slot_of(self)].load(std::memory_order_acquire);
        return lane != nullptr && lane->owner() == self ? lane : nullptr;
    }

    // [any thread] The calling thread's lane, made on its first call; nullptr
    // when lanes are off in this process, its slot belongs to another
    // thread, or memory ran out: then the caller uses the queue.
    MarkerLane* claim() noexcept { return claim_for(thread_pointer()); }
    // claim() for the thread whose thread pointer is `owner`: the calling
    // thread's own in the plugin; a test names others, to place two
    // threads in one slot (slot_of).
    MarkerLane* claim_for(uintptr_t owner) noexcept;

    // The slot a thread pointer's lane takes: one of kSlots.
    static uint32_t slot_of(uintptr_t owner) noexcept
    {
        return static_cast<uint32_t>((static_cast<uint64_t>(owner) * 0x9E3779B97F4A7C15ull) >> 58);
    }
    static_assert(kSlots == 64, "slot_of() keeps 6 bits");
    static uintptr_t thread_pointer() noexcept { return reinterpret_cast<uintptr_t>(__builtin_thread_pointer()); }

    // Whether lanes are on: asked for, and the asymmetric fence works.
    bool enabled() const noexcept { return enabled_; }

    // [worker] Takes ready markers from every lane (MarkerLane::take), at
    // most `max` in all.
    uint32_t take(uint32_t* out, uint32_t max, uint64_t position, bool spare_producer, bool& held) noexcept;

    // [worker] Whether any lane holds a cell not taken yet. Call it after
    // asymmetric_fence::heavy() when deciding to sleep.
    bool has_cells() const noexcept;

    // Lane cells allocated (memory accounting).
    std::size_t cells_allocated() const noexcept { return cells_allocated_.load(std::memory_order_relaxed); }

private:
    // claim_for()'s slow half, under the claim mutex.
    MarkerLane* make_for(uintptr_t owner, std::atomic<MarkerLane*>& slot) noexcept;

    const std::size_t lane_capacity_;
    const bool enabled_;
    std::atomic<MarkerLane*> slots_[kSlots] = {};
    // Worker only reads: the lanes made so far, in the order made.
    std::atomic<uint32_t> count_{0};
    std::atomic<MarkerLane*> made_[kSlots] = {};
    std::mutex claim_mutex_;
    std::atomic<std::size_t> cells_allocated_{0};
};

}  // namespace lapse::cpu
