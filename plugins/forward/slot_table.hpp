// forward — a generation-tagged table of window records.
//
// forward hands out its own tokens, so it must map a token back to its record
// on every end, abandon and resolve, from any thread, without a global lock
// and without allocating in the steady state. A token id encodes the slot
// index and the slot's generation, so the lookup is an array index and a
// comparison, and an id is never handed out twice: a slot whose generation
// would wrap is retired instead of reused.
//
//   id = generation << 24 | index        (generation >= 1, so id != 0)
//
// Each slot carries one atomic word, generation << 8 | state. Whoever moves a
// slot into OWNED (by CAS) has the record to itself until it publishes the
// next state with a release store; readers acquire the word first. Free slots
// sit on a lock-free stack whose head carries an ABA tag. Slots live in
// chunks that are allocated (under a mutex, off the steady state) when the
// stack runs dry and never move, so a record's address is stable.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

namespace lapse::forward {

// Windows a table holds live at once, at most (every index in use).
inline constexpr unsigned kSlotIndexBits = 24;
inline constexpr uint32_t kMaxLiveSlots = uint32_t{1} << kSlotIndexBits;

template <class Record>
class SlotTable {
public:
    static constexpr unsigned kIndexBits = kSlotIndexBits;
    static constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
    static constexpr unsigned kChunkBits = 12;
    static constexpr uint32_t kChunkSize = uint32_t{1} << kChunkBits;
    static constexpr uint32_t kMaxChunks = uint32_t{1} << (kIndexBits - kChunkBits);
    static constexpr uint64_t kMaxGeneration = (uint64_t{1} << 40) - 1;

    enum State : uint8_t {
        kFree = 0,
        kOwned = 1,  // one thread is filling or operating on the record
        kOpen = 2,
        kClosed = 3,
    };
    static constexpr unsigned bit(State s) { return 1u << s; }

    struct Slot {
        std::atomic<uint64_t> word{0};  // generation << 8 | state
        std::atomic<uint32_t> next{0};  // free stack link: index + 1, 0 ends it
        Record record{};
    };

    SlotTable() = default;
    SlotTable(const SlotTable&) = delete;
    SlotTable& operator=(const SlotTable&) = delete;
    ~SlotTable()
    {
        for (uint32_t c = 0; c < chunk_count_.load(std::memory_order_acquire); ++c)
            delete[] chunks_[c].load(std::memory_order_relaxed);
    }

    // Allocates the first chunk and touches it, so the first windows do not
    // pay for fresh pages. Throws std::bad_alloc.
    void reserve_first_chunk()
    {
        std::lock_guard<std::mutex> lock(grow_mutex_);
        if (chunk_count_.load(std::memory_order_relaxed) == 0) add_chunk_locked(nullptr);
    }

    // Takes a free slot and moves it to OWNED under a new generation; `id`
    // receives the token id. Null when 2^24 windows are live (or memory ran
    // out): the caller reports LAPSE_ERROR_CAPACITY.
    Slot* acquire(uint64_t& id) noexcept
    {
        uint32_t index = 0;
        Slot* s = pop(index);
        if (s == nullptr) s = grow(index);
        if (s == nullptr) return nullptr;
        uint64_t generation = (s->word.load(std::memory_order_relaxed) >> 8) + 1;
        s->word.store(generation << 8 | kOwned, std::memory_order_relaxed);
        id = generation << kIndexBits | index;
        return s;
    }

    // Ends ownership: the record becomes visible in `state`.
    static void publish(Slot* s, State state) noexcept
    {
        uint64_t w = s->word.load(std::memory_order_relaxed);
        s->word.store((w & ~uint64_t{0xff}) | state, std::memory_order_release);
    }

    enum class Claim { kOk, kInvalid, kBusy };

    // Moves the slot named by `id` from one of the states in `mask` to OWNED.
    // kInvalid: no such live window, or it is in another state. kBusy: another
    // call owns it right now (only when `wait_if_busy` is false; otherwise it
    // waits for that call, which never holds a slot across user work).
    Claim claim(uint64_t id, unsigned mask, bool wait_if_busy, Slot*& out, State& was) noexcept
    {
        Slot* s = find(id);
        if (s == nullptr) return Claim::kInvalid;
        uint64_t generation = id >> kIndexBits;
        uint64_t w = s->word.load(std::memory_order_acquire);
        for (;;) {
            if ((w >> 8) != generation) return Claim::kInvalid;
            auto state = static_cast<State>(w & 0xff);
            if (state == kOwned) {
                if (!wait_if_busy) return Claim::kBusy;
                std::this_thread::yield();
                w = s->word.load(std::memory_order_acquire);
                continue;
            }
            if ((mask & bit(state)) == 0) return Claim::kInvalid;
            if (s->word.compare_exchange_weak(w, generation << 8 | kOwned, std::memory_order_acquire,
                                              std::memory_order_acquire)) {
                out = s;
                was = state;
                return Claim::kOk;
            }
        }
    }

