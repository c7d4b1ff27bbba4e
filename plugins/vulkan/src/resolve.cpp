// The Vulkan device's resolves, full and compact (lapse.resolve_compact/1):
// every token's stream reads its windows, and the device waits for what is
// still pending.
#include "device.hpp"

#include "timestamp_math.hpp"
#include "token.hpp"

#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/resolve_compact.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <thread>
#include <vector>

namespace lapse::vulkan {

namespace {

void prefill(FullAnswers answers, uint32_t count) noexcept
{
    lapse_duration* out = answers.out;
    for (uint32_t i = 0; i < count; ++i) {
        uint32_t size = out[i].struct_size;
        std::memset(&out[i], 0, sizeof(lapse_duration));
        out[i].struct_size = size;
        out[i].state = LAPSE_DURATION_PENDING;
    }
}

void prefill(CompactAnswers answers, uint32_t count) noexcept
{
    for (uint32_t i = 0; i < count; ++i)
        sdk::set_compact_not_ready(answers.stamps[i], answers.states[i], LAPSE_COMPACT_PENDING);
}

// A token whose id names no stream of this device.
lapse_status refuse_token(FullAnswers answers, uint32_t i, const lapse_token& token, lapse_error* error) noexcept
{
    const lapse_status st = sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN,
                                       "vulkan: resolve: token %" PRIu64 " was not issued by this device", token.id);
    sdk::set_failed(answers.out[i], st);
    return st;
}

lapse_status refuse_token(CompactAnswers answers, uint32_t i, const lapse_token& /*token*/,
                          lapse_error* /*error: resolve names it*/) noexcept
{
    sdk::set_compact_not_ready(answers.stamps[i], answers.states[i], LAPSE_COMPACT_RESOLVE_FULL);
    return LAPSE_OK;
}

// The deadline `timeout_ns` after `begin`: INT64_MAX for forever.
int64_t deadline_after(int64_t begin, uint64_t timeout_ns) noexcept
{
    const bool forever = timeout_ns == LAPSE_WAIT_FOREVER;
    return forever || timeout_ns > static_cast<uint64_t>(INT64_MAX - begin) ? INT64_MAX
                                                                             : begin + static_cast<int64_t>(timeout_ns);
}

constexpr lapse_resolve_compact kCompactOnHostClock =
    sdk::make_resolve_compact<Device>(LAPSE_TIMING_DEVICE, LAPSE_CLOCK_HOST_MONOTONIC);
constexpr lapse_resolve_compact kCompactOnDeviceClock =
    sdk::make_resolve_compact<Device>(LAPSE_TIMING_DEVICE, LAPSE_CLOCK_DEVICE);

}  // namespace

Placement Device::placement(int64_t now_ns) noexcept
{
    Placement place;
    if (ctx_->calibration.enabled()) {
        VkResult failure;
        place.host_timeline = ctx_->calibration.current(now_ns, place.point, failure);
        if (failure == VK_ERROR_DEVICE_LOST) ctx_->lost.store(LAPSE_ERROR_DEVICE);
    }
    return place;
}

lapse_status Device::resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t timeout_ns,
                             lapse_error* error)
{
    const int64_t begin = sdk::monotonic_ns();
    FullAnswers answers{out};
    prefill(answers, count);
    const lapse_status first_error =
        resolve_into(tokens, answers, count, deadline_after(begin, timeout_ns), placement(begin), error);
    if (first_error != LAPSE_OK) return first_error;
    for (uint32_t i = 0; i < count; ++i)
        if (out[i].state == LAPSE_DURATION_PENDING) return LAPSE_NOT_READY;
    return LAPSE_OK;
}

const lapse_resolve_compact* Device::compact_extension() const noexcept
{
    // Own mode only: an attached device learns whether it is calibrated at
    // its first attach, after a host may have asked, and the clock of every
    // READY pair is fixed by the extension struct.
    if (!ctx_->own) return nullptr;
    return ctx_->calibration.enabled() ? &kCompactOnHostClock : &kCompactOnDeviceClock;
}

