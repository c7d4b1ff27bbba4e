#include "device.hpp"

#include "availability.hpp"
#include "context_scope.hpp"
#include "stream_extension.hpp"

#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>

#include <chrono>
#include <cstdio>
#include <cmath>
#include <thread>
#include <vector>

namespace lapse::cuda {

namespace {

constexpr int64_t kMaxOwnedStreams = 64;

// One slot of a stream's work is waited for in resolve by polling with
// these sleeps when the caller gave a finite timeout (cuEventSynchronize
// cannot time out).
constexpr auto kPollSleep = std::chrono::microseconds(50);

const char* state_name(SlotState s) noexcept
{
    switch (s) {
    case SlotState::Free: return "free";
    case SlotState::Open: return "still open";
    case SlotState::Busy: return "in use by another thread";
    case SlotState::Closed: return "already closed";
    case SlotState::Quarantined: return "abandoned";
    }
    return "?";
}

}  // namespace

// ---------------------------------------------------------------- open/close

std::unique_ptr<CudaDevice> CudaDevice::open(sdk::Host host, sdk::Config config)
{
    // Every key is read before anything can fail, so the host sees them all
    // as known even when the driver is missing.
    Options o;
    o.driver = config.string("driver", "libcuda.so.1");
    o.nvml = config.string("nvml", "libnvidia-ml.so.1");
    o.device = config.integer("device", 0, 0, 1 << 16);
    o.streams = config.integer("streams", 1, 1, kMaxOwnedStreams);
    o.max_windows = config.integer("max_windows", 65536, SlotTable::kChunkSlots,
                                   int64_t{SlotTable::kChunkSlots} * SlotTable::kMaxChunks);
    o.max_registered_streams = config.integer("max_registered_streams", 16, 0, 1024);
    o.anchor_period_ms = config.integer("anchor_period_ms", 1000, 10, 60000);
    std::string submit = config.string("submit", "launch");
    if (submit != "launch" && submit != "host")
        config.reject("submit", "must be \"launch\" (run on the caller's thread to launch CUDA work) or \"host\" "
                                "(run in stream order as a CUDA host function), got \"" + submit + "\"");
    o.submit_as_host_function = submit == "host";
    if (o.driver.empty()) config.reject("driver", "must name a library (default libcuda.so.1)");
    return std::unique_ptr<CudaDevice>(new CudaDevice(host, o));
}

CudaDevice::CudaDevice(sdk::Host host, const Options& options) : host_(host), options_(options)
{
    driver_ = Driver::load(options_.driver, options_.nvml);  // throws with the reason, classified
    api_ = &driver_->api();
    const DriverApi& api = *api_;

    auto check = [&](const char* call, CUresult r, lapse_status status = LAPSE_ERROR_DEVICE) {
        if (r == CUDA_SUCCESS) return;
        lapse_error e = sdk::make_error();
        cuda_fail(&e, *driver_, call, r, status);
        throw sdk::Error(status, e.message);
    };

    try {
        // Opening calls that fail are classified (availability.hpp): only
        // "no device here" is UNAVAILABLE; a driver that fails is an error.
        auto opening = [&](const char* call, CUresult r) {
            if (r != CUDA_SUCCESS)
                throw_open_failure(driver_->path(), options_.nvml, call, r, driver_->error_name(r),
                                   driver_->error_string(r));
        };
        int count = 0;
        opening("cuDeviceGetCount", api.device_get_count(&count));
        if (count <= 0) throw_no_device(driver_->path(), options_.nvml, "cuDeviceGetCount: 0 devices");
        if (options_.device >= count)
            throw sdk::Error(LAPSE_ERROR_UNAVAILABLE,
                             "cuda: device " + std::to_string(options_.device) + " was asked for (`device`), but the "
                                 "driver sees " + std::to_string(count) + " CUDA device(s), numbered 0.." +
                                 std::to_string(count - 1) + ". Set `device` to one of them (CUDA_VISIBLE_DEVICES "
                                 "renumbers them)");
        if (options_.submit_as_host_function && api.launch_host_func == nullptr)
            throw sdk::Error(LAPSE_ERROR_UNAVAILABLE, "cuda: submit = \"host\" needs cuLaunchHostFunc, which the driver '" +
                                                          driver_->path() + "' lacks (CUDA 10.0 or newer)");
        opening("cuDeviceGet", api.device_get(&cu_device_, static_cast<int>(options_.device)));
        char name[100] = {};
        if (api.device_get_name(name, sizeof name - 1, cu_device_) != CUDA_SUCCESS) name[0] = '\0';
        name_ = std::string(name[0] != '\0' ? name : "CUDA device") + " (CUDA device " +
                std::to_string(options_.device) + ")";

        // The primary context is the one the CUDA runtime uses: work the host
        // launches through the runtime on this device shares it with us.
        opening("cuDevicePrimaryCtxRetain", api.primary_ctx_retain(&context_, cu_device_));
        context_retained_ = true;

        ContextScope scope(api, context_);
        check("cuCtxPushCurrent", scope.result());

        owned_streams_ = static_cast<uint32_t>(options_.streams);
        stream_capacity_ = owned_streams_ + static_cast<uint32_t>(options_.max_registered_streams);
        streams_ = std::make_unique<StreamEntry[]>(stream_capacity_);
        for (uint32_t i = 0; i < owned_streams_; ++i) {
            CUstream s = nullptr;
            // Non-blocking: the host's work on the legacy default stream must
            // not serialise with (and so inflate) our windows.
            check("cuStreamCreate", api.stream_create(&s, CU_STREAM_NON_BLOCKING));
            streams_[i].handle.store(s, std::memory_order_relaxed);
            streams_[i].kind.store(kStreamOwned, std::memory_order_release);
        }
        stream_high_water_.store(owned_streams_, std::memory_order_release);

        anchor_ = std::make_unique<AnchorClock>(*driver_, context_, error_epoch_);

        // The first chunk of windows (and their events) now, so the first
        // windows of a run do not pay for creating events.
        lapse_error e = sdk::make_error();
        uint32_t first = 0;
        if (lapse_status s = grow(first, &e); s < 0) throw sdk::Error(s, e.message);
        release_slot(first, slots_.at(first), word_generation(slots_.at(first).word.load()));

        anchor_->start(options_.anchor_period_ms);
    } catch (...) {
        teardown();
        throw;
    }

    stream_ext_ = make_stream_extension();
    host_.info("cuda: opened " + name_ + " through '" + driver_->path() + "' (driver " +
               std::to_string(driver_->version()) + ", entry points via " +
               (driver_->used_get_proc_address() ? "cuGetProcAddress_v2" : "dlsym") + "), " +
               std::to_string(owned_streams_) + " stream(s)");
}

CudaDevice::~CudaDevice()
{
    // Count what the host left open: close abandons it, and says so.
    uint32_t open = 0, unresolved = 0;
    for (uint32_t i = 0, n = slots_.size(); i < n; ++i) {
        SlotState s = word_state(slots_.at(i).word.load(std::memory_order_acquire));
        open += s == SlotState::Open;
        unresolved += s == SlotState::Closed;
    }
    if (open + unresolved > 0)
        host_.warn("cuda: closing " + name_ + " with " + std::to_string(open) + " window(s) still open and " +
                   std::to_string(unresolved) + " closed but never resolved; they are abandoned");
    teardown();
}

void CudaDevice::teardown() noexcept
{
    if (api_ == nullptr) return;
    const DriverApi& api = *api_;
    if (context_ != nullptr) {
        ContextScope scope(api, context_);
        anchor_.reset();  // stops its thread first
        // Close runs the work still submitted: wait for our own streams. The
        // host's registered streams are the host's to wait for (destroying
        // an event still pending there is allowed: the driver frees it
        // later), except where host functions of ours are still pending:
        // those are drained, or run here where the driver will not.
        for (uint32_t i = 0; i < owned_streams_ && streams_; ++i)
            if (CUstream s = streams_[i].handle.load(std::memory_order_acquire)) api.stream_synchronize(s);
        for (uint32_t i = owned_streams_; i < stream_capacity_ && streams_; ++i)
            if (host_calls_.pending_on(i))
                if (CUstream s = streams_[i].handle.load(std::memory_order_acquire)) api.stream_synchronize(s);
        if (std::size_t orphans = host_calls_.run_orphans(LAPSE_ALL_STREAMS); orphans > 0)
            host_.warn("cuda: closing " + name_ + ": " + std::to_string(orphans) +
                       " host function(s) the driver will not run (its context failed) ran on the closing thread");
        for (uint32_t i = 0, n = slots_.size(); i < n; ++i) {
            Slot& slot = slots_.at(i);
            if (slot.start != nullptr) api.event_destroy(slot.start);
            if (slot.end != nullptr) api.event_destroy(slot.end);
            slot.start = slot.end = nullptr;
        }
        for (uint32_t i = 0; i < owned_streams_ && streams_; ++i)
            if (CUstream s = streams_[i].handle.exchange(nullptr)) api.stream_destroy(s);
    }
    if (context_retained_) api.primary_ctx_release(cu_device_);
    context_retained_ = false;
    context_ = nullptr;
}

// ---------------------------------------------------------------- the pool

lapse_status CudaDevice::take_slot(uint32_t& index, lapse_error* error) noexcept
{
    auto lookup = [this](uint32_t i) -> Slot& { return slots_.at(i); };
    if (free_.pop(index, lookup)) return LAPSE_OK;
    if (reclaim_quarantined(index)) return LAPSE_OK;
    return grow(index, error);
}

bool CudaDevice::reclaim_quarantined(uint32_t& index) noexcept
{
    // An abandoned window's events may still be pending on the device;
    // reuse its slot only once both have completed. A few tries at most, so
    // a start never spends long here; what is still pending goes back.
    auto lookup = [this](uint32_t i) -> Slot& { return slots_.at(i); };
    constexpr int kTries = 4;
    uint32_t pending[kTries];
    int n_pending = 0;
    bool found = false;
    for (int t = 0; t < kTries && !found; ++t) {
        uint32_t i = 0;
        if (!quarantine_.pop(i, lookup)) break;
        Slot& s = slots_.at(i);
        // An error other than NOT_READY means the event will never complete
        // (a failed context): nothing is pending on it any more.
        if (api_->event_query(s.start) == CUDA_ERROR_NOT_READY || api_->event_query(s.end) == CUDA_ERROR_NOT_READY) {
            pending[n_pending++] = i;
            continue;
        }
        uint64_t gen = word_generation(s.word.load(std::memory_order_acquire));
        s.word.store(slot_word(gen + 1, SlotState::Free), std::memory_order_release);
        if (gen + 1 >= kMaxGeneration) continue;  // retired: its ids are used up
        index = i;
        found = true;
    }
    for (int k = 0; k < n_pending; ++k) quarantine_.push(pending[k], slots_.at(pending[k]));
    return found;
}

lapse_status CudaDevice::grow(uint32_t& index, lapse_error* error) noexcept
{
    // Not the steady state: every slot is in use. Serialised so two threads
    // that find the pool empty together add one chunk, not two.
    std::lock_guard<std::mutex> lock(slots_.grow_mutex());
    auto lookup = [this](uint32_t i) -> Slot& { return slots_.at(i); };
    if (free_.pop(index, lookup)) return LAPSE_OK;

    if (slots_.size() + SlotTable::kChunkSlots > static_cast<uint64_t>(options_.max_windows))
        return sdk::failf(error, LAPSE_ERROR_CAPACITY,
                          "cuda: profile_start: %u windows are open or closed but unresolved (max_windows = %lld); "
                          "resolve or abandon windows, or raise max_windows",
                          slots_.size(), static_cast<long long>(options_.max_windows));
    try {
        ContextScope scope(*api_, context_);
        if (scope.result() != CUDA_SUCCESS)
            return cuda_fail(error, *driver_, "profile_start: cuCtxPushCurrent", scope.result());
        // Events first, so a failure leaves no half-made chunk behind.
        std::vector<CUevent> events(2 * SlotTable::kChunkSlots, nullptr);
        for (std::size_t k = 0; k < events.size(); ++k) {
            // CU_EVENT_DEFAULT: timing enabled, and a host that waits on it
            // (cuEventSynchronize in resolve) spins or yields per the
            // context's scheduling flags rather than sleeping on an interrupt.
            CUresult r = api_->event_create(&events[k], CU_EVENT_DEFAULT);
            if (r != CUDA_SUCCESS) {
                for (std::size_t j = 0; j < k; ++j) api_->event_destroy(events[j]);
                return cuda_fail(error, *driver_, "profile_start: cuEventCreate", r);
            }
        }
        uint32_t first = 0;
        if (!slots_.add_chunk(static_cast<uint32_t>(options_.max_windows), first)) {
            for (CUevent ev : events) api_->event_destroy(ev);
            return sdk::fail(error, LAPSE_ERROR_CAPACITY, "cuda: profile_start: the window pool is full");
        }
        for (uint32_t k = 0; k < SlotTable::kChunkSlots; ++k) {
            Slot& s = slots_.at(first + k);
            s.start = events[2 * k];
            s.end = events[2 * k + 1];
        }
        // Publish all but the first, which the caller takes.
        for (uint32_t k = SlotTable::kChunkSlots; k-- > 1;) free_.push(first + k, slots_.at(first + k));
        index = first;
        return LAPSE_OK;
    } catch (const std::bad_alloc&) {
        return sdk::fail(error, LAPSE_ERROR_OUT_OF_MEMORY, "cuda: profile_start: out of memory growing the pool");
    }
}

void CudaDevice::release_slot(uint32_t index, Slot& slot, uint64_t generation) noexcept
{
    // A new generation: every token of the window just finished is now stale.
    slot.word.store(slot_word(generation + 1, SlotState::Free), std::memory_order_release);
    if (generation + 1 < kMaxGeneration) free_.push(index, slot);  // else retired for good
}

void CudaDevice::quarantine_slot(uint32_t index, Slot& slot, uint64_t generation) noexcept
{
    slot.word.store(slot_word(generation, SlotState::Quarantined), std::memory_order_release);
    quarantine_.push(index, slot);
}

// ---------------------------------------------------------------- windows

lapse_status CudaDevice::profile_start(lapse_stream stream, lapse_token& token, lapse_error* error)
{
    StreamEntry* e = live_stream(stream);
    if (e == nullptr) return bad_stream(error, "profile_start", stream);

    ContextScope scope(*api_, context_);
    CUresult r = scope.result();
    CUstream native = e->handle.load(std::memory_order_acquire);
    // An event recorded in a capture cannot be queried: on the host's own
    // streams, where graphs are captured (PyTorch's CUDA graphs), refused
    // here with the reason. The device's own streams skip the check (one
    // driver call less on the hot path): a capture the host began on one
    // inside submit fails that window alone, at resolve.
    if (r == CUDA_SUCCESS && e->kind.load(std::memory_order_relaxed) == kStreamRegistered)
        if (const char* why = capture_refusal(native)) return refuse_capture(error, "profile_start", stream, why);

    uint32_t index = 0;
    if (lapse_status st = take_slot(index, error); st < 0) return st;
    Slot& slot = slots_.at(index);
    uint64_t gen = word_generation(slot.word.load(std::memory_order_acquire));

    // Capture the error epoch before recording: an error from here on, up
    // to resolve, fails this window.
    slot.error_epoch = error_epoch_.load(std::memory_order_acquire);
    slot.anchor_seq = anchor_->current();
    slot.stream = stream;
    slot.failure = LAPSE_OK;
    slot.end_recorded = false;
    if (r == CUDA_SUCCESS) r = api_->event_record(slot.start, native);
    if (r != CUDA_SUCCESS) {
        if (!is_capture_error(r)) poison();
        // Nothing of this window is pending on the device; the slot can be
        // reused at once.
        release_slot(index, slot, gen);
        return cuda_fail(error, *driver_, scope.result() != CUDA_SUCCESS ? "profile_start: cuCtxPushCurrent"
                                                                          : "profile_start: cuEventRecord",
                         r);
    }
    e->open_windows.fetch_add(1, std::memory_order_relaxed);
    slot.word.store(slot_word(gen, SlotState::Open), std::memory_order_release);
    token.id = make_id(gen, index);
    token.opened_on = stream;
    token.reserved = 0;
    return LAPSE_OK;
}

lapse_status CudaDevice::refuse_token(const lapse_token& token, uint64_t seen_word, uint64_t generation,
                                      const char* call, lapse_error* error) const noexcept
{
    if (word_generation(seen_word) != generation ||
        word_state(seen_word) == SlotState::Free || word_state(seen_word) == SlotState::Quarantined)
        return sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN,
                          "cuda: %s: token %llu (stream %u) names no live window: unknown, already resolved or "
                          "abandoned",
                          call, static_cast<unsigned long long>(token.id), token.opened_on);
    return sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN, "cuda: %s: the window of token %llu is %s", call,
                      static_cast<unsigned long long>(token.id), state_name(word_state(seen_word)));
}

