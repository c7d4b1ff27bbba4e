#include "mpsc_queue.hpp"

#include <algorithm>
#include <bit>
#include <new>
#include <thread>

namespace lapse::cpu {

namespace {

// How many positions the consumer takes between two publications of how far
// it got: at most a quarter ring, so a producer never grows a ring that is
// less than three quarters full, and at most 64, so the producers' limit
// stays close behind the consumer.
uint64_t publication_interval(uint64_t capacity) noexcept { return std::min<uint64_t>(capacity / 4, 64); }

}  // namespace

MpscQueue::Segment::Segment(std::size_t cap)
    : capacity(cap),
      mask(cap - 1),
      cells(static_cast<std::atomic<uint32_t>*>(::operator new(cap * cell_bytes, std::align_val_t{kLineBytes}))),
      limit(cap)
{
    for (std::size_t i = 0; i < cap; ++i) new (&cells[i]) std::atomic<uint32_t>(0);
}

MpscQueue::Segment::~Segment() { ::operator delete(cells, std::align_val_t{kLineBytes}); }

MpscQueue::MpscQueue(std::size_t capacity)
{
    const std::size_t cap = std::bit_ceil(std::max<std::size_t>(capacity, 16));
    first_ = new Segment(cap);
    tail_.store(first_, std::memory_order_relaxed);
    head_ = first_;
    publish_every_ = publication_interval(cap);
    cells_allocated_.store(cap, std::memory_order_relaxed);
}

MpscQueue::~MpscQueue()
{
    Segment* s = first_;
    while (s != nullptr) {
        Segment* next = s->next.load(std::memory_order_relaxed);
        delete s;
        s = next;
    }
}

void MpscQueue::write(Segment& s, uint64_t pos, uint32_t first, uint64_t a, uint64_t b, uint32_t count) noexcept
{
    if (count == wide_cells) {
        const uint32_t words[4] = {static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32), static_cast<uint32_t>(b),
                                   static_cast<uint32_t>(b >> 32)};
        for (uint64_t i = 0; i < 4; ++i) s.cells[(pos + 1 + i) & s.mask].store(words[i], std::memory_order_relaxed);
    }
    // The first cell last: the consumer reads the rest once it sees it.
    s.cells[pos & s.mask].store(first, std::memory_order_release);
}

bool MpscQueue::push_slow(uint32_t first, uint64_t a, uint64_t b, uint32_t count) noexcept
{
    Segment* s = tail_.load(std::memory_order_acquire);
    for (;;) {
        uint64_t pos = s->tail.load(std::memory_order_relaxed);
        if (pos & kClosed) {
            // Another producer closed it and is linking the next segment.
            Segment* next = s->next.load(std::memory_order_acquire);
            while (next == nullptr) {
                std::this_thread::yield();
                next = s->next.load(std::memory_order_acquire);
            }
            Segment* expected = s;
            tail_.compare_exchange_strong(expected, next, std::memory_order_acq_rel);
            s = next;
            continue;
        }
        uint64_t limit = s->limit.load(std::memory_order_acquire);
        if (pos + count > limit) {
            // At the limit: how far has the consumer got? The acquire load
            // orders its clearing of those cells before our writes, and the
            // release store hands that order on to the producers that read
            // the new limit.
            const uint64_t room = s->head.load(std::memory_order_acquire) + s->capacity;
            if (room > limit) {
                s->limit.store(room, std::memory_order_release);
                if (pos + count <= room) continue;
            }
            // Full. Allocate before closing, so running out of memory
            // leaves the queue as it was (full, still open) instead of
            // closed forever.
            Segment* grown = nullptr;
            try {
                grown = new Segment(static_cast<std::size_t>(s->capacity) * 2);
            } catch (...) {
                return false;
            }
            uint64_t expected = pos;
            if (!s->tail.compare_exchange_strong(expected, pos | kClosed, std::memory_order_seq_cst,
                                                 std::memory_order_relaxed)) {
                delete grown;  // another producer claimed or closed meanwhile: retry
                continue;
            }
            // Nobody else sees `grown` yet: its first cells are ours.
            grown->base = s->base + pos;
            write(*grown, 0, first, a, b, count);
            grown->tail.store(count, std::memory_order_relaxed);
            cells_allocated_.fetch_add(grown->capacity, std::memory_order_relaxed);
            s->next.store(grown, std::memory_order_seq_cst);
            tail_.store(grown, std::memory_order_release);
            return true;
        }
        // seq_cst: the claim is what a worker going to sleep checks for.
        if (s->tail.compare_exchange_weak(pos, pos + count, std::memory_order_seq_cst, std::memory_order_relaxed)) {
            write(*s, pos, first, a, b, count);
            return true;
        }
    }
}

