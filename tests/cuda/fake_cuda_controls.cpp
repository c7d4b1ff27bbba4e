// TEST DOUBLE — fake_cuda_driver: the controls tests drive it with, and
// NVML's MIG report.
#include "fake_cuda_state.hpp"

#include <algorithm>
#include <cstdio>

using namespace fake_cuda;

FAKE_EXPORT int fake_cuda_reset(void)
{
    Driver& d = driver();
    std::unique_lock<std::mutex> lock(d.mutex);
    // Host functions already handed to the driver's thread finish first.
    d.changed.wait(lock, [&] {
        return d.host_queue.empty() &&
               std::none_of(d.streams.begin(), d.streams.end(), [](const Stream* s) { return s->host_running; });
    });
    int leaked = static_cast<int>(d.events.size());
    for (int r : d.retained) leaked += r;
    for (Stream* s : d.streams) {
        leaked += !s->legacy;
        delete s;
    }
    for (Event* e : d.events) delete e;
    d.streams.clear();
    d.events.clear();
    std::fill(std::begin(d.legacy), std::end(d.legacy), nullptr);
    d.device_count = 1;
    d.version = 13000;
    d.init_result = SUCCESS;
    d.initialised = false;
    d.hide_gpa = false;
    d.sticky = SUCCESS;
    d.stall_event_sync = false;
    d.fail_next.clear();
    d.drift_ppm = 20.0;
    d.resolution_ns = 500;
    d.nvml_gpus = 1;
    d.nvml_mig_enabled = 0;
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

FAKE_EXPORT void fake_cuda_set_driver_version(int version)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().version = version;
}

FAKE_EXPORT void fake_cuda_set_nvml(int gpus, int mig_enabled)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().nvml_gpus = gpus;
    driver().nvml_mig_enabled = mig_enabled;
}

FAKE_EXPORT void fake_cuda_set_clock(double drift_ppm, int64_t resolution_ns)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    driver().drift_ppm = drift_ppm;
    driver().resolution_ns = std::max<int64_t>(resolution_ns, 1);
}

FAKE_EXPORT void fake_cuda_stall_event_synchronize(int on)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    d.stall_event_sync = on != 0;
    d.changed.notify_all();
}

FAKE_EXPORT void fake_cuda_set_capturing(struct CUstream_st* h, int on)
{
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (Stream* s = find_stream(d, h)) s->capturing = on != 0;
}

FAKE_EXPORT int fake_cuda_on_host_function_thread(void)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    return std::this_thread::get_id() == driver().worker_id ? 1 : 0;
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
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mutex);
    d.sticky = result;
    d.changed.notify_all();  // waits in the driver return the error
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
    std::lock_guard<std::mutex> lock(d.mutex);
    if (Stream* s = find_stream(d, h)) {
        s->held = false;
        advance(d, *s);
    }
}

FAKE_EXPORT struct CUctx_st* fake_cuda_current_context(void) { return current(); }

FAKE_EXPORT void fake_cuda_get_counters(fake_cuda_counters* out)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    *out = driver().counters;
    out->primary_ctx_retained = driver().retained[0];
}

// ------------------------------------------------------------- NVML
// Only what the plugin asks when CUDA says "no device": is MIG on?

namespace {
int g_nvml_devices[kMaxDevices];
}

FAKE_EXPORT int nvmlInit_v2(void) { return 0; }
FAKE_EXPORT int nvmlShutdown(void) { return 0; }

FAKE_EXPORT int nvmlDeviceGetCount_v2(unsigned* count)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    *count = static_cast<unsigned>(driver().nvml_gpus);
    return 0;
}

FAKE_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    if (index >= static_cast<unsigned>(std::min(driver().nvml_gpus, kMaxDevices))) return 2;  // INVALID_ARGUMENT
    g_nvml_devices[index] = static_cast<int>(index);
    *device = &g_nvml_devices[index];
    return 0;
}

FAKE_EXPORT int nvmlDeviceGetMigMode(void* device, unsigned* current_mode, unsigned* pending_mode)
{
    std::lock_guard<std::mutex> lock(driver().mutex);
    int index = *static_cast<int*>(device);
    *current_mode = *pending_mode = index < driver().nvml_mig_enabled ? 1u : 0u;
    return 0;
}

FAKE_EXPORT int nvmlDeviceGetName(void* device, char* name, unsigned length)
{
    std::snprintf(name, length, "Fake MIG-capable GPU %d (test double)", *static_cast<int*>(device));
    return 0;
}
