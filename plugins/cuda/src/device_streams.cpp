// CudaDevice, its streams: the device's own and the host's registered ones
// (lapse.cuda.stream/1), sync, submit in both modes, and what refuses a
// stream in a graph capture. The rest of the class is in device.cpp.
#include "device.hpp"

#include "context_scope.hpp"

#include <lapse/sdk/error.hpp>

#include <cstdio>

namespace lapse::cuda {

CudaDevice::StreamEntry* CudaDevice::live_stream(lapse_stream stream) noexcept
{
    if (stream >= stream_capacity_) return nullptr;
    StreamEntry& e = streams_[stream];
    uint32_t kind = e.kind.load(std::memory_order_acquire);
    return kind == kStreamOwned || kind == kStreamRegistered ? &e : nullptr;
}

lapse_status CudaDevice::bad_stream(lapse_error* error, const char* call, lapse_stream stream) const noexcept
{
    return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                      "cuda: %s: stream %u is not a stream of this device (its streams are 0..%u, plus streams "
                      "registered through " LAPSE_CUDA_STREAM_EXTENSION ")",
                      call, stream, owned_streams_ - 1);
}

void CudaDevice::describe(lapse_device_info& info)
{
    info.stream_count = stream_high_water_.load(std::memory_order_acquire);
    info.capabilities = LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING |
                        LAPSE_CAP_SPLIT_THREADS | LAPSE_CAP_HOST_TIMELINE;
    std::snprintf(info.name, sizeof info.name, "%s", name_.c_str());
}

lapse_status CudaDevice::sync(lapse_stream stream, lapse_error* error)
{
    const DriverApi& api = *api_;
    ContextScope scope(api, context_);
    if (scope.result() != CUDA_SUCCESS) {
        // The context is unusable: the driver will not run our host
        // functions either, so they run here (exactly once).
        poison();
        host_calls_.run_orphans(stream);
        return cuda_fail(error, *driver_, "sync: cuCtxPushCurrent", scope.result());
    }
    auto one = [&](lapse_stream s, StreamEntry& e) -> lapse_status {
        CUresult r = api.stream_synchronize(e.handle.load(std::memory_order_acquire));
        if (r == CUDA_SUCCESS) return LAPSE_OK;
        // The stream's work failed (or the context did): windows open now
        // include that work, so they must not read as fast.
        poison();
        // And the driver will not run its host functions any more: they
        // run here, so each still runs exactly once.
        host_calls_.run_orphans(s);
        char call[64];
        std::snprintf(call, sizeof call, "sync of stream %u: cuStreamSynchronize", s);
        return cuda_fail(error, *driver_, call, r);
    };
    if (stream != LAPSE_ALL_STREAMS) {
        StreamEntry* e = live_stream(stream);
        if (e == nullptr) return bad_stream(error, "sync", stream);
        return one(stream, *e);
    }
    lapse_status first = LAPSE_OK;
    for (uint32_t s = 0, n = stream_high_water_.load(std::memory_order_acquire); s < n; ++s)
        if (StreamEntry* e = live_stream(s)) {
            lapse_status st = one(s, *e);
            if (first == LAPSE_OK) first = st;
        }
    return first;
}

lapse_status CudaDevice::submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error)
{
    StreamEntry* e = live_stream(stream);
    if (e == nullptr) return bad_stream(error, "submit", stream);
    // The host's launches go to the CUstream we hand it, under our context:
    // in stream order with the windows recorded on the same stream.
    ContextScope scope(*api_, context_);
    if (scope.result() != CUDA_SUCCESS) {
        poison();
        return cuda_fail(error, *driver_, "submit: cuCtxPushCurrent", scope.result());
    }
    CUstream native = e->handle.load(std::memory_order_acquire);
    if (!options_.submit_as_host_function) {
        fn(user, native);
        return LAPSE_OK;
    }
    // A host function launched into a capture becomes a node of the graph:
    // it would run when the graph is launched, maybe never, not now.
    if (const char* why = capture_refusal(native)) return refuse_capture(error, "submit", stream, why);
    // In stream order on the driver's thread: the stream waits while fn
    // runs, so windows around it time it. The call stays listed until it
    // has run (host_calls.hpp): the driver skips it after a context error.
    HostCalls::pin_plugin_in_memory();
    HostCalls::Call* call = host_calls_.add(fn, user, native, stream);
    CUresult r = api_->launch_host_func(native, &HostCalls::trampoline, call);
    if (r != CUDA_SUCCESS) {
        host_calls_.cancel(call);  // fn was not called: the caller still owns `user`
        poison();
        return cuda_fail(error, *driver_, "submit: cuLaunchHostFunc", r);
    }
    return LAPSE_OK;
}

