#include "stream.hpp"

#include "timestamp_math.hpp"
#include "token.hpp"

#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace lapse::vulkan {

namespace {

// The stream whose submit callback the calling thread is running, if any.
thread_local const Stream* tl_callback_stream = nullptr;

// Windows read back per vkGetQueryPoolResults call: 64 windows, 2 queries
// each, value + availability per query = 2 KiB on the stack.
constexpr uint32_t kReadBatch = 64;
constexpr VkQueryResultFlags kReadFlags = VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT;

// close waits this long for the queue before giving up on it.
constexpr uint64_t kShutdownWaitNs = 10ull * 1000 * 1000 * 1000;

}  // namespace

Stream::Stream(DeviceContext& ctx, const StreamConfig& config)
    : ctx_(ctx), cfg_(config), mask_(valid_mask(config.valid_bits)), ring_(config.ring_windows)
{
}

Stream::~Stream()
{
    stop_worker();
    const VkApi& vk = ctx_.api;
    if (segs_) {
        for (uint32_t i = 0; i < cfg_.segments; ++i)
            if (segs_[i].pool != VK_NULL_HANDLE) vk.vkDestroyCommandPool(ctx_.device, segs_[i].pool, nullptr);
    }
    if (timeline_ != VK_NULL_HANDLE) vk.vkDestroySemaphore(ctx_.device, timeline_, nullptr);
    if (host_sem_ != VK_NULL_HANDLE) vk.vkDestroySemaphore(ctx_.device, host_sem_, nullptr);
    if (pool_ != VK_NULL_HANDLE) vk.vkDestroyQueryPool(ctx_.device, pool_, nullptr);
}

lapse_status Stream::init(lapse_error* error)
{
    const VkApi& vk = ctx_.api;
    VkQueryPoolCreateInfo qi{};
    qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2 * cfg_.ring_windows;
    VkResult r = vk.vkCreateQueryPool(ctx_.device, &qi, nullptr, &pool_);
    if (r != VK_SUCCESS) return ctx_.vk_fail(error, "open stream", "vkCreateQueryPool", r);
    // Queries start in an undefined state; the host-reset path resets them
    // all now, the command path resets each pair before it is written.
    if (ctx_.host_query_reset) vk.vkResetQueryPool(ctx_.device, pool_, 0, qi.queryCount);

    if (!own()) return LAPSE_OK;

    VkSemaphoreTypeCreateInfo ti{};
    ti.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
    ti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    ti.initialValue = 0;
    VkSemaphoreCreateInfo si{};
    si.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
    si.pNext = &ti;
    r = vk.vkCreateSemaphore(ctx_.device, &si, nullptr, &timeline_);
    if (r != VK_SUCCESS) return ctx_.vk_fail(error, "open stream", "vkCreateSemaphore", r);
    if (cfg_.host_work) {
        r = vk.vkCreateSemaphore(ctx_.device, &si, nullptr, &host_sem_);
        if (r != VK_SUCCESS) return ctx_.vk_fail(error, "open stream", "vkCreateSemaphore", r);
        worker_ = std::thread([this] { host_worker(); });
    }

    segs_ = std::make_unique<Segment[]>(cfg_.segments);
    for (uint32_t i = 0; i < cfg_.segments; ++i) {
        VkCommandPoolCreateInfo pi{};
        pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
        pi.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
        pi.queueFamilyIndex = cfg_.family;
        r = vk.vkCreateCommandPool(ctx_.device, &pi, nullptr, &segs_[i].pool);
        if (r != VK_SUCCESS) return ctx_.vk_fail(error, "open stream", "vkCreateCommandPool", r);
        VkCommandBufferAllocateInfo ai{};
        ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        ai.commandPool = segs_[i].pool;
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        r = vk.vkAllocateCommandBuffers(ctx_.device, &ai, &segs_[i].cb);
        if (r != VK_SUCCESS) return ctx_.vk_fail(error, "open stream", "vkAllocateCommandBuffers", r);
    }
    return LAPSE_OK;
}

