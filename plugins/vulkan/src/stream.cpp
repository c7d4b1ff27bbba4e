// A stream's life (init, close), its failure bookkeeping, and the windows
// and work of own mode; segments.cpp holds the command buffers they travel
// in, host_work.cpp the worker of submit = "host", stream_resolve.cpp the
// readback.
#include "stream.hpp"

#include "timestamp_math.hpp"
#include "token.hpp"

#include <lapse/sdk/error.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace lapse::vulkan {

namespace {

// close waits this long for the queue before giving up on it.
constexpr uint64_t kShutdownWaitNs = 10ull * 1000 * 1000 * 1000;

}  // namespace

thread_local const Stream* Stream::callback_stream_ = nullptr;

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
    destroy_stamp_copies();
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
    // Queries start in an undefined state: reset them all now when the host
    // may; otherwise own mode's segments reset them before they are written.
    if (ctx_.host_query_reset) {
        vk.vkResetQueryPool(ctx_.device, pool_, 0, qi.queryCount);
        ring_.mark_reset(cfg_.ring_windows);
    }

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
    if (!create_stamp_copies())
        ctx_.host.log(LAPSE_LOG_DEBUG, "vulkan: stream " + std::to_string(cfg_.index) +
                                           ": no host-visible buffer for the queue to copy stamps into; resolve "
                                           "reads them with vkGetQueryPoolResults");
    return LAPSE_OK;
}

bool Stream::in_own_callback() const noexcept { return callback_stream_ == this; }

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
// Windows

lapse_status Stream::record_start(VkCommandBuffer cb, uint64_t serial, bool own_segment, lapse_token& token,
                                  lapse_error* error) noexcept
{
    if (ring_.full()) {
        reclaim();
        if (ring_.full()) return capacity_error(error, "profile_start");
    }
    if (own() && ring_.head() >= ring_.reset_frontier()) reset_ahead(cb, own_segment);
    uint64_t position = 0;
    RingSlot& slot = ring_.open(position);
    slot.start_serial = serial;
    const uint32_t q = ring_.first_query_of(slot);
    ctx_.api.vkCmdWriteTimestamp(cb, ctx_.start_stage, pool_, q);
    if (serial != 0) note_stamp(seg(serial), position);  // own mode
    token.id = encode_token_id(position, cfg_.index);
    token.opened_on = cfg_.index;
    token.reserved = 0;
    return LAPSE_OK;
}

// Own mode: the window about to open at the head has not been reset since
// its slot's previous window was read. The plugin's own segment resets a run
// of up to kResetAhead slots with one command, before this start and so
// before every later write to them: later windows are recorded in this
// segment or in segments after it. Not while a submit callback records: a
// window opened there later would sit in an earlier command buffer than the
// reset. A callback's own command buffer (possibly inside a render pass,
// where vkCmdResetQueryPool is not allowed) gets the pair reset on the host.
void Stream::reset_ahead(VkCommandBuffer cb, bool own_segment) noexcept
{
    const uint64_t position = ring_.head();
    const uint32_t first = ring_.first_query(position);
    if (own_segment || !ctx_.host_query_reset) {
        const uint32_t windows =
            own_segment && callbacks_recording_ == 0 ? ring_.resettable_run(position, kResetAhead) : 1;
        ctx_.api.vkCmdResetQueryPool(cb, pool_, first, 2 * windows);
        ring_.mark_reset(position + windows);
    } else {
        ctx_.api.vkResetQueryPool(ctx_.device, pool_, first, 2);
        ring_.mark_reset(position + 1);
    }
}

lapse_status Stream::start(lapse_token& token, lapse_error* error)
{
    std::unique_lock<StreamLock> lock(mutex_);
    Segment* g = current_segment();
    if (g == nullptr)
        if (lapse_status st = recording(lock, g, error); st != LAPSE_OK) return st;
    if (lapse_status st = record_start(g->cb, g->serial, true, token, error); st != LAPSE_OK) return st;
    return after_stamp(*g, error);
}

lapse_status Stream::end(uint64_t position, lapse_token token, lapse_error* error)
{
    std::unique_lock<StreamLock> lock(mutex_);
    RingSlot* slot = ring_.find(position);
    if (slot == nullptr || slot->state != SlotState::Open) return token_error(token, position, "profile_end", error);
    if (ctx_.is_lost() || failure_ != LAPSE_OK) {
        // The window can no longer be measured: close it as failed, so a
        // resolve reads FAILED, and say why.
        slot->state = SlotState::Closed;
        slot->failed = true;
        return check_usable(error, "profile_end");
    }
    Segment* g = current_segment();
    if (g == nullptr) {
        if (lapse_status st = recording(lock, g, error); st != LAPSE_OK) {
            // recording() may have waited without the lock: look the slot up again.
            if ((slot = ring_.find(position)) != nullptr && slot->state == SlotState::Open) {
                slot->state = SlotState::Closed;
                slot->failed = true;
            }
            return st;
        }
        slot = ring_.find(position);
        if (slot == nullptr || slot->state != SlotState::Open)
            return token_error(token, position, "profile_end", error);
    }
    ctx_.api.vkCmdWriteTimestamp(g->cb, ctx_.end_stage, pool_, ring_.first_query_of(*slot) + 1);
    note_stamp(*g, position);
    slot->end_serial = g->serial;
    slot->state = SlotState::Closed;
    return after_stamp(*g, error);
}

