#include "mpsc_queue.hpp"

#include <bit>
#include <thread>

namespace lapse::cpu {

MpscQueue::Segment::Segment(std::size_t cap)
    : capacity(cap), mask(cap - 1), cells(new Cell[cap])
{
    // A cell is free for the producer of position p when seq == p, and full
    // for the consumer when seq == p + 1.
    for (std::size_t i = 0; i < cap; ++i) cells[i].seq.store(i, std::memory_order_relaxed);
}

MpscQueue::MpscQueue(std::size_t capacity)
{
    const std::size_t cap = std::bit_ceil(capacity < 2 ? std::size_t{2} : capacity);
    first_ = new Segment(cap);
    tail_.store(first_, std::memory_order_relaxed);
    head_ = first_;
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

MpscQueue::Push MpscQueue::try_push(Segment& s, const QueueEntry& entry, uint64_t& full_at) noexcept
{
    uint64_t pos = s.tail.load(std::memory_order_relaxed);
    for (;;) {
        if (pos & kClosed) return Push::closed;
        Cell& cell = s.cells[pos & s.mask];
        const uint64_t seq = cell.seq.load(std::memory_order_acquire);
        const int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
        if (diff == 0) {
            // seq_cst: the claim is what a worker going to sleep checks for.
            if (s.tail.compare_exchange_weak(pos, pos + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) {
                cell.entry = entry;
                cell.seq.store(pos + 1, std::memory_order_release);
                return Push::ok;
            }
        } else if (diff < 0) {
            // The cell still holds the entry from one lap ago: the ring is full.
            full_at = pos;
            return Push::full;
        } else {
            pos = s.tail.load(std::memory_order_relaxed);
        }
    }
}

bool MpscQueue::push_slow(const QueueEntry& entry) noexcept
{
    Segment* s = tail_.load(std::memory_order_acquire);
    for (;;) {
        uint64_t full_at = 0;
        switch (try_push(*s, entry, full_at)) {
        case Push::ok:
            return true;
        case Push::closed: {
            // Another producer closed it and is linking the next segment.
            Segment* next = s->next.load(std::memory_order_acquire);
            while (next == nullptr) {
                std::this_thread::yield();
                next = s->next.load(std::memory_order_acquire);
            }
            Segment* expected = s;
            tail_.compare_exchange_strong(expected, next, std::memory_order_acq_rel);
            s = next;
            break;
        }
        case Push::full: {
            // Allocate before closing, so running out of memory leaves the
            // queue as it was (full, still open) instead of closed forever.
            Segment* grown = nullptr;
            try {
                grown = new Segment(static_cast<std::size_t>(s->capacity) * 2);
            } catch (...) {
                return false;
            }
            uint64_t expected = full_at;
            if (!s->tail.compare_exchange_strong(expected, full_at | kClosed, std::memory_order_seq_cst,
                                                 std::memory_order_relaxed)) {
                delete grown;  // the consumer made room or another producer claimed: retry
                break;
            }
            uint64_t unused = 0;
            try_push(*grown, entry, unused);  // nobody else sees `grown` yet: cannot fail
            cells_allocated_.fetch_add(grown->capacity, std::memory_order_relaxed);
            s->next.store(grown, std::memory_order_seq_cst);
            tail_.store(grown, std::memory_order_release);
            return true;
        }
        }
    }
}

bool MpscQueue::pop(QueueEntry& out) noexcept
{
    for (;;) {
        Cell& cell = head_->cells[head_pos_ & head_->mask];
        const uint64_t seq = cell.seq.load(std::memory_order_acquire);
        if (seq == head_pos_ + 1) {
            out = cell.entry;
            // Free the cell for the producer one lap later.
            cell.seq.store(head_pos_ + head_->capacity, std::memory_order_release);
            ++head_pos_;
            return true;
        }
        const uint64_t tail = head_->tail.load(std::memory_order_acquire);
        if ((tail & kClosed) && (tail & ~kClosed) == head_pos_) {
            Segment* next = head_->next.load(std::memory_order_acquire);
            if (next == nullptr) return false;  // being linked; has_claims() stays true
            head_ = next;
            head_pos_ = 0;
            continue;
        }
        return false;
    }
}

bool MpscQueue::has_claims() const noexcept
{
    const uint64_t tail = head_->tail.load(std::memory_order_seq_cst);
    return (tail & kClosed) != 0 || tail != head_pos_;
}

}  // namespace lapse::cpu
