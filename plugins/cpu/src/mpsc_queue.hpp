// cpu plugin — the in-order queue of one worker stream.
//
// Many producers (any thread calling submit or sync, and profile_start /
// profile_end from a thread without a lane: MarkerLane), one consumer (the
// stream's worker). The order of the queue is the
// order in which producers claimed a position, so an entry pushed after
// another push returned is always consumed after it: that is what makes a
// window's markers bracket exactly the work queued between them.
//
// A cell is one 32-bit word, 0 when free. A window marker is one cell (the
// window's key and the marker's kind), because markers are what a burst of
// windows leaves queued: a million windows opened faster than the worker
// stamps them hold a million cells. Work and fences are wide: a header cell
// and four cells carrying two 64-bit words, claimed together.
//
// Each segment is a bounded ring. A producer claims positions with one CAS
// on the segment's tail, writes its cells and publishes the first one with
// a release store; no lock, no allocation. It claims only below the
// segment's limit, the consumer's published position plus the ring's size:
// the consumer clears the cells it took, then publishes how far it got
// (every few entries, and whenever the ring looks empty), and a producer
// that reaches the limit reads that position again. So producers read the
// consumer's cache line only about once per quarter ring, not per push.
// When a ring is full its producer closes it (a bit in the tail) and links
// a segment twice as large, so the queue only grows when it is full and
// never drops or overwrites an entry. Old segments stay allocated until the
// queue dies: a producer that read the old tail pointer may still be
// looking at them, and they add up to less than the newest one.
//
// The consumer takes the markers ready at the head as one run
// (pop_markers), and can leave the cache line a producer is writing: see
// there.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace lapse::cpu {

// What the consumer takes, decoded: a marker is {kind, key, 0}, work
// {kind, fn, user}, a fence {kind, address of the waiter, 0}.
struct QueueEntry {
    uint32_t kind;
    uint64_t a;
    uint64_t b;
};

class MpscQueue {
public:
    // Marker kinds (one cell) and wide kinds (a header and four cells).
    enum Kind : uint32_t { kStart = 1, kEnd = 2, kWork = 3, kFence = 4 };
    // A marker cell holds key << 2 | kind, so keys are 30 bits and never 0.
    static constexpr uint32_t max_key = (uint32_t{1} << 30) - 1;
    static constexpr uint32_t wide_cells = 5;

    // A marker's cell, as pop_markers() hands it out, and back.
    static constexpr uint32_t marker_cell(uint32_t kind, uint32_t key) noexcept { return key << 2 | kind; }
    static constexpr uint32_t marker_kind(uint32_t cell) noexcept { return cell & 3; }
    static constexpr uint32_t marker_key(uint32_t cell) noexcept { return cell >> 2; }

    // `capacity`: cells of the first segment, rounded up to a power of two
    // (16 at least, so that a wide entry fits).
    explicit MpscQueue(std::size_t capacity);
    ~MpscQueue();
    MpscQueue(const MpscQueue&) = delete;
    MpscQueue& operator=(const MpscQueue&) = delete;

    // [any producer thread] Appends a marker of `kind` (kStart, kEnd) for
    // `key` (1..max_key). False only when growing the queue ran out of
    // memory; then nothing was appended.
    bool push_marker(uint32_t kind, uint32_t key) noexcept
    {
        return try_push_marker(kind, key) || push_slow(marker_cell(kind, key), 0, 0, 1);
    }

    // [any producer thread] push_marker()'s common case, inline because it
    // is most of what profile_start and profile_end do: the ring has room
    // and the producer wins the claim. False (nothing appended) on a ring
    // at its limit, a closed segment or a lost race: then push_marker().
    bool try_push_marker(uint32_t kind, uint32_t key) noexcept
    {
        Segment* s = tail_.load(std::memory_order_acquire);
        uint64_t pos = s->tail.load(std::memory_order_relaxed);
        // A closed tail is past every limit. The acquire load of the limit
        // orders the consumer's clearing of the cell before the write below.
        // seq_cst claim: it is what a worker going to sleep checks for.
        if (pos < s->limit.load(std::memory_order_acquire) &&
            s->tail.compare_exchange_strong(pos, pos + 1, std::memory_order_seq_cst, std::memory_order_relaxed))
            [[likely]] {
            s->cells[pos & s->mask].store(marker_cell(kind, key), std::memory_order_release);
            return true;
        }
        return false;
    }

    // [any producer thread] Appends a wide entry of `kind` (kWork, kFence)
    // carrying `a` and `b`. False only when growing ran out of memory.
    bool push_wide(uint32_t kind, uint64_t a, uint64_t b) noexcept
    {
        return push_slow(kind << 2 | kWideTag, a, b, wide_cells);
    }

    // [consumer] Takes the oldest entry, or returns false when none is ready.
    bool pop(QueueEntry& out) noexcept;

