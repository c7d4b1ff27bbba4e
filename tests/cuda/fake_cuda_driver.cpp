// TEST DOUBLE — fake_cuda_driver: a fake libcuda for CI machines without a
// GPU. See fake_cuda_driver.h for the model and why it exists. Not a
// driver; never installed; loaded only through the plugin's `driver` path.
//
// It deliberately does not include cuda.h: cuda.h renames many entry points
// with macros (cuEventDestroy -> cuEventDestroy_v2), and the double must
// export the exact names a real libcuda exports, old and new spellings both.
#include "fake_cuda_driver.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
struct CUctx_st {
    int device;
};
struct CUevent_st;
typedef CUctx_st* CUcontext;
typedef CUstream_st* CUstream;
typedef CUevent_st* CUevent;

namespace {

enum : CUresult {
    SUCCESS = 0,
    INVALID_VALUE = 1,
    NOT_INITIALIZED = 3,
    NO_DEVICE = 100,
    INVALID_DEVICE = 101,
    INVALID_CONTEXT = 201,
    INVALID_HANDLE = 400,
    NOT_FOUND = 500,
    NOT_READY = 600,
    ILLEGAL_ADDRESS = 700,
    LAUNCH_FAILED = 719,
};

int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct Event;

typedef void (*HostFn)(void*);

struct Op {
    int64_t kernel_ns;  // > 0: a kernel; else a record of `event`, or a host function
    Event* event;
    HostFn fn;
    void* data;
};

struct Stream {
    CUctx_st* ctx;
    int64_t cursor = 0;
    bool held = false;
    std::vector<Op> queued;  // while held
};

struct Event {
    CUctx_st* ctx;
    bool recorded = false;
    bool stamped = false;
    int64_t stamp = 0;
};

constexpr int kMaxDevices = 4;

struct Driver {
    std::mutex mutex;
    std::condition_variable released;
    int device_count = 1;
    CUresult init_result = SUCCESS;
    bool initialised = false;
    bool hide_gpa = false;
    CUresult sticky = SUCCESS;
    std::map<std::string, std::pair<CUresult, int>> fail_next;
    CUctx_st primary[kMaxDevices] = {{0}, {1}, {2}, {3}};
    int retained[kMaxDevices] = {};
    std::set<Stream*> streams;
    std::set<Event*> events;
    fake_cuda_counters counters{};
};

Driver& driver()
{
    static Driver d;
    return d;
}

thread_local std::vector<CUcontext> t_context_stack;

CUcontext current() { return t_context_stack.empty() ? nullptr : t_context_stack.back(); }

// Common entry: injected failures first, then initialisation.
CUresult enter(Driver& d, const char* call, bool needs_init = true)
{
    if (d.sticky != SUCCESS) return d.sticky;
    auto it = d.fail_next.find(call);
    if (it != d.fail_next.end() && it->second.second > 0) {
        --it->second.second;
        return it->second.first;
    }
    if (needs_init && !d.initialised) return NOT_INITIALIZED;
    return SUCCESS;
}

bool complete(const Event& e, int64_t now) { return !e.recorded || (e.stamped && now >= e.stamp); }

void stamp(Stream& s, Event& e, int64_t now)
{
    e.stamp = std::max(now, s.cursor);
    e.stamped = true;
    s.cursor = e.stamp;
}

Stream* find_stream(Driver& d, CUstream h)
{
    auto* s = reinterpret_cast<Stream*>(h);
    return d.streams.count(s) != 0 ? s : nullptr;
}

Event* find_event(Driver& d, CUevent h)
{
    auto* e = reinterpret_cast<Event*>(h);
    return d.events.count(e) != 0 ? e : nullptr;
}

void sleep_until(int64_t t)
{
    int64_t n = now_ns();
    if (t > n) std::this_thread::sleep_for(std::chrono::nanoseconds(t - n));
}

// Runs what a held stream queued, in order, then lets it run freely. A host
// function runs here, unlocked, once the stream reached it; what is queued
// meanwhile waits behind it.
void drain(Driver& d, Stream& s, std::unique_lock<std::mutex>& lock)
{
    for (std::size_t i = 0; i < s.queued.size(); ++i) {
        Op op = s.queued[i];
        int64_t now = now_ns();
        if (op.kernel_ns > 0) {
            s.cursor = std::max(now, s.cursor) + op.kernel_ns;
        } else if (op.fn != nullptr) {
            int64_t until = s.cursor;
            lock.unlock();
            sleep_until(until);
            op.fn(op.data);
            lock.lock();
            s.cursor = std::max(s.cursor, now_ns());
        } else if (d.events.count(op.event) != 0 && op.event->recorded && !op.event->stamped) {
            stamp(s, *op.event, now);
        }
    }
    s.queued.clear();
    s.held = false;
    d.released.notify_all();
}

}  // namespace

