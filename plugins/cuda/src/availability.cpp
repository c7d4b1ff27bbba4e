#include "availability.hpp"

#include <lapse/sdk/error.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace lapse::cuda {

namespace {

// NVML's C types, declared here so the plugin needs no nvml.h (the toolkit
// does not always ship it). Signatures as in nvml.h of every driver since
// MIG exists (R450).
using nvml_device = void*;
using nvmlInit_fn = int (*)();
using nvmlShutdown_fn = int (*)();
using nvmlDeviceGetCount_fn = int (*)(unsigned*);
using nvmlDeviceGetHandleByIndex_fn = int (*)(unsigned, nvml_device*);
using nvmlDeviceGetMigMode_fn = int (*)(nvml_device, unsigned*, unsigned*);
using nvmlDeviceGetName_fn = int (*)(nvml_device, char*, unsigned);
constexpr unsigned kNvmlMigEnabled = 1;

std::string code_text(CUresult result, const char* name)
{
    return std::string(name) + " (" + std::to_string(static_cast<int>(result)) + ")";
}

}  // namespace

MigReport ask_nvml_about_mig(const std::string& nvml_path) noexcept
{
    MigReport report;
    try {
        // Not RTLD_NOLOAD: the plugin may be the first to ask. The handle is
        // closed again: NVML starts no threads that outlive nvmlShutdown.
        void* lib = dlopen(nvml_path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) {
            const char* why = dlerror();
            report.why_not = "'" + nvml_path + "' could not be loaded (" + (why != nullptr ? why : "?") + ")";
            return report;
        }
        auto init = reinterpret_cast<nvmlInit_fn>(dlsym(lib, "nvmlInit_v2"));
        auto shutdown = reinterpret_cast<nvmlShutdown_fn>(dlsym(lib, "nvmlShutdown"));
        auto count = reinterpret_cast<nvmlDeviceGetCount_fn>(dlsym(lib, "nvmlDeviceGetCount_v2"));
        auto handle = reinterpret_cast<nvmlDeviceGetHandleByIndex_fn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
        auto mig = reinterpret_cast<nvmlDeviceGetMigMode_fn>(dlsym(lib, "nvmlDeviceGetMigMode"));
        auto name = reinterpret_cast<nvmlDeviceGetName_fn>(dlsym(lib, "nvmlDeviceGetName"));
        if (init == nullptr || shutdown == nullptr || count == nullptr || handle == nullptr || mig == nullptr) {
            report.why_not = "'" + nvml_path + "' lacks the NVML calls that report MIG mode";
            dlclose(lib);
            return report;
        }
        if (int r = init(); r != 0) {
            report.why_not = "nvmlInit_v2 answered " + std::to_string(r);
            dlclose(lib);
            return report;
        }
        report.asked = count(&report.gpus) == 0;
        if (!report.asked) report.why_not = "nvmlDeviceGetCount_v2 failed";
        for (unsigned i = 0; report.asked && i < report.gpus; ++i) {
            nvml_device d = nullptr;
            unsigned current = 0, pending = 0;
            // NOT_SUPPORTED (a GPU without MIG) leaves `current` 0.
            if (handle(i, &d) != 0 || mig(d, &current, &pending) != 0 || current != kNvmlMigEnabled) continue;
            if (report.mig_enabled++ == 0) {
                char n[96] = {};
                if (name == nullptr || name(d, n, sizeof n - 1) != 0) n[0] = '\0';
                report.first_mig_gpu = std::string(n[0] != '\0' ? n : "GPU") + " (NVML index " + std::to_string(i) + ")";
            }
        }
        shutdown();
        dlclose(lib);
    } catch (...) {
        report.asked = false;
        report.why_not = "out of memory";
    }
    return report;
}

