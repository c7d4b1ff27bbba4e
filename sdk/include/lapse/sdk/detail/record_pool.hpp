// lapse SDK (C++) — where a WindowTable's records live and how a free one
// is found (lapse/sdk/window_table.hpp). Not an interface of its own: a
// plugin uses sdk::WindowTable, which decides what a record's state word
// says; this pool only stores records and hands out free ones.
//
//   * Records live in chunks that never move (chunk k holds first_chunk << k
//     records), so a record can be touched by index without a lock while the
//     pool grows. Growing is the only allocation; a pool sized for the
//     windows live at once allocates nothing in the steady state.
//   * Free records sit on per-shard lock-free stacks (Treiber stacks; shard
//     = tag, masked; a backend passes its stream as the tag), so threads on
//     different streams do not share a free-list cache line. An empty shard
//     takes records from the others before the pool grows.
//   * A second stack holds parked records (WindowTable::park), apart from
//     the free ones.
//
// A stack's head is {ABA counter : 32, index + 1 : 32}; a record links to
// the next through its `next_free` (index + 1, 0 = end), the one field of
// Record this pool reads or writes besides constructing it. Record must be
// trivially destructible (chunks are freed without running destructors).
//
// Thread safety: as WindowTable's: every member is [thread-safe] except the
// constructor, destructor and for_each_record() (no other call may run
// concurrently). pop/push take no lock and never block; pop_anywhere() may
// grow the pool (one mutex, rare).
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

namespace lapse::sdk::detail {

// Free records one thread keeps for its own opens (WindowTable's
// open(cache, ...)): a chain taken off a shard's list a few dozen at a time
// with one CAS (RecordPool::refill), so that taking one is a plain load and
// store. Records in it are free but hidden from every other thread: keep
// one per thread and tag, not one per window, and for the thread's life
// (one dropped strands its records until the pool dies; a CPU plugin keeps
// it in the thread's marker lane). Owned by one thread at a time.
class RecordCache {
    template <class Record>
    friend class RecordPool;
    // index + 1 of the next record, 0 = empty. Atomic (relaxed) although
    // one thread uses it: a thread may take the cache over from another.
    std::atomic<uint32_t> head_{0};
};

template <class Record>
class RecordPool {
public:
    static constexpr uint32_t max_chunks = 32;
    static constexpr uint32_t max_shards = 256;

    // See WindowTable's constructor for the three numbers. Allocates the
    // first chunk and puts it on shard 0's free list.
    RecordPool(uint32_t shards, uint32_t first_chunk, uint32_t max_records)
        : shard_count_(std::bit_ceil(std::clamp<uint32_t>(shards, 1, max_shards))),
          chunk_shift_(static_cast<uint32_t>(std::countr_zero(std::bit_ceil(std::max<uint32_t>(first_chunk, 16))))),
          first_chunk_records_(uint32_t{1} << chunk_shift_),
          max_records_(max_records == 0 ? UINT32_MAX : max_records),
          shards_(shard_count_)
    {
        for (auto& c : chunks_) c.store(nullptr, std::memory_order_relaxed);
        if (!grow(0, 0)) throw std::bad_alloc();
    }

    RecordPool(const RecordPool&) = delete;
    RecordPool& operator=(const RecordPool&) = delete;

    ~RecordPool()
    {
        static_assert(std::is_trivially_destructible_v<Record>, "chunks are freed without running destructors");
        for (auto& c : chunks_)
            if (Record* chunk = c.load(std::memory_order_relaxed))
                ::operator delete(chunk, std::align_val_t{kChunkAlignment});
    }

    // Chunk k covers indices [B(2^k - 1), B(2^(k+1) - 1)) with B = first_chunk.
    // nullptr for an index in no chunk allocated yet, and so for UINT32_MAX
    // (the index of id 0), which grow() never lets a chunk reach.
    Record* record(uint32_t index) const noexcept
    {
        // The first chunk (the records a table is sized with) is where
        // nearly every window lives: one load, no chunk arithmetic. It
        // always exists (the constructor allocates it).
        if (index < first_chunk_records_) [[likely]] {
            Record* first_chunk = chunks_[0].load(std::memory_order_relaxed);
            if (first_chunk == nullptr) __builtin_unreachable();  // so a caller's null test folds away
            return first_chunk + index;
        }
        return record_in_later_chunk(index);
    }

    // A free list: a shard's, or the parked records'.
    struct alignas(64) Shard {
        std::atomic<uint64_t> head{0};
    };

