// submit = "host": the host's work runs on the stream's worker thread in
// stream order, between the segments recorded before and after it.
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
// Host work (submit = "host")

lapse_status Stream::wait_value(VkSemaphore semaphore, uint64_t value, uint64_t timeout_ns, lapse_error* error)
{
    VkSemaphoreWaitInfo wi{};
    wi.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
    wi.semaphoreCount = 1;
    wi.pSemaphores = &semaphore;
    wi.pValues = &value;
    VkResult r = ctx_.api.vkWaitSemaphores(ctx_.device, &wi, timeout_ns);
    if (r == VK_TIMEOUT) return LAPSE_NOT_READY;
    if (r != VK_SUCCESS) return ctx_.vk_fail(error, "wait for stream", "vkWaitSemaphores", r);
    return LAPSE_OK;
}

lapse_status Stream::submit_host(lapse_work_fn fn, void* user, lapse_error* error)
{
    HostWork w;
    w.fn = fn;
    w.user = user;
    {
        std::unique_lock<StreamLock> lock(mutex_);
        if (in_own_callback())
            return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                              "vulkan: submit to stream %u from inside its own host work would wait for itself",
                              cfg_.index);
        if (lapse_status st = check_usable(error, "submit"); st != LAPSE_OK) return st;
        // What was recorded before runs before the work, and starts now.
        if (lapse_status st = close_current(error); st != LAPSE_OK) return st;
        if (lapse_status st = flush(error); st != LAPSE_OK) return st;
        w.after_serial = next_serial_ - 1;
        w.value = ++host_value_;
        host_wait_next_ = w.value;
    }
    std::unique_lock<std::mutex> lock(work_mutex_);
    // A full queue waits for the worker (back-pressure, like the segments).
    work_cv_.wait(lock, [this] { return work_tail_ - work_head_ < kHostQueue; });
    work_[work_tail_ % kHostQueue] = w;
    ++work_tail_;
    work_cv_.notify_all();
    return LAPSE_OK;
}

void Stream::host_worker() noexcept
{
    for (;;) {
        HostWork w;
        {
            std::unique_lock<std::mutex> lock(work_mutex_);
            work_cv_.wait(lock, [this] { return work_head_ != work_tail_ || stopping_; });
            if (work_head_ == work_tail_) return;  // stopping, and nothing left to run
            w = work_[work_head_ % kHostQueue];
        }
        // Wait (in slices, so a failed stream cannot hang us) until the
        // segments before the work are done. The work runs in any case:
        // submit promised to call it exactly once.
        if (w.after_serial != 0)
            while (wait_serial(w.after_serial, 100000000, nullptr) == LAPSE_NOT_READY &&
                   !broken_.load(std::memory_order_acquire) && !ctx_.is_lost()) {
            }
        const Stream* saved = callback_stream_;
        callback_stream_ = this;
        w.fn(w.user, nullptr);
        callback_stream_ = saved;
        VkSemaphoreSignalInfo si{};
        si.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
        si.semaphore = host_sem_;
        si.value = w.value;
        VkResult r = ctx_.api.vkSignalSemaphore(ctx_.device, &si);
        if (r == VK_ERROR_DEVICE_LOST) ctx_.lost.store(LAPSE_ERROR_DEVICE);
        {
            std::lock_guard<std::mutex> lock(work_mutex_);
            ++work_head_;
        }
        work_cv_.notify_all();
    }
}

void Stream::stop_worker() noexcept
{
    if (!worker_.joinable()) return;
    {
        std::lock_guard<std::mutex> lock(work_mutex_);
        stopping_ = true;
    }
    work_cv_.notify_all();
    worker_.join();  // runs what is still queued first
}

}  // namespace lapse::vulkan