void MpscQueue::publish() noexcept
{
    if (published_ == head_pos_) return;
    // Release: the cells cleared before this position are free for the
    // producers that read it.
    head_->head.store(head_pos_, std::memory_order_release);
    published_ = head_pos_;
}

bool MpscQueue::pop(QueueEntry& out) noexcept
{
    for (;;) {
        Segment& s = *head_;
        std::atomic<uint32_t>& cell = s.cells[head_pos_ & s.mask];
        const uint32_t v = cell.load(std::memory_order_acquire);
        if (v != 0) {
            cell.store(0, std::memory_order_relaxed);
            if ((v & kWideTag) != kWideTag) {
                out = QueueEntry{marker_kind(v), marker_key(v), 0};
                head_pos_ += 1;
            } else {
                uint64_t words[4];
                for (uint64_t i = 0; i < 4; ++i) {
                    std::atomic<uint32_t>& c = s.cells[(head_pos_ + 1 + i) & s.mask];
                    words[i] = c.load(std::memory_order_relaxed);
                    c.store(0, std::memory_order_relaxed);
                }
                out = QueueEntry{v >> 2, words[0] | words[1] << 32, words[2] | words[3] << 32};
                head_pos_ += wide_cells;
            }
            if (head_pos_ - published_ >= publish_every_) publish();
            return true;
        }
        // The next segment is linked only after this one closed. Looking
        // there first leaves the tail's line to the producers: reading it
        // on every poll of an empty ring would take it from under them.
        Segment* next = s.next.load(std::memory_order_acquire);
        if (next != nullptr && (s.tail.load(std::memory_order_acquire) & ~kClosed) == head_pos_) {
            head_ = next;
            head_pos_ = 0;
            published_ = 0;
            unwritten_seen_ = UINT64_MAX;
            publish_every_ = publication_interval(next->capacity);
            continue;
        }
        publish();  // nothing ready: give the producers all the room there is
        return false;
    }
}

uint32_t MpscQueue::pop_markers(uint32_t* out, uint32_t max, bool spare_producer, bool& held) noexcept
{
    held = false;
    Segment& s = *head_;
    // Within one lap of the ring: a cell further on is one taken here.
    const uint64_t end = std::min<uint64_t>(max, s.capacity);
    uint64_t n = 0;
    bool unwritten = false;
    for (; n < end; ++n) {
        const uint32_t v = s.cells[(head_pos_ + n) & s.mask].load(std::memory_order_acquire);
        if (v == 0) {
            unwritten = true;
            break;
        }
        if ((v & kWideTag) == kWideTag) break;
        out[n] = v;
    }
    if (unwritten && spare_producer) {
        const uint64_t at = head_pos_ + n;
        const bool moved = at != unwritten_seen_;
        unwritten_seen_ = at;
        // A run this short comes from a producer that pushes slower than
        // the consumer looks, or one that has stopped: taking it whole
        // costs that producer little, and leaves no marker waiting.
        if (moved && n > kCellsPerLine) {
            // Whole lines, kSparedCells behind the producer, so that the
            // records of the windows it has just opened stay with it too.
            const uint64_t behind = at > kSparedCells ? (at - kSparedCells) & ~(kCellsPerLine - 1) : 0;
            const uint64_t whole = behind > head_pos_ ? behind - head_pos_ : 0;
            held = whole < n;
            n = whole;
            // Nor after a start marker: the window it opens most likely
            // ends in the next cells, and a window whose two markers are
            // taken on either side of the consumer's wait reads the wait.
            if (held && n > 0 && marker_kind(out[n - 1]) == kStart) --n;
        }
    }
    for (uint64_t i = 0; i < n; ++i) s.cells[(head_pos_ + i) & s.mask].store(0, std::memory_order_relaxed);
    head_pos_ += n;
    if (head_pos_ - published_ >= publish_every_) publish();
    return static_cast<uint32_t>(n);
}

bool MpscQueue::has_claims() const noexcept
{
    const uint64_t tail = head_->tail.load(std::memory_order_seq_cst);
    return (tail & kClosed) != 0 || tail != head_pos_;
}

}  // namespace lapse::cpu
