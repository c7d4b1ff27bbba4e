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
    : capacity(cap), mask(cap - 1), cells(new std::atomic<uint32_t>[cap]), limit(cap)
{
    for (std::size_t i = 0; i < cap; ++i) cells[i].store(0, std::memory_order_relaxed);
}

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
                out = QueueEntry{v & kWideTag, v >> 2, 0};
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
        const uint64_t tail = s.tail.load(std::memory_order_acquire);
        if ((tail & kClosed) && (tail & ~kClosed) == head_pos_) {
            Segment* next = s.next.load(std::memory_order_acquire);
            if (next == nullptr) return false;  // being linked; has_claims() stays true
            head_ = next;
            head_pos_ = 0;
            published_ = 0;
            publish_every_ = publication_interval(next->capacity);
            continue;
        }
        publish();  // nothing ready: give the producers all the room there is
        return false;
    }
}

bool MpscQueue::has_claims() const noexcept
{
    const uint64_t tail = head_->tail.load(std::memory_order_seq_cst);
    return (tail & kClosed) != 0 || tail != head_pos_;
}

}  // namespace lapse::cpu
