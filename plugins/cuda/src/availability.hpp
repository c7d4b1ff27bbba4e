// Telling "there is no CUDA here" from "there is CUDA here, and it failed".
//
// Why it matters: a host (and scripts/gpu-check.sh) treats
// LAPSE_ERROR_UNAVAILABLE as "skip, nothing to test on this machine". A
// machine that has a GPU and a driver but cannot use them — the device busy
// in exclusive-process mode (46), a libcuda that does not match the kernel
// module (803), a forward-compatibility libcuda on a GPU that does not
// support it (804), MIG enabled with no instance visible (cuInit or the
// device count then says NO_DEVICE, 100) — must not be reported the same
// way: the run would pass as "no GPU" while the GPU is broken.
//
// So only these are UNAVAILABLE: no driver library, a library that is not a
// driver, the toolkit's stub (34), and NO_DEVICE (or a count of 0) where no
// GPU on the machine has MIG enabled. Everything else a driver answers while
// opening is LAPSE_ERROR_DEVICE, and the message names the call, the code,
// its CUDA name and what it means.
#pragma once

#include <cuda.h>

#include <string>

namespace lapse::cuda {

class Driver;

// What NVML (libnvidia-ml.so.1, shipped with every NVIDIA driver) says
// about MIG, asked only once CUDA has said "no device".
struct MigReport {
    bool asked = false;        // NVML loaded and answered
    std::string why_not;       // when !asked: why (library absent, init failed)
    unsigned gpus = 0;         // GPUs NVML sees
    unsigned mig_enabled = 0;  // of them, with MIG mode currently enabled
    std::string first_mig_gpu; // the name of the first such GPU
};

MigReport ask_nvml_about_mig(const std::string& nvml_path) noexcept;

// Our own words for the codes a driver answers while opening, for the
// message (the driver's own string is added when it has one). Never null.
const char* open_error_meaning(CUresult result) noexcept;

// Throws sdk::Error for a failed opening call: UNAVAILABLE when the code
// means there is no usable CUDA device here (see above; consults NVML for
// NO_DEVICE), LAPSE_ERROR_DEVICE otherwise. `name` / `text` are the
// driver's (or our) name and description of the code.
[[noreturn]] void throw_open_failure(const std::string& driver_path, const std::string& nvml_path, const char* call,
                                     CUresult result, const char* name, const char* text);

// "no device" as a count of 0 (cuDeviceGetCount succeeded): the same rule
// as NO_DEVICE.
[[noreturn]] void throw_no_device(const std::string& driver_path, const std::string& nvml_path, const char* how);

}  // namespace lapse::cuda
