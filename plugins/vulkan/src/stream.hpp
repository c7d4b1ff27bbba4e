// One stream of the Vulkan plugin: a queue (or a slot of a shared queue),
// its query ring and, in own mode, the command buffers that carry window
// stamps and submitted work to the queue in order.
//
// Own mode, how windows and work interleave. The stream keeps a small ring
// of "segments", each a command buffer with its own VkCommandPool (so two
// segments can be recorded by two threads at once without sharing a pool)
// and a serial number. profile_start/profile_end record into the current
// segment; submit() takes the current segment (with any stamps already in
// it) and hands it to the host's callback *without holding the stream
// lock*; calls made meanwhile by other threads go into the next segment,
// which is ordered after it. Segments reach vkQueueSubmit strictly in
// serial order, each batch signalling the stream's timeline semaphore with
// its last serial, so "serial <= semaphore value" means "done".
//
// A segment is submitted: when a submit() callback returns (the host's
// work should start now), when sync or a resolve needs a window in it,
// when it holds 2 * `batch_windows` stamps, and on close. profile_end never
// submits or waits, so windows close in a hot loop. The only wait on the
// recording path is back-pressure: when every segment is in flight, taking
// a new one waits for the oldest to complete.
//
// Each segment ends with a copy of the results of the queries stamped in
// it into a host-visible buffer, so own mode's resolve reads stamps with
// plain loads once a segment has completed (stamp_copies.cpp).
//
// A finished segment's command pool is reset where completion is learned
// anyway, in sync and resolve, not by the start that takes the segment
// next: resetting frees every command recorded in it, which on lavapipe
// costs about as much as the window's two stamps. A segment nobody synced
// or resolved past is still reset when it is taken.
//
// Host work (config `submit = "host"`): submit() does not hand the work
// a command buffer; it runs `fn(user, NULL)` on the stream's worker thread
// *in stream order*: the worker waits until the segments recorded before
// the submit have completed, runs the work, then signals a second timeline
// semaphore that the next segment waits on. Windows around host work thus
// measure it on the device clock, as CUDA host functions do. This is what
// lets the conformance suite, whose work is host code, run on Vulkan.
//
// Attach mode: no segments; the host records stamps into its own command
// buffers through the extension and submits them itself; completion is
// learned from query availability.
//
// Every member is guarded by `mutex_` (per stream, never device-wide; a
// StreamLock, whose unlock costs no locked instruction: profile_start and
// profile_end take it once each); the only other lock taken is the
// QueueSlot's, inside it, around vkQueueSubmit.
#pragma once

#include "context.hpp"
#include "query_ring.hpp"
#include "stream_lock.hpp"

#include <lapse/resolve_compact.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace lapse::vulkan {

struct StreamConfig {
    uint32_t index = 0;
    uint32_t family = 0;
    uint32_t valid_bits = 64;
    uint32_t ring_windows = 4096;   // query pairs
    uint32_t segments = 8;          // own mode: command buffers in flight
    uint32_t batch_windows = 256;   // own mode: windows (2 stamps each) per segment before it is submitted
    bool host_work = false;         // own mode: submit runs host code in stream order
    QueueSlot* queue = nullptr;     // own mode; null in attach mode
    VkQueue attached_queue = VK_NULL_HANDLE;  // attach mode, for `handles`
};

// What one resolve pass learned about a stream.
struct ResolveProgress {
    uint32_t pending = 0;      // windows still pending on this stream
    uint64_t wait_serial = 0;  // own mode: the serial to wait for (submitted), 0 = none
    bool blocked = false;      // own mode: a window's end sits behind a segment still in a callback
};

// The calibration and clock facts a resolve uses for every window.
struct Placement {
    bool host_timeline = false;
    CalibrationPoint point{};
};

// Where a resolve pass writes its answers: a full lapse_duration per window
// (resolve), or a stamp pair and a state byte (lapse.resolve_compact/1,
// which takes only the windows it answers READY and leaves every other one
// untouched for resolve).
struct FullAnswers {
    lapse_duration* out;
    bool pending(uint32_t i) const noexcept { return out[i].state == LAPSE_DURATION_PENDING; }
    FullAnswers from(uint32_t i) const noexcept { return {out + i}; }
};
struct CompactAnswers {
    lapse_stamp_pair* stamps;
    uint8_t* states;
    bool pending(uint32_t i) const noexcept { return states[i] == LAPSE_COMPACT_PENDING; }
    CompactAnswers from(uint32_t i) const noexcept { return {stamps + i, states + i}; }
};

