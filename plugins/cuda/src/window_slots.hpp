// Window records for the CUDA plugin: a growable pool of slots, each owning
// its two timing events for its whole life, keyed by generation-tagged ids.
//
// Why this shape:
//  - The hot path (start, end, abandon) must not allocate, lock globally or
//    create driver objects. Slots live in fixed chunks that are never freed
//    until the device closes; a slot's events are created with its chunk, so
//    "taking two events from the pool" is one lock-free pop.
//  - Tokens are {generation, index}: a token kept after its window was
//    resolved or abandoned names a generation the slot has left, so it is
//    refused, never mistaken for the window that reuses the slot.
//  - Every state change is one CAS on a word holding (generation, state), so
//    two threads racing on one token cannot both win, and a CAS cannot
//    succeed against a later window in the same slot (ABA).
//  - An abandoned window's events may still be pending on the device; the
//    slot goes to a quarantine list and is reused only once its events have
//    completed.
#pragma once

#include <cuda.h>

#include <lapse/lapse.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

namespace lapse::cuda {

enum class SlotState : uint64_t {
    Free = 0,        // on the free list
    Open = 1,        // start recorded, end not yet
    Busy = 2,        // one thread is moving it between states; fields are its own
    Closed = 3,      // end recorded, waiting for resolve
    Quarantined = 4  // abandoned; on the quarantine list until its events complete
};

struct Slot {
    // (generation << 3) | state. Acquire/release on this word hands the plain
    // fields below from one owner to the next.
    std::atomic<uint64_t> word{(uint64_t{1} << 3) | static_cast<uint64_t>(SlotState::Free)};
    std::atomic<uint32_t> next{0};  // free/quarantine list link: index + 1, 0 ends the list

    CUevent start = nullptr;
    CUevent end = nullptr;
    lapse_stream stream = 0;
    uint64_t error_epoch = 0;    // the device's error epoch when the window opened
    uint64_t anchor_seq = 0;     // the host-clock anchor current when it opened
    lapse_status failure = LAPSE_OK;  // set when closing it failed on the device
    bool end_recorded = false;
};

inline uint64_t slot_word(uint64_t generation, SlotState state) noexcept
{
    return (generation << 3) | static_cast<uint64_t>(state);
}
inline uint64_t word_generation(uint64_t word) noexcept { return word >> 3; }
inline SlotState word_state(uint64_t word) noexcept { return static_cast<SlotState>(word & 7u); }

// Token ids: low 24 bits index + 1 (so an id is never 0), the rest the
// slot's generation at open. A generation grows by one per use of a slot:
// 2^40 uses of one slot before an id could repeat.
inline constexpr unsigned kIndexBits = 24;
inline constexpr uint32_t kMaxSlots = (1u << kIndexBits) - 1;

// A slot whose next generation would not fit an id is retired, never
// reused: ids are never reused by a device. (At a million windows a second
// on one slot that takes 12 days.)
inline constexpr uint64_t kMaxGeneration = (uint64_t{1} << (64 - kIndexBits)) - 1;

inline uint64_t make_id(uint64_t generation, uint32_t index) noexcept
{
    return (generation << kIndexBits) | (uint64_t{index} + 1);
}
inline bool split_id(uint64_t id, uint64_t& generation, uint32_t& index) noexcept
{
    uint64_t low = id & ((uint64_t{1} << kIndexBits) - 1);
    if (low == 0) return false;
    index = static_cast<uint32_t>(low - 1);
    generation = id >> kIndexBits;
    return generation != 0;
}

// A lock-free LIFO of slot indices (Treiber stack). The head carries a tag
// that changes on every pop, so a pop that read a stale `next` cannot win.
// Slots are never freed while the stack is in use, so reading `next` of a
// slot another thread just popped is harmless.
class SlotStack {
public:
    void push(uint32_t index, Slot& slot) noexcept
    {
        uint64_t head = head_.load(std::memory_order_relaxed);
        for (;;) {
            slot.next.store(static_cast<uint32_t>(head & 0xffffffffu), std::memory_order_relaxed);
            uint64_t desired = ((head >> 32) + 1) << 32 | (uint64_t{index} + 1);
            if (head_.compare_exchange_weak(head, desired, std::memory_order_release, std::memory_order_relaxed))
                return;
        }
    }

    // Returns false when empty.
    template <class Lookup>
    bool pop(uint32_t& index, Lookup&& lookup) noexcept
    {
        uint64_t head = head_.load(std::memory_order_acquire);
        for (;;) {
            uint32_t top = static_cast<uint32_t>(head & 0xffffffffu);
            if (top == 0) return false;
            uint32_t next = lookup(top - 1).next.load(std::memory_order_relaxed);
            uint64_t desired = ((head >> 32) + 1) << 32 | next;
            if (head_.compare_exchange_weak(head, desired, std::memory_order_acquire, std::memory_order_acquire)) {
                index = top - 1;
                return true;
            }
        }
    }

private:
    std::atomic<uint64_t> head_{0};
};

// The slots themselves: chunks of kChunkSlots published once and kept until
// destruction. Growing is the only allocation and happens only when every
// slot is in use (or quarantined and still pending).
class SlotTable {
public:
    static constexpr uint32_t kChunkSlots = 256;
    static constexpr uint32_t kMaxChunks = 4096;  // 1 Mi windows in flight at most

    SlotTable() = default;
    SlotTable(const SlotTable&) = delete;
    SlotTable& operator=(const SlotTable&) = delete;

    ~SlotTable()
    {
        for (auto& c : chunks_) delete[] c.load(std::memory_order_relaxed);
    }

    uint32_t size() const noexcept { return size_.load(std::memory_order_acquire); }

    Slot& at(uint32_t index) noexcept
    {
        return chunks_[index / kChunkSlots].load(std::memory_order_acquire)[index % kChunkSlots];
    }

    // Null for an index that was never allocated (a forged or foreign token).
    Slot* find(uint32_t index) noexcept
    {
        if (index >= size()) return nullptr;
        return &at(index);
    }

    // Appends one chunk. The caller serialises growth (grow_mutex) and
    // initialises the new slots before publishing them on a free list.
    // Returns the first new index, or false at `limit` slots.
    bool add_chunk(uint32_t limit, uint32_t& first)
    {
        uint32_t n = size_.load(std::memory_order_relaxed);
        if (n + kChunkSlots > limit || n / kChunkSlots >= kMaxChunks) return false;
        chunks_[n / kChunkSlots].store(new Slot[kChunkSlots], std::memory_order_release);
        size_.store(n + kChunkSlots, std::memory_order_release);
        first = n;
        return true;
    }

    std::mutex& grow_mutex() noexcept { return grow_mutex_; }

private:
    std::atomic<Slot*> chunks_[kMaxChunks] = {};
    std::atomic<uint32_t> size_{0};
    std::mutex grow_mutex_;
};

}  // namespace lapse::cuda