bool Stream::in_own_callback() const noexcept { return tl_callback_stream == this; }

// ---------------------------------------------------------------------------
// Failure bookkeeping

lapse_status Stream::check_usable(lapse_error* error, const char* operation) const noexcept
{
    if (ctx_.is_lost())
        return sdk::failf(error, LAPSE_ERROR_DEVICE, "vulkan: %s on stream %u: the device was lost earlier", operation,
                          cfg_.index);
    if (failure_ != LAPSE_OK)
        return sdk::failf(error, failure_, "vulkan: %s on stream %u: the stream failed earlier: %s", operation,
                          cfg_.index, failure_message_);
    return LAPSE_OK;
}

lapse_status Stream::fail_stream(lapse_status status, lapse_error* error) noexcept
{
    if (failure_ == LAPSE_OK) {
        failure_ = status;
        broken_.store(true, std::memory_order_release);
        if (error != nullptr && error->struct_size >= sizeof(lapse_error))
            std::snprintf(failure_message_, sizeof failure_message_, "%s", error->message);
        else
            std::snprintf(failure_message_, sizeof failure_message_, "%s", lapse_status_name(status));
    }
    cv_.notify_all();
    return status;
}

lapse_status Stream::capacity_error(lapse_error* error, const char* operation) const noexcept
{
    return sdk::failf(error, LAPSE_ERROR_CAPACITY,
                      "vulkan: %s on stream %u: the query ring is full: %" PRIu64
                      " windows pending (open, closed and not yet resolved, or abandoned and still on the device) "
                      "hold all %u query pairs (ring_size = %u queries); resolve or abandon windows, or raise "
                      "ring_size in the config",
                      operation, cfg_.index, ring_.in_use(), ring_.capacity(), 2 * ring_.capacity());
}

lapse_status Stream::token_error(lapse_token token, uint64_t position, const char* operation, lapse_error* error)
{
    (void)position;
    return sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN,
                      "vulkan: %s: token %" PRIu64 " (stream %u) names no open window: never opened, already "
                      "closed, resolved or abandoned",
                      operation, token.id, token.opened_on);
}

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
    VkSemaphoreWaitInfo wi{};
    wi.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
    wi.semaphoreCount = 1;
    wi.pSemaphores = &timeline_;
    wi.pValues = &serial;
    VkResult r = ctx_.api.vkWaitSemaphores(ctx_.device, &wi, timeout_ns);
    if (r == VK_TIMEOUT) return LAPSE_NOT_READY;
    if (r != VK_SUCCESS) return ctx_.vk_fail(error, "wait for stream", "vkWaitSemaphores", r);
    return LAPSE_OK;
}

lapse_status Stream::recording(std::unique_lock<std::mutex>& lock, Segment*& out, lapse_error* error)
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
        VkResult r = vk.vkResetCommandPool(ctx_.device, g.pool, 0);
        if (r != VK_SUCCESS) return fail_stream(ctx_.vk_fail(error, "record", "vkResetCommandPool", r), error);
        VkCommandBufferBeginInfo bi{};
        bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        r = vk.vkBeginCommandBuffer(g.cb, &bi);
        if (r != VK_SUCCESS) return fail_stream(ctx_.vk_fail(error, "record", "vkBeginCommandBuffer", r), error);
        g.serial = serial;
        g.stamps = 0;
        g.wait_host = host_wait_next_;  // host work handed out before this segment
        host_wait_next_ = 0;            // later segments follow this one on the queue anyway
        g.state = Segment::State::Recording;
        ++next_serial_;
        current_ = serial;
        out = &g;
        return LAPSE_OK;
    }
}

