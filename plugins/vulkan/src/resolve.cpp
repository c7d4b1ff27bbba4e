// The Vulkan device's resolve: every token's stream reads its windows.
#include "device.hpp"

#include "timestamp_math.hpp"
#include "token.hpp"

#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <thread>
#include <vector>

namespace lapse::vulkan {

lapse_status Device::resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t timeout_ns,
                             lapse_error* error)
{
    const int64_t begin = sdk::monotonic_ns();
    const bool forever = timeout_ns == LAPSE_WAIT_FOREVER;
    const int64_t deadline =
        forever || timeout_ns > static_cast<uint64_t>(INT64_MAX - begin) ? INT64_MAX : begin + static_cast<int64_t>(timeout_ns);

    for (uint32_t i = 0; i < count; ++i) {
        uint32_t size = out[i].struct_size;
        std::memset(&out[i], 0, sizeof(lapse_duration));
        out[i].struct_size = size;
        out[i].state = LAPSE_DURATION_PENDING;
    }
    Placement place;
    if (ctx_->calibration.enabled()) {
        VkResult failure;
        place.host_timeline = ctx_->calibration.current(begin, place.point, failure);
        if (failure == VK_ERROR_DEVICE_LOST) ctx_->lost.store(LAPSE_ERROR_DEVICE);
    }

    lapse_status first_error = LAPSE_OK;
    uint64_t sleep_ns = 20000;
    for (;;) {
        ResolveProgress progress[kMaxOwnStreams];
        uint32_t pending = 0;
        for (uint32_t i = 0; i < count;) {
            if (out[i].state != LAPSE_DURATION_PENDING) {
                ++i;
                continue;
            }
            uint64_t position = 0;
            uint32_t index = 0;
            Stream* s = decode_token_id(tokens[i].id, position, index) ? stream(index) : nullptr;
            if (s == nullptr) {
                lapse_error local = sdk::make_error();
                lapse_status st = sdk::failf(first_error == LAPSE_OK ? error : &local, LAPSE_ERROR_INVALID_TOKEN,
                                             "vulkan: resolve: token %" PRIu64 " was not issued by this device",
                                             tokens[i].id);
                if (first_error == LAPSE_OK) first_error = st;
                sdk::set_failed(out[i], st);
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
            lapse_status st = s->resolve_pass(tokens + i, out + i, j - i, place, progress[index],
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
    if (first_error != LAPSE_OK) return first_error;
    for (uint32_t i = 0; i < count; ++i)
        if (out[i].state == LAPSE_DURATION_PENDING) return LAPSE_NOT_READY;
    return LAPSE_OK;
}

}  // namespace lapse::vulkan
