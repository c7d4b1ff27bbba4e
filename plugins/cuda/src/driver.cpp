#include "driver.hpp"

#include "availability.hpp"

#include <lapse/sdk/error.hpp>

#include <dlfcn.h>

#include <cstdio>
#include <string>

namespace lapse::cuda {

namespace {

constexpr const char* kDefaultDriver = "libcuda.so.1";

[[noreturn]] void unavailable(const std::string& message)
{
    throw sdk::Error(LAPSE_ERROR_UNAVAILABLE, "cuda: " + message);
}

// Names for the codes we must be able to report even when the driver
// cannot (the stub answers cuGetErrorName with 34 too).
const char* builtin_error_name(CUresult r) noexcept
{
    switch (r) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_DEVICE_UNAVAILABLE: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_OPERATING_SYSTEM: return "CUDA_ERROR_OPERATING_SYSTEM";
    case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_NOT_READY: return "CUDA_ERROR_NOT_READY";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case CUDA_ERROR_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
    case CUDA_ERROR_SYSTEM_NOT_READY: return "CUDA_ERROR_SYSTEM_NOT_READY";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case CUDA_ERROR_NOT_PERMITTED: return "CUDA_ERROR_NOT_PERMITTED";
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: return "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT";
    case CUDA_ERROR_CAPTURED_EVENT: return "CUDA_ERROR_CAPTURED_EVENT";
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD: return "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD";
    case CUDA_ERROR_UNKNOWN: return "CUDA_ERROR_UNKNOWN";
    default: return "CUDA_ERROR_(unnamed)";
    }
}

// How one entry point is found: its base name and the API versions whose
// PFN_ typedef we can call it through (for cuGetProcAddress_v2, newest
// first, 0 = none), then the exact exported names to try with dlsym,
// newest first. A version newer than the driver is not asked for: the
// driver answers CUDA_ERROR_INVALID_VALUE to it.
struct Symbol {
    const char* base;
    int versions[2];
    const char* exported[2];
    bool required;
};

}  // namespace

Driver::~Driver()
{
    // The library handle is deliberately never dlclose'd: libcuda starts
    // threads and registers exit handlers, and unloading it under them
    // crashes the process later. Keeping a reference is what every CUDA
    // runtime does; the test double is unaffected.
}

