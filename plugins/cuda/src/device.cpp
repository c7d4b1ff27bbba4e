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

// How a refused token's window is named: the table's phrases, in the words
// this plugin's messages have always used where they differ.
const char* window_phrase(sdk::WindowCheck check) noexcept
{
    switch (check) {
    case sdk::WindowCheck::closed: return "is already closed (a window closes once)";
    case sdk::WindowCheck::busy: return "is in use by another thread";
    default: return sdk::describe(check);
    }
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
    o.max_windows = config.integer("max_windows", 65536, kFirstWindows, kMaxWindows);
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

        // The first records and their events now, so the first windows of a
        // run do not pay for creating events. A free list per owned stream.
        windows_ = std::make_unique<WindowTable>(owned_streams_, kFirstWindows,
                                                 static_cast<uint32_t>(options_.max_windows));
        CUresult made = CUDA_SUCCESS;
        windows_->for_each_payload([&](CudaWindow& w) {
            if (made == CUDA_SUCCESS) made = create_events(w);
        });
        check("cuEventCreate", made);

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
    const WindowTable::Census left = windows_ ? windows_->abandon_all() : WindowTable::Census{};
    if (left.open + left.closed > 0)
        host_.warn("cuda: closing " + name_ + " with " + std::to_string(left.open) + " window(s) still open and " +
                   std::to_string(left.closed) + " closed but never resolved; they are abandoned");
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
        if (windows_)
            windows_->for_each_payload([&](CudaWindow& w) {
                if (w.start != nullptr) api.event_destroy(w.start);
                if (w.end != nullptr) api.event_destroy(w.end);
                w.start = w.end = nullptr;
            });
        for (uint32_t i = 0; i < owned_streams_ && streams_; ++i)
            if (CUstream s = streams_[i].handle.exchange(nullptr)) api.stream_destroy(s);
    }
    if (context_retained_) api.primary_ctx_release(cu_device_);
    context_retained_ = false;
    context_ = nullptr;
}

// ---------------------------------------------------------------- the pool

CUresult CudaDevice::create_events(CudaWindow& w) noexcept
{
    // CU_EVENT_DEFAULT: timing enabled, and a host that waits on it
    // (cuEventSynchronize in resolve) spins or yields per the context's
    // scheduling flags rather than sleeping on an interrupt.
    CUresult r = api_->event_create(&w.start, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
        w.start = nullptr;
        return r;
    }
    r = api_->event_create(&w.end, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
        api_->event_destroy(w.start);
        w.start = w.end = nullptr;
    }
    return r;
}

bool CudaDevice::events_done(const CudaWindow& w) const noexcept
{
    // An error other than NOT_READY means the event will never complete
    // (a failed context): nothing is pending on it any more.
    return api_->event_query(w.start) != CUDA_ERROR_NOT_READY && api_->event_query(w.end) != CUDA_ERROR_NOT_READY;
}

lapse_status CudaDevice::open_record(lapse_stream stream, WindowTable::Id& id, lapse_error* error) noexcept
{
    id = windows_->try_open(stream, 0);
    if (id == 0) [[unlikely]] {
        // Not the steady state: the stream's free list is empty. Parked
        // records whose events completed come first (a few looks at most,
        // so a start never spends long here), then the other lists, then a
        // new chunk.
        constexpr uint32_t kLooks = 4;
        windows_->reclaim_parked([this](const CudaWindow& w) { return events_done(w); }, kLooks);
        id = windows_->open(stream, 0);
        if (id == 0) {
            const std::size_t records = windows_->capacity();
            if (records >= static_cast<uint64_t>(options_.max_windows))
                return sdk::failf(error, LAPSE_ERROR_CAPACITY,
                                  "cuda: profile_start: %lld windows are open or closed but unresolved (max_windows "
                                  "= %lld); resolve or abandon windows, or raise max_windows",
                                  static_cast<long long>(options_.max_windows),
                                  static_cast<long long>(options_.max_windows));
            return sdk::fail(error, LAPSE_ERROR_OUT_OF_MEMORY, "cuda: profile_start: out of memory growing the pool");
        }
    }
    CudaWindow& w = windows_->payload(id);
    if (w.start == nullptr) [[unlikely]] {
        // A record of a chunk the pool just grew: its events are made now,
        // once for its whole life.
        if (CUresult r = create_events(w); r != CUDA_SUCCESS) {
            windows_->abandon(id, stream);  // frees it: nothing of it is on the device
            id = 0;
            return cuda_fail(error, *driver_, "profile_start: cuEventCreate", r);
        }
    }
    return LAPSE_OK;
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

    if (r != CUDA_SUCCESS) {
        poison();
        return cuda_fail(error, *driver_, "profile_start: cuCtxPushCurrent", r);
    }
    WindowTable::Id id = 0;
    if (lapse_status st = open_record(stream, id, error); st < 0) return st;
    // Nobody has the id yet: the payload is the opener's to write.
    CudaWindow& w = windows_->payload(id);

    // Capture the error epoch before recording: an error from here on, up
    // to resolve, fails this window.
    w.error_epoch = error_epoch_.load(std::memory_order_acquire);
    w.anchor_seq = anchor_->current();
    w.failure = LAPSE_OK;
    r = api_->event_record(w.start, native);
    if (r != CUDA_SUCCESS) {
        if (!is_capture_error(r)) poison();
        // Nothing of this window is pending on the device; the record can
        // be reused at once.
        windows_->abandon(id, stream);
        return cuda_fail(error, *driver_, scope.result() != CUDA_SUCCESS ? "profile_start: cuCtxPushCurrent"
                                                                          : "profile_start: cuEventRecord",
                         r);
    }
    e->open_windows.fetch_add(1, std::memory_order_relaxed);
    token.id = id;
    token.opened_on = stream;
    token.reserved = 0;
    return LAPSE_OK;
}

