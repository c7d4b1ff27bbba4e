// Work handed to the driver as CUDA host functions (submit = "host"), kept
// until it has run, so that the ABI's promise holds on every path: on
// LAPSE_OK the work function is called exactly once, also when the device
// closes first or the context fails.
//
// Why the plugin keeps them: cuLaunchHostFunc does not call its function
// at all once the context has hit an error. The record and the host's
// `user` (the core's work box, freed by the work function) would then leak
// and "exactly once" would break. So every launched call is on a list; the
// driver's thread runs it through trampoline(); what the driver will never
// run (its stream failed) the plugin runs itself, on the thread that found
// the failure, out of stream order (the windows around it are failed by the
// error anyway). A state word decides who runs a call, so it runs once even
// if the driver and the plugin race for it.
//
// And why the .so is pinned once a host function was launched: the
// driver's thread returns through trampoline() after the call has
// finished, so unloading the plugin right after close could pull that code
// out from under it.
#pragma once

#include <cuda.h>

#include <lapse/lapse.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace lapse::cuda {

class HostCalls {
public:
    struct Call;

    HostCalls() = default;
    // Waits for calls the driver's thread is running, then frees the list.
    // The device has drained or run every pending call before.
    ~HostCalls();
    HostCalls(const HostCalls&) = delete;
    HostCalls& operator=(const HostCalls&) = delete;

    // Lists a call for `stream` and returns it, to hand cuLaunchHostFunc
    // with trampoline. Throws std::bad_alloc. [any thread]
    Call* add(lapse_work_fn fn, void* user, CUstream native, lapse_stream stream);
    // The launch failed: the call is forgotten and fn is not called.
    void cancel(Call* call) noexcept;

    // The driver's thread runs a call through this.
    static void CUDA_CB trampoline(void* call);

    // True while a call on `stream` has not run yet.
    bool pending_on(lapse_stream stream) const noexcept;
    std::size_t pending() const noexcept;

    // Runs, on the calling thread, every listed call the driver has not
    // started (on `stream`, or on every stream with LAPSE_ALL_STREAMS): for
    // when the driver will never run them. Returns how many it ran.
    std::size_t run_orphans(lapse_stream stream) noexcept;

    // Makes sure the plugin's .so is never unloaded (see above). [once]
    static void pin_plugin_in_memory() noexcept;

private:
    void finished(Call* call) noexcept;

    mutable std::mutex mutex_;
    std::condition_variable idle_;
    Call* head_ = nullptr;        // pending or running
    Call* retired_ = nullptr;     // run by the plugin: kept until destruction
    std::size_t pending_ = 0;
};

}  // namespace lapse::cuda
