// A stream's readback: which of a resolve's windows can be read now, and
// their stamps, per run of consecutive ring slots: in own mode from the
// copies the queue made (stamp_copies.cpp), in attach mode with one
// vkGetQueryPoolResults per run (never WAIT or PARTIAL: see README.md).
// One pass serves both
// resolves: the full one (a lapse_duration per window) and the compact one
// (lapse.resolve_compact/1: a stamp pair per measured window, every other
// window left untouched for the full one).
#include "stream.hpp"

#include "timestamp_math.hpp"
#include "token.hpp"

#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/resolve_compact.hpp>

#include <algorithm>
#include <cinttypes>

namespace lapse::vulkan {

// The first error of a pass is the answer, and only its message reaches
// the caller's error struct; later ones are still written to their
// durations.
struct Stream::PassErrors {
    lapse_error* caller;
    lapse_status first = LAPSE_OK;
    lapse_error scratch = sdk::make_error();

    lapse_error* next() noexcept { return first == LAPSE_OK ? caller : &scratch; }
    lapse_status note(lapse_status status) noexcept
    {
        if (first == LAPSE_OK) first = status;
        return status;
    }
};

namespace {

RingSlot* slot_of(QueryRing& ring, const lapse_token& token, uint64_t& position) noexcept
{
    uint32_t stream = 0;
    if (!decode_token_id(token.id, position, stream)) return nullptr;
    return ring.find(position);
}

// What turning a window's two stamps into a duration needs, read once per
// run: the loop writes durations, which the compiler cannot prove leave the
// stream's members alone, so members would be loaded again per window.
struct Conversion {
    uint64_t mask;
    double period_ns;
    bool tells_backwards;  // a 64-bit counter: an end before the start is never a wrap
    bool host_timeline;
    uint64_t ref_ticks;  // the calibration point, when on the host timeline
    int64_t ref_host_ns;
};

Conversion conversion_of(uint64_t mask, double period_ns, uint32_t valid_bits, const Placement& place) noexcept
{
    return Conversion{mask, period_ns, valid_bits == 64, place.host_timeline, place.point.device_ticks & mask,
                      place.point.host_ns};
}

// A window's interval from its two stamps: the difference under the
// valid-bits mask, converted in double; placed on the host clock through
// the calibration when there is one (an error there shifts the window,
// never stretches it). False for an end before the start on a counter
// that cannot wrap in our lifetime: the stamps are not trustworthy.
inline bool to_interval(const Conversion& c, uint64_t start_stamp, uint64_t end_stamp, int64_t& start_ns,
                        int64_t& end_ns) noexcept
{
    const uint64_t start = start_stamp & c.mask;
    const uint64_t ticks = ticks_between(start, end_stamp & c.mask, c.mask);
    if (c.tells_backwards && ticks > (c.mask >> 1)) return false;
    start_ns = c.host_timeline ? c.ref_host_ns + signed_ticks_to_ns(signed_ticks(c.ref_ticks, start, c.mask), c.period_ns)
                               : ticks_to_ns(start, c.period_ns);
    end_ns = start_ns + ticks_to_ns(ticks, c.period_ns);
    return true;
}

inline void convert(const Conversion& c, uint64_t start_stamp, uint64_t end_stamp, lapse_duration& out) noexcept
{
    int64_t start_ns = 0, end_ns = 0;
    if (!to_interval(c, start_stamp, end_stamp, start_ns, end_ns)) {
        sdk::set_duration(out, LAPSE_DURATION_NOT_MEASURED);
        return;
    }
    sdk::set_duration(out, LAPSE_DURATION_READY, LAPSE_OK, LAPSE_TIMING_DEVICE,
                      c.host_timeline ? LAPSE_CLOCK_HOST_MONOTONIC : LAPSE_CLOCK_DEVICE, start_ns, end_ns);
}

}  // namespace

// Validates a pending token, and in own mode checks that the segment
// holding the window's end is done (closing it when it is still being
// recorded here). Changes no window.
// Inline in both passes' loops: it is most of what a readable window costs.
[[gnu::always_inline]] inline Stream::Readiness Stream::readiness(const lapse_token& token, RingSlot*& slot,
                                                                  ResolveProgress& progress, bool& need_flush)
{
    uint64_t position = 0;
    slot = slot_of(ring_, token, position);
    if (slot == nullptr || (slot->state != SlotState::Open && slot->state != SlotState::Closed))
        return Readiness::no_window;
    if (token.opened_on != cfg_.index) return Readiness::wrong_stream;
    if (slot->state == SlotState::Open) return Readiness::still_open;
    if (poison_of(*slot) != LAPSE_OK) return Readiness::poisoned;
    if (own() && slot->end_serial > completed_) {
        if (slot->end_serial >= submit_cursor_) {
            need_flush = true;  // still recorded here or waiting behind a callback
            if (current_ != 0 && current_ <= slot->end_serial) close_current(nullptr);
        } else {
            progress.wait_serial = std::max(progress.wait_serial, slot->end_serial);
        }
        ++progress.pending;
        return Readiness::pending;
    }
    return Readiness::readable;
}

[[gnu::always_inline]] inline RingSlot* Stream::check_readable(const lapse_token& token, FullAnswers answers,
                                                               uint32_t i, ResolveProgress& progress,
                                                               PassErrors& errors, bool& need_flush)
{
    RingSlot* slot = nullptr;
    lapse_duration& out = answers.out[i];
    // The window resolves FAILED with `status` (its message written first).
    auto refuse = [&](lapse_status status) -> RingSlot* {
        sdk::set_duration(out, LAPSE_DURATION_FAILED, errors.note(status));
        return nullptr;
    };
    switch (readiness(token, slot, progress, need_flush)) {
    case Readiness::readable:
        return slot;
    case Readiness::pending:
        return nullptr;
    case Readiness::no_window:
        return refuse(sdk::failf(errors.next(), LAPSE_ERROR_INVALID_TOKEN,
                                 "vulkan: resolve: token %" PRIu64
                                 " names no closed window: never opened, already resolved or abandoned",
                                 token.id));
    case Readiness::wrong_stream:
        return refuse(sdk::failf(errors.next(), LAPSE_ERROR_WRONG_STREAM,
                                 "vulkan: resolve: token %" PRIu64 " says stream %u but its window is on stream %u",
                                 token.id, token.opened_on, cfg_.index));
    case Readiness::still_open:
        return refuse(sdk::failf(errors.next(), LAPSE_ERROR_INVALID_TOKEN,
                                 "vulkan: resolve: token %" PRIu64 " is still open: close it with profile_end first",
                                 token.id));
    case Readiness::poisoned:
        // A window hit by a device or stream failure is FAILED.
        sdk::set_duration(out, LAPSE_DURATION_FAILED, poison_of(*slot));
        slot->state = SlotState::Released;
        return nullptr;
    }
    return nullptr;
}

[[gnu::always_inline]] inline RingSlot* Stream::check_readable(const lapse_token& token, CompactAnswers answers,
                                                               uint32_t i, ResolveProgress& progress,
                                                               PassErrors& /*errors: the full resolve names them*/,
                                                               bool& need_flush)
{
    RingSlot* slot = nullptr;
    const Readiness r = readiness(token, slot, progress, need_flush);
    if (r == Readiness::readable || r == Readiness::pending) return r == Readiness::readable ? slot : nullptr;
    sdk::set_compact_not_ready(answers.stamps[i], answers.states[i], LAPSE_COMPACT_RESOLVE_FULL);
    return nullptr;
}

template <class Answers>
lapse_status Stream::resolve_pass(const lapse_token* tokens, Answers answers, uint32_t n, const Placement& place,
                                  ResolveProgress& progress, lapse_error* error)
{
    std::lock_guard<StreamLock> lock(mutex_);
    PassErrors errors{error};
    if (own()) {
        if (completed_ + 1 < next_serial_) refresh_completed(nullptr);
        recycle_completed();
    }
    if (run_.empty()) {
        const uint32_t capacity = std::min(cfg_.ring_windows, kMaxReadRun);
        run_.resize(capacity);
        results_.resize(4 * static_cast<std::size_t>(capacity));
    }

    // Readable windows are gathered into runs of consecutive ring slots,
    // each read with one call.
    uint32_t run_count = 0;
    const RingSlot* last = nullptr;
    bool need_flush = false;
    for (uint32_t i = 0; i < n; ++i) {
        if (!answers.pending(i)) continue;
        RingSlot* slot = check_readable(tokens[i], answers, i, progress, errors, need_flush);
        if (slot == nullptr) continue;
        if (run_count > 0 && (run_count == run_.size() || slot != last + 1)) {
            read_run(answers, run_count, place, progress, errors);
            run_count = 0;
        }
        run_[run_count++] = ReadItem{slot, i};
        last = slot;
    }
    read_run(answers, run_count, place, progress, errors);

    if (need_flush) {
        flush(nullptr);
        note_waits(tokens, answers, n, progress);
    }
    reclaim();
    return errors.first;
}

VkResult Stream::read_queries(uint32_t count, uint32_t& stride)
{
    // First without availability: VK_SUCCESS then says every query was
    // available and written (the common case, and half the data); only
    // VK_NOT_READY reads again with availability, to tell which ones were
    // not.
    const uint32_t first = ring_.first_query_of(*run_[0].slot);
    stride = 1;  // uint64_t per query in results_
    VkResult r = ctx_.api.vkGetQueryPoolResults(ctx_.device, pool_, first, 2 * count, sizeof(uint64_t) * 2 * count,
                                                results_.data(), sizeof(uint64_t), VK_QUERY_RESULT_64_BIT);
    if (r == VK_NOT_READY) {
        stride = 2;
        r = ctx_.api.vkGetQueryPoolResults(ctx_.device, pool_, first, 2 * count, sizeof(uint64_t) * 4 * count,
                                           results_.data(), 2 * sizeof(uint64_t), kReadFlags);
    }
    return r;
}

const uint64_t* Stream::read_stamps(uint32_t count, uint32_t& stride, VkResult& r)
{
    if (stamp_copies_ != nullptr) {
        // Own mode: every window read here is on finished segments, whose
        // copies have landed (stamp_copies.cpp).
        stride = 2;
        r = VK_SUCCESS;
        return stamp_copies_ + 2 * static_cast<std::size_t>(ring_.first_query_of(*run_[0].slot));
    }
    r = read_queries(count, stride);
    return results_.data();
}

// Reads the windows run_[0..count) (consecutive ring slots): from the
// queue's copies, or with one call.
void Stream::read_run(FullAnswers answers, uint32_t count, const Placement& place, ResolveProgress& progress,
                      PassErrors& errors)
{
    if (count == 0) return;
    lapse_duration* out = answers.out;
    uint32_t stride = 1;
    VkResult r = VK_SUCCESS;
    const uint64_t* results = read_stamps(count, stride, r);
    if (r != VK_SUCCESS && r != VK_NOT_READY) {
        const lapse_status st = errors.note(ctx_.vk_fail(errors.next(), "resolve", "vkGetQueryPoolResults", r));
        for (uint32_t k = 0; k < count; ++k) {
            sdk::set_duration(out[run_[k].index], LAPSE_DURATION_FAILED, st);
            run_[k].slot->state = SlotState::Released;
        }
        return;
    }
    const Conversion c = conversion_of(mask_, ctx_.period_ns, cfg_.valid_bits, place);
    const bool own_mode = own();
    const ReadItem* items = run_.data();
    if (stride == 1 && own_mode) {
        // Every stamp is there: the common case, without the branches below.
        for (uint32_t k = 0; k < count; ++k) {
            convert(c, results[2 * k], results[2 * k + 1], out[items[k].index]);
            items[k].slot->state = SlotState::Released;
        }
        return;
    }
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t i = items[k].index;
        RingSlot* slot = items[k].slot;
        const uint64_t* q = results + 2 * stride * static_cast<std::size_t>(k);
        const uint64_t start = q[0], end = q[stride];
        const bool available = stride == 1 || (q[1] != 0 && q[3] != 0);
        if (!available && !own_mode) {
            ++progress.pending;  // attach mode: the host has not run it yet
            continue;
        }
        // Attach mode: a pair read while the host's submission runs can
        // show both stamps available with the end still unwritten (lavapipe
        // does: end 0). Its queries may still be written, so the slot is
        // neither released nor reset yet: it is read again on a later pass,
        // and only a pair that stays out of order is not measured.
        if (available && !own_mode && out_of_order(start, end) && slot->out_of_order_reads < kMaxOutOfOrderReads) {
            ++slot->out_of_order_reads;
            ++progress.pending;
            continue;
        }
        // Own mode: the segment completed but a stamp is missing, so the
        // stamps were lost. Never a number, never zero.
        if (!available) sdk::set_duration(out[i], LAPSE_DURATION_NOT_MEASURED);
        else convert(c, start, end, out[i]);
        slot->state = SlotState::Released;
    }
}