lapse_status Stream::close_current(lapse_error* error) noexcept
{
    if (current_ == 0) return LAPSE_OK;
    Segment& g = seg(current_);
    current_ = 0;
    g.state = Segment::State::Closed;
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

lapse_status Stream::after_stamp(Segment& g, lapse_error* error) noexcept
{
    ++g.stamps;
    if (g.state == Segment::State::Recording && g.stamps >= 2 * cfg_.batch_windows) {
        if (lapse_status st = close_current(error); st != LAPSE_OK) return st;
        return flush(error);
    }
    return LAPSE_OK;
}

// ---------------------------------------------------------------------------
// Windows

lapse_status Stream::record_start(VkCommandBuffer cb, uint64_t serial, lapse_token& token, lapse_error* error) noexcept
{
    if (ring_.full()) {
        reclaim();
        if (ring_.full()) return capacity_error(error, "profile_start");
    }
    uint64_t position = 0;
    RingSlot& slot = ring_.open(position);
    slot.start_serial = serial;
    uint32_t q = ring_.first_query(position);
    if (!ctx_.host_query_reset) ctx_.api.vkCmdResetQueryPool(cb, pool_, q, 2);
    ctx_.api.vkCmdWriteTimestamp(cb, ctx_.start_stage, pool_, q);
    token.id = encode_token_id(position, cfg_.index);
    token.opened_on = cfg_.index;
    token.reserved = 0;
    return LAPSE_OK;
}

lapse_status Stream::start(lapse_token& token, lapse_error* error)
{
    std::unique_lock<std::mutex> lock(mutex_);
    Segment* g = nullptr;
    if (lapse_status st = recording(lock, g, error); st != LAPSE_OK) return st;
    if (lapse_status st = record_start(g->cb, g->serial, token, error); st != LAPSE_OK) return st;
    return after_stamp(*g, error);
}

lapse_status Stream::end(uint64_t position, lapse_token token, lapse_error* error)
{
    std::unique_lock<std::mutex> lock(mutex_);
    RingSlot* slot = ring_.find(position);
    if (slot == nullptr || slot->state != SlotState::Open) return token_error(token, position, "profile_end", error);
    if (ctx_.is_lost() || failure_ != LAPSE_OK) {
        // The window can no longer be measured: close it as failed, so a
        // resolve reads FAILED, and say why.
        slot->state = SlotState::Closed;
        slot->failed = true;
        return check_usable(error, "profile_end");
    }
    Segment* g = nullptr;
    if (lapse_status st = recording(lock, g, error); st != LAPSE_OK) {
        // recording() may have waited without the lock: look the slot up again.
        if ((slot = ring_.find(position)) != nullptr && slot->state == SlotState::Open) {
            slot->state = SlotState::Closed;
            slot->failed = true;
        }
        return st;
    }
    slot = ring_.find(position);
    if (slot == nullptr || slot->state != SlotState::Open) return token_error(token, position, "profile_end", error);
    ctx_.api.vkCmdWriteTimestamp(g->cb, ctx_.end_stage, pool_, ring_.first_query(position) + 1);
    slot->end_serial = g->serial;
    slot->state = SlotState::Closed;
    return after_stamp(*g, error);
}

lapse_status Stream::submit(lapse_work_fn fn, void* user, lapse_error* error)
{
    if (cfg_.host_work) return submit_host(fn, user, error);
    std::unique_lock<std::mutex> lock(mutex_);
    Segment* g = nullptr;
    if (lapse_status st = recording(lock, g, error); st != LAPSE_OK) return st;
    // The segment leaves the plugin's hands: later stamps go to a new one.
    g->state = Segment::State::InCallback;
    current_ = 0;
    lock.unlock();

    // No lock is held while the host's code runs: it may call into this
    // device, on this stream too (those calls are ordered after this
    // command buffer), and wait on threads that do.
    struct Finish {
        Stream* self;
        Segment* g;
        const Stream* saved;
        lapse_error* error;
        lapse_status status = LAPSE_OK;
        ~Finish()
        {
            tl_callback_stream = saved;
            std::lock_guard<std::mutex> relock(self->mutex_);
            g->state = Segment::State::Closed;
            VkResult r = self->ctx_.api.vkEndCommandBuffer(g->cb);
            if (r != VK_SUCCESS)
                self->fail_stream(self->ctx_.vk_fail(error, "submit", "vkEndCommandBuffer", r), error);
            self->flush(nullptr);
            self->cv_.notify_all();
        }
    } finish{this, g, tl_callback_stream, error};
    tl_callback_stream = this;
    fn(user, static_cast<void*>(g->cb));
    return LAPSE_OK;
}

lapse_status Stream::sync(lapse_error* error)
{
    if (in_own_callback())
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "vulkan: sync on stream %u from inside one of its submit callbacks would wait for itself",
                          cfg_.index);
    std::unique_lock<std::mutex> lock(mutex_);
    if (lapse_status st = check_usable(error, "sync"); st != LAPSE_OK) return st;
    const uint64_t target = next_serial_ - 1;  // 0: no segment was ever begun
    const uint64_t host_target = host_value_;  // host work handed out before this call
    if (lapse_status st = close_current(error); st != LAPSE_OK) return st;
    for (;;) {
        if (lapse_status st = flush(error); st != LAPSE_OK) return st;
        if (submit_cursor_ > target) break;  // (always true when target == 0)
        // A segment before `target` is still in another thread's callback.
        cv_.wait(lock);
        if (lapse_status st = check_usable(error, "sync"); st != LAPSE_OK) return st;
    }
    if (completed_ < target) {
        lock.unlock();
        lapse_status st = wait_serial(target, UINT64_MAX, error);
        lock.lock();
        if (st != LAPSE_OK) return st;
        if (target > completed_) completed_ = target;
    }
    if (host_target != 0) {
        lock.unlock();
        return wait_value(host_sem_, host_target, UINT64_MAX, error);
    }
    return LAPSE_OK;
}

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
        std::unique_lock<std::mutex> lock(mutex_);
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
        const Stream* saved = tl_callback_stream;
        tl_callback_stream = this;
        w.fn(w.user, nullptr);
        tl_callback_stream = saved;
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

