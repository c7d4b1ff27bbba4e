// forward — the segments of one stream of a single-window inner backend.
//
// A backend that holds one window at a time per stream cannot nest or
// overlap. forward splits the stream's timeline at every window boundary:
// it closes the inner window and opens the next, so the timeline becomes a
// sequence of segments, each one inner window. A forward window covers the
// contiguous run of segments opened while it was open, and reads from the
// first one's start to the last one's end (forward_device.hpp says why).
//
// A segment is shared by every forward window open across it, so it counts
// them (refs) and keeps its resolved duration until the last one lets go.
// Segments are numbered by a sequence that only grows; the log is a ring
// that keeps the run from the oldest segment still referenced to the newest,
// and only grows (doubling) when that run outgrows it: no allocation in the
// steady state. The owner locks the stream around every call.
#pragma once

#include <lapse/lapse.h>

#include <cstdint>
#include <vector>

namespace lapse::forward {

struct Segment {
    enum State : uint8_t {
        kOpen,      // the inner window is open
        kClosed,    // closed at the inner backend, not yet resolved
        kFinal,     // `result` holds its final duration; the inner window is released
        kReleased,  // no forward window refers to it any more
    };
    lapse_token inner{};
    uint32_t refs = 0;  // forward windows that cover it and were not released
    State state = kOpen;
    lapse_duration result{};  // when kFinal
};

class SegmentLog {
public:
    explicit SegmentLog(uint32_t capacity = 64) : ring_(round_up(capacity)) {}

    uint64_t next_seq() const noexcept { return end_; }
    bool empty() const noexcept { return begin_ == end_; }
    Segment& back() noexcept { return at(end_ - 1); }
    Segment& at(uint64_t seq) noexcept { return ring_[seq & (ring_.size() - 1)]; }

    // Makes sure `n` more segments fit, growing the ring if the live run
    // would fill it. Throws std::bad_alloc, before anything changed: the
    // owner calls it before a boundary so that push never fails half-way.
    void make_room(uint32_t n)
    {
        while (end_ - begin_ + n > ring_.size()) grow();
    }

    // Appends a segment (after make_room) and returns its sequence number.
    uint64_t push(const Segment& segment) noexcept
    {
        at(end_) = segment;
        return end_++;
    }

    // A segment whose every window has finished with it leaves the ring once
    // it is the oldest.
    void trim() noexcept
    {
        while (begin_ != end_ && at(begin_).state == Segment::kReleased) ++begin_;
    }

    // A segment that ends with failure `status`, with no inner window behind
    // it: a hole in the timeline poisons every window that spans it.
    static Segment lost(uint32_t refs, lapse_status status) noexcept
    {
        Segment s;
        s.refs = refs;
        s.state = Segment::kFinal;
        s.result.struct_size = sizeof(lapse_duration);
        s.result.state = LAPSE_DURATION_FAILED;
        s.result.failure = status;
        return s;
    }

private:
    static size_t round_up(uint32_t n)
    {
        size_t c = 1;
        while (c < n) c <<= 1;
        return c;
    }

    void grow()
    {
        std::vector<Segment> bigger(ring_.size() * 2);
        for (uint64_t seq = begin_; seq != end_; ++seq) bigger[seq & (bigger.size() - 1)] = at(seq);
        ring_.swap(bigger);
    }

    std::vector<Segment> ring_;
    uint64_t begin_ = 0;  // oldest segment still kept
    uint64_t end_ = 0;    // next sequence number
};

}  // namespace lapse::forward