lapse_status CudaDevice::profile_end(lapse_token token, uint32_t flags, lapse_error* error)
{
    // LAPSE_END_FLUSH is for batching backends; the driver holds no queue of
    // ours, so it changes nothing here. Unknown bits are a caller bug.
    if ((flags & ~uint32_t{LAPSE_END_FLUSH}) != 0)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "cuda: profile_end: unknown flags 0x%x", flags);
    uint64_t gen = 0;
    uint32_t index = 0;
    Slot* slot = split_id(token.id, gen, index) ? slots_.find(index) : nullptr;
    if (slot == nullptr)
        return sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN, "cuda: profile_end: token %llu was never issued here",
                          static_cast<unsigned long long>(token.id));
    uint64_t expected = slot_word(gen, SlotState::Open);
    if (!slot->word.compare_exchange_strong(expected, slot_word(gen, SlotState::Busy), std::memory_order_acquire,
                                            std::memory_order_acquire))
        return refuse_token(token, expected, gen, "profile_end", error);

    if (slot->stream != token.opened_on) {
        lapse_stream actual = slot->stream;
        slot->word.store(slot_word(gen, SlotState::Open), std::memory_order_release);
        return sdk::failf(error, LAPSE_ERROR_WRONG_STREAM,
                          "cuda: profile_end: token %llu says stream %u, but its window was opened on stream %u; "
                          "the window stays open",
                          static_cast<unsigned long long>(token.id), token.opened_on, actual);
    }

    StreamEntry& e = streams_[slot->stream];
    ContextScope scope(*api_, context_);
    CUresult r = scope.result();
    if (r == CUDA_SUCCESS) r = api_->event_record(slot->end, e.handle.load(std::memory_order_acquire));
    slot->end_recorded = r == CUDA_SUCCESS;
    if (r != CUDA_SUCCESS) {
        if (!is_capture_error(r)) poison();
        slot->failure = LAPSE_ERROR_DEVICE;  // resolve answers FAILED; abandon also works
    }
    e.open_windows.fetch_sub(1, std::memory_order_relaxed);
    slot->word.store(slot_word(gen, SlotState::Closed), std::memory_order_release);
    if (r != CUDA_SUCCESS)
        return cuda_fail(error, *driver_, scope.result() != CUDA_SUCCESS ? "profile_end: cuCtxPushCurrent"
                                                                          : "profile_end: cuEventRecord",
                         r);
    return LAPSE_OK;
}