const char* CudaDevice::capture_refusal(CUstream native) noexcept
{
    if (api_->stream_is_capturing == nullptr) return nullptr;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = api_->stream_is_capturing(native, &status);
    if (r == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_NONE) return nullptr;
    if (r == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return "it is capturing a CUDA graph (cuStreamIsCapturing): its events would be nodes of the graph, "
               "timed only if and when the graph is launched";
    if (r == CUDA_SUCCESS) return "its capture was invalidated (cuStreamIsCapturing); end the capture first";
    if (is_capture_error(r))
        return "another stream is capturing a CUDA graph and this stream would join it implicitly "
               "(cuStreamIsCapturing: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)";
    return nullptr;  // any other answer: the record that follows reports it
}

lapse_status CudaDevice::refuse_capture(lapse_error* error, const char* call, lapse_stream stream,
                                        const char* why) const noexcept
{
    return sdk::failf(error, LAPSE_ERROR_UNSUPPORTED,
                      "cuda: %s on stream %u refused: %s. Open windows around the graph's launch instead "
                      "(cuGraphLaunch on a stream that is not capturing)",
                      call, stream, why);
}

lapse_status CudaDevice::register_stream(CUstream stream, lapse_stream* out, lapse_error* error)
{
    if (out == nullptr) return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "cuda: register_stream: out is null");
    // The per-thread default stream is another stream on every thread, and
    // a window may open on one thread and close on another: refused.
    if (stream == CU_STREAM_PER_THREAD)
        return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT,
                         "cuda: register_stream: CU_STREAM_PER_THREAD names a different stream on each thread, "
                         "and a window may open and close on different threads; register the legacy default "
                         "stream (NULL or CU_STREAM_LEGACY) or a stream from cuStreamCreate");
    // NULL and CU_STREAM_LEGACY are the context's legacy default stream,
    // which is where a PyTorch host launches by default. Its documented
    // synchronisation (README.md) holds for windows on it. It is kept as
    // CU_STREAM_LEGACY, which means the legacy stream in every call
    // whatever the host was compiled with.
    const bool legacy = stream == nullptr || stream == CU_STREAM_LEGACY;
    if (legacy) stream = CU_STREAM_LEGACY;
    if (!legacy && api_->stream_get_ctx != nullptr) {
        // What can be checked: the context and, through it, the device. A
        // stale handle cannot be (cuStreamGetCtx on it is undefined): the
        // contract in lapse/cuda.h leaves that to the host.
        CUcontext owner = nullptr;
        CUresult r = api_->stream_get_ctx(stream, &owner);
        if (r != CUDA_SUCCESS)
            return cuda_fail(error, *driver_, "register_stream: cuStreamGetCtx", r, LAPSE_ERROR_INVALID_ARGUMENT);
        if (owner != context_) return foreign_stream(owner, error);
    }
    for (uint32_t i = owned_streams_; i < stream_capacity_; ++i) {
        StreamEntry& e = streams_[i];
        uint32_t expected = kStreamEmpty;
        if (!e.kind.compare_exchange_strong(expected, kStreamReserved, std::memory_order_acq_rel)) continue;
        e.handle.store(stream, std::memory_order_relaxed);
        e.open_windows.store(0, std::memory_order_relaxed);
        e.kind.store(kStreamRegistered, std::memory_order_release);
        uint32_t hw = stream_high_water_.load(std::memory_order_relaxed);
        while (hw < i + 1 && !stream_high_water_.compare_exchange_weak(hw, i + 1, std::memory_order_acq_rel)) {
        }
        *out = i;
        return LAPSE_OK;
    }
    return sdk::failf(error, LAPSE_ERROR_CAPACITY,
                      "cuda: register_stream: %lld streams are registered already (max_registered_streams); "
                      "unregister one or raise the limit",
                      static_cast<long long>(options_.max_registered_streams));
}

lapse_status CudaDevice::foreign_stream(CUcontext owner, lapse_error* error) noexcept
{
    // Which device the stream's context is on, to say which mistake it is.
    int device = -1;
    if (api_->ctx_get_device != nullptr && owner != nullptr) {
        ContextScope scope(*api_, owner);
        CUdevice d = 0;
        if (scope.result() == CUDA_SUCCESS && api_->ctx_get_device(&d) == CUDA_SUCCESS) device = static_cast<int>(d);
    }
    if (device >= 0 && device != static_cast<int>(cu_device_))
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "cuda: register_stream: the stream belongs to a context of CUDA device %d, not to %s; "
                          "open a lapse device on device %d for it",
                          device, name_.c_str(), device);
    return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                      "cuda: register_stream: the stream belongs to another CUDA context%s; it must belong to %s's "
                      "primary context (see the extension's `context`, or cudaSetDevice in the runtime API)",
                      device >= 0 ? " of the same device" : "", name_.c_str());
}

lapse_status CudaDevice::unregister_stream(lapse_stream stream, lapse_error* error)
{
    if (stream < owned_streams_)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "cuda: unregister_stream: stream %u is one of the device's own streams", stream);
    StreamEntry* e = live_stream(stream);
    if (e == nullptr) return bad_stream(error, "unregister_stream", stream);
    if (int64_t open = e->open_windows.load(std::memory_order_acquire); open != 0)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "cuda: unregister_stream: %lld window(s) opened on stream %u are still open; close or "
                          "abandon them first",
                          static_cast<long long>(open), stream);
    // Host functions of ours still pending there are waited for (or run
    // here if the stream failed): once unregistered, the host may destroy
    // the stream, and nothing of ours may be left on it.
    if (host_calls_.pending_on(stream)) {
        ContextScope scope(*api_, context_);
        CUresult r = scope.result() == CUDA_SUCCESS ? api_->stream_synchronize(e->handle.load()) : scope.result();
        if (r != CUDA_SUCCESS) {
            poison();
            host_calls_.run_orphans(stream);
        }
    }
    e->kind.store(kStreamReserved, std::memory_order_release);
    e->handle.store(nullptr, std::memory_order_relaxed);
    e->kind.store(kStreamEmpty, std::memory_order_release);
    return LAPSE_OK;
}

lapse_status CudaDevice::native_stream(lapse_stream stream, CUstream* out, lapse_error* error)
{
    if (out == nullptr) return sdk::fail(error, LAPSE_ERROR_INVALID_ARGUMENT, "cuda: native_stream: out is null");
    StreamEntry* e = live_stream(stream);
    if (e == nullptr) return bad_stream(error, "native_stream", stream);
    *out = e->handle.load(std::memory_order_acquire);
    return LAPSE_OK;
}

const void* CudaDevice::extension(std::string_view id)
{
    if (id == LAPSE_CUDA_STREAM_EXTENSION) return &stream_ext_;
    return nullptr;
}

}  // namespace lapse::cuda
