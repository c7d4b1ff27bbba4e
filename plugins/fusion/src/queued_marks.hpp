// fusion — which closed windows left work queued, and how much.
//
// A window closed without LAPSE_END_FLUSH while its stream still held
// queued ops is marked here (token id -> ops left); resolve turns the mark
// into LAPSE_DURATION_WORK_QUEUED on the inner backend's duration, and a
// final duration or an abandon removes it. Only such closes pay for a mark
// (a short lock); a resolve with nothing marked tests one atomic.
//
// An open-addressing table (linear probing, backward-shift deletion), so
// that marking does not allocate once the table has grown to the number of
// windows the host keeps unresolved at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

namespace lapse::fusion {

class QueuedMarks {
public:
    // Remembers that window `id` left `ops` queued at close. Throws
    // std::bad_alloc when the table cannot grow (the caller then closes the
    // window unmarked rather than fail it).
    void mark(uint64_t id, uint64_t ops)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if ((size_ + 1) * 2 > capacity_) grow();
        uint32_t value = ops > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(ops);
        std::size_t i = home(id);
        while (slots_[i].id != 0 && slots_[i].id != id) i = next(i);
        if (slots_[i].id == 0) {
            ++size_;
            count_.store(size_, std::memory_order_relaxed);
        }
        slots_[i] = Slot{id, value};
    }

    // Removes window `id`'s mark; true and `ops` set when it had one.
    bool take(uint64_t id, uint32_t& ops) noexcept
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return take_locked(id, ops);
    }

    // Calls f(index) -> id for each of `n` windows, and g(index, ops) for
    // each one marked, removing the marks, under one lock.
    template <class Id, class Found>
    void take_each(uint32_t n, Id&& id_of, Found&& found) noexcept
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (uint32_t k = 0; k < n && size_ > 0; ++k) {
            uint64_t id = id_of(k);
            uint32_t ops = 0;
            if (id != 0 && take_locked(id, ops)) found(k, ops);
        }
    }

    // Anything marked? (A hint read without the lock: a resolve that races
    // a close of the same window cannot expect its mark anyway.)
    bool empty() const noexcept { return count_.load(std::memory_order_relaxed) == 0; }

private:
    struct Slot {
        uint64_t id = 0;  // 0: empty (window ids are never 0)
        uint32_t ops = 0;
    };

    std::size_t home(uint64_t id) const noexcept
    {
        return static_cast<std::size_t>((id * 0x9E3779B97F4A7C15ull) >> 7) & (capacity_ - 1);
    }
    std::size_t next(std::size_t i) const noexcept { return (i + 1) & (capacity_ - 1); }

    bool take_locked(uint64_t id, uint32_t& ops) noexcept
    {
        if (size_ == 0) return false;
        std::size_t i = home(id);
        while (slots_[i].id != id) {
            if (slots_[i].id == 0) return false;
            i = next(i);
        }
        ops = slots_[i].ops;
        // Backward-shift deletion: pull later entries of the same probe run
        // back over the hole, so lookups never need tombstones.
        std::size_t hole = i;
        for (std::size_t j = next(i); slots_[j].id != 0; j = next(j)) {
            std::size_t h = home(slots_[j].id);
            bool movable = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
            if (movable) {
                slots_[hole] = slots_[j];
                hole = j;
            }
        }
        slots_[hole] = Slot{};
        --size_;
        count_.store(size_, std::memory_order_relaxed);
        return true;
    }

    void grow()
    {
        std::size_t capacity = capacity_ == 0 ? 64 : capacity_ * 2;
        auto slots = std::make_unique<Slot[]>(capacity);
        std::unique_ptr<Slot[]> old = std::exchange(slots_, std::move(slots));
        std::size_t old_capacity = std::exchange(capacity_, capacity);
        for (std::size_t i = 0; i < old_capacity; ++i) {
            if (old[i].id == 0) continue;
            std::size_t j = home(old[i].id);
            while (slots_[j].id != 0) j = next(j);
            slots_[j] = old[i];
        }
    }

    std::mutex mutex_;
    std::unique_ptr<Slot[]> slots_;
    std::size_t capacity_ = 0;  // a power of two
    std::size_t size_ = 0;
    std::atomic<std::size_t> count_{0};
};

}  // namespace lapse::fusion
