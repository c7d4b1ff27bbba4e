// TEST DOUBLE — fake_cuda_driver: launches (the two kernels the GPU test
// program knows by name, host functions) and cuGetProcAddress_v2.
#include "fake_cuda_state.hpp"

#include <cstring>

using namespace fake_cuda;
typedef CUctx_st* CUcontext;
typedef CUstream_st* CUstream;
typedef CUevent_st* CUevent;

// The entry points of fake_cuda_driver.cpp, for the proc-address table.
extern "C" {
CUresult cuInit(unsigned int);
CUresult cuDeviceGetCount(int*);
CUresult cuDeviceGet(CUdevice*, int);
CUresult cuDeviceGetName(char*, int, CUdevice);
CUresult cuDevicePrimaryCtxRetain(CUcontext*, CUdevice);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice);
CUresult cuCtxGetCurrent(CUcontext*);
CUresult cuCtxGetDevice(CUdevice*);
CUresult cuCtxPushCurrent_v2(CUcontext);
CUresult cuCtxPopCurrent_v2(CUcontext*);
CUresult cuStreamCreate(CUstream*, unsigned int);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuStreamGetCtx(CUstream, CUcontext*);
CUresult cuStreamIsCapturing(CUstream, int*);
CUresult cuStreamSynchronize(CUstream);
CUresult cuEventCreate(CUevent*, unsigned int);
CUresult cuEventDestroy_v2(CUevent);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventQuery(CUevent);
CUresult cuEventSynchronize(CUevent);
CUresult cuEventElapsedTime(float*, CUevent, CUevent);
CUresult cuEventElapsedTime_v2(float*, CUevent, CUevent);
CUresult cuLaunchHostFunc(CUstream, HostFn, void*);
}

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

FAKE_EXPORT int fake_cuda_launch_busy(struct CUstream_st* h, int64_t ns)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (d.sticky != SUCCESS) return d.sticky;
    Stream* s = find_stream(d, h);
    if (s == nullptr || ns <= 0) return INVALID_HANDLE;
    if (current() != s->ctx) return INVALID_CONTEXT;  // a launch needs the stream's context current
    if (!s->capturing) enqueue(d, *s, Op{Op::Kernel, ns});
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
        d.changed.notify_all();
        return SUCCESS;
    }
    return INVALID_HANDLE;
}

// Host functions run in stream order on the driver's thread (see
// fake_cuda_model.cpp), never here on the caller's.
FAKE_EXPORT CUresult cuLaunchHostFunc(CUstream hs, HostFn fn, void* data)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (CUresult r = enter(d, "cuLaunchHostFunc")) return r;
    Stream* s = find_stream(d, hs);
    if (s == nullptr) return INVALID_HANDLE;
    if (fn == nullptr) return INVALID_VALUE;
    if (s->capturing) return SUCCESS;  // a node of the graph: runs when the graph is launched, not now
    enqueue(d, *s, Op{Op::HostFunction, 0, nullptr, fn, data});
    return SUCCESS;
}

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags,
                                         int* status)
{
    (void)flags;
    Driver& d = driver();
    // name -> (entry point, the version that introduced this flavour)
    static const std::map<std::string, std::pair<void*, int>> table = {
        {"cuInit", {reinterpret_cast<void*>(&cuInit), 2000}},
        {"cuDeviceGetCount", {reinterpret_cast<void*>(&cuDeviceGetCount), 2000}},
        {"cuDeviceGet", {reinterpret_cast<void*>(&cuDeviceGet), 2000}},
        {"cuDeviceGetName", {reinterpret_cast<void*>(&cuDeviceGetName), 2000}},
        {"cuDevicePrimaryCtxRetain", {reinterpret_cast<void*>(&cuDevicePrimaryCtxRetain), 7000}},
        {"cuDevicePrimaryCtxRelease", {reinterpret_cast<void*>(&cuDevicePrimaryCtxRelease_v2), 11000}},
        {"cuCtxGetCurrent", {reinterpret_cast<void*>(&cuCtxGetCurrent), 4000}},
        {"cuCtxGetDevice", {reinterpret_cast<void*>(&cuCtxGetDevice), 2000}},
        {"cuCtxPushCurrent", {reinterpret_cast<void*>(&cuCtxPushCurrent_v2), 4000}},
        {"cuCtxPopCurrent", {reinterpret_cast<void*>(&cuCtxPopCurrent_v2), 4000}},
        {"cuStreamCreate", {reinterpret_cast<void*>(&cuStreamCreate), 2000}},
        {"cuStreamDestroy", {reinterpret_cast<void*>(&cuStreamDestroy_v2), 4000}},
        {"cuStreamGetCtx", {reinterpret_cast<void*>(&cuStreamGetCtx), 9020}},
        {"cuStreamIsCapturing", {reinterpret_cast<void*>(&cuStreamIsCapturing), 10000}},
        {"cuStreamSynchronize", {reinterpret_cast<void*>(&cuStreamSynchronize), 2000}},
        {"cuLaunchHostFunc", {reinterpret_cast<void*>(&cuLaunchHostFunc), 10000}},
        {"cuEventCreate", {reinterpret_cast<void*>(&cuEventCreate), 2000}},
        {"cuEventDestroy", {reinterpret_cast<void*>(&cuEventDestroy_v2), 4000}},
        {"cuEventRecord", {reinterpret_cast<void*>(&cuEventRecord), 2000}},
        {"cuEventQuery", {reinterpret_cast<void*>(&cuEventQuery), 2000}},
        {"cuEventSynchronize", {reinterpret_cast<void*>(&cuEventSynchronize), 2000}},
        {"cuEventElapsedTime", {reinterpret_cast<void*>(&cuEventElapsedTime_v2), 12080}},
    };
    std::lock_guard<std::mutex> lock(d.mutex);
    if (pfn == nullptr || symbol == nullptr) return INVALID_VALUE;
    *pfn = nullptr;
    // Documented: a version newer than the driver's is invalid.
    if (version > d.version) {
        ++d.counters.get_proc_address_too_new;
        return INVALID_VALUE;
    }
    auto it = d.hide_gpa ? table.end() : table.find(symbol);
    if (it == table.end()) {
        if (status != nullptr) *status = 1;  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
        return NOT_FOUND;
    }
    void* entry = it->second.first;
    if (version < it->second.second) {
        // An older flavour of the call: cuEventElapsedTime before 12.8.
        if (std::strcmp(symbol, "cuEventElapsedTime") != 0) {
            if (status != nullptr) *status = 2;  // CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
            return NOT_FOUND;
        }
        entry = reinterpret_cast<void*>(&cuEventElapsedTime);
    }
    ++d.counters.get_proc_address_hits;
    *pfn = entry;
    if (status != nullptr) *status = 0;
    return SUCCESS;
}