lapse_status CudaDevice::refuse_token(const lapse_token& token, sdk::WindowCheck check, const char* call,
                                      lapse_error* error) const noexcept
{
    const auto id = static_cast<unsigned long long>(token.id);
    switch (check) {
    case sdk::WindowCheck::unknown:
        return sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN, "cuda: %s: token %llu was never issued here", call, id);
    case sdk::WindowCheck::wrong_tag:
        return sdk::failf(error, LAPSE_ERROR_WRONG_STREAM,
                          "cuda: %s: token %llu says stream %u, but its window was opened on stream %u%s", call, id,
                          token.opened_on, windows_->tag_of_live(token.id),
                          std::string_view(call) == "profile_end" ? "; the window stays open" : "");
    case sdk::WindowCheck::resolved:
    case sdk::WindowCheck::forgotten:
    case sdk::WindowCheck::expired:
    case sdk::WindowCheck::abandoned:
        return sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN,
                          "cuda: %s: token %llu (stream %u) names no live window: %s", call, id, token.opened_on,
                          window_phrase(check));
    default:
        return sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN, "cuda: %s: the window of token %llu %s", call, id,
                          window_phrase(check));
    }
}

lapse_status CudaDevice::profile_end(lapse_token token, uint32_t flags, lapse_error* error)
{
    // LAPSE_END_FLUSH is for batching backends; the driver holds no queue of
    // ours, so it changes nothing here. Unknown bits are a caller bug.
    if ((flags & ~uint32_t{LAPSE_END_FLUSH}) != 0)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "cuda: profile_end: unknown flags 0x%x", flags);
    WindowTable::Live was{};
    if (const sdk::WindowCheck c = windows_->claim(token.id, token.opened_on, WindowTable::mask(WindowTable::Live::open), was);
        c != sdk::WindowCheck::ok)
        return refuse_token(token, c, "profile_end", error);
    CudaWindow& w = windows_->payload(token.id);

    StreamEntry& e = streams_[token.opened_on];
    ContextScope scope(*api_, context_);
    CUresult r = scope.result();
    if (r == CUDA_SUCCESS) r = api_->event_record(w.end, e.handle.load(std::memory_order_acquire));
    if (r != CUDA_SUCCESS) {
        if (!is_capture_error(r)) poison();
        w.failure = LAPSE_ERROR_DEVICE;  // resolve answers FAILED; abandon also works
    }
    e.open_windows.fetch_sub(1, std::memory_order_relaxed);
    windows_->publish(token.id, WindowTable::Live::closed);
    if (r != CUDA_SUCCESS)
        return cuda_fail(error, *driver_, scope.result() != CUDA_SUCCESS ? "profile_end: cuCtxPushCurrent"
                                                                          : "profile_end: cuEventRecord",
                         r);
    return LAPSE_OK;
}

