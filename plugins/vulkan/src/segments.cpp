// Own mode's segments: the command buffers that carry window stamps and
// submitted work to the queue in serial order (stream.hpp explains how).
#include "stream.hpp"

#include "timestamp_math.hpp"
#include "token.hpp"

#include <lapse/sdk/error.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace lapse::vulkan {

// ---------------------------------------------------------------------------
// Segments (own mode)

lapse_status Stream::refresh_completed(lapse_error* error) noexcept
{
    uint64_t value = 0;
    VkResult r = ctx_.api.vkGetSemaphoreCounterValue(ctx_.device, timeline_, &value);
    if (r != VK_SUCCESS) return ctx_.vk_fail(error, "read stream progress", "vkGetSemaphoreCounterValue", r);
    if (value > completed_) completed_ = value;
    return LAPSE_OK;
}

lapse_status Stream::wait_serial(uint64_t serial, uint64_t timeout_ns, lapse_error* error)
{
    return wait_value(timeline_, serial, timeout_ns, error);
}

lapse_status Stream::recording(std::unique_lock<StreamLock>& lock, Segment*& out, lapse_error* error)
{
    const VkApi& vk = ctx_.api;
    for (;;) {
        if (lapse_status st = check_usable(error, "record"); st != LAPSE_OK) return st;
        if (current_ != 0) {
            out = &seg(current_);
            return LAPSE_OK;
        }
        uint64_t serial = next_serial_;
        Segment& g = seg(serial);
        if (g.state == Segment::State::Submitted) {
            if (g.serial > completed_) {
                if (lapse_status st = refresh_completed(error); st != LAPSE_OK) return st;
            }
            if (g.serial > completed_) {
                // Every segment is in flight: back-pressure. Wait without
                // the lock, then look again (another thread may have begun
                // a segment meanwhile).
                uint64_t wait_for = g.serial;
                lock.unlock();
                lapse_status st = wait_serial(wait_for, UINT64_MAX, error);
                lock.lock();
                if (st != LAPSE_OK) return st;
                if (wait_for > completed_) completed_ = wait_for;
                continue;
            }
        } else if (g.state != Segment::State::Free) {
            // The oldest segment is still in a callback or waiting to be
            // submitted behind one: wait for it to move on.
            cv_.wait(lock);
            continue;
        }
        if (g.needs_reset)
            if (lapse_status st = reset_segment(g, error); st != LAPSE_OK) return st;
        VkCommandBufferBeginInfo bi{};
        bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        VkResult r = vk.vkBeginCommandBuffer(g.cb, &bi);
        if (r != VK_SUCCESS) return fail_stream(ctx_.vk_fail(error, "record", "vkBeginCommandBuffer", r), error);
        g.needs_reset = true;
        g.serial = serial;
        g.stamps = 0;
        g.first_stamped = kNothingStamped;
        g.last_stamped = 0;
        g.wait_host = host_wait_next_;  // host work handed out before this segment
        host_wait_next_ = 0;            // later segments follow this one on the queue anyway
        g.state = Segment::State::Recording;
        ++next_serial_;
        current_ = serial;
        current_seg_ = &g;
        out = &g;
        return LAPSE_OK;
    }
}

lapse_status Stream::reset_segment(Segment& g, lapse_error* error) noexcept
{
    VkResult r = ctx_.api.vkResetCommandPool(ctx_.device, g.pool, 0);
    if (r != VK_SUCCESS) return fail_stream(ctx_.vk_fail(error, "record", "vkResetCommandPool", r), error);
    g.needs_reset = false;
    return LAPSE_OK;
}

void Stream::recycle_completed() noexcept
{
    if (!usable()) return;
    for (uint32_t i = 0; i < cfg_.segments; ++i) {
        Segment& g = segs_[i];
        if (g.state != Segment::State::Submitted || g.serial > completed_) continue;
        // A failed reset poisons the stream and says why in its failure
        // message; the next start or resolve reports it.
        lapse_error scratch = sdk::make_error();
        if (reset_segment(g, &scratch) != LAPSE_OK) return;
        g.state = Segment::State::Free;
    }
}