std::unique_ptr<Driver> Driver::load(const std::string& path_in, const std::string& nvml_path)
{
    const std::string path = path_in.empty() ? kDefaultDriver : path_in;
    std::unique_ptr<Driver> d(new Driver());
    d->path_ = path;

    dlerror();
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char* why = dlerror();
        std::string reason = why != nullptr ? why : "unknown dlopen error";
        if (path == kDefaultDriver)
            unavailable("no CUDA driver: '" + path + "' could not be loaded (" + reason +
                        "). Install the NVIDIA driver on this machine, or set `driver` to the full path of "
                        "its libcuda.so.1");
        unavailable("the CUDA driver '" + path + "' named by `driver` could not be loaded (" + reason +
                    "). Check the path, or remove `driver` to use the system's libcuda.so.1");
    }
    d->library_ = lib;

    auto raw = [lib](const char* name) { return dlsym(lib, name); };
    DriverApi& a = d->api_;
    a.init = reinterpret_cast<PFN_cuInit_v2000>(raw("cuInit"));
    a.get_error_name = reinterpret_cast<PFN_cuGetErrorName_v6000>(raw("cuGetErrorName"));
    a.get_error_string = reinterpret_cast<PFN_cuGetErrorString_v6000>(raw("cuGetErrorString"));
    if (a.init == nullptr)
        unavailable("'" + path + "' is not a CUDA driver: it does not export cuInit. Set `driver` to the NVIDIA "
                    "driver's libcuda.so.1, or remove it to use the system's");

    // The stub cannot name its own code; every other answer is classified
    // in availability.cpp: "no CUDA here" or "a driver that failed".
    if (CUresult r = a.init(0); r != CUDA_SUCCESS)
        throw_open_failure(path, nvml_path, "cuInit", r, d->error_name(r), d->error_string(r));

    a.driver_get_version = reinterpret_cast<PFN_cuDriverGetVersion_v2020>(raw("cuDriverGetVersion"));
    if (a.driver_get_version == nullptr || a.driver_get_version(&d->version_) != CUDA_SUCCESS) d->version_ = 0;

    // cuGetProcAddress_v2 exists from driver 12.0; older drivers get dlsym.
    auto gpa = reinterpret_cast<PFN_cuGetProcAddress_v12000>(raw("cuGetProcAddress_v2"));

    static const Symbol symbols[] = {
        {"cuDeviceGetCount", {2000, 0}, {"cuDeviceGetCount", nullptr}, true},
        {"cuDeviceGet", {2000, 0}, {"cuDeviceGet", nullptr}, true},
        {"cuDeviceGetName", {2000, 0}, {"cuDeviceGetName", nullptr}, true},
        {"cuDevicePrimaryCtxRetain", {7000, 0}, {"cuDevicePrimaryCtxRetain", nullptr}, true},
        {"cuDevicePrimaryCtxRelease", {11000, 0}, {"cuDevicePrimaryCtxRelease_v2", nullptr}, true},
        {"cuCtxGetCurrent", {4000, 0}, {"cuCtxGetCurrent", nullptr}, true},
        {"cuCtxPushCurrent", {4000, 0}, {"cuCtxPushCurrent_v2", nullptr}, true},
        {"cuCtxPopCurrent", {4000, 0}, {"cuCtxPopCurrent_v2", nullptr}, true},
        {"cuStreamCreate", {2000, 0}, {"cuStreamCreate", nullptr}, true},
        {"cuStreamDestroy", {4000, 0}, {"cuStreamDestroy_v2", nullptr}, true},
        {"cuStreamSynchronize", {2000, 0}, {"cuStreamSynchronize", nullptr}, true},
        {"cuStreamGetCtx", {9020, 0}, {"cuStreamGetCtx", nullptr}, false},
        {"cuLaunchHostFunc", {10000, 0}, {"cuLaunchHostFunc", nullptr}, false},
        {"cuStreamIsCapturing", {10000, 0}, {"cuStreamIsCapturing", nullptr}, false},
        {"cuCtxGetDevice", {2000, 0}, {"cuCtxGetDevice", nullptr}, false},
        {"cuEventCreate", {2000, 0}, {"cuEventCreate", nullptr}, true},
        {"cuEventDestroy", {4000, 0}, {"cuEventDestroy_v2", nullptr}, true},
        {"cuEventRecord", {2000, 0}, {"cuEventRecord", nullptr}, true},
        {"cuEventQuery", {2000, 0}, {"cuEventQuery", nullptr}, true},
        {"cuEventSynchronize", {2000, 0}, {"cuEventSynchronize", nullptr}, true},
        {"cuEventElapsedTime", {12080, 2000}, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, true},
    };
    void** slots[] = {
        reinterpret_cast<void**>(&a.device_get_count),   reinterpret_cast<void**>(&a.device_get),
        reinterpret_cast<void**>(&a.device_get_name),    reinterpret_cast<void**>(&a.primary_ctx_retain),
        reinterpret_cast<void**>(&a.primary_ctx_release), reinterpret_cast<void**>(&a.ctx_get_current),
        reinterpret_cast<void**>(&a.ctx_push_current),   reinterpret_cast<void**>(&a.ctx_pop_current),
        reinterpret_cast<void**>(&a.stream_create),      reinterpret_cast<void**>(&a.stream_destroy),
        reinterpret_cast<void**>(&a.stream_synchronize), reinterpret_cast<void**>(&a.stream_get_ctx),
        reinterpret_cast<void**>(&a.launch_host_func),   reinterpret_cast<void**>(&a.stream_is_capturing),
        reinterpret_cast<void**>(&a.ctx_get_device),
        reinterpret_cast<void**>(&a.event_create),       reinterpret_cast<void**>(&a.event_destroy),
        reinterpret_cast<void**>(&a.event_record),       reinterpret_cast<void**>(&a.event_query),
        reinterpret_cast<void**>(&a.event_synchronize),  reinterpret_cast<void**>(&a.event_elapsed_time),
    };
    static_assert(sizeof slots / sizeof slots[0] == sizeof symbols / sizeof symbols[0]);

    bool any_through_gpa = false;
    for (std::size_t i = 0; i < sizeof symbols / sizeof symbols[0]; ++i) {
        const Symbol& s = symbols[i];
        void* fn = nullptr;
        for (int version : s.versions) {
            if (gpa == nullptr || fn != nullptr || version == 0) break;
            if (d->version_ != 0 && version > d->version_) continue;
            CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
            // LEGACY_STREAM: the default-stream flavour of each call must not
            // depend on how the host process was compiled.
            if (gpa(s.base, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) != CUDA_SUCCESS ||
                found != CU_GET_PROC_ADDRESS_SUCCESS)
                fn = nullptr;
            if (fn != nullptr) any_through_gpa = true;
        }
        for (const char* name : s.exported)
            if (fn == nullptr && name != nullptr) fn = raw(name);
        // A driver is here, too old for us: a failure, not "no GPU".
        if (fn == nullptr && s.required)
            throw sdk::Error(LAPSE_ERROR_UNSUPPORTED, "cuda: the CUDA driver '" + path + "' (version " +
                                                          std::to_string(d->version_) + ") lacks " + s.base +
                                                          ", which this plugin needs: update the NVIDIA driver");
        *slots[i] = fn;
    }
    d->used_get_proc_address_ = any_through_gpa;
    return d;
}

const char* Driver::error_name(CUresult result) const noexcept
{
    const char* name = nullptr;
    if (api_.get_error_name != nullptr && api_.get_error_name(result, &name) == CUDA_SUCCESS && name != nullptr)
        return name;
    return builtin_error_name(result);
}

const char* Driver::error_string(CUresult result) const noexcept
{
    const char* text = nullptr;
    if (api_.get_error_string != nullptr && api_.get_error_string(result, &text) == CUDA_SUCCESS &&
        text != nullptr)
        return text;
    return "";
}

lapse_status cuda_fail(lapse_error* error, const Driver& driver, const char* call, CUresult result,
                       lapse_status status) noexcept
{
    const char* text = driver.error_string(result);
    return sdk::failf(error, status, "cuda: %s failed: %s (%d)%s%s", call, driver.error_name(result),
                      static_cast<int>(result), *text != '\0' ? ": " : "", text);
}

}  // namespace lapse::cuda