lapse_status Stream::cmd_start(VkCommandBuffer cb, lapse_token& token, lapse_error* error)
{
    std::unique_lock<std::mutex> lock(mutex_);
    if (lapse_status st = check_usable(error, "cmd_profile_start"); st != LAPSE_OK) return st;
    uint64_t serial = 0;
    if (own()) {
        // Only the command buffer of a callback running now on this stream:
        // its serial is what tells resolve when the stamp is done.
        for (uint32_t i = 0; i < cfg_.segments; ++i)
            if (segs_[i].cb == cb && segs_[i].state == Segment::State::InCallback) serial = segs_[i].serial;
        if (serial == 0)
            return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                              "vulkan: cmd_profile_start: in own mode the command buffer must be the one a submit "
                              "callback of stream %u is recording",
                              cfg_.index);
    }
    return record_start(cb, serial, token, error);
}

lapse_status Stream::cmd_end(VkCommandBuffer cb, uint64_t position, lapse_token token, lapse_error* error)
{
    std::unique_lock<std::mutex> lock(mutex_);
    RingSlot* slot = ring_.find(position);
    if (slot == nullptr || slot->state != SlotState::Open) return token_error(token, position, "cmd_profile_end", error);
    uint64_t serial = 0;
    if (own()) {
        for (uint32_t i = 0; i < cfg_.segments; ++i)
            if (segs_[i].cb == cb && segs_[i].state == Segment::State::InCallback) serial = segs_[i].serial;
        if (serial == 0)
            return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                              "vulkan: cmd_profile_end: in own mode the command buffer must be the one a submit "
                              "callback of stream %u is recording",
                              cfg_.index);
    }
    if (ctx_.is_lost() || failure_ != LAPSE_OK) {
        slot->state = SlotState::Closed;
        slot->failed = true;
        return check_usable(error, "cmd_profile_end");
    }
    ctx_.api.vkCmdWriteTimestamp(cb, ctx_.end_stage, pool_, ring_.first_query(position) + 1);
    slot->end_serial = serial;
    slot->state = SlotState::Closed;
    return LAPSE_OK;
}

