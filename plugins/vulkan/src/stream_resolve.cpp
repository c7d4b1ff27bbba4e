// A stream's readback: which of a resolve's windows can be read now, and
// one vkGetQueryPoolResults per run of consecutive ring slots for those
// that can (availability on, never WAIT or PARTIAL: see README.md).
#include "stream.hpp"

#include "timestamp_math.hpp"
#include "token.hpp"

#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>

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

}  // namespace

lapse_status Stream::resolve_pass(const lapse_token* tokens, lapse_duration* out, uint32_t n, const Placement& place,
                                  ResolveProgress& progress, lapse_error* error)
{
    std::lock_guard<std::mutex> lock(mutex_);
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
    uint32_t last_index = 0;
    bool need_flush = false;
    for (uint32_t i = 0; i < n; ++i) {
        if (out[i].state != LAPSE_DURATION_PENDING) continue;
        if (!check_readable(tokens[i], out[i], progress, errors, need_flush)) continue;
        uint64_t position = 0;
        slot_of(ring_, tokens[i], position);
        const uint32_t index = ring_.index_of(position);
        if (run_count > 0 && (run_count == run_.size() || index != last_index + 1)) {
            read_run(tokens, out, run_count, place, progress, errors);
            run_count = 0;
        }
        run_[run_count++] = i;
        last_index = index;
    }
    read_run(tokens, out, run_count, place, progress, errors);

    if (need_flush) {
        flush(nullptr);
        note_waits(tokens, out, n, progress);
    }
    reclaim();
    return errors.first;
}

// Validates a pending token, applies poison, and in own mode checks that
// the segment holding the window's end is done (closing it when it is
// still being recorded here). True when its queries can be read now.
bool Stream::check_readable(const lapse_token& token, lapse_duration& out, ResolveProgress& progress,
                            PassErrors& errors, bool& need_flush)
{
    uint64_t position = 0;
    RingSlot* slot = slot_of(ring_, token, position);
    if (slot == nullptr || (slot->state != SlotState::Open && slot->state != SlotState::Closed)) {
        sdk::set_duration(out, LAPSE_DURATION_FAILED,
                          errors.note(sdk::failf(errors.next(), LAPSE_ERROR_INVALID_TOKEN,
                                                 "vulkan: resolve: token %" PRIu64
                                                 " names no closed window: never opened, already resolved or abandoned",
                                                 token.id)));
        return false;
    }
    if (token.opened_on != cfg_.index) {
        sdk::set_duration(out, LAPSE_DURATION_FAILED,
                          errors.note(sdk::failf(errors.next(), LAPSE_ERROR_WRONG_STREAM,
                                                 "vulkan: resolve: token %" PRIu64
                                                 " says stream %u but its window is on stream %u",
                                                 token.id, token.opened_on, cfg_.index)));
        return false;
    }
    if (slot->state == SlotState::Open) {
        sdk::set_duration(out, LAPSE_DURATION_FAILED,
                          errors.note(sdk::failf(errors.next(), LAPSE_ERROR_INVALID_TOKEN,
                                                 "vulkan: resolve: token %" PRIu64
                                                 " is still open: close it with profile_end first",
                                                 token.id)));
        return false;
    }
    // Poison: a window hit by a device or stream failure is FAILED.
    const lapse_status poison = slot->failed || ctx_.is_lost() ? LAPSE_ERROR_DEVICE : failure_;
    if (poison != LAPSE_OK) {
        sdk::set_duration(out, LAPSE_DURATION_FAILED, poison);
        slot->state = SlotState::Released;
        return false;
    }
    if (own() && slot->end_serial > completed_) {
        if (slot->end_serial >= submit_cursor_) {
            need_flush = true;  // still recorded here or waiting behind a callback
            if (current_ != 0 && current_ <= slot->end_serial) close_current(nullptr);
        } else {
            progress.wait_serial = std::max(progress.wait_serial, slot->end_serial);
        }
        ++progress.pending;
        return false;
    }
    return true;
}

