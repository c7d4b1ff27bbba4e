// TEST DOUBLE — fake_cuda_driver: a fake libcuda for CI machines without a
// GPU. See fake_cuda_driver.h for the model and why it exists. Not a
// driver; never installed; loaded only through the plugin's `driver` path.
// This file: initialisation, devices, contexts, streams and events.
//
// It deliberately does not include cuda.h: cuda.h renames many entry points
// with macros (cuEventDestroy -> cuEventDestroy_v2), and the double must
// export the exact names a real libcuda exports, old and new spellings both.
#include "fake_cuda_state.hpp"

#include <cstdio>

using namespace fake_cuda;
typedef CUctx_st* CUcontext;
typedef CUstream_st* CUstream;
typedef CUevent_st* CUevent;

FAKE_EXPORT CUresult cuInit(unsigned int flags)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (flags != 0) return INVALID_VALUE;
    if (CUresult r = enter(d, "cuInit", false)) return r;
    if (d.init_result != SUCCESS) return d.init_result;
    d.initialised = true;
    return SUCCESS;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int* version)
{
    if (version == nullptr) return INVALID_VALUE;
    std::lock_guard<std::mutex> lock(driver().mutex);
    *version = driver().version;
    return SUCCESS;
}

FAKE_EXPORT CUresult cuGetErrorName(CUresult error, const char** out)
{
    static const std::map<int, const char*> names = {
        {SUCCESS, "CUDA_SUCCESS"},
        {INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
        {NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
        {STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY"},
        {DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
        {NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
        {INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
        {INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
        {INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
        {NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
        {NOT_READY, "CUDA_ERROR_NOT_READY"},
        {ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
        {LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
        {SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
        {COMPAT_NOT_SUPPORTED_ON_DEVICE, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
        {STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
        {STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},
        {CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT"},
    };
    if (out == nullptr) return INVALID_VALUE;
    auto it = names.find(error);
    if (it == names.end()) {
        *out = nullptr;
        return INVALID_VALUE;
    }
    *out = it->second;
    return SUCCESS;
}

FAKE_EXPORT CUresult cuGetErrorString(CUresult error, const char** out)
{
    if (out == nullptr) return INVALID_VALUE;
    *out = error == ILLEGAL_ADDRESS          ? "an illegal memory access was encountered (fake)"
           : error == LAUNCH_FAILED          ? "unspecified launch failure (fake)"
           : error == SYSTEM_DRIVER_MISMATCH ? "system has unsupported display driver / cuda driver combination (fake)"
                                             : "fake driver error";
    return SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int* count)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuDeviceGetCount")) return r;
    *count = d.device_count;
    return SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuDeviceGet")) return r;
    if (ordinal < 0 || ordinal >= d.device_count) return INVALID_DEVICE;
    *device = ordinal;
    return SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice device)
{
    std::snprintf(name, static_cast<size_t>(len), "Fake CUDA Device %d (test double)", device);
    return SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuDevicePrimaryCtxRetain")) return r;
    if (device < 0 || device >= d.device_count) return INVALID_DEVICE;
    ++d.retained[device];
    *ctx = &d.primary[device];
    return SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (device < 0 || device >= kMaxDevices || d.retained[device] == 0) return INVALID_DEVICE;
    --d.retained[device];
    return SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx)
{
    *ctx = current();
    return SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice* device)
{
    if (device == nullptr) return INVALID_VALUE;
    if (current() == nullptr) return INVALID_CONTEXT;
    *device = device_of(current());
    return SUCCESS;
}

FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuCtxPushCurrent")) return r;
    if (ctx == nullptr) return INVALID_CONTEXT;
    context_stack().push_back(ctx);
    return SUCCESS;
}

FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* ctx)
{
    if (context_stack().empty()) return INVALID_CONTEXT;
    if (ctx != nullptr) *ctx = context_stack().back();
    context_stack().pop_back();
    return SUCCESS;
}

FAKE_EXPORT CUresult cuStreamCreate(CUstream* out, unsigned int flags)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuStreamCreate")) return r;
    if (current() == nullptr) return INVALID_CONTEXT;
    if ((flags & ~kNonBlocking) != 0) return INVALID_VALUE;
    auto* s = new Stream();
    s->ctx = current();
    s->flags = flags;
    d.streams.insert(s);
    ++d.counters.streams_live;
    *out = reinterpret_cast<CUstream>(s);
    return SUCCESS;
}

FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream h)
{
    Driver& d = driver();
    std::unique_lock<std::mutex> lock(d.mutex);
    if (h == nullptr || h == kLegacyHandle || h == kPerThreadHandle) return INVALID_HANDLE;
    Stream* s = find_stream(d, h);
    if (s == nullptr) return INVALID_HANDLE;
    // The real driver frees a stream once its work is done; a host function
    // already running is waited for, what is still held is dropped.
    d.changed.wait(lock, [&] { return !s->host_running; });
    for (const Op& op : s->queued) d.counters.host_functions_dropped += op.kind == Op::HostFunction;
    d.streams.erase(s);
    --d.counters.streams_live;
    delete s;
    d.changed.notify_all();
    return SUCCESS;
}

FAKE_EXPORT CUresult cuStreamGetCtx(CUstream h, CUcontext* ctx)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuStreamGetCtx")) return r;
    Stream* s = find_stream(d, h);
    if (s == nullptr) return INVALID_HANDLE;
    *ctx = s->ctx;
    return SUCCESS;
}

FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream h, int* status)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuStreamIsCapturing")) return r;
    Stream* s = find_stream(d, h);
    if (s == nullptr || status == nullptr) return INVALID_HANDLE;
    *status = s->capturing ? 1 : 0;  // CU_STREAM_CAPTURE_STATUS_ACTIVE : _NONE
    return SUCCESS;
}

FAKE_EXPORT CUresult cuStreamSynchronize(CUstream h)
{
    Driver& d = driver();
    std::unique_lock<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuStreamSynchronize")) return r;
    Stream* s = find_stream(d, h);
    if (s == nullptr) return INVALID_HANDLE;
    d.changed.wait(lock, [&] { return d.streams.count(s) == 0 || s->idle() || d.sticky != SUCCESS; });
    if (d.sticky != SUCCESS) return d.sticky;
    if (d.streams.count(s) == 0) return INVALID_HANDLE;
    int64_t until = s->cursor;
    lock.unlock();
    sleep_until(until);
    return SUCCESS;
}

FAKE_EXPORT CUresult cuEventCreate(CUevent* out, unsigned int flags)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuEventCreate")) return r;
    if (flags != 0) return INVALID_VALUE;  // the plugin must ask for CU_EVENT_DEFAULT (timing on)
    if (current() == nullptr) {
        ++d.counters.calls_without_context;
        return INVALID_CONTEXT;
    }
    auto* e = new Event{current()};
    d.events.insert(e);
    ++d.counters.events_created;
    ++d.counters.events_live;
    *out = reinterpret_cast<CUevent>(e);
    return SUCCESS;
}

FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent h)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    Event* e = find_event(d, h);
    if (e == nullptr) return INVALID_HANDLE;
    d.events.erase(e);
    --d.counters.events_live;
    delete e;
    return SUCCESS;
}

FAKE_EXPORT CUresult cuEventRecord(CUevent he, CUstream hs)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuEventRecord")) return r;
    Event* e = find_event(d, he);
    Stream* s = find_stream(d, hs);
    if (e == nullptr || s == nullptr || e->ctx != s->ctx) return INVALID_HANDLE;
    if (current() != e->ctx) {
        ++d.counters.calls_without_context;
        return INVALID_CONTEXT;
    }
    if (!complete(*e, host_ns())) ++d.counters.records_on_pending_event;
    ++d.counters.event_records;
    e->recorded = true;
    e->stamped = false;
    e->captured = s->capturing;  // a node of the graph being captured, not work
    if (!s->capturing) enqueue(d, *s, Op{Op::Record, 0, e});
    return SUCCESS;
}

FAKE_EXPORT CUresult cuEventQuery(CUevent he)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuEventQuery")) return r;
    Event* e = find_event(d, he);
    if (e == nullptr) return INVALID_HANDLE;
    if (e->captured) return CAPTURED_EVENT;
    return complete(*e, host_ns()) ? SUCCESS : NOT_READY;
}

FAKE_EXPORT CUresult cuEventSynchronize(CUevent he)
{
    Driver& d = driver();
    std::unique_lock<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuEventSynchronize")) return r;
    ++d.counters.event_synchronizes;
    Event* e = find_event(d, he);
    if (e == nullptr) return INVALID_HANDLE;
    if (e->captured) return CAPTURED_EVENT;
    if (d.stall_event_sync) {
        ++d.counters.event_syncs_stalled;
        d.changed.wait(lock, [&] { return !d.stall_event_sync; });
        --d.counters.event_syncs_stalled;
    }
    d.changed.wait(lock, [&] {
        return d.events.count(e) == 0 || !e->recorded || e->stamped || d.sticky != SUCCESS;
    });
    if (d.sticky != SUCCESS) return d.sticky;
    if (d.events.count(e) == 0) return INVALID_HANDLE;
    int64_t until = e->recorded ? e->stamp : 0;
    lock.unlock();
    sleep_until(until);
    return SUCCESS;
}

static CUresult elapsed(float* ms, CUevent ha, CUevent hb)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuEventElapsedTime")) return r;
    Event* a = find_event(d, ha);
    Event* b = find_event(d, hb);
    if (a == nullptr || b == nullptr || !a->recorded || !b->recorded) return INVALID_HANDLE;
    if (a->captured || b->captured) return CAPTURED_EVENT;
    if (current() != a->ctx) {
        ++d.counters.calls_without_context;
        return INVALID_CONTEXT;
    }
    int64_t now = host_ns();
    if (!complete(*a, now) || !complete(*b, now)) return NOT_READY;
    // The device's own clock, as an f32 in milliseconds like the real
    // driver: drift, resolution and the f32's precision loss over long
    // distances are all part of what the plugin must cope with.
    *ms = static_cast<float>(static_cast<double>(device_ns(d, b->stamp) - device_ns(d, a->stamp)) / 1e6);
    return SUCCESS;
}

FAKE_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent a, CUevent b) { return elapsed(ms, a, b); }
FAKE_EXPORT CUresult cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) { return elapsed(ms, a, b); }