bool Stream::has_window(uint64_t position)
{
    std::lock_guard<std::mutex> lock(mutex_);
    RingSlot* slot = ring_.find(position);
    return slot != nullptr && (slot->state == SlotState::Open || slot->state == SlotState::Closed);
}

void Stream::abandon(uint64_t position) noexcept
{
    std::lock_guard<std::mutex> lock(mutex_);
    RingSlot* slot = ring_.find(position);
    if (slot == nullptr) return;
    if (slot->failed || ctx_.is_lost())
        slot->state = SlotState::Released;  // nothing will be read from it
    else if (slot->state == SlotState::Open)
        slot->state = SlotState::AbandonedOpen;
    else if (slot->state == SlotState::Closed)
        slot->state = SlotState::AbandonedClosed;
    else
        return;
    reclaim();
}

bool Stream::abandoned_done(const RingSlot& slot) noexcept
{
    if (ctx_.is_lost() || failure_ != LAPSE_OK) return true;
    if (own()) {
        uint64_t serial = slot.state == SlotState::AbandonedOpen ? slot.start_serial : slot.end_serial;
        if (serial >= submit_cursor_) return false;  // not even submitted yet
        if (serial > completed_) refresh_completed(nullptr);
        return serial <= completed_;
    }
    // Attach mode: the host's command buffers are done with a query once it
    // is available. Read (never wait) the start, and the end if written.
    uint64_t data[4] = {0, 0, 0, 0};
    uint32_t count = slot.state == SlotState::AbandonedOpen ? 1 : 2;
    VkResult r = ctx_.api.vkGetQueryPoolResults(ctx_.device, pool_, ring_.first_query(slot.position), count,
                                                sizeof data, data, 2 * sizeof(uint64_t), kReadFlags);
    if (r == VK_ERROR_DEVICE_LOST) ctx_.lost.store(LAPSE_ERROR_DEVICE);
    if (r != VK_SUCCESS && r != VK_NOT_READY) return false;
    return data[1] != 0 && (count == 1 || data[3] != 0);
}

void Stream::reclaim() noexcept
{
    ring_.reclaim([this](const RingSlot& slot) { return abandoned_done(slot); },
                  [this](uint32_t first, uint32_t count) {
                      if (ctx_.host_query_reset) ctx_.api.vkResetQueryPool(ctx_.device, pool_, first, count);
                  });
}

// ---------------------------------------------------------------------------
// Resolve

namespace {

// A final state without times (NOT_MEASURED, FAILED): the SDK's writer, so
// a FAILED duration reads the same as every other plugin's (method NONE).
void set_final(lapse_duration& d, lapse_duration_state state, lapse_status failure = LAPSE_OK) noexcept
{
    sdk::set_duration(d, state, failure);
}

}  // namespace