    // [consumer] Takes the markers ready at the head of the queue, in
    // order, at most `max`: each one's cell (marker_cell()) into `out`.
    // Stops before a wide entry, a cell not written yet and the end of a
    // segment, so 0 with nothing held back means pop() has the answer.
    // Every marker taken was pushed before this returned: a clock read
    // after it is later than all of them.
    //
    // `spare_producer`: when the run is longer than a line and ends at a
    // cell not written yet that has moved since the last look (a producer
    // is still pushing), take only whole lines at least kSparedCells behind
    // that cell, so that neither the line the producer writes nor the
    // records of the windows it has just opened are pulled from under it,
    // and never ending on a start marker (its window would straddle the
    // consumer's wait); `held` says something was left. A shorter run, or
    // one whose end has not moved, is taken whole.
    uint32_t pop_markers(uint32_t* out, uint32_t max, bool spare_producer, bool& held) noexcept;

    // Positions count every cell ever claimed, across segments, from 0.
    // [any producer thread] The position the next claim gets, as this
    // thread sees it: every entry whose push happened before this call
    // sits below it, every entry pushed after this call returned at or
    // above it (MarkerLane's epochs).
    uint64_t tail_position() const noexcept
    {
        const Segment* s = tail_.load(std::memory_order_acquire);
        return s->base + (s->tail.load(std::memory_order_relaxed) & ~kClosed);
    }
    // [consumer] The position of the next entry it takes: every entry
    // below it was taken.
    uint64_t head_position() const noexcept { return head_->base + head_pos_; }

    // [consumer] Whether some producer has claimed a position the consumer
    // has not taken yet (it may still be writing it). Sequentially
    // consistent with the producers' claim, so a consumer that announces it
    // sleeps and then sees false cannot miss a push whose producer then
    // reads the announcement (see WorkerStream).
    bool has_claims() const noexcept;

    // [consumer] The cells of the ring the consumer reads now: how many a
    // producer can push before the queue must grow.
    uint64_t ring_cells() const noexcept { return head_->capacity; }

    // The memory one cell takes (for bounding what a capacity costs).
    static constexpr std::size_t cell_bytes = sizeof(uint32_t);

    // Cells allocated in all segments (for memory accounting and tests).
    std::size_t cells_allocated() const noexcept { return cells_allocated_.load(std::memory_order_relaxed); }

private:
    static constexpr uint64_t kClosed = uint64_t{1} << 63;
    static constexpr uint32_t kWideTag = 3;  // the low bits of a wide entry's header
    static constexpr std::size_t kLineBytes = 64;
    static constexpr uint64_t kCellsPerLine = kLineBytes / cell_bytes;
    static constexpr uint64_t kSparedCells = 4 * kCellsPerLine;
    static_assert(sizeof(std::atomic<uint32_t>) == cell_bytes);

    struct Segment {
        explicit Segment(std::size_t cap);
        ~Segment();
        const uint64_t capacity;
        const uint64_t mask;
        // The position (see tail_position()) of its cell 0: where the
        // segment before it was closed. Set before the segment is linked.
        uint64_t base = 0;
        // Owned; aligned to a cache line, so positions 16k .. 16k+15 share
        // one. A plain pointer: one indirection less on the push path than
        // a unique_ptr.
        std::atomic<uint32_t>* const cells;
        alignas(64) std::atomic<uint64_t> tail{0};  // next position to claim; kClosed when full
        // Positions below it are free to claim: the consumer's published
        // position plus capacity, as a producer last read it.
        std::atomic<uint64_t> limit;
        alignas(64) std::atomic<uint64_t> head{0};  // the consumer cleared every cell before it
        alignas(64) std::atomic<Segment*> next{nullptr};
    };

    // Claims `count` cells (1: a marker whose cell is `first`; wide_cells:
    // the header `first`, then a and b), re-reading the consumer's position
    // at the limit and growing the queue when the ring is full.
    [[gnu::noinline]] bool push_slow(uint32_t first, uint64_t a, uint64_t b, uint32_t count) noexcept;
    static void write(Segment& s, uint64_t pos, uint32_t first, uint64_t a, uint64_t b, uint32_t count) noexcept;
    // [consumer] Tells producers how far it got.
    void publish() noexcept;

    Segment* first_;                          // owns the chain through next
    alignas(64) std::atomic<Segment*> tail_;  // where producers push
    alignas(64) Segment* head_;               // consumer only
    uint64_t head_pos_ = 0;                   // consumer only
    uint64_t published_ = 0;                  // consumer only: what head_->head says
    uint64_t publish_every_ = 0;              // consumer only: positions between publications
    uint64_t unwritten_seen_ = 0;             // consumer only: where pop_markers last found a run end unwritten
    std::atomic<std::size_t> cells_allocated_{0};
};

}  // namespace lapse::cpu