void CudaDevice::profile_abandon(lapse_token token) noexcept
{
    uint64_t gen = 0;
    uint32_t index = 0;
    Slot* slot = split_id(token.id, gen, index) ? slots_.find(index) : nullptr;
    if (slot == nullptr) return;
    // Busy means another thread is closing or resolving this very token (a
    // host bug); wait a little for it, then leave the window to that thread.
    for (int spins = 0; spins < 10000; ++spins) {
        uint64_t w = slot->word.load(std::memory_order_acquire);
        if (word_generation(w) != gen) return;
        SlotState s = word_state(w);
        if (s == SlotState::Busy) {
            std::this_thread::yield();
            continue;
        }
        if (s != SlotState::Open && s != SlotState::Closed) return;
        if (!slot->word.compare_exchange_weak(w, slot_word(gen, SlotState::Busy), std::memory_order_acquire))
            continue;
        if (slot->stream != token.opened_on) {
            // Not this token's window: ignored, as unknown tokens are.
            slot->word.store(w, std::memory_order_release);
            return;
        }
        if (s == SlotState::Open) streams_[slot->stream].open_windows.fetch_sub(1, std::memory_order_relaxed);
        quarantine_slot(index, *slot, gen);
        return;
    }
}

CudaDevice::Step CudaDevice::resolve_one(const lapse_token& token, lapse_duration& out, lapse_status& status,
                                         lapse_error* error)
{
    auto failed = [&](lapse_status why) { sdk::set_failed(out, why); };
    status = LAPSE_OK;
    uint64_t gen = 0;
    uint32_t index = 0;
    Slot* slot = split_id(token.id, gen, index) ? slots_.find(index) : nullptr;
    if (slot == nullptr) {
        status = sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN, "cuda: resolve: token %llu was never issued here",
                            static_cast<unsigned long long>(token.id));
        failed(status);
        return Step::Final;
    }
    uint64_t expected = slot_word(gen, SlotState::Closed);
    if (!slot->word.compare_exchange_strong(expected, slot_word(gen, SlotState::Busy), std::memory_order_acquire,
                                            std::memory_order_acquire)) {
        status = refuse_token(token, expected, gen, "resolve", error);
        failed(status);
        return Step::Final;
    }
    if (slot->stream != token.opened_on) {
        lapse_stream actual = slot->stream;
        slot->word.store(slot_word(gen, SlotState::Closed), std::memory_order_release);
        status = sdk::failf(error, LAPSE_ERROR_WRONG_STREAM,
                            "cuda: resolve: token %llu says stream %u, but its window was opened on stream %u",
                            static_cast<unsigned long long>(token.id), token.opened_on, actual);
        failed(status);
        return Step::Final;
    }

    // Poisoned: an error hit the device while this window was open. Its
    // events may never complete; quarantine decides when the slot is safe.
    auto poisoned = [&] {
        return slot->failure != LAPSE_OK || slot->error_epoch != error_epoch_.load(std::memory_order_acquire);
    };
    if (poisoned()) {
        status = sdk::failf(error, LAPSE_ERROR_DEVICE,
                            "cuda: resolve: token %llu: a CUDA error hit the device while this window was open (it "
                            "was reported by the call that met it); the window reads FAILED, never as a duration",
                            static_cast<unsigned long long>(token.id));
        failed(LAPSE_ERROR_DEVICE);
        quarantine_slot(index, *slot, gen);
        return Step::Final;
    }

    const DriverApi& api = *api_;
    CUresult r = api.event_query(slot->end);
    if (r == CUDA_ERROR_NOT_READY) {
        slot->word.store(slot_word(gen, SlotState::Closed), std::memory_order_release);
        out.state = LAPSE_DURATION_PENDING;
        return Step::Pending;
    }
    float ms = 0.0f;
    const char* call = "resolve: cuEventQuery";
    if (r == CUDA_SUCCESS) {
        call = "resolve: cuEventElapsedTime";
        r = api.event_elapsed_time(&ms, slot->start, slot->end);
    }
    int64_t start_ns = 0;
    if (r == CUDA_SUCCESS) {
        call = "resolve: cuEventElapsedTime (host-clock anchor)";
        r = anchor_->place(slot->anchor_seq, slot->start, start_ns);
    }
    if (r != CUDA_SUCCESS) {
        // A capture error is this window's alone (its stream began a capture
        // while it was open); anything else may be the context's.
        if (!is_capture_error(r)) poison();
        status = cuda_fail(error, *driver_, call, r);
        failed(LAPSE_ERROR_DEVICE);
        quarantine_slot(index, *slot, gen);
        return Step::Final;
    }
    // Checked again: an error reported by another call while we read the
    // events may belong to work inside this window.
    if (poisoned() || !(ms >= 0.0f)) {
        failed(LAPSE_ERROR_DEVICE);
        if (status == LAPSE_OK && !(ms >= 0.0f))
            status = sdk::failf(error, LAPSE_ERROR_DEVICE, "cuda: resolve: token %llu: negative elapsed time %g ms",
                                static_cast<unsigned long long>(token.id), static_cast<double>(ms));
        quarantine_slot(index, *slot, gen);
        return Step::Final;
    }
    sdk::set_duration(out, LAPSE_DURATION_READY, LAPSE_OK, LAPSE_TIMING_DEVICE, LAPSE_CLOCK_HOST_MONOTONIC, start_ns,
                      start_ns + static_cast<int64_t>(std::llround(static_cast<double>(ms) * 1e6)));
    release_slot(index, *slot, gen);
    return Step::Final;
}