    // Frees an owned slot. Its id stays dead: the next acquire bumps the
    // generation, and a slot at the last generation is retired, never reused.
    void release(Slot* s, uint64_t id) noexcept
    {
        s->record = Record{};
        uint64_t generation = id >> kIndexBits;
        s->word.store(generation << 8 | kFree, std::memory_order_release);
        if (generation < kMaxGeneration) push(s, static_cast<uint32_t>(id & kIndexMask));
    }

    // Calls f(record, state) for every slot not free. Only while no other
    // thread uses the table (closing the device).
    template <class F>
    void for_each_live(F&& f)
    {
        uint32_t chunks = chunk_count_.load(std::memory_order_acquire);
        for (uint32_t c = 0; c < chunks; ++c) {
            Slot* chunk = chunks_[c].load(std::memory_order_acquire);
            for (uint32_t i = 0; i < kChunkSize; ++i) {
                auto state = static_cast<State>(chunk[i].word.load(std::memory_order_acquire) & 0xff);
                if (state != kFree) f(chunk[i].record, state);
            }
        }
    }

private:
    Slot* find(uint64_t id) const noexcept
    {
        uint64_t index = id & kIndexMask;
        uint64_t chunk = index >> kChunkBits;
        if (chunk >= chunk_count_.load(std::memory_order_acquire)) return nullptr;
        Slot* c = chunks_[chunk].load(std::memory_order_acquire);
        return c == nullptr ? nullptr : &c[index & (kChunkSize - 1)];
    }

    Slot* slot_at(uint32_t index) const noexcept
    {
        return &chunks_[index >> kChunkBits].load(std::memory_order_acquire)[index & (kChunkSize - 1)];
    }

    Slot* pop(uint32_t& index) noexcept
    {
        uint64_t head = free_head_.load(std::memory_order_acquire);
        for (;;) {
            uint32_t top = static_cast<uint32_t>(head);
            if (top == 0) return nullptr;
            Slot* s = slot_at(top - 1);
            uint32_t next = s->next.load(std::memory_order_relaxed);
            uint64_t tag = (head >> 32) + 1;
            if (free_head_.compare_exchange_weak(head, tag << 32 | next, std::memory_order_acq_rel,
                                                 std::memory_order_acquire)) {
                index = top - 1;
                return s;
            }
        }
    }

    void push(Slot* s, uint32_t index) noexcept
    {
        uint64_t head = free_head_.load(std::memory_order_relaxed);
        for (;;) {
            s->next.store(static_cast<uint32_t>(head), std::memory_order_relaxed);
            uint64_t tag = (head >> 32) + 1;
            if (free_head_.compare_exchange_weak(head, tag << 32 | (index + 1), std::memory_order_release,
                                                 std::memory_order_relaxed))
                return;
        }
    }

    Slot* grow(uint32_t& index) noexcept
    {
        std::lock_guard<std::mutex> lock(grow_mutex_);
        // Another thread may have grown the table while this one waited.
        if (Slot* s = pop(index)) return s;
        if (chunk_count_.load(std::memory_order_relaxed) >= kMaxChunks) return nullptr;
        try {
            return add_chunk_locked(&index);
        } catch (...) {
            return nullptr;
        }
    }

    // Adds a chunk; keeps its first slot for the caller when `index` is
    // given, and pushes the rest, so that low indices come out first.
    Slot* add_chunk_locked(uint32_t* index)
    {
        uint32_t c = chunk_count_.load(std::memory_order_relaxed);
        Slot* chunk = new Slot[kChunkSize];
        chunks_[c].store(chunk, std::memory_order_release);
        chunk_count_.store(c + 1, std::memory_order_release);
        uint32_t base = c * kChunkSize;
        uint32_t keep = index != nullptr ? 1 : 0;
        for (uint32_t i = kChunkSize; i-- > keep;) push(&chunk[i], base + i);
        if (index == nullptr) return nullptr;
        *index = base;
        return &chunk[0];
    }

    std::atomic<uint64_t> free_head_{0};  // tag << 32 | (index + 1)
    std::atomic<uint32_t> chunk_count_{0};
    std::atomic<Slot*> chunks_[kMaxChunks]{};
    std::mutex grow_mutex_;
};

}  // namespace lapse::forward
