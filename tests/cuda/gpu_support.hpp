// The GPU test program's shared pieces: one line per check, the PTX kernels,
// the driver calls the program makes itself (as a host launching its own
// work), and a plugin device with its kernels loaded. See gpu_test.cpp.
#pragma once

#include <lapse/cuda.h>
#include <lapse_test/test_host.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>

#include <dlfcn.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <cstdio>
#include <string>

namespace gpu {

using lapse::test::ConfigTable;
using lapse::test::LoadedPlugin;

inline constexpr int64_t kUs = 1000;
inline constexpr int64_t kMs = 1000000;

// lapse_spin(ns): spins until %globaltimer moved `ns`. lapse_fault(): stores
// through a null pointer. PTX 6.0 for sm_50 and later: the driver JITs it
// for whatever GPU is present.
inline const char* const kPtx = R"(
.version 6.0
.target sm_50
.address_size 64
.visible .entry lapse_spin(.param .u64 ns)
{
    .reg .u64 %rd<5>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [ns];
    mov.u64 %rd2, %globaltimer;
LOOP:
    mov.u64 %rd3, %globaltimer;
    sub.u64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra LOOP;
    ret;
}
.visible .entry lapse_fault()
{
    .reg .u64 %rd<2>;
    .reg .u32 %r<2>;
    mov.u64 %rd1, 0;
    mov.u32 %r1, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
)";

inline int failures = 0;

inline void check(bool ok, const char* what, const std::string& detail = "")
{
    std::printf("  [%s] %s%s%s\n", ok ? "PASS" : "FAIL", what, detail.empty() ? "" : " — ", detail.c_str());
    if (!ok) ++failures;
}

inline int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

inline std::string ms(int64_t ns)
{
    char b[32];
    std::snprintf(b, sizeof b, "%.3f ms", static_cast<double>(ns) / 1e6);
    return b;
}

// The driver calls the test makes itself, as a host launching its own work.
struct Cu {
    PFN_cuCtxPushCurrent_v4000 push = nullptr;
    PFN_cuCtxPopCurrent_v4000 pop = nullptr;
    PFN_cuModuleLoadData_v2000 load = nullptr;
    PFN_cuModuleUnload_v2000 unload = nullptr;
    PFN_cuModuleGetFunction_v2000 function = nullptr;
    PFN_cuLaunchKernel_v4000 launch = nullptr;
    PFN_cuStreamCreate_v2000 stream_create = nullptr;
    PFN_cuStreamDestroy_v4000 stream_destroy = nullptr;
    PFN_cuStreamSynchronize_v2000 stream_sync = nullptr;
    PFN_cuEventCreate_v2000 event_create = nullptr;
    PFN_cuEventDestroy_v4000 event_destroy = nullptr;
    PFN_cuEventRecord_v2000 event_record = nullptr;
    PFN_cuDeviceGetCount_v2000 device_get_count = nullptr;

    bool load_from(const char* path)
    {
        void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) return false;
        auto sym = [lib](const char* n) { return dlsym(lib, n); };
        push = reinterpret_cast<PFN_cuCtxPushCurrent_v4000>(sym("cuCtxPushCurrent_v2"));
        pop = reinterpret_cast<PFN_cuCtxPopCurrent_v4000>(sym("cuCtxPopCurrent_v2"));
        load = reinterpret_cast<PFN_cuModuleLoadData_v2000>(sym("cuModuleLoadData"));
        unload = reinterpret_cast<PFN_cuModuleUnload_v2000>(sym("cuModuleUnload"));
        function = reinterpret_cast<PFN_cuModuleGetFunction_v2000>(sym("cuModuleGetFunction"));
        launch = reinterpret_cast<PFN_cuLaunchKernel_v4000>(sym("cuLaunchKernel"));
        stream_create = reinterpret_cast<PFN_cuStreamCreate_v2000>(sym("cuStreamCreate"));
        stream_destroy = reinterpret_cast<PFN_cuStreamDestroy_v4000>(sym("cuStreamDestroy_v2"));
        stream_sync = reinterpret_cast<PFN_cuStreamSynchronize_v2000>(sym("cuStreamSynchronize"));
        event_create = reinterpret_cast<PFN_cuEventCreate_v2000>(sym("cuEventCreate"));
        event_destroy = reinterpret_cast<PFN_cuEventDestroy_v4000>(sym("cuEventDestroy_v2"));
        event_record = reinterpret_cast<PFN_cuEventRecord_v2000>(sym("cuEventRecord"));
        device_get_count = reinterpret_cast<PFN_cuDeviceGetCount_v2000>(sym("cuDeviceGetCount"));
        return push && pop && load && unload && function && launch && stream_create && stream_destroy &&
               stream_sync && event_create && event_destroy && event_record && device_get_count;
    }
};