// The compact read: own mode only (Device::extension offers it nowhere
// else), so every window here is on a completed segment. A pair with both
// stamps in order is answered and its slot released; anything else (a lost
// stamp, an end before its start, a failed read) is left for the full
// resolve, which reads it again and says what it is.
void Stream::read_run(CompactAnswers answers, uint32_t count, const Placement& place, ResolveProgress& /*progress*/,
                      PassErrors& /*errors*/)
{
    if (count == 0) return;
    uint32_t stride = 1;
    VkResult r = VK_SUCCESS;
    const uint64_t* results = read_stamps(count, stride, r);
    const ReadItem* items = run_.data();
    if (r != VK_SUCCESS && r != VK_NOT_READY) {
        for (uint32_t k = 0; k < count; ++k)
            sdk::set_compact_not_ready(answers.stamps[items[k].index], answers.states[items[k].index],
                                       LAPSE_COMPACT_RESOLVE_FULL);
        return;
    }
    const Conversion c = conversion_of(mask_, ctx_.period_ns, cfg_.valid_bits, place);
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t i = items[k].index;
        const uint64_t* q = results + 2 * stride * static_cast<std::size_t>(k);
        int64_t start_ns = 0, end_ns = 0;
        const bool available = stride == 1 || (q[1] != 0 && q[3] != 0);
        if (available && to_interval(c, q[0], q[stride], start_ns, end_ns)) [[likely]] {
            sdk::set_compact_ready(answers.stamps[i], answers.states[i], start_ns, end_ns);
            items[k].slot->state = SlotState::Released;
        } else {
            sdk::set_compact_not_ready(answers.stamps[i], answers.states[i], LAPSE_COMPACT_RESOLVE_FULL);
        }
    }
}

