// Internal: a bounded lock-free queue of window notes, many producers (the
// threads closing windows) and one consumer (the collector). Dmitry
// Vyukov's bounded queue: each cell carries a sequence number, so a
// producer claims a cell with one compare-and-swap and publishes it with
// one release store; nobody ever waits on a lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace lapse::detail {

struct WindowNote;

class NoteQueue {
public:
    explicit NoteQueue(std::size_t capacity_pow2)
        : mask_(capacity_pow2 - 1), cells_(std::make_unique<Cell[]>(capacity_pow2))
    {
        for (std::size_t i = 0; i < capacity_pow2; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
    }

    // False when full.
    bool push(WindowNote* note) noexcept
    {
        std::size_t pos = tail_.load(std::memory_order_relaxed);
        for (;;) {
            Cell& cell = cells_[pos & mask_];
            const std::size_t seq = cell.sequence.load(std::memory_order_acquire);
            const auto diff = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos);
            if (diff == 0) {
                if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                    cell.note = note;
                    cell.sequence.store(pos + 1, std::memory_order_release);
                    return true;
                }
            } else if (diff < 0) {
                return false;
            } else {
                pos = tail_.load(std::memory_order_relaxed);
            }
        }
    }

    // The consumer's side (one thread). Null when empty.
    WindowNote* pop() noexcept
    {
        Cell& cell = cells_[head_ & mask_];
        const std::size_t seq = cell.sequence.load(std::memory_order_acquire);
        if (static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(head_ + 1) < 0) return nullptr;
        WindowNote* note = cell.note;
        cell.sequence.store(head_ + mask_ + 1, std::memory_order_release);
        ++head_;
        return note;
    }

    std::size_t capacity() const noexcept { return mask_ + 1; }

private:
    struct Cell {
        std::atomic<std::size_t> sequence;
        WindowNote* note = nullptr;
    };
    const std::size_t mask_;
    std::unique_ptr<Cell[]> cells_;
    alignas(64) std::atomic<std::size_t> tail_{0};
    alignas(64) std::size_t head_ = 0;  // consumer only
};

}  // namespace lapse::detail
