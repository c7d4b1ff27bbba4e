// lapse SDK (C++) — a resolver's batch of freed window records
// (WindowTable::FreeBatch). Not an interface of its own (machinery, like
// record_pool.hpp): WindowTable's take(..., batch) and flush(batch) fill
// and empty it.
//
// Records a resolver freed, not yet back on a free list. Owned by one
// thread; flush() it before it goes out of scope (the destructor of a batch
// does not: it has no table). A batch taken into holds a shard's take lock
// until it flushes (every flush_every records, or when it takes from
// another shard), so flush it before anything that may wait, and take into
// one batch at a time, with no abandon() in between: the thread would wait
// for a lock it holds itself.
#pragma once

#include <cstdint>

namespace lapse::sdk {
template <class Payload>
class WindowTable;
}

namespace lapse::sdk::detail {

class FreeBatch {
public:
    FreeBatch() = default;
    FreeBatch(const FreeBatch&) = delete;
    FreeBatch& operator=(const FreeBatch&) = delete;
    uint32_t size() const noexcept { return count_; }

private:
    template <class Payload>
    friend class lapse::sdk::WindowTable;
    uint32_t first_ = 0;  // index + 1 of the newest record, 0 = empty
    uint32_t last_ = 0;   // index + 1 of the oldest
    uint32_t count_ = 0;
    uint32_t tag_ = 0;    // of the oldest: the batch goes to its shard
    uint32_t locked_ = 0; // tag + 1 whose shard's take lock the batch holds, 0 = none
};

}  // namespace lapse::sdk::detail