lapse_status Device::resolve_compact(const lapse_token* tokens, lapse_stamp_pair* stamps, uint8_t* states,
                                     uint32_t count, uint64_t timeout_ns, lapse_error* error) noexcept
{
    CompactAnswers answers{stamps, states};
    prefill(answers, count);
    try {
        const int64_t begin = sdk::monotonic_ns();
        const Placement place = placement(begin);
        // The extension promised host-clock pairs; a device whose
        // calibration has no point yet cannot give them, so the full
        // resolve answers (and says the clock).
        if (ctx_->calibration.enabled() && !place.host_timeline) {
            for (uint32_t i = 0; i < count; ++i)
                sdk::set_compact_not_ready(stamps[i], states[i], LAPSE_COMPACT_RESOLVE_FULL);
            return LAPSE_NOT_READY;
        }
        // Failures are the full resolve's to name: the windows they hit are
        // left RESOLVE_FULL.
        lapse_error ignored = sdk::make_error();
        resolve_into(tokens, answers, count, deadline_after(begin, timeout_ns), place, &ignored);
    } catch (...) {
        // Out of memory for the read's scratch, or a lock that could not
        // be taken: what was answered READY stands, the rest goes to the
        // full resolve untouched.
        for (uint32_t i = 0; i < count; ++i)
            if (states[i] == LAPSE_COMPACT_PENDING)
                sdk::set_compact_not_ready(stamps[i], states[i], LAPSE_COMPACT_RESOLVE_FULL);
        sdk::fail(error, LAPSE_ERROR_OUT_OF_MEMORY, "vulkan: resolve_compact: could not read the queries; resolve in full");
    }
    for (uint32_t i = 0; i < count; ++i)
        if (states[i] != LAPSE_COMPACT_READY) return LAPSE_NOT_READY;
    return LAPSE_OK;
}

template <class Answers>
lapse_status Device::resolve_into(const lapse_token* tokens, Answers answers, uint32_t count, int64_t deadline,
                                  const Placement& place, lapse_error* error)
{
    lapse_status first_error = LAPSE_OK;
    uint64_t sleep_ns = 20000;
    for (;;) {
        ResolveProgress progress[kMaxOwnStreams];
        uint32_t pending = 0;
        for (uint32_t i = 0; i < count;) {
            if (!answers.pending(i)) {
                ++i;
                continue;
            }
            uint64_t position = 0;
            uint32_t index = 0;
            Stream* s = decode_token_id(tokens[i].id, position, index) ? stream(index) : nullptr;
            if (s == nullptr) {
                lapse_error local = sdk::make_error();
                const lapse_status st = refuse_token(answers, i, tokens[i], first_error == LAPSE_OK ? error : &local);
                if (first_error == LAPSE_OK) first_error = st;
                ++i;
                continue;
            }
            // A run of tokens of the same stream goes in one pass (and its
            // consecutive windows in one readback).
            uint32_t j = i + 1;
            for (; j < count; ++j) {
                uint64_t p2;
                uint32_t s2;
                if (!decode_token_id(tokens[j].id, p2, s2) || s2 != index) break;
            }
            lapse_status st = s->resolve_pass(tokens + i, answers.from(i), j - i, place, progress[index],
                                              first_error == LAPSE_OK ? error : nullptr);
            if (first_error == LAPSE_OK && st != LAPSE_OK) first_error = st;
            i = j;
        }
        uint32_t n = stream_count_.load(std::memory_order_acquire);
        for (uint32_t k = 0; k < n; ++k) pending += progress[k].pending;
        if (pending == 0) break;
        int64_t now = sdk::monotonic_ns();
        if (now >= deadline) break;

        // Wait for the device: on the timeline semaphore where a window's
        // segment is submitted, else poll with a short sleep (attach mode,
        // or an end still behind another thread's submit callback).
        bool waited = false, stuck = false;
        for (uint32_t k = 0; k < n && !waited; ++k) {
            if (progress[k].pending == 0) continue;
            if (streams_[k]->in_own_callback()) {
                // Called from this stream's own submit callback or host
                // work: what is pending may be waiting for the very code
                // that called us. Poll only, never wait.
                stuck = true;
            } else if (progress[k].wait_serial != 0) {
                uint64_t remaining = deadline == INT64_MAX ? UINT64_MAX : static_cast<uint64_t>(deadline - now);
                lapse_error local = sdk::make_error();
                lapse_status st = streams_[k]->wait_serial(progress[k].wait_serial, remaining,
                                                           first_error == LAPSE_OK ? error : &local);
                if (st < 0) {
                    if (first_error == LAPSE_OK) first_error = st;
                    stuck = true;  // the next pass marks the windows FAILED (device lost)
                }
                waited = true;
            }
        }
        if (stuck && !ctx_->is_lost()) break;
        if (!waited && !stuck) {
            int64_t left = deadline - sdk::monotonic_ns();
            if (left <= 0) continue;
            std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, static_cast<int64_t>(sleep_ns))));
            sleep_ns = std::min<uint64_t>(sleep_ns * 2, 1000000);
        }
    }
    return first_error;
}

}  // namespace lapse::vulkan
