// cpu plugin — the in-order queue of one worker stream.
//
// Many producers (any thread calling submit / profile_start / profile_end /
// sync), one consumer (the stream's worker). The order of the queue is the
// order in which producers claimed a position, so an entry pushed after
// another push returned is always consumed after it: that is what makes a
// window's markers bracket exactly the work queued between them.
//
// Each segment is a bounded ring of cells with per-cell sequence numbers
// (Vyukov's bounded queue): a producer claims a position with one CAS on the
// segment's tail, fills the cell and publishes it with a release store; no
// lock, no allocation. When a ring is full its producer closes it (a bit in
// the tail) and links a segment twice as large, so the queue only grows when
// it is full and never drops or overwrites an entry. Old segments stay
// allocated until the queue dies: a producer that read the old tail pointer
// may still be looking at them, and they add up to less than the newest one.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace lapse::cpu {

// What a cell carries. Work is {kind_work, fn, user}; markers carry a token
// id; a fence carries the address of the waiter to signal.
struct QueueEntry {
    uint64_t kind;
    uint64_t a;
    uint64_t b;
};

class MpscQueue {
public:
    // `capacity`: cells of the first segment, rounded up to a power of two.
    explicit MpscQueue(std::size_t capacity);
    ~MpscQueue();
    MpscQueue(const MpscQueue&) = delete;
    MpscQueue& operator=(const MpscQueue&) = delete;

    // [any producer thread] Appends. False only when growing the queue ran
    // out of memory; then nothing was appended.
    bool push(uint64_t kind, uint64_t a, uint64_t b) noexcept
    {
        return try_push(kind, a, b) || push_slow(QueueEntry{kind, a, b});
    }

    // [any producer thread] push()'s common case, inline because it is
    // most of what profile_start and profile_end do: the producer finds its
    // cell free and wins the claim. False (nothing appended) on a full
    // ring, a closed segment or a lost race: then push() (which may grow).
    bool try_push(uint64_t kind, uint64_t a, uint64_t b) noexcept
    {
        Segment* s = tail_.load(std::memory_order_acquire);
        uint64_t pos = s->tail.load(std::memory_order_relaxed);
        Cell& cell = s->cells[pos & s->mask];  // a closed tail masks to some cell: only read, never written
        // seq_cst claim: it is what a worker going to sleep checks for.
        if ((pos & kClosed) == 0 && cell.seq.load(std::memory_order_acquire) == pos &&
            s->tail.compare_exchange_strong(pos, pos + 1, std::memory_order_seq_cst, std::memory_order_relaxed))
            [[likely]] {
            cell.entry = QueueEntry{kind, a, b};
            cell.seq.store(pos + 1, std::memory_order_release);
            return true;
        }
        return false;
    }

    // [consumer] Takes the oldest entry, or returns false when none is ready.
    bool pop(QueueEntry& out) noexcept;

    // [consumer] Whether some producer has claimed a position the consumer
    // has not taken yet (it may still be writing it). Sequentially
    // consistent with the producers' claim, so a consumer that announces it
    // sleeps and then sees false cannot miss a push whose producer then
    // reads the announcement (see WorkerStream).
    bool has_claims() const noexcept;

    // The memory one cell takes (for bounding what a capacity costs).
    static constexpr std::size_t cell_bytes = 32;

    // Cells allocated in all segments (for memory accounting and tests).
    std::size_t cells_allocated() const noexcept { return cells_allocated_.load(std::memory_order_relaxed); }

private:
    static constexpr uint64_t kClosed = uint64_t{1} << 63;

    struct alignas(32) Cell {
        std::atomic<uint64_t> seq;
        QueueEntry entry;
    };
    static_assert(sizeof(Cell) == cell_bytes);

    struct Segment {
        explicit Segment(std::size_t cap);
        const uint64_t capacity;
        const uint64_t mask;
        Cell* const cells;  // owned; one indirection less on the push path than a unique_ptr
        ~Segment() { delete[] cells; }
        alignas(64) std::atomic<uint64_t> tail{0};   // next position to claim; kClosed when full
        alignas(64) std::atomic<Segment*> next{nullptr};
    };

    [[gnu::noinline]] bool push_slow(const QueueEntry& entry) noexcept;

    enum class Push { ok, full, closed };
    static Push try_push(Segment& s, const QueueEntry& entry, uint64_t& full_at) noexcept;

    Segment* first_;                         // owns the chain through next
    alignas(64) std::atomic<Segment*> tail_; // where producers push
    alignas(64) Segment* head_;              // consumer only
    uint64_t head_pos_ = 0;                  // consumer only
    std::atomic<std::size_t> cells_allocated_{0};
};

}  // namespace lapse::cpu