lapse_status Stream::resolve_pass(const lapse_token* tokens, lapse_duration* out, uint32_t n, const Placement& place,
                                  ResolveProgress& progress, lapse_error* error)
{
    std::lock_guard<std::mutex> lock(mutex_);
    lapse_status first_error = LAPSE_OK;
    auto note_error = [&](lapse_status st) {
        if (first_error == LAPSE_OK) first_error = st;
    };
    if (own() && completed_ + 1 < next_serial_) refresh_completed(nullptr);

    // Which windows can be read now: validate, apply poison, and for own
    // mode check the segment holding the end is done (submitting it if it
    // is still held here).
    uint32_t readable[kReadBatch];
    uint32_t readable_count = 0;
    auto read_batch = [&]() {
        // Windows in `readable` have consecutive ring indices (the caller
        // builds the batch that way): one vkGetQueryPoolResults for all.
        if (readable_count == 0) return;
        uint64_t data[4 * kReadBatch];
        uint64_t first_position = 0;
        uint32_t first_stream = 0;
        decode_token_id(tokens[readable[0]].id, first_position, first_stream);
        uint32_t first_query = ring_.first_query(first_position);
        VkResult r = ctx_.api.vkGetQueryPoolResults(ctx_.device, pool_, first_query, 2 * readable_count,
                                                    sizeof(uint64_t) * 4 * readable_count, data,
                                                    2 * sizeof(uint64_t), kReadFlags);
        if (r != VK_SUCCESS && r != VK_NOT_READY) {
            lapse_error local = sdk::make_error();
            lapse_status st = ctx_.vk_fail(first_error == LAPSE_OK ? error : &local, "resolve",
                                           "vkGetQueryPoolResults", r);
            note_error(st);
            for (uint32_t k = 0; k < readable_count; ++k) {
                uint64_t pos = 0;
                uint32_t s = 0;
                decode_token_id(tokens[readable[k]].id, pos, s);
                set_final(out[readable[k]], LAPSE_DURATION_FAILED, st);
                if (RingSlot* slot = ring_.find(pos)) slot->state = SlotState::Released;
            }
            readable_count = 0;
            return;
        }
        for (uint32_t k = 0; k < readable_count; ++k) {
            uint32_t i = readable[k];
            uint64_t pos = 0;
            uint32_t s = 0;
            decode_token_id(tokens[i].id, pos, s);
            RingSlot* slot = ring_.find(pos);
            const uint64_t* q = data + 4 * k;
            bool available = q[1] != 0 && q[3] != 0;
            if (!available) {
                if (own()) {
                    // The segment completed but a stamp is missing: the
                    // stamps were lost. Never a number, never zero.
                    set_final(out[i], LAPSE_DURATION_NOT_MEASURED);
                    slot->state = SlotState::Released;
                } else {
                    ++progress.pending;  // attach mode: the host has not run it yet
                }
                continue;
            }
            uint64_t start = q[0] & mask_;
            uint64_t end = q[2] & mask_;
            uint64_t ticks = ticks_between(start, end, mask_);
            if (cfg_.valid_bits == 64 && ticks > (mask_ >> 1)) {
                // End before start on a counter that cannot wrap in our
                // lifetime: the stamps are not trustworthy.
                set_final(out[i], LAPSE_DURATION_NOT_MEASURED);
                slot->state = SlotState::Released;
                continue;
            }
            lapse_duration& d = out[i];
            int64_t duration = ticks_to_ns(ticks, ctx_.period_ns);
            if (place.host_timeline) {
                int64_t offset = signed_ticks_to_ns(signed_ticks(place.point.device_ticks & mask_, start, mask_),
                                                    ctx_.period_ns);
                d.start_ns = place.point.host_ns + offset;
                d.clock_domain = LAPSE_CLOCK_HOST_MONOTONIC;
            } else {
                d.start_ns = ticks_to_ns(start, ctx_.period_ns);
                d.clock_domain = LAPSE_CLOCK_DEVICE;
            }
            d.end_ns = d.start_ns + duration;
            d.state = LAPSE_DURATION_READY;
            d.method = LAPSE_TIMING_DEVICE;
            d.failure = LAPSE_OK;
            slot->state = SlotState::Released;
        }
        readable_count = 0;
    };

    uint32_t last_index = 0;
    bool need_flush = false;
    for (uint32_t i = 0; i < n; ++i) {
        if (out[i].state != LAPSE_DURATION_PENDING) continue;
        uint64_t pos = 0;
        uint32_t s = 0;
        decode_token_id(tokens[i].id, pos, s);
        RingSlot* slot = ring_.find(pos);
        if (slot == nullptr || (slot->state != SlotState::Open && slot->state != SlotState::Closed)) {
            lapse_error local = sdk::make_error();
            note_error(sdk::failf(first_error == LAPSE_OK ? error : &local, LAPSE_ERROR_INVALID_TOKEN,
                                  "vulkan: resolve: token %" PRIu64
                                  " names no closed window: never opened, already resolved or abandoned",
                                  tokens[i].id));
            set_final(out[i], LAPSE_DURATION_FAILED, LAPSE_ERROR_INVALID_TOKEN);
            continue;
        }
        if (tokens[i].opened_on != cfg_.index) {
            lapse_error local = sdk::make_error();
            note_error(sdk::failf(first_error == LAPSE_OK ? error : &local, LAPSE_ERROR_WRONG_STREAM,
                                  "vulkan: resolve: token %" PRIu64 " says stream %u but its window is on stream %u",
                                  tokens[i].id, tokens[i].opened_on, cfg_.index));
            set_final(out[i], LAPSE_DURATION_FAILED, LAPSE_ERROR_WRONG_STREAM);
            continue;
        }
        if (slot->state == SlotState::Open) {
            lapse_error local = sdk::make_error();
            note_error(sdk::failf(first_error == LAPSE_OK ? error : &local, LAPSE_ERROR_INVALID_TOKEN,
                                  "vulkan: resolve: token %" PRIu64 " is still open: close it with profile_end first",
                                  tokens[i].id));
            set_final(out[i], LAPSE_DURATION_FAILED, LAPSE_ERROR_INVALID_TOKEN);
            continue;
        }
        // Poison: a window hit by a device or stream failure is FAILED.
        lapse_status poison = slot->failed ? LAPSE_ERROR_DEVICE
                              : ctx_.is_lost() ? LAPSE_ERROR_DEVICE
                                               : failure_;
        if (poison != LAPSE_OK) {
            set_final(out[i], LAPSE_DURATION_FAILED, poison);
            slot->state = SlotState::Released;
            continue;
        }
        if (own() && slot->end_serial > completed_) {
            if (slot->end_serial >= submit_cursor_) {
                need_flush = true;  // still recorded here or waiting behind a callback
                if (current_ != 0 && current_ <= slot->end_serial) close_current(nullptr);
            } else {
                progress.wait_serial = std::max(progress.wait_serial, slot->end_serial);
            }
            ++progress.pending;
            continue;
        }
        // Readable: extend the current batch if it is the next ring index.
        uint32_t index = ring_.index_of(pos);
        if (readable_count > 0 && (readable_count == kReadBatch || index != last_index + 1)) read_batch();
        readable[readable_count++] = i;
        last_index = index;
    }
    read_batch();

    if (need_flush) {
        flush(nullptr);
        // What is now submitted can be waited for; what is not sits behind
        // a segment still in a callback.
        for (uint32_t i = 0; i < n; ++i) {
            if (out[i].state != LAPSE_DURATION_PENDING) continue;
            uint64_t pos = 0;
            uint32_t s = 0;
            decode_token_id(tokens[i].id, pos, s);
            RingSlot* slot = ring_.find(pos);
            if (slot == nullptr || slot->state != SlotState::Closed || slot->end_serial <= completed_) continue;
            if (slot->end_serial < submit_cursor_)
                progress.wait_serial = std::max(progress.wait_serial, slot->end_serial);
            else
                progress.blocked = true;
        }
    }
    reclaim();
    return first_error;
}

// ---------------------------------------------------------------------------
// Close

uint64_t Stream::shutdown() noexcept
{
    std::unique_lock<std::mutex> lock(mutex_);
    uint64_t live = ring_.count_live();
    if (own()) {
        close_current(nullptr);
        flush(nullptr);
        lock.unlock();
        stop_worker();  // host work still queued runs now, and unblocks the segments after it
        lock.lock();
        uint64_t last = submit_cursor_ - 1;
        if (last > completed_ && failure_ == LAPSE_OK && !ctx_.is_lost()) {
            lock.unlock();
            lapse_status st = wait_serial(last, kShutdownWaitNs, nullptr);
            lock.lock();
            if (st == LAPSE_NOT_READY)
                ctx_.host.error("vulkan: close: stream " + std::to_string(cfg_.index) +
                                " did not finish within 10 s; destroying it anyway");
        }
    }
    return live;
}

}  // namespace lapse::vulkan