    // A free record from `tag`'s own list, and its index (its address saves
    // the caller computing it again). False when that list is empty.
    bool pop(uint32_t tag, uint32_t& index, Record*& popped) noexcept
    {
        return pop_from(shards_[shard_of(tag)].head, index, popped);
    }
    // The same from `tag`'s list as shard() found it once: for a caller
    // that opens on the same tag again and again.
    bool pop(Shard& list, uint32_t& index, Record*& popped) noexcept { return pop_from(list.head, index, popped); }
    Shard& shard(uint32_t tag) noexcept { return shards_[shard_of(tag)]; }

    // pop() when `tag`'s list was empty: that list again, the other shards,
    // then a new chunk. False when memory, the 2^32 indices or max_records
    // ran out. Out of line, so that the common open saves no registers for it.
    [[gnu::noinline]] bool pop_anywhere(uint32_t tag, uint32_t& index, Record*& popped) noexcept
    {
        const uint32_t home = shard_of(tag);
        for (;;) {
            const uint32_t seen = grown_.load(std::memory_order_acquire);
            if (pop_from(shards_[home].head, index, popped)) return true;
            for (uint32_t i = 1; i < shard_count_; ++i)
                if (pop_from(shards_[(home + i) & (shard_count_ - 1)].head, index, popped)) return true;
            if (!grow(home, seen)) return false;
        }
    }

    // A record from `cache`, and its index; false when it is empty.
    [[gnu::always_inline]] bool pop(RecordCache& cache, uint32_t& index, Record*& popped) noexcept
    {
        const uint32_t head = cache.head_.load(std::memory_order_relaxed);
        if (head == 0) [[unlikely]]
            return false;
        index = head - 1;
        popped = record(index);
        cache.head_.store(popped->next_free.load(std::memory_order_relaxed), std::memory_order_relaxed);
        return true;
    }

    // Fills an empty `cache` from `tag`'s own list; false when that list
    // was empty.
    static constexpr uint32_t cache_refill = 64;
    bool refill(RecordCache& cache, uint32_t tag) noexcept
    {
        const uint32_t head = take_chain(tag, cache_refill);
        cache.head_.store(head, std::memory_order_relaxed);
        return head != 0;
    }

    // Pushes the chain first..last (linked through next_free, last's link
    // set here) onto `tag`'s free list.
    void push(uint32_t tag, uint32_t first, uint32_t last) noexcept
    {
        push_to(shards_[shard_of(tag)].head, first, last);
    }

    // The parked list: records out of use that are not free yet.
    bool pop_parked(uint32_t& index, Record*& popped) noexcept { return pop_from(parked_.head, index, popped); }
    void push_parked(uint32_t index) noexcept { push_to(parked_.head, index, index); }

    // Calls f(Record&, index) for every record allocated, live or free.
    // Only while no other call runs.
    template <class F>
    void for_each_record(F&& f) noexcept
    {
        for (uint32_t k = 0; k < max_chunks; ++k) {
            Record* chunk = chunks_[k].load(std::memory_order_acquire);
            if (chunk == nullptr) continue;
            const uint64_t first = ((uint64_t{1} << k) - 1) << chunk_shift_;
            const uint64_t count = uint64_t{1} << (k + chunk_shift_);
            for (uint64_t i = 0; i < count; ++i) f(chunk[i], static_cast<uint32_t>(first + i));
        }
    }

    // Records allocated (live or free).
    std::size_t capacity() const noexcept { return capacity_.load(std::memory_order_acquire); }

    // The free lists: how many, and which one a tag's records go back to.
    uint32_t shard_count() const noexcept { return shard_count_; }
    uint32_t shard_of(uint32_t tag) const noexcept { return tag & (shard_count_ - 1); }

private:
    static constexpr std::size_t kChunkAlignment = 64;

    // Up to `max` free records from `tag`'s own list, taken with one CAS,
    // as a chain linked through next_free (ending in 0): its first record's
    // index + 1, or 0 when the list was empty.
    [[gnu::noinline]] uint32_t take_chain(uint32_t tag, uint32_t max) noexcept
    {
        std::atomic<uint64_t>& head = shards_[shard_of(tag)].head;
        uint64_t h = head.load(std::memory_order_acquire);
        while (static_cast<uint32_t>(h) != 0) {
            // Walked before the CAS: a record popped meanwhile makes the
            // ABA counter, and so the CAS, fail, and the walk is retried.
            Record* last = record(static_cast<uint32_t>(h) - 1);
            uint32_t next = last->next_free.load(std::memory_order_relaxed);
            for (uint32_t n = 1; n < max && next != 0; ++n) {
                Record* r = record(next - 1);
                if (r == nullptr) break;  // a link read while being rewritten: the CAS fails
                last = r;
                next = r->next_free.load(std::memory_order_relaxed);
            }
            const uint64_t desired = (((h >> 32) + 1) << 32) | next;
            if (head.compare_exchange_weak(h, desired, std::memory_order_acquire, std::memory_order_acquire)) {
                last->next_free.store(0, std::memory_order_relaxed);
                return static_cast<uint32_t>(h);
            }
        }
        return 0;
    }