struct Gpu {
    LoadedPlugin& loaded;
    const lapse_plugin& p;
    lapse_device* device;
    const lapse_cuda_stream_ext* ext;
    Cu cu;
    CUcontext ctx = nullptr;
    CUfunction spin = nullptr;
    CUfunction fault = nullptr;
    CUmodule module = nullptr;
    bool pushed = false;
    bool over_test_double = false;  // the driver is tests/cuda's fake (its name says so)

    // Takes the driver calls from `driver_path` and loads the kernels into
    // the device's context, which stays current on this thread until
    // unload(). False, with a FAIL line, when something is missing.
    bool load(const char* driver_path)
    {
        if (ext == nullptr) ext = static_cast<const lapse_cuda_stream_ext*>(
                                p.get_extension(device, LAPSE_CUDA_STREAM_EXTENSION));
        if (ext == nullptr || !cu.load_from(driver_path)) {
            check(false, "the extension and the test's own driver entry points (cuModuleLoadData, cuLaunchKernel, ...)");
            return false;
        }
        ext->context(device, reinterpret_cast<CUctx_st**>(&ctx), nullptr);
        pushed = cu.push(ctx) == CUDA_SUCCESS;
        CUresult r = pushed ? cu.load(&module, kPtx) : CUDA_ERROR_INVALID_CONTEXT;
        if (r == CUDA_SUCCESS) r = cu.function(&spin, module, "lapse_spin");
        if (r == CUDA_SUCCESS) r = cu.function(&fault, module, "lapse_fault");
        check(r == CUDA_SUCCESS, "the PTX kernels load (cuModuleLoadData JIT)", "CUresult " + std::to_string(r));
        return r == CUDA_SUCCESS;
    }

    // Before closing the device: close releases the context we pushed.
    void unload()
    {
        CUcontext popped = nullptr;
        if (pushed) cu.pop(&popped);
        pushed = false;
    }

    CUstream stream(lapse_stream s)
    {
        CUstream out = nullptr;
        ext->native_stream(device, s, &out, nullptr);
        return out;
    }

    bool launch_spin(CUstream s, int64_t ns)
    {
        uint64_t arg = static_cast<uint64_t>(ns);
        void* params[] = {&arg};
        return cu.launch(spin, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr) == CUDA_SUCCESS;
    }

    // Launches through submit, as a host's work goes to a lapse stream.
    bool submit_spin(lapse_stream s, int64_t ns)
    {
        struct Work {
            Gpu* gpu;
            int64_t ns;
            bool ok;
        } w{this, ns, false};
        lapse_status st = p.submit(
            device, s,
            [](void* user, void* native) {
                auto* work = static_cast<Work*>(user);
                work->ok = work->gpu->launch_spin(static_cast<CUstream>(native), work->ns);
            },
            &w, nullptr);
        return st == LAPSE_OK && w.ok;
    }

    lapse_token start(lapse_stream s)
    {
        lapse_token t{};
        lapse_error e{};
        e.struct_size = sizeof e;
        if (p.profile_start(device, s, &t, &e) != LAPSE_OK) {
            check(false, "profile_start", e.message);
            t.id = 0;
        }
        return t;
    }
    lapse_status end(lapse_token t) { return p.profile_end(device, t, nullptr, nullptr); }
    lapse_duration resolve(lapse_token t, uint64_t timeout = LAPSE_WAIT_FOREVER, lapse_status* st = nullptr)
    {
        lapse_duration d{};
        d.struct_size = sizeof d;
        lapse_status s = p.resolve(device, &t, &d, 1, timeout, nullptr);
        if (st != nullptr) *st = s;
        return d;
    }
};

inline int64_t len(const lapse_duration& d) { return d.end_ns - d.start_ns; }

// A timing figure that over the driver test double measures this machine's
// scheduler (a thread hop, a sleep), not a driver: there a miss is shown as
// SKIP with the figure, on a real driver it is a FAIL.
inline void check_timing(const Gpu& g, bool ok, const char* what, const std::string& detail)
{
    if (ok || !g.over_test_double) {
        check(ok, what, detail);
        return;
    }
    std::printf("  [SKIP] %s — %s; over the driver test double this is the machine's scheduling, not a driver\n",
                what, detail.c_str());
}

// Every check of the program, in the order it runs them.
void test_known_work(Gpu& g);         // gpu_timing.cpp: 2 % and 50 us
void test_anchor_under_load(Gpu& g);  // gpu_timing.cpp: 10 busy streams
void test_host_mode(Gpu& g);          // gpu_host_mode.cpp: submit = "host"

}  // namespace gpu