void CudaDevice::profile_abandon(lapse_token token) noexcept
{
    // Busy means another thread is closing or resolving this very token (a
    // host bug); wait a little for it, then leave the window to that thread.
    // Unknown tokens, and tokens whose stream is not their window's, are
    // ignored.
    constexpr unsigned kLive = WindowTable::mask(WindowTable::Live::open) | WindowTable::mask(WindowTable::Live::closed);
    for (int spins = 0; spins < 10000; ++spins) {
        WindowTable::Live was{};
        const sdk::WindowCheck c = windows_->claim(token.id, token.opened_on, kLive, was);
        if (c == sdk::WindowCheck::busy) {
            std::this_thread::yield();
            continue;
        }
        if (c != sdk::WindowCheck::ok) return;
        if (was == WindowTable::Live::open)
            streams_[token.opened_on].open_windows.fetch_sub(1, std::memory_order_relaxed);
        windows_->park(token.id);  // its events may still be pending on the device
        return;
    }
}

CudaDevice::Step CudaDevice::resolve_one(const lapse_token& token, lapse_duration& out, lapse_status& status,
                                         lapse_error* error)
{
    auto failed = [&](lapse_status why) { sdk::set_failed(out, why); };
    status = LAPSE_OK;
    WindowTable::Live was{};
    if (const sdk::WindowCheck c = windows_->claim(token.id, token.opened_on, WindowTable::mask(WindowTable::Live::closed), was);
        c != sdk::WindowCheck::ok) {
        status = refuse_token(token, c, "resolve", error);
        failed(status);
        return Step::Final;
    }
    const WindowTable::Id id = token.id;
    const CudaWindow& w = windows_->payload(id);

    // Poisoned: an error hit the device while this window was open. Its
    // events may never complete: the record is parked, and reused only once
    // they did (or never will).
    auto poisoned = [&] {
        return w.failure != LAPSE_OK || w.error_epoch != error_epoch_.load(std::memory_order_acquire);
    };
    if (poisoned()) {
        status = sdk::failf(error, LAPSE_ERROR_DEVICE,
                            "cuda: resolve: token %llu: a CUDA error hit the device while this window was open (it "
                            "was reported by the call that met it); the window reads FAILED, never as a duration",
                            static_cast<unsigned long long>(token.id));
        failed(LAPSE_ERROR_DEVICE);
        windows_->park(id);
        return Step::Final;
    }

    const DriverApi& api = *api_;
    CUresult r = api.event_query(w.end);
    if (r == CUDA_ERROR_NOT_READY) {
        windows_->publish(id, WindowTable::Live::closed);
        out.state = LAPSE_DURATION_PENDING;
        return Step::Pending;
    }
    float ms = 0.0f;
    const char* call = "resolve: cuEventQuery";
    if (r == CUDA_SUCCESS) {
        call = "resolve: cuEventElapsedTime";
        r = api.event_elapsed_time(&ms, w.start, w.end);
    }
    int64_t start_ns = 0;
    if (r == CUDA_SUCCESS) {
        call = "resolve: cuEventElapsedTime (host-clock anchor)";
        r = anchor_->place(w.anchor_seq, w.start, start_ns);
    }
    if (r != CUDA_SUCCESS) {
        // A capture error is this window's alone (its stream began a capture
        // while it was open); anything else may be the context's.
        if (!is_capture_error(r)) poison();
        status = cuda_fail(error, *driver_, call, r);
        failed(LAPSE_ERROR_DEVICE);
        windows_->park(id);
        return Step::Final;
    }
    // Checked again: an error reported by another call while we read the
    // events may belong to work inside this window.
    if (poisoned() || !(ms >= 0.0f)) {
        failed(LAPSE_ERROR_DEVICE);
        if (status == LAPSE_OK && !(ms >= 0.0f))
            status = sdk::failf(error, LAPSE_ERROR_DEVICE, "cuda: resolve: token %llu: negative elapsed time %g ms",
                                static_cast<unsigned long long>(token.id), static_cast<double>(ms));
        windows_->park(id);
        return Step::Final;
    }
    sdk::set_duration(out, LAPSE_DURATION_READY, LAPSE_OK, LAPSE_TIMING_DEVICE, LAPSE_CLOCK_HOST_MONOTONIC, start_ns,
                      start_ns + static_cast<int64_t>(std::llround(static_cast<double>(ms) * 1e6)));
    windows_->free_claimed(id, true);
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
            const lapse_token& t = tokens[wait_on];
            WindowTable::Live was{};
            if (windows_->claim(t.id, t.opened_on, WindowTable::mask(WindowTable::Live::closed), was) ==
                sdk::WindowCheck::ok) {
                CUresult r = api_->event_synchronize(windows_->payload(t.id).end);
                windows_->publish(t.id, WindowTable::Live::closed);
                // The next pass reports it as FAILED (a capture error only
                // for this window).
                if (r != CUDA_SUCCESS && !is_capture_error(r)) poison();
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