const char* open_error_meaning(CUresult result) noexcept
{
    switch (result) {
    case CUDA_ERROR_STUB_LIBRARY:
        return "this is the CUDA toolkit's stub library, which exists only to link against, not a driver";
    case CUDA_ERROR_NO_DEVICE: return "the driver sees no CUDA device";
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
        return "the device is busy or unavailable: in exclusive-process compute mode another process already "
               "holds it (nvidia-smi shows it and the compute mode)";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
        return "the libcuda in use and the loaded NVIDIA kernel module are of different versions (a driver "
               "updated without a reboot, or a container's libcuda that does not match the host)";
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
        return "a forward-compatibility libcuda (cuda-compat) is loaded on a GPU that does not support forward "
               "compatibility: take the compat library off the library path";
    case CUDA_ERROR_SYSTEM_NOT_READY:
        return "the system is not ready for CUDA (on NVSwitch systems: the fabric manager is not running)";
    case CUDA_ERROR_OPERATING_SYSTEM:
        return "an operating-system call of the driver failed (often the permissions of /dev/nvidia*)";
    case CUDA_ERROR_INVALID_DEVICE: return "the driver refused the device ordinal";
    case CUDA_ERROR_OUT_OF_MEMORY: return "the device or the host ran out of memory";
    case CUDA_ERROR_NOT_INITIALIZED: return "the driver is not initialised";
    case CUDA_ERROR_DEINITIALIZED: return "the driver is shutting down";
    case CUDA_ERROR_NOT_PERMITTED: return "the operation is not permitted (a restricted container?)";
    default: return "the driver failed for a reason of its own";
    }
}

[[noreturn]] void throw_no_device(const std::string& driver_path, const std::string& nvml_path, const char* how)
{
    MigReport mig = ask_nvml_about_mig(nvml_path);
    if (mig.asked && mig.mig_enabled > 0)
        throw sdk::Error(LAPSE_ERROR_DEVICE,
                         "cuda: the CUDA driver '" + driver_path + "' sees no device (" + how + ") but MIG is "
                         "enabled on " + std::to_string(mig.mig_enabled) + " of " + std::to_string(mig.gpus) +
                         " GPU(s) (" + mig.first_mig_gpu + ") with no MIG instance visible to CUDA: a GPU is "
                         "here and unusable. Create a GPU and a compute instance (nvidia-smi mig -cgi ... -C), "
                         "or set CUDA_VISIBLE_DEVICES to a MIG device's UUID (nvidia-smi -L)");
    throw sdk::Error(LAPSE_ERROR_UNAVAILABLE,
                     "cuda: the CUDA driver '" + driver_path + "' found no CUDA device (" + how +
                         "). Check that a GPU is present and visible (nvidia-smi, CUDA_VISIBLE_DEVICES)" +
                         (mig.asked ? "; NVML reports " + std::to_string(mig.gpus) + " GPU(s), none with MIG enabled"
                                    : "; MIG could not be checked: " + mig.why_not));
}

[[noreturn]] void throw_open_failure(const std::string& driver_path, const std::string& nvml_path, const char* call,
                                     CUresult result, const char* name, const char* text)
{
    if (result == CUDA_ERROR_STUB_LIBRARY)
        throw sdk::Error(LAPSE_ERROR_UNAVAILABLE,
                         "cuda: '" + driver_path + "' is the CUDA toolkit's stub library (" + call +
                             ": CUDA_ERROR_STUB_LIBRARY, 34), not a driver: it exists only to link against. "
                             "Install the NVIDIA driver and point `driver` at its libcuda.so.1 (or remove `driver`)");
    if (result == CUDA_ERROR_NO_DEVICE) throw_no_device(driver_path, nvml_path, (std::string(call) + ": CUDA_ERROR_NO_DEVICE, 100").c_str());
    std::string driver_text = text != nullptr && *text != '\0' ? std::string(" (driver: \"") + text + "\")" : "";
    throw sdk::Error(LAPSE_ERROR_DEVICE, "cuda: " + std::string(call) + " failed on the CUDA driver '" + driver_path +
                                             "': " + code_text(result, name) + driver_text + ": " +
                                             open_error_meaning(result) +
                                             ". A driver is here and failed: this is not \"no GPU\" (see nvidia-smi)");
}

}  // namespace lapse::cuda