// End before start on a counter that cannot wrap in our lifetime.
bool Stream::out_of_order(uint64_t start, uint64_t end) const noexcept
{
    return backwards(ticks_between(start & mask_, end & mask_, mask_));
}

// After a flush: what is now submitted can be waited for; what is not sits
// behind a segment still in a callback.
template <class Answers>
void Stream::note_waits(const lapse_token* tokens, Answers answers, uint32_t n, ResolveProgress& progress)
{
    for (uint32_t i = 0; i < n; ++i) {
        if (!answers.pending(i)) continue;
        uint64_t position = 0;
        const RingSlot* slot = slot_of(ring_, tokens[i], position);
        if (slot == nullptr || slot->state != SlotState::Closed || slot->end_serial <= completed_) continue;
        if (slot->end_serial < submit_cursor_)
            progress.wait_serial = std::max(progress.wait_serial, slot->end_serial);
        else
            progress.blocked = true;
    }
}

// The two resolves (resolve.cpp).
template lapse_status Stream::resolve_pass(const lapse_token*, FullAnswers, uint32_t, const Placement&,
                                           ResolveProgress&, lapse_error*);
template lapse_status Stream::resolve_pass(const lapse_token*, CompactAnswers, uint32_t, const Placement&,
                                           ResolveProgress&, lapse_error*);

}  // namespace lapse::vulkan