class Stream {
public:
    Stream(DeviceContext& ctx, const StreamConfig& config);
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    // Creates the query pool and, in own mode, the segments and semaphore.
    lapse_status init(lapse_error* error);
    // Submits what is recorded, waits (bounded) for the queue, and reports
    // windows still open or unresolved. Called once, from close.
    uint64_t shutdown() noexcept;

    uint32_t index() const noexcept { return cfg_.index; }
    bool has_clock() const noexcept { return cfg_.valid_bits != 0; }
    uint32_t valid_bits() const noexcept { return cfg_.valid_bits; }
    uint32_t family() const noexcept { return cfg_.family; }
    VkQueue queue() const noexcept { return cfg_.queue ? cfg_.queue->queue : cfg_.attached_queue; }
    bool own() const noexcept { return cfg_.queue != nullptr; }

    // Own mode (generic ABI).
    lapse_status start(lapse_token& token, lapse_error* error);
    lapse_status end(uint64_t position, lapse_token token, lapse_error* error);
    lapse_status submit(lapse_work_fn fn, void* user, lapse_error* error);
    lapse_status sync(lapse_error* error);

    // Stamps into a caller's command buffer (extension).
    lapse_status cmd_start(VkCommandBuffer cb, lapse_token& token, lapse_error* error);
    lapse_status cmd_end(VkCommandBuffer cb, uint64_t position, lapse_token token, lapse_error* error);

    void abandon(uint64_t position) noexcept;
    // True when `position` is a live (open or closed) window of this stream.
    bool has_window(uint64_t position);

    // Resolves tokens[0..n) (all of this stream) as far as possible without
    // waiting; the others stay pending. Full answers: returns the first
    // error met (invalid token, device error), or LAPSE_OK. Compact
    // answers: every window that cannot be answered with two stamps is
    // left as it was, RESOLVE_FULL; returns LAPSE_OK.
    template <class Answers>
    lapse_status resolve_pass(const lapse_token* tokens, Answers answers, uint32_t n, const Placement& place,
                              ResolveProgress& progress, lapse_error* error);
    // Waits until `serial` is done or the timeout passes. Own mode.
    lapse_status wait_serial(uint64_t serial, uint64_t timeout_ns, lapse_error* error);

    // Own mode: whether the calling thread is inside a submit callback of
    // this stream (sync from there would wait for itself).
    bool in_own_callback() const noexcept;

private:
    struct Segment {
        enum class State : uint8_t { Free, Recording, InCallback, Closed, Submitted };
        VkCommandPool pool = VK_NULL_HANDLE;
        VkCommandBuffer cb = VK_NULL_HANDLE;
        uint64_t serial = 0;
        uint64_t wait_host = 0;  // host-work value this segment waits for before it runs (0: none)
        uint32_t stamps = 0;
        State state = State::Free;
        bool needs_reset = false;  // begun since its pool was last reset
        // The oldest and newest window positions with a stamp in it: its
        // end copies their queries' results (stamp_copies.cpp).
        uint64_t first_stamped = kNothingStamped;
        uint64_t last_stamped = 0;
    };
    static constexpr uint64_t kNothingStamped = ~uint64_t{0};
    struct HostWork {
        lapse_work_fn fn = nullptr;
        void* user = nullptr;
        uint64_t after_serial = 0;  // runs once this segment is done
        uint64_t value = 0;         // then signals host_sem_ with this
    };
    static constexpr uint32_t kHostQueue = 64;