// Reads the windows run_[0..count) (consecutive ring slots) with one call.
void Stream::read_run(const lapse_token* tokens, lapse_duration* out, uint32_t count, const Placement& place,
                      ResolveProgress& progress, PassErrors& errors)
{
    if (count == 0) return;
    uint64_t first_position = 0;
    slot_of(ring_, tokens[run_[0]], first_position);
    const VkResult r = ctx_.api.vkGetQueryPoolResults(ctx_.device, pool_, ring_.first_query(first_position),
                                                      2 * count, sizeof(uint64_t) * 4 * count, results_.data(),
                                                      2 * sizeof(uint64_t), kReadFlags);
    if (r != VK_SUCCESS && r != VK_NOT_READY) {
        const lapse_status st = errors.note(ctx_.vk_fail(errors.next(), "resolve", "vkGetQueryPoolResults", r));
        for (uint32_t k = 0; k < count; ++k) {
            uint64_t position = 0;
            sdk::set_duration(out[run_[k]], LAPSE_DURATION_FAILED, st);
            if (RingSlot* slot = slot_of(ring_, tokens[run_[k]], position)) slot->state = SlotState::Released;
        }
        return;
    }
    for (uint32_t k = 0; k < count; ++k) {
        const uint32_t i = run_[k];
        uint64_t position = 0;
        RingSlot* slot = slot_of(ring_, tokens[i], position);
        const uint64_t* q = results_.data() + 4 * static_cast<std::size_t>(k);
        const bool available = q[1] != 0 && q[3] != 0;
        if (!available && !own()) {
            ++progress.pending;  // attach mode: the host has not run it yet
            continue;
        }
        // Attach mode: a pair read while the host's submission runs can
        // show both stamps available with the end still unwritten (lavapipe
        // does: end 0). Its queries may still be written, so the slot is
        // neither released nor reset yet: it is read again on a later pass,
        // and only a pair that stays out of order is not measured.
        if (available && !own() && out_of_order(q) && slot->out_of_order_reads < kMaxOutOfOrderReads) {
            ++slot->out_of_order_reads;
            ++progress.pending;
            continue;
        }
        // Own mode: the segment completed but a stamp is missing, so the
        // stamps were lost. Never a number, never zero.
        if (!available) sdk::set_duration(out[i], LAPSE_DURATION_NOT_MEASURED);
        else read_duration(q, place, out[i]);
        slot->state = SlotState::Released;
    }
}

// End before start on a counter that cannot wrap in our lifetime.
bool Stream::out_of_order(const uint64_t* stamps) const noexcept
{
    return backwards(ticks_between(stamps[0] & mask_, stamps[2] & mask_, mask_));
}

// A window's duration from its two stamps: the difference under the
// valid-bits mask, converted in double; placed on the host clock through
// the calibration when there is one.
void Stream::read_duration(const uint64_t* stamps, const Placement& place, lapse_duration& out) const noexcept
{
    const uint64_t start = stamps[0] & mask_;
    const uint64_t end = stamps[2] & mask_;
    const uint64_t ticks = ticks_between(start, end, mask_);
    if (backwards(ticks)) {
        // End before start on a counter that cannot wrap in our lifetime:
        // the stamps are not trustworthy.
        sdk::set_duration(out, LAPSE_DURATION_NOT_MEASURED);
        return;
    }
    const int64_t duration = ticks_to_ns(ticks, ctx_.period_ns);
    if (place.host_timeline) {
        const int64_t offset =
            signed_ticks_to_ns(signed_ticks(place.point.device_ticks & mask_, start, mask_), ctx_.period_ns);
        const int64_t start_ns = place.point.host_ns + offset;
        sdk::set_duration(out, LAPSE_DURATION_READY, LAPSE_OK, LAPSE_TIMING_DEVICE, LAPSE_CLOCK_HOST_MONOTONIC,
                          start_ns, start_ns + duration);
    } else {
        const int64_t start_ns = ticks_to_ns(start, ctx_.period_ns);
        sdk::set_duration(out, LAPSE_DURATION_READY, LAPSE_OK, LAPSE_TIMING_DEVICE, LAPSE_CLOCK_DEVICE, start_ns,
                          start_ns + duration);
    }
}

// After a flush: what is now submitted can be waited for; what is not sits
// behind a segment still in a callback.
void Stream::note_waits(const lapse_token* tokens, const lapse_duration* out, uint32_t n, ResolveProgress& progress)
{
    for (uint32_t i = 0; i < n; ++i) {
        if (out[i].state != LAPSE_DURATION_PENDING) continue;
        uint64_t position = 0;
        const RingSlot* slot = slot_of(ring_, tokens[i], position);
        if (slot == nullptr || slot->state != SlotState::Closed || slot->end_serial <= completed_) continue;
        if (slot->end_serial < submit_cursor_)
            progress.wait_serial = std::max(progress.wait_serial, slot->end_serial);
        else
            progress.blocked = true;
    }
}

}  // namespace lapse::vulkan
