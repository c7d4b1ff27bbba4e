// forward over a single-window backend: the segments a stream's timeline is
// cut into at every window boundary, and how a window reads them back (see
// segment_log.hpp and forward_device.hpp).
#include "device_support.hpp"
#include "forward_device.hpp"

#include <cinttypes>
#include <cstdio>
#include <string>
#include <utility>

namespace lapse::forward {

using namespace device_support;

lapse_status ForwardDevice::start_segmented(lapse_stream stream, lapse_token& token, lapse_error* error)
{
    SegmentedStream& s = streams_[stream];
    const Table::Id id = table_->open(stream, 0);
    if (id == 0) return table_full(error);
    std::unique_lock<std::mutex> lock(s.lock);
    if (s.no_clock) {
        lock.unlock();
        table_->abandon(id, stream);
        return start_system(stream, token, error);
    }
    try {
        s.log.make_room(2);
    } catch (...) {
        lock.unlock();
        table_->abandon(id, stream);
        return sdk::fail(error, LAPSE_ERROR_OUT_OF_MEMORY, "forward: profile_start: out of memory");
    }
    if (s.inner_open) {
        // The windows already open continue across this boundary: flush, so
        // work queued in a batching inner backend lands in their segment.
        lapse_error ignored = sdk::make_error();
        close_segment(s, LAPSE_END_FLUSH, &ignored);  // a failure poisons the segment, hence them
    }
    const uint64_t first = s.log.next_seq();
    lapse_token inner{};
    lapse_status status = inner_.plugin()->profile_start(inner_.device(), stream, &inner, error);
    if (status == LAPSE_OK) {
        Segment g;
        g.inner = inner;
        g.refs = ++s.open_windows;
        g.state = Segment::kOpen;
        s.log.push(g);
        s.inner_open = true;
        Window& w = table_->payload(id);  // nobody has the id yet
        w = Window{};
        w.kind = Kind::kSegmented;
        w.first_segment = first;
        token = lapse_token{id, stream, 0};
        return LAPSE_OK;
    }
    // The windows already open lost their timeline here: a hole poisons them.
    if (s.open_windows > 0) s.log.push(SegmentLog::lost(s.open_windows, status < 0 ? status : LAPSE_ERROR_DEVICE));
    if (status == LAPSE_NO_WINDOW && s.open_windows == 0) {
        s.no_clock = true;  // this stream has no clock: system time from now on
        lock.unlock();
        table_->abandon(id, stream);
        return start_system(stream, token, error);
    }
    lock.unlock();
    table_->abandon(id, stream);
    if (status < 0) return prefixed(status, error);
    return sdk::failf(error, LAPSE_ERROR_DEVICE,
                      "forward: profile_start: the inner backend stopped opening windows on stream %u while "
                      "others were open",
                      stream);
}

lapse_status ForwardDevice::end_boundary(lapse_stream stream, Window& w, uint32_t flags, lapse_error* error)
{
    SegmentedStream& s = streams_[stream];
    std::lock_guard<std::mutex> lock(s.lock);
    try {
        s.log.make_room(1);
    } catch (...) {
        return sdk::fail(error, LAPSE_ERROR_OUT_OF_MEMORY, "profile_end: out of memory");
    }
    // The segment closes as the window does, with its own flags, whether or
    // not others continue: a window without flush then reads the same
    // however forward cut it (work still queued in a batching inner backend
    // stays out of it). The windows that continue get that work when the
    // next segment opens (the inner backend hands it over first), in the
    // gap their span covers (resolve_segmented).
    const bool continuing = s.open_windows > 1;
    lapse_status status = close_segment(s, flags, error);
    w.last_segment = s.log.next_seq() - 1;
    --s.open_windows;
    if (continuing) {
        lapse_error ignored = sdk::make_error();
        open_segment(s, stream, s.open_windows, &ignored);  // a failure is a hole that poisons them
    }
    if (status < 0) return status;
    return LAPSE_OK;
}

lapse_status ForwardDevice::close_segment(SegmentedStream& s, uint32_t flags, lapse_error* error) noexcept
{
    if (!s.inner_open) return LAPSE_OK;
    s.inner_open = false;
    Segment& g = s.log.back();
    lapse_end_options options;
    lapse_status status;
    try {
        status = inner_.plugin()->profile_end(inner_.device(), g.inner, sdk::end_options(flags, options), error);
    } catch (...) {
        // An inner plugin built without the SDK may throw; this is noexcept.
        status = sdk::fail(error, LAPSE_ERROR_INTERNAL, "forward: the inner backend's profile_end threw");
    }
    if (status >= 0) {
        g.state = Segment::kClosed;
        return LAPSE_OK;
    }
    // Free the inner stream's one window so the next segment can open.
    inner_.abandon(g.inner);
    g = SegmentLog::lost(g.refs, status);
    return status;
}

lapse_status ForwardDevice::open_segment(SegmentedStream& s, lapse_stream stream, uint32_t refs, lapse_error* error)
{
    lapse_token inner{};
    lapse_status status = inner_.plugin()->profile_start(inner_.device(), stream, &inner, error);
    if (status == LAPSE_OK) {
        Segment g;
        g.inner = inner;
        g.refs = refs;
        g.state = Segment::kOpen;
        s.log.push(g);
        s.inner_open = true;
        return LAPSE_OK;
    }
    s.log.push(SegmentLog::lost(refs, status < 0 ? status : LAPSE_ERROR_DEVICE));
    return status < 0 ? status : LAPSE_ERROR_DEVICE;
}

void ForwardDevice::release_segments(SegmentedStream& s, uint64_t first, uint64_t last) noexcept
{
    for (uint64_t seq = first; seq <= last; ++seq) {
        Segment& g = s.log.at(seq);
        if (--g.refs > 0) continue;
        if (g.state == Segment::kClosed) inner_.abandon(g.inner);
        g.state = Segment::kReleased;
    }
    s.log.trim();
}

bool ForwardDevice::resolve_segmented(lapse_stream stream, const Window& w, lapse_duration& out,
                                      const Deadline& deadline, lapse_status& status, lapse_error* error)
{
    SegmentedStream& s = streams_[stream];
    std::lock_guard<std::mutex> resolving(s.resolving);

    // Resolve the segments nobody has resolved yet, a batch at a time, with
    // the stream unlocked while the inner backend waits.
    lapse_token batch[kBatch];
    lapse_duration scratch[kBatch];
    uint64_t seqs[kBatch];
    uint64_t seq = w.first_segment;
    while (seq <= w.last_segment) {
        uint32_t n = 0;
        {
            std::lock_guard<std::mutex> lock(s.lock);
            for (; seq <= w.last_segment && n < kBatch; ++seq) {
                Segment& g = s.log.at(seq);
                if (g.state != Segment::kClosed) continue;
                batch[n] = g.inner;
                seqs[n++] = seq;
            }
        }
        if (n == 0) continue;
        lapse_status st = resolve_inner_batch(batch, scratch, n, deadline, status == LAPSE_OK ? error : nullptr);
        if (st < 0 && status == LAPSE_OK) status = st;
        std::lock_guard<std::mutex> lock(s.lock);
        for (uint32_t k = 0; k < n; ++k) {
            if (scratch[k].state == LAPSE_DURATION_PENDING) continue;
            Segment& g = s.log.at(seqs[k]);
            g.result = scratch[k];
            g.state = Segment::kFinal;
        }
    }

    // Join them. Anything unknown in the window makes the whole unknown: a
    // failed segment fails it, a segment not measured leaves it not measured.
    std::lock_guard<std::mutex> lock(s.lock);
    bool have_time = false;
    bool not_measured = false;
    bool one_clock = true;
    lapse_status failure = LAPSE_OK;
    uint32_t method = LAPSE_TIMING_NONE;
    uint32_t domain = LAPSE_CLOCK_NONE;
    int64_t start = 0;
    int64_t last_end = 0;
    int64_t total = 0;
    uint32_t flags = 0;
    uint32_t queued_ops = 0;
    for (uint64_t q = w.first_segment; q <= w.last_segment; ++q) {
        const Segment& g = s.log.at(q);
        if (g.state != Segment::kFinal) {
            sdk::set_duration(out, LAPSE_DURATION_PENDING);
            return false;
        }
        switch (g.result.state) {
        case LAPSE_DURATION_READY:
            if (!have_time) {
                have_time = true;
                method = g.result.method;
                domain = g.result.clock_domain;
                start = g.result.start_ns;
            }
            one_clock = one_clock && g.result.clock_domain == domain && g.result.method == method;
            total += g.result.end_ns - g.result.start_ns;
            last_end = g.result.end_ns;
            // Earlier work in any segment is earlier work in the window; work
            // left queued counts at the window's own close, its last segment.
            flags = (flags & ~uint32_t{LAPSE_DURATION_WORK_QUEUED}) | g.result.flags;
            queued_ops = (g.result.flags & LAPSE_DURATION_WORK_QUEUED) != 0 ? g.result.queued_ops : 0;
            break;
        case LAPSE_DURATION_FAILED:
            if (failure == LAPSE_OK) failure = g.result.failure != LAPSE_OK ? g.result.failure : LAPSE_ERROR_DEVICE;
            break;
        default:
            not_measured = true;
            break;
        }
    }
    release_segments(s, w.first_segment, w.last_segment);
    if (failure != LAPSE_OK)
        set_failed(out, failure);
    else if (not_measured || !have_time)
        sdk::set_duration(out, LAPSE_DURATION_NOT_MEASURED);
    else if (one_clock && last_end >= start)
        // From the window's first stamp to its last, as one inner window
        // would read: the gaps between segments hold no submitted work
        // (forward closes one and opens the next under the stream's lock)
        // but may hold work a batching inner backend still had queued and
        // handed over as the next segment opened, which ran inside this
        // window.
        sdk::set_duration(out, LAPSE_DURATION_READY, LAPSE_OK, method, domain, start, last_end, flags, queued_ops);
    else
        // Segments on different clocks: only their lengths add up.
        sdk::set_duration(out, LAPSE_DURATION_READY, LAPSE_OK, method, domain, start, start + total, flags,
                          queued_ops);
    return true;
}

}  // namespace lapse::forward
