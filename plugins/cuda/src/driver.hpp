// The CUDA driver, loaded at run time.
//
// lapse_cuda.so never links libcuda: the same file must load on a machine
// without an NVIDIA driver and say "unavailable" there. Driver::load opens
// the library with dlopen, initialises it, and takes every entry point we
// use either through cuGetProcAddress_v2 (asking for the exact API version
// whose PFN_ typedef we call through) or, on drivers older than 12.0, by its
// exact exported name (cuEventDestroy_v2, not the cuda.h macro spelling).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <lapse/lapse.h>

#include <memory>
#include <string>

namespace lapse::cuda {

// Only the driver API calls the plugin makes. Members are named in
// snake_case on purpose: cuda.h #defines many cu* names to their _v2
// spellings, and a member called cuEventDestroy would be silently renamed.
struct DriverApi {
    PFN_cuInit_v2000 init = nullptr;
    PFN_cuDriverGetVersion_v2020 driver_get_version = nullptr;
    PFN_cuGetErrorName_v6000 get_error_name = nullptr;
    PFN_cuGetErrorString_v6000 get_error_string = nullptr;
    PFN_cuDeviceGetCount_v2000 device_get_count = nullptr;
    PFN_cuDeviceGet_v2000 device_get = nullptr;
    PFN_cuDeviceGetName_v2000 device_get_name = nullptr;
    PFN_cuDevicePrimaryCtxRetain_v7000 primary_ctx_retain = nullptr;
    PFN_cuDevicePrimaryCtxRelease_v11000 primary_ctx_release = nullptr;
    PFN_cuCtxGetCurrent_v4000 ctx_get_current = nullptr;
    PFN_cuCtxPushCurrent_v4000 ctx_push_current = nullptr;
    PFN_cuCtxPopCurrent_v4000 ctx_pop_current = nullptr;
    PFN_cuStreamCreate_v2000 stream_create = nullptr;
    PFN_cuStreamDestroy_v4000 stream_destroy = nullptr;
    PFN_cuStreamSynchronize_v2000 stream_synchronize = nullptr;
    PFN_cuStreamGetCtx_v9020 stream_get_ctx = nullptr;  // optional: checks registered streams
    PFN_cuLaunchHostFunc_v10000 launch_host_func = nullptr;  // optional: submit = "host"
    PFN_cuStreamIsCapturing_v10000 stream_is_capturing = nullptr;  // optional: refuses windows in a capture
    PFN_cuCtxGetDevice_v2000 ctx_get_device = nullptr;  // optional: names a foreign stream's device
    PFN_cuEventCreate_v2000 event_create = nullptr;
    PFN_cuEventDestroy_v4000 event_destroy = nullptr;
    PFN_cuEventRecord_v2000 event_record = nullptr;
    PFN_cuEventQuery_v2000 event_query = nullptr;
    PFN_cuEventSynchronize_v2000 event_synchronize = nullptr;
    // Same signature in both versions (v2000, v12080); we take the newest
    // the driver offers.
    PFN_cuEventElapsedTime_v2000 event_elapsed_time = nullptr;
};

class Driver {
public:
    // Opens `path` (a bare name searches the system's library path), runs
    // cuInit and resolves every entry point. Throws sdk::Error:
    // LAPSE_ERROR_UNAVAILABLE where there is no usable CUDA here (no
    // library, not a driver, the toolkit's stub, no device and no MIG GPU,
    // which `nvml_path` is asked about), LAPSE_ERROR_DEVICE where a driver
    // failed (see availability.hpp), LAPSE_ERROR_UNSUPPORTED for a driver
    // too old; the message says which case it is and what to do about it.
    static std::unique_ptr<Driver> load(const std::string& path, const std::string& nvml_path);

    ~Driver();
    Driver(const Driver&) = delete;
    Driver& operator=(const Driver&) = delete;

    const DriverApi& api() const noexcept { return api_; }
    int version() const noexcept { return version_; }  // e.g. 12040
    const std::string& path() const noexcept { return path_; }
    // True when the entry points came through cuGetProcAddress_v2.
    bool used_get_proc_address() const noexcept { return used_get_proc_address_; }

    // "CUDA_ERROR_LAUNCH_FAILED" — from the driver when it can name the code,
    // from our own table otherwise (the stub library cannot name anything).
    const char* error_name(CUresult result) const noexcept;
    // The driver's one-line description, or "" when it has none.
    const char* error_string(CUresult result) const noexcept;

private:
    Driver() = default;

    void* library_ = nullptr;
    std::string path_;
    int version_ = 0;
    bool used_get_proc_address_ = false;
    DriverApi api_;
};

// The errors of CUDA graph capture (900..908): the answer about one
// stream's capture, not a failure of the device or its context, so they
// fail the window that met them and poison no other.
inline bool is_capture_error(CUresult r) noexcept
{
    return r >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && r <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
}

// Fills `error` with "<call> failed: <NAME> (<description>)" and returns
// `status`. Only on the error path: it formats.
lapse_status cuda_fail(lapse_error* error, const Driver& driver, const char* call, CUresult result,
                       lapse_status status = LAPSE_ERROR_DEVICE) noexcept;

}  // namespace lapse::cuda