    Segment& seg(uint64_t serial) noexcept { return segs_[serial % cfg_.segments]; }
    lapse_status check_usable(lapse_error* error, const char* operation) const noexcept;
    bool usable() const noexcept { return failure_ == LAPSE_OK && !ctx_.is_lost(); }
    // The segment being recorded when there is one and the stream is
    // usable (the common case of start/end); null otherwise.
    Segment* current_segment() noexcept { return current_ != 0 && usable() ? current_seg_ : nullptr; }
    lapse_status recording(std::unique_lock<StreamLock>& lock, Segment*& out, lapse_error* error);
    // Resets the pools of submitted segments the queue has finished
    // (serial <= completed_) and frees them, so that the start that takes
    // one next does not pay for the reset.
    void recycle_completed() noexcept;
    lapse_status reset_segment(Segment& g, lapse_error* error) noexcept;
    lapse_status close_current(lapse_error* error) noexcept;
    // Own mode: the results of every query the segments write are copied,
    // by the queue, into a host-visible buffer the readback reads directly
    // (stamp_copies.cpp). Creates that buffer; false leaves the stream
    // reading with vkGetQueryPoolResults.
    bool create_stamp_copies() noexcept;
    void destroy_stamp_copies() noexcept;
    // A stamp of the window at `position` went into `g`.
    static void note_stamp(Segment& g, uint64_t position) noexcept
    {
        if (position < g.first_stamped) g.first_stamped = position;
        if (position > g.last_stamped) g.last_stamped = position;
    }
    // Records, at the end of `g`, the copy of its windows' queries (after
    // every command before it) and makes the copy visible to the host.
    void record_stamp_copies(Segment& g) noexcept;
    // Where the stamps of run_[0..count) are: the copies (own mode), or
    // results_ after one vkGetQueryPoolResults (attach mode). `stride`:
    // 64-bit words per query (2 with availability); `r` the read's result.
    const uint64_t* read_stamps(uint32_t count, uint32_t& stride, VkResult& r);
    lapse_status flush(lapse_error* error) noexcept;
    // A stamp went into `g`: a segment the plugin records is submitted once
    // it holds 2 * batch_windows of them. Inline: start and end call it.
    lapse_status after_stamp(Segment& g, lapse_error* error) noexcept
    {
        if (++g.stamps >= 2 * cfg_.batch_windows && g.state == Segment::State::Recording) [[unlikely]]
            return submit_batch(error);
        return LAPSE_OK;
    }
    [[gnu::noinline]] lapse_status submit_batch(lapse_error* error) noexcept;
    lapse_status refresh_completed(lapse_error* error) noexcept;
    lapse_status fail_stream(lapse_status status, lapse_error* error) noexcept;
    lapse_status capacity_error(lapse_error* error, const char* operation) const noexcept;
    lapse_status token_error(lapse_token token, uint64_t position, const char* operation, lapse_error* error);
    void reclaim() noexcept;
    bool abandoned_done(const RingSlot& slot) noexcept;
    // Opens a window at the ring's head with its start stamp in `cb`, the
    // plugin's own segment (`own_segment`) or a submit callback's buffer.
    lapse_status record_start(VkCommandBuffer cb, uint64_t serial, bool own_segment, lapse_token& token,
                              lapse_error* error) noexcept;
    void reset_ahead(VkCommandBuffer cb, bool own_segment) noexcept;
    // Slots one command of reset_ahead resets at most.
    static constexpr uint32_t kResetAhead = 256;
    // Own mode: the serial of the submit callback recording `cb` now, or
    // the error naming `call` when none is. Attach mode: 0. Holds mutex_.
    lapse_status callback_serial(VkCommandBuffer cb, const char* call, uint64_t& serial, lapse_error* error);
    lapse_status submit_host(lapse_work_fn fn, void* user, lapse_error* error);
    // Waits until `semaphore` reaches `value` or the timeout passes:
    // LAPSE_NOT_READY on a timeout.
    lapse_status wait_value(VkSemaphore semaphore, uint64_t value, uint64_t timeout_ns, lapse_error* error);
    // resolve_pass's parts (stream_resolve.cpp).
    struct PassErrors;
    // What a pending token's window allows now; `slot` is set when it has one.
    enum class Readiness : uint8_t { readable, pending, no_window, wrong_stream, still_open, poisoned };
    Readiness readiness(const lapse_token& token, RingSlot*& slot, ResolveProgress& progress, bool& need_flush);
    // The failure a poisoned window resolves with, LAPSE_OK when it is not.
    lapse_status poison_of(const RingSlot& slot) const noexcept
    {
        return slot.failed || ctx_.is_lost() ? LAPSE_ERROR_DEVICE : failure_;
    }
    // readiness() answered: the slot when its queries can be read now, else
    // null, with what the answers say written (full: a failure; compact:
    // RESOLVE_FULL, the window untouched).
    RingSlot* check_readable(const lapse_token& token, FullAnswers answers, uint32_t i, ResolveProgress& progress,
                             PassErrors& errors, bool& need_flush);
    RingSlot* check_readable(const lapse_token& token, CompactAnswers answers, uint32_t i, ResolveProgress& progress,
                             PassErrors& errors, bool& need_flush);
    // Reads the queries of run_[0..count) with one call: VK_SUCCESS (stride
    // 1: every stamp there), VK_NOT_READY (stride 2: with availability), or
    // the failure.
    VkResult read_queries(uint32_t count, uint32_t& stride);
    void read_run(FullAnswers answers, uint32_t count, const Placement& place, ResolveProgress& progress,
                  PassErrors& errors);
    void read_run(CompactAnswers answers, uint32_t count, const Placement& place, ResolveProgress& progress,
                  PassErrors& errors);
    bool out_of_order(uint64_t start, uint64_t end) const noexcept;
    // `ticks` from start to end is really end before start: only on a
    // counter that cannot wrap in our lifetime can that be told.
    bool backwards(uint64_t ticks) const noexcept { return cfg_.valid_bits == 64 && ticks > (mask_ >> 1); }
    // Attach mode: how many passes may find a pair out of order before it
    // is not measured (a driver whose stamps are simply wrong).
    static constexpr uint16_t kMaxOutOfOrderReads = 10000;
    template <class Answers>
    void note_waits(const lapse_token* tokens, Answers answers, uint32_t n, ResolveProgress& progress);