lapse_status Stream::submit(lapse_work_fn fn, void* user, lapse_error* error)
{
    if (cfg_.host_work) return submit_host(fn, user, error);
    std::unique_lock<StreamLock> lock(mutex_);
    Segment* g = nullptr;
    if (lapse_status st = recording(lock, g, error); st != LAPSE_OK) return st;
    // The segment leaves the plugin's hands: later stamps go to a new one.
    g->state = Segment::State::InCallback;
    ++callbacks_recording_;
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
            callback_stream_ = saved;
            std::lock_guard<StreamLock> relock(self->mutex_);
            g->state = Segment::State::Closed;
            --self->callbacks_recording_;
            self->record_stamp_copies(*g);
            VkResult r = self->ctx_.api.vkEndCommandBuffer(g->cb);
            if (r != VK_SUCCESS)
                self->fail_stream(self->ctx_.vk_fail(error, "submit", "vkEndCommandBuffer", r), error);
            self->flush(nullptr);
            self->cv_.notify_all();
        }
    } finish{this, g, callback_stream_, error};
    callback_stream_ = this;
    fn(user, static_cast<void*>(g->cb));
    return LAPSE_OK;
}

lapse_status Stream::sync(lapse_error* error)
{
    if (in_own_callback())
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "vulkan: sync on stream %u from inside one of its submit callbacks would wait for itself",
                          cfg_.index);
    std::unique_lock<StreamLock> lock(mutex_);
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
    recycle_completed();
    if (host_target != 0) {
        lock.unlock();
        return wait_value(host_sem_, host_target, UINT64_MAX, error);
    }
    return LAPSE_OK;
}

lapse_status Stream::callback_serial(VkCommandBuffer cb, const char* call, uint64_t& serial, lapse_error* error)
{
    serial = 0;
    if (!own()) return LAPSE_OK;
    // Only the command buffer of a callback running now on this stream: its
    // serial is what tells resolve when the stamp is done.
    for (uint32_t i = 0; i < cfg_.segments; ++i)
        if (segs_[i].cb == cb && segs_[i].state == Segment::State::InCallback) serial = segs_[i].serial;
    if (serial != 0) return LAPSE_OK;
    return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                      "vulkan: %s: in own mode the command buffer must be the one a submit callback of stream %u "
                      "is recording",
                      call, cfg_.index);
}

lapse_status Stream::cmd_start(VkCommandBuffer cb, lapse_token& token, lapse_error* error)
{
    std::unique_lock<StreamLock> lock(mutex_);
    if (lapse_status st = check_usable(error, "cmd_profile_start"); st != LAPSE_OK) return st;
    uint64_t serial = 0;
    if (lapse_status st = callback_serial(cb, "cmd_profile_start", serial, error); st != LAPSE_OK) return st;
    return record_start(cb, serial, false, token, error);
}

lapse_status Stream::cmd_end(VkCommandBuffer cb, uint64_t position, lapse_token token, lapse_error* error)
{
    std::unique_lock<StreamLock> lock(mutex_);
    RingSlot* slot = ring_.find(position);
    if (slot == nullptr || slot->state != SlotState::Open) return token_error(token, position, "cmd_profile_end", error);
    uint64_t serial = 0;
    if (lapse_status st = callback_serial(cb, "cmd_profile_end", serial, error); st != LAPSE_OK) return st;
    if (ctx_.is_lost() || failure_ != LAPSE_OK) {
        slot->state = SlotState::Closed;
        slot->failed = true;
        return check_usable(error, "cmd_profile_end");
    }
    ctx_.api.vkCmdWriteTimestamp(cb, ctx_.end_stage, pool_, ring_.first_query(position) + 1);
    if (serial != 0) note_stamp(seg(serial), position);  // own mode
    slot->end_serial = serial;
    slot->state = SlotState::Closed;
    return LAPSE_OK;
}

bool Stream::has_window(uint64_t position)
{
    std::lock_guard<StreamLock> lock(mutex_);
    RingSlot* slot = ring_.find(position);
    return slot != nullptr && (slot->state == SlotState::Open || slot->state == SlotState::Closed);
}

void Stream::abandon(uint64_t position) noexcept
{
    std::lock_guard<StreamLock> lock(mutex_);
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
                      // Own mode resets a slot when it is taken again
                      // (reset_ahead), off the resolve path.
                      if (!own()) ctx_.api.vkResetQueryPool(ctx_.device, pool_, first, count);
                  });
}

// ---------------------------------------------------------------------------
// Close

uint64_t Stream::shutdown() noexcept
{
    std::unique_lock<StreamLock> lock(mutex_);
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