lapse_status CudaDevice::resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t timeout_ns,
                                 lapse_error* error)
{
    ContextScope scope(*api_, context_);
    if (scope.result() != CUDA_SUCCESS) {
        poison();
        return cuda_fail(error, *driver_, "resolve: cuCtxPushCurrent", scope.result());
    }
    const bool forever = timeout_ns == LAPSE_WAIT_FOREVER;
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::nanoseconds(forever ? 0 : static_cast<int64_t>(std::min<uint64_t>(
                                                                     timeout_ns, uint64_t{1} << 62)));
    for (uint32_t i = 0; i < count; ++i) {
        uint32_t size = out[i].struct_size;
        out[i] = lapse_duration{};
        out[i].struct_size = size;
        out[i].state = LAPSE_DURATION_PENDING;
    }

    lapse_status first_error = LAPSE_OK;
    lapse_error scratch = sdk::make_error();
    for (;;) {
        uint32_t pending = 0, wait_on = 0;
        for (uint32_t i = 0; i < count; ++i) {
            if (out[i].state != LAPSE_DURATION_PENDING) continue;
            lapse_status st = LAPSE_OK;
            // Only the first error's message reaches the caller.
            Step step = resolve_one(tokens[i], out[i], st, first_error == LAPSE_OK ? error : &scratch);
            if (st < 0 && first_error == LAPSE_OK) first_error = st;
            if (step == Step::Pending && pending++ == 0) wait_on = i;
        }
        if (pending == 0) return first_error != LAPSE_OK ? first_error : LAPSE_OK;
        if (timeout_ns == 0) break;
        if (forever) {
            // Block on the first pending window's end event, then poll all
            // again: its end completing says nothing about the others.
            uint64_t gen = 0;
            uint32_t index = 0;
            if (split_id(tokens[wait_on].id, gen, index))
                if (Slot* s = slots_.find(index)) {
                    uint64_t expected = slot_word(gen, SlotState::Closed);
                    if (s->word.compare_exchange_strong(expected, slot_word(gen, SlotState::Busy),
                                                        std::memory_order_acquire)) {
                        CUresult r = api_->event_synchronize(s->end);
                        s->word.store(slot_word(gen, SlotState::Closed), std::memory_order_release);
                        // The next pass reports it as FAILED (a capture
                        // error only for this window).
                        if (r != CUDA_SUCCESS && !is_capture_error(r)) poison();
                    }
                }
            continue;
        }
        if (std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::sleep_for(kPollSleep);
    }
    if (first_error != LAPSE_OK) return first_error;
    return LAPSE_NOT_READY;
}

}  // namespace lapse::cuda