lapse_status Stream::close_current(lapse_error* error) noexcept
{
    if (current_ == 0) return LAPSE_OK;
    Segment& g = seg(current_);
    current_ = 0;
    g.state = Segment::State::Closed;
    record_stamp_copies(g);
    VkResult r = ctx_.api.vkEndCommandBuffer(g.cb);
    if (r != VK_SUCCESS) return fail_stream(ctx_.vk_fail(error, "submit", "vkEndCommandBuffer", r), error);
    return LAPSE_OK;
}

lapse_status Stream::flush(lapse_error* error) noexcept
{
    constexpr uint32_t kMax = 64;
    VkCommandBuffer cbs[kMax];
    uint32_t n = 0;
    while (submit_cursor_ + n < next_serial_ && n < cfg_.segments && n < kMax) {
        Segment& g = seg(submit_cursor_ + n);
        if (g.serial != submit_cursor_ + n || g.state != Segment::State::Closed) break;
        cbs[n++] = g.cb;
    }
    if (n == 0) return LAPSE_OK;
    if (failure_ != LAPSE_OK || ctx_.is_lost()) {
        // Never submit behind a failure: those serials would never signal.
        for (uint32_t i = 0; i < n; ++i) seg(submit_cursor_ + i).state = Segment::State::Free;
        submit_cursor_ += n;
        cv_.notify_all();
        return check_usable(error, "submit");
    }
    // One VkSubmitInfo per segment, each signalling its own serial and, after
    // host work, waiting for it: a batch-wide wait could make an earlier
    // segment wait for host work that itself waits for that segment.
    uint64_t signal[kMax];
    uint64_t wait[kMax];
    VkTimelineSemaphoreSubmitInfo ts[kMax];
    VkSubmitInfo si[kMax];
    const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    for (uint32_t i = 0; i < n; ++i) {
        const Segment& g = seg(submit_cursor_ + i);
        signal[i] = g.serial;
        wait[i] = g.wait_host;
        ts[i] = VkTimelineSemaphoreSubmitInfo{};
        ts[i].sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
        ts[i].signalSemaphoreValueCount = 1;
        ts[i].pSignalSemaphoreValues = &signal[i];
        si[i] = VkSubmitInfo{};
        si[i].sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si[i].pNext = &ts[i];
        si[i].commandBufferCount = 1;
        si[i].pCommandBuffers = &cbs[i];
        si[i].signalSemaphoreCount = 1;
        si[i].pSignalSemaphores = &timeline_;
        if (wait[i] != 0) {
            ts[i].waitSemaphoreValueCount = 1;
            ts[i].pWaitSemaphoreValues = &wait[i];
            si[i].waitSemaphoreCount = 1;
            si[i].pWaitSemaphores = &host_sem_;
            si[i].pWaitDstStageMask = &wait_stage;
        }
    }
    VkResult r;
    {
        std::lock_guard<std::mutex> queue_lock(cfg_.queue->mutex);
        r = ctx_.api.vkQueueSubmit(cfg_.queue->queue, n, si, VK_NULL_HANDLE);
    }
    Segment::State next = r == VK_SUCCESS ? Segment::State::Submitted : Segment::State::Free;
    for (uint32_t i = 0; i < n; ++i) seg(submit_cursor_ + i).state = next;
    submit_cursor_ += n;
    cv_.notify_all();
    if (r != VK_SUCCESS) return fail_stream(ctx_.vk_fail(error, "submit", "vkQueueSubmit", r), error);
    return LAPSE_OK;
}

lapse_status Stream::submit_batch(lapse_error* error) noexcept
{
    if (lapse_status st = close_current(error); st != LAPSE_OK) return st;
    return flush(error);
}

}  // namespace lapse::vulkan
