// Internal: how window notes travel between the threads that close named
// windows and a capture's collector, with no atomic read-modify-write
// shared between threads on the way.
//
// Each producing thread gets its own NoteChannel per capture: a
// single-producer single-consumer ring of notes to the collector, a second
// ring that hands notes the collector is done with back for reuse (so a
// named window allocates nothing once a thread is warm), and the thread's
// share of the memory budget. Each index and counter has exactly one
// writer; the other side only loads it. The collector pulls every channel
// in batches.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace lapse::detail {

struct WindowNote;

// A bounded ring, one producer thread and one consumer thread. Each side
// keeps a copy of the other's index and reloads it only when the ring
// looks full (producer) or empty (consumer), so the two cache lines of the
// indices move between cores once per batch, not once per note.
class NoteRing {
public:
    explicit NoteRing(std::size_t capacity_pow2)
        // Not zeroed: a slot is always written before it is read, and a
        // thread's first window into a capture should not clear 512 KiB.
        : mask_(capacity_pow2 - 1), slots_(new WindowNote*[capacity_pow2])
    {
    }

    // Producer only. False when full.
    bool push(WindowNote* note) noexcept
    {
        const std::size_t tail = tail_.load(std::memory_order_relaxed);
        if (tail - head_seen_ > mask_) {
            head_seen_ = head_.load(std::memory_order_acquire);
            if (tail - head_seen_ > mask_) return false;
        }
        slots_[tail & mask_] = note;
        tail_.store(tail + 1, std::memory_order_release);
        return true;
    }

    // Consumer only. Null when empty.
    WindowNote* pop() noexcept
    {
        const std::size_t head = head_.load(std::memory_order_relaxed);
        if (head == tail_seen_) {
            tail_seen_ = tail_.load(std::memory_order_acquire);
            if (head == tail_seen_) return nullptr;
        }
        WindowNote* note = slots_[head & mask_];
        head_.store(head + 1, std::memory_order_release);
        return note;
    }

    // Consumer only: pops up to `max` notes into `out` with one store of
    // the head; returns how many.
    std::size_t pop_many(WindowNote** out, std::size_t max) noexcept
    {
        const std::size_t head = head_.load(std::memory_order_relaxed);
        if (head == tail_seen_) {
            tail_seen_ = tail_.load(std::memory_order_acquire);
            if (head == tail_seen_) return 0;
        }
        const std::size_t n = std::min(max, tail_seen_ - head);
        // In at most two runs: up to the ring's end, then from its start.
        const std::size_t from = head & mask_;
        const std::size_t first = std::min(n, mask_ + 1 - from);
        std::memcpy(out, slots_.get() + from, first * sizeof(WindowNote*));
        std::memcpy(out + first, slots_.get(), (n - first) * sizeof(WindowNote*));
        head_.store(head + n, std::memory_order_release);
        return n;
    }

    // Either side: nothing left to pop (a snapshot).
    bool empty() const noexcept
    {
        return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
    }
    std::size_t capacity() const noexcept { return mask_ + 1; }
    // Either side: how many notes were ever pushed (a snapshot).
    uint64_t pushed() const noexcept { return tail_.load(std::memory_order_acquire); }

private:
    const std::size_t mask_;
    std::unique_ptr<WindowNote*[]> slots_;
    alignas(64) std::atomic<std::size_t> tail_{0};  // written by the producer
    std::size_t head_seen_ = 0;                     // producer's copy of head_
    alignas(64) std::atomic<std::size_t> head_{0};  // written by the consumer
    std::size_t tail_seen_ = 0;                     // consumer's copy of tail_
};

// One producing thread's link to one capture.
struct NoteChannel {
    NoteChannel(std::size_t notes_capacity, std::size_t returns_capacity)
        : notes(notes_capacity), returns(returns_capacity)
    {
    }
    // Frees the notes left in either ring (its last owner runs it).
    ~NoteChannel();
    NoteChannel(const NoteChannel&) = delete;
    NoteChannel& operator=(const NoteChannel&) = delete;

    NoteRing notes;    // producer -> collector: closed named windows
    NoteRing returns;  // collector -> producer: notes to reuse

    // Written by the producer only (plain stores). The notes admitted are
    // notes.pushed().
    alignas(64) std::atomic<uint64_t> charged{0};  // budget bytes of every note admitted
    std::atomic<uint64_t> grant{0};                // budget bytes reserved for this thread
    // Producer only: bytes it may still charge without looking at `freed`
    // (grant - held when it last looked), so a window reads no counter the
    // collector writes until the credit runs out.
    uint64_t credit = 0;
    std::atomic<bool> orphaned{false};             // the thread is gone (or let the channel go)
    // Written by the collector only.
    alignas(64) std::atomic<uint64_t> freed{0};  // budget bytes of notes the collector is done with
    uint64_t freed_unpublished = 0;              // collector-only: freed this round, not yet in `freed`

    // Producer only: bytes held now (admitted, not yet freed by the collector).
    uint64_t held() const noexcept
    {
        return charged.load(std::memory_order_relaxed) - freed.load(std::memory_order_acquire);
    }
};

}  // namespace lapse::detail
