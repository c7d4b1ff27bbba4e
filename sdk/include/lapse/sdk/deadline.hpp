// lapse SDK (C++) — the deadline of a resolve (or any wait with a timeout).
//
// resolve's `timeout_ns` is 0 (poll), a count of nanoseconds, or
// LAPSE_WAIT_FOREVER (UINT64_MAX). Turned naively into
// `cv.wait_for(lock, nanoseconds(timeout_ns))` the last one overflows
// (steady_clock::now() + 2^64-1 ns wraps into the past) and the wait returns
// at once, forever: a resolve that should block spins instead. Deadline
// does the arithmetic once, saturating, and waits with it. Waiting forever
// and polling read no clock.
//
//   lapse::sdk::Deadline deadline(timeout_ns);
//   std::unique_lock lock(mutex_);
//   if (!deadline.wait(cv_, lock, [&] { return all_done(); }))
//       return LAPSE_NOT_READY;  // the time ran out with work still pending
//
// Thread safety: a Deadline is a value; use one per call.
#pragma once

#include <lapse/plugin.h>  // LAPSE_WAIT_FOREVER

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace lapse::sdk {

class Deadline {
public:
    using clock = std::chrono::steady_clock;

    explicit Deadline(uint64_t timeout_ns) noexcept
        : forever_(timeout_ns == LAPSE_WAIT_FOREVER), poll_(timeout_ns == 0), at_(saturating_after(timeout_ns))
    {
    }

    bool forever() const noexcept { return forever_; }
    // A timeout of 0: look once, never wait.
    bool polls() const noexcept { return poll_; }
    bool expired() const noexcept { return !forever_ && (poll_ || clock::now() >= at_); }

    // What is left, never negative; clock::duration::max() when waiting forever.
    clock::duration remaining() const noexcept
    {
        if (forever_) return clock::duration::max();
        const auto now = clock::now();
        return now >= at_ ? clock::duration::zero() : at_ - now;
    }

    // What is left as a timeout to hand on to another resolve (a layer
    // resolving through the backend below it): LAPSE_WAIT_FOREVER when
    // waiting forever, else the nanoseconds left (0 once expired, or when
    // polling).
    uint64_t timeout_ns() const noexcept
    {
        if (forever_) return LAPSE_WAIT_FOREVER;
        if (poll_) return 0;
        const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(remaining()).count();
        return left > 0 ? static_cast<uint64_t>(left) : 0;
    }

    // Waits on `cv` until `done()` holds or the deadline passes; true when
    // `done()` holds. Polls (one look at `done()`) for a timeout of 0.
    template <class Predicate>
    bool wait(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Predicate done) const
    {
        if (forever_) {
            cv.wait(lock, done);
            return true;
        }
        if (poll_) return done();
        return cv.wait_until(lock, at_, done);
    }

private:
    static clock::time_point saturating_after(uint64_t timeout_ns) noexcept
    {
        if (timeout_ns == LAPSE_WAIT_FOREVER || timeout_ns == 0) return {};  // never read: no clock
        const auto now = clock::now();
        const auto room = clock::time_point::max() - now;  // what can be added without wrapping
        const auto wanted = std::chrono::nanoseconds(
            timeout_ns > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(timeout_ns));
        if (std::chrono::duration_cast<clock::duration>(wanted) >= room) return clock::time_point::max();
        return now + std::chrono::duration_cast<clock::duration>(wanted);
    }

    bool forever_;
    bool poll_;
    clock::time_point at_;
};

}  // namespace lapse::sdk