    Record* record_in_later_chunk(uint32_t index) const noexcept
    {
        const uint64_t j = (static_cast<uint64_t>(index) >> chunk_shift_) + 1;
        const uint32_t k = 63u - static_cast<uint32_t>(std::countl_zero(j));
        if (k >= max_chunks) return nullptr;
        Record* chunk = chunks_[k].load(std::memory_order_acquire);
        if (chunk == nullptr) return nullptr;
        const uint64_t offset = index - (((uint64_t{1} << k) - 1) << chunk_shift_);
        return chunk + offset;
    }

    // Adds the next chunk and puts all of it on `shard`'s free list. When
    // another thread grew since the caller looked (`seen`), this does nothing
    // and returns true so the caller pops again.
    bool grow(uint32_t shard, uint32_t seen) noexcept
    {
        std::lock_guard<std::mutex> lock(grow_mutex_);
        const uint32_t k = grown_.load(std::memory_order_relaxed);
        if (k != seen) return true;
        if (k >= max_chunks) return false;
        const uint64_t first = ((uint64_t{1} << k) - 1) << chunk_shift_;
        const uint64_t count = uint64_t{1} << (k + chunk_shift_);
        // Ids keep index + 1 in 32 bits, so no chunk reaches index
        // UINT32_MAX: record() answers nullptr for it (WindowTable::find).
        if (first + count > UINT32_MAX) return false;
        if (first >= max_records_) return false;
        // Past max_records the chunk's tail is allocated but never handed out.
        const uint64_t usable = std::min<uint64_t>(count, max_records_ - first);
        // Cache-line aligned, so a record whose size divides 64 never
        // straddles two lines.
        void* raw = ::operator new(count * sizeof(Record), std::align_val_t{kChunkAlignment}, std::nothrow);
        if (raw == nullptr) return false;
        Record* chunk = static_cast<Record*>(raw);
        for (uint64_t i = 0; i < count; ++i) new (&chunk[i]) Record;
        for (uint64_t i = 0; i + 1 < usable; ++i)
            chunk[i].next_free.store(static_cast<uint32_t>(first + i + 2), std::memory_order_relaxed);
        chunks_[k].store(chunk, std::memory_order_release);
        capacity_.store(static_cast<std::size_t>(first + count), std::memory_order_release);
        push_to(shards_[shard].head, static_cast<uint32_t>(first), static_cast<uint32_t>(first + usable - 1));
        grown_.store(k + 1, std::memory_order_release);
        return true;
    }

    bool pop_from(std::atomic<uint64_t>& head, uint32_t& index, Record*& popped) noexcept
    {
        uint64_t h = head.load(std::memory_order_acquire);
        while (static_cast<uint32_t>(h) != 0) {
            const uint32_t top = static_cast<uint32_t>(h) - 1;
            // May read a record another thread popped meanwhile: the ABA
            // counter makes the CAS below fail in that case.
            Record* r = record(top);
            const uint32_t next = r->next_free.load(std::memory_order_relaxed);
            const uint64_t desired = (((h >> 32) + 1) << 32) | next;
            if (head.compare_exchange_weak(h, desired, std::memory_order_acquire, std::memory_order_acquire)) {
                index = top;
                popped = r;
                return true;
            }
        }
        return false;
    }

    void push_to(std::atomic<uint64_t>& head, uint32_t first, uint32_t last) noexcept
    {
        Record* tail = record(last);
        uint64_t h = head.load(std::memory_order_relaxed);
        for (;;) {
            tail->next_free.store(static_cast<uint32_t>(h), std::memory_order_relaxed);
            const uint64_t desired = (((h >> 32) + 1) << 32) | (static_cast<uint64_t>(first) + 1);
            if (head.compare_exchange_weak(h, desired, std::memory_order_release, std::memory_order_relaxed)) return;
        }
    }

    const uint32_t shard_count_;
    const uint32_t chunk_shift_;
    const uint32_t first_chunk_records_;  // 1 << chunk_shift_: record()'s one comparison
    const uint64_t max_records_;
    std::vector<Shard> shards_;
    Shard parked_;  // records WindowTable::park() left for reclaim_parked()
    std::atomic<Record*> chunks_[max_chunks];
    std::atomic<std::size_t> capacity_{0};
    std::mutex grow_mutex_;
    std::atomic<uint32_t> grown_{0};  // chunks allocated; written under grow_mutex_
};

}  // namespace lapse::sdk::detail