// ------------------------------------------------------------- driver API

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
    *version = 13000;
    return SUCCESS;
}

FAKE_EXPORT CUresult cuGetErrorName(CUresult error, const char** out)
{
    static const std::map<int, const char*> names = {
        {SUCCESS, "CUDA_SUCCESS"},
        {INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
        {NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
        {NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
        {INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
        {INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
        {INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
        {NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
        {NOT_READY, "CUDA_ERROR_NOT_READY"},
        {ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
        {LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
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
    *out = error == ILLEGAL_ADDRESS ? "an illegal memory access was encountered (fake)"
           : error == LAUNCH_FAILED ? "unspecified launch failure (fake)"
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

FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuCtxPushCurrent")) return r;
    if (ctx == nullptr) return INVALID_CONTEXT;
    t_context_stack.push_back(ctx);
    return SUCCESS;
}

FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* ctx)
{
    if (t_context_stack.empty()) return INVALID_CONTEXT;
    if (ctx != nullptr) *ctx = t_context_stack.back();
    t_context_stack.pop_back();
    return SUCCESS;
}

FAKE_EXPORT CUresult cuStreamCreate(CUstream* out, unsigned int flags)
{
    (void)flags;
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuStreamCreate")) return r;
    if (current() == nullptr) return INVALID_CONTEXT;
    auto* s = new Stream{current(), 0, false, {}};
    d.streams.insert(s);
    ++d.counters.streams_live;
    *out = reinterpret_cast<CUstream>(s);
    return SUCCESS;
}

FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream h)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    Stream* s = find_stream(d, h);
    if (s == nullptr) return INVALID_HANDLE;
    d.streams.erase(s);
    --d.counters.streams_live;
    delete s;
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

FAKE_EXPORT CUresult cuStreamSynchronize(CUstream h)
{
    Driver& d = driver();
    std::unique_lock<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuStreamSynchronize")) return r;
    Stream* s = find_stream(d, h);
    if (s == nullptr) return INVALID_HANDLE;
    d.released.wait(lock, [&] { return d.streams.count(s) == 0 || !s->held; });
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
    auto* e = new Event{current(), false, false, 0};
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
    int64_t now = now_ns();
    if (!complete(*e, now)) ++d.counters.records_on_pending_event;
    ++d.counters.event_records;
    e->recorded = true;
    e->stamped = false;
    if (s->held) s->queued.push_back(Op{0, e, nullptr, nullptr});
    else stamp(*s, *e, now);
    return SUCCESS;
}

FAKE_EXPORT CUresult cuEventQuery(CUevent he)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuEventQuery")) return r;
    Event* e = find_event(d, he);
    if (e == nullptr) return INVALID_HANDLE;
    return complete(*e, now_ns()) ? SUCCESS : NOT_READY;
}

FAKE_EXPORT CUresult cuEventSynchronize(CUevent he)
{
    Driver& d = driver();
    std::unique_lock<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuEventSynchronize")) return r;
    ++d.counters.event_synchronizes;
    Event* e = find_event(d, he);
    if (e == nullptr) return INVALID_HANDLE;
    d.released.wait(lock, [&] { return d.events.count(e) == 0 || !e->recorded || e->stamped; });
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
    if (current() != a->ctx) {
        ++d.counters.calls_without_context;
        return INVALID_CONTEXT;
    }
    int64_t now = now_ns();
    if (!complete(*a, now) || !complete(*b, now)) return NOT_READY;
    // An f32 in milliseconds, like the real driver: the precision loss over
    // long distances is part of what the plugin must cope with.
    *ms = static_cast<float>(static_cast<double>(b->stamp - a->stamp) / 1e6);
    return SUCCESS;
}

FAKE_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent a, CUevent b) { return elapsed(ms, a, b); }
FAKE_EXPORT CUresult cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) { return elapsed(ms, a, b); }

// Modules and launches, for the GPU test program run over the double: it
// knows two kernels by name, the ones gpu_test.cpp carries as PTX.
struct CUmod_st;
struct CUfunc_st;
namespace {
int g_spin_tag = 1, g_fault_tag = 2, g_module_tag = 3;
}

FAKE_EXPORT CUresult cuModuleLoadData(CUmod_st** module, const void* image)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuModuleLoadData")) return r;
    if (image == nullptr || current() == nullptr) return INVALID_VALUE;
    *module = reinterpret_cast<CUmod_st*>(&g_module_tag);
    return SUCCESS;
}

FAKE_EXPORT CUresult cuModuleUnload(CUmod_st*) { return SUCCESS; }

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunc_st** fn, CUmod_st* module, const char* name)
{
    if (module != reinterpret_cast<CUmod_st*>(&g_module_tag)) return INVALID_HANDLE;
    if (std::strcmp(name, "lapse_spin") == 0) *fn = reinterpret_cast<CUfunc_st*>(&g_spin_tag);
    else if (std::strcmp(name, "lapse_fault") == 0) *fn = reinterpret_cast<CUfunc_st*>(&g_fault_tag);
    else return NOT_FOUND;
    return SUCCESS;
}

// lapse_spin(ns) is fake_cuda_launch_busy; lapse_fault() is a device fault:
// the launch succeeds and every later call fails, as a sticky error does.
FAKE_EXPORT CUresult cuLaunchKernel(CUfunc_st* fn, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, CUstream stream, void** params, void**)
{
    if (fn == reinterpret_cast<CUfunc_st*>(&g_spin_tag)) {
        if (params == nullptr) return INVALID_VALUE;
        return fake_cuda_launch_busy(stream, static_cast<int64_t>(*static_cast<uint64_t*>(params[0])));
    }
    if (fn == reinterpret_cast<CUfunc_st*>(&g_fault_tag)) {
        Driver& d = driver();
        std::lock_guard<std::mutex> lock(d.mutex);
        if (CUresult r = enter(d, "cuLaunchKernel")) return r;
        d.sticky = ILLEGAL_ADDRESS;
        return SUCCESS;
    }
    return INVALID_HANDLE;
}

// Host functions run in stream order: here, on the calling thread, once the
// stream has reached them (a held stream runs them when released).
FAKE_EXPORT CUresult cuLaunchHostFunc(CUstream hs, HostFn fn, void* data)
{
    Driver& d = driver();
    std::unique_lock<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuLaunchHostFunc")) return r;
    Stream* s = find_stream(d, hs);
    if (s == nullptr) return INVALID_HANDLE;
    if (fn == nullptr) return INVALID_VALUE;
    bool was_held = s->held;
    s->held = true;  // what comes after waits for the function
    s->queued.push_back(Op{0, nullptr, fn, data});
    if (!was_held) drain(d, *s, lock);
    return SUCCESS;
}

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags,
                                         int* status)
{
    (void)version;
    (void)flags;
    Driver& d = driver();
    static const std::map<std::string, void*> table = {
        {"cuInit", reinterpret_cast<void*>(&cuInit)},
        {"cuDeviceGetCount", reinterpret_cast<void*>(&cuDeviceGetCount)},
        {"cuDeviceGet", reinterpret_cast<void*>(&cuDeviceGet)},
        {"cuDeviceGetName", reinterpret_cast<void*>(&cuDeviceGetName)},
        {"cuDevicePrimaryCtxRetain", reinterpret_cast<void*>(&cuDevicePrimaryCtxRetain)},
        {"cuDevicePrimaryCtxRelease", reinterpret_cast<void*>(&cuDevicePrimaryCtxRelease_v2)},
        {"cuCtxGetCurrent", reinterpret_cast<void*>(&cuCtxGetCurrent)},
        {"cuCtxPushCurrent", reinterpret_cast<void*>(&cuCtxPushCurrent_v2)},
        {"cuCtxPopCurrent", reinterpret_cast<void*>(&cuCtxPopCurrent_v2)},
        {"cuStreamCreate", reinterpret_cast<void*>(&cuStreamCreate)},
        {"cuStreamDestroy", reinterpret_cast<void*>(&cuStreamDestroy_v2)},
        {"cuStreamGetCtx", reinterpret_cast<void*>(&cuStreamGetCtx)},
        {"cuStreamSynchronize", reinterpret_cast<void*>(&cuStreamSynchronize)},
        {"cuLaunchHostFunc", reinterpret_cast<void*>(&cuLaunchHostFunc)},
        {"cuEventCreate", reinterpret_cast<void*>(&cuEventCreate)},
        {"cuEventDestroy", reinterpret_cast<void*>(&cuEventDestroy_v2)},
        {"cuEventRecord", reinterpret_cast<void*>(&cuEventRecord)},
        {"cuEventQuery", reinterpret_cast<void*>(&cuEventQuery)},
        {"cuEventSynchronize", reinterpret_cast<void*>(&cuEventSynchronize)},
        {"cuEventElapsedTime", reinterpret_cast<void*>(&cuEventElapsedTime_v2)},
    };
    std::lock_guard<std::mutex> lock(d.mutex);
    auto it = d.hide_gpa ? table.end() : table.find(symbol);
    if (it == table.end()) {
        *pfn = nullptr;
        if (status != nullptr) *status = 1;  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
        return NOT_FOUND;
    }
    ++d.counters.get_proc_address_hits;
    *pfn = it->second;
    if (status != nullptr) *status = 0;
    return SUCCESS;
}

// ------------------------------------------------------------- controls

FAKE_EXPORT int fake_cuda_reset(void)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    int leaked = static_cast<int>(d.streams.size() + d.events.size());
    for (int r : d.retained) leaked += r;
    for (Stream* s : d.streams) delete s;
    for (Event* e : d.events) delete e;
    d.streams.clear();
    d.events.clear();
    d.device_count = 1;
    d.init_result = SUCCESS;
    d.initialised = false;
    d.hide_gpa = false;
    d.sticky = SUCCESS;
    d.fail_next.clear();
    std::fill(std::begin(d.retained), std::end(d.retained), 0);
    d.counters = fake_cuda_counters{};
    return leaked;
}

FAKE_EXPORT void fake_cuda_set_device_count(int count)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().device_count = std::min(count, kMaxDevices);
}