    // Query results as resolve reads them: a value and its availability.
    static constexpr VkQueryResultFlags kReadFlags = VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT;
    // Most windows one vkGetQueryPoolResults call reads in attach mode (a
    // run of consecutive ring slots is read with one call; on lavapipe each
    // call blocks, so fewer, larger calls are what readback costs).
    static constexpr uint32_t kMaxReadRun = 4096;
    // The stream whose submit callback the calling thread is running, if any.
    static thread_local const Stream* callback_stream_;
    void host_worker() noexcept;
    void stop_worker() noexcept;

    DeviceContext& ctx_;
    StreamConfig cfg_;
    uint64_t mask_;
    StreamLock mutex_;
    std::condition_variable_any cv_;  // a segment left the callback / was submitted
    QueryRing ring_;
    // resolve_pass's scratch, sized at the first resolve and reused (it runs
    // under mutex_): the indices of a run of readable windows and their
    // query results (value and availability of two queries each).
    struct ReadItem {
        RingSlot* slot;
        uint32_t index;  // into the pass's tokens and durations
    };
    std::vector<ReadItem> run_;
    std::vector<uint64_t> results_;
    VkQueryPool pool_ = VK_NULL_HANDLE;

    // Own mode.
    // The copies of the query results: a value and its availability per
    // query, at the query's index; mapped for the stream's life.
    VkBuffer stamp_buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory stamp_memory_ = VK_NULL_HANDLE;
    const uint64_t* stamp_copies_ = nullptr;
    std::unique_ptr<Segment[]> segs_;
    VkSemaphore timeline_ = VK_NULL_HANDLE;
    uint64_t next_serial_ = 1;    // serial of the next segment to begin (0 means "none")
    uint64_t submit_cursor_ = 1;  // serial of the next segment to submit
    uint64_t completed_ = 0;      // last value read from the timeline semaphore
    uint64_t current_ = 0;        // serial of the segment being recorded by the plugin, 0 = none
    Segment* current_seg_ = nullptr;  // seg(current_) while current_ != 0 (spares start/end a division)
    uint32_t callbacks_recording_ = 0;  // segments in State::InCallback
    // A failed vkQueueSubmit/vkEndCommandBuffer poisons the stream: its
    // windows resolve FAILED with this status and new windows are refused.
    lapse_status failure_ = LAPSE_OK;
    char failure_message_[LAPSE_ERROR_MESSAGE_CAPACITY] = {};
    std::atomic<bool> broken_{false};  // failure_ != OK, readable without the lock

    // Host work (own mode, submit = "host"). host_value_ and
    // host_wait_next_ are guarded by mutex_; the queue by work_mutex_.
    VkSemaphore host_sem_ = VK_NULL_HANDLE;
    uint64_t host_value_ = 0;      // value of the last host work handed out
    uint64_t host_wait_next_ = 0;  // the next segment to begin waits for this value
    std::mutex work_mutex_;
    std::condition_variable work_cv_;
    HostWork work_[kHostQueue];
    uint64_t work_head_ = 0, work_tail_ = 0;
    bool stopping_ = false;
    std::thread worker_;
};

}  // namespace lapse::vulkan