FAKE_EXPORT void fake_cuda_set_init_result(int result)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().init_result = result;
}

FAKE_EXPORT void fake_cuda_hide_get_proc_address(int hide)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().hide_gpa = hide != 0;
}

FAKE_EXPORT void fake_cuda_fail_next(const char* call, int result, int times)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().fail_next[call] = {result, times};
}

FAKE_EXPORT void fake_cuda_set_sticky_error(int result)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().sticky = result;
}

FAKE_EXPORT int fake_cuda_launch_busy(struct CUstream_st* h, int64_t ns)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    Stream* s = find_stream(d, h);
    if (s == nullptr || ns <= 0) return INVALID_HANDLE;
    if (current() != s->ctx) return INVALID_CONTEXT;  // a launch needs the stream's context current
    if (s->held) s->queued.push_back(Op{ns, nullptr, nullptr, nullptr});
    else s->cursor = std::max(now_ns(), s->cursor) + ns;
    return SUCCESS;
}

FAKE_EXPORT void fake_cuda_hold(struct CUstream_st* h)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (Stream* s = find_stream(d, h)) s->held = true;
}

FAKE_EXPORT void fake_cuda_release(struct CUstream_st* h)
{
    Driver& d = driver();
    std::unique_lock<std::mutex> lock(d.mutex);
    if (Stream* s = find_stream(d, h)) drain(d, *s, lock);
}

FAKE_EXPORT struct CUctx_st* fake_cuda_current_context(void) { return current(); }

FAKE_EXPORT void fake_cuda_get_counters(fake_cuda_counters* out)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    *out = driver().counters;
    out->primary_ctx_retained = driver().retained[0];
}
