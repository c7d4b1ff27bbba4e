// One open CUDA device: the class the SDK adapter (make_plugin) turns into
// the lapse C ABI. See ARCHITECTURE.md, "cuda", for the model.
//
// Threading: profile_start / end / abandon are lock-free (one CAS on the
// window's record, a context check, one cuEventRecord). resolve, sync, submit
// and the stream extension may run on any thread concurrently with them.
#pragma once

#include "anchor_clock.hpp"
#include "driver.hpp"
#include "host_calls.hpp"
#include "cuda_window.hpp"

#include <lapse/cuda.h>
#include <lapse/sdk/host.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace lapse::cuda {

class CudaDevice {
public:
    static std::unique_ptr<CudaDevice> open(sdk::Host host, sdk::Config config);
    ~CudaDevice();
    CudaDevice(const CudaDevice&) = delete;
    CudaDevice& operator=(const CudaDevice&) = delete;

    void describe(lapse_device_info& info);
    lapse_status sync(lapse_stream stream, lapse_error* error);
    lapse_status submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error);
    lapse_status profile_start(lapse_stream stream, lapse_token& token, lapse_error* error);
    lapse_status profile_end(lapse_token token, uint32_t flags, lapse_error* error);
    void profile_abandon(lapse_token token) noexcept;
    lapse_status resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t timeout_ns,
                         lapse_error* error);
    const void* extension(std::string_view id);

    // lapse.cuda.stream/1
    lapse_status register_stream(CUstream stream, lapse_stream* out, lapse_error* error);
    lapse_status unregister_stream(lapse_stream stream, lapse_error* error);
    lapse_status native_stream(lapse_stream stream, CUstream* out, lapse_error* error);
    CUcontext context() const noexcept { return context_; }

private:
    struct Options {
        std::string driver;
        std::string nvml;  // asked about MIG when CUDA sees no device
        int64_t device = 0;
        int64_t streams = 1;
        int64_t max_windows = 0;
        int64_t max_registered_streams = 0;
        int64_t anchor_period_ms = 0;
        // "launch": fn runs on the caller's thread, context current, to
        // launch kernels on the CUstream it is handed (the default).
        // "host": fn runs in stream order as a CUDA host function
        // (cuLaunchHostFunc), so host-side work is timed like a kernel; it
        // must not call CUDA, nor lapse calls on this device (they do).
        bool submit_as_host_function = false;
    };

    enum : uint32_t { kStreamEmpty = 0, kStreamOwned = 1, kStreamRegistered = 2, kStreamReserved = 3 };
    struct StreamEntry {
        std::atomic<CUstream> handle{nullptr};
        std::atomic<uint32_t> kind{kStreamEmpty};
        std::atomic<int64_t> open_windows{0};  // refuses unregistering under open windows
    };

    enum class Step { Final, Pending };

    CudaDevice(sdk::Host host, const Options& options);
    void teardown() noexcept;

    // The stream's entry if `stream` names a live stream, else null.
    StreamEntry* live_stream(lapse_stream stream) noexcept;
    lapse_status bad_stream(lapse_error* error, const char* call, lapse_stream stream) const noexcept;
    lapse_status foreign_stream(CUcontext owner, lapse_error* error) noexcept;

    // A record for a window on `stream`, its events made. The context must
    // be current.
    lapse_status open_record(lapse_stream stream, WindowTable::Id& id, lapse_error* error) noexcept;
    // Creates the two events of a record that has none yet.
    CUresult create_events(CudaWindow& w) noexcept;
    // Whether a parked record's events have completed (or never will).
    bool events_done(const CudaWindow& w) const noexcept;

    Step resolve_one(const lapse_token& token, lapse_duration& out, lapse_status& status, lapse_error* error);
    lapse_status refuse_token(const lapse_token& token, sdk::WindowCheck check, const char* call,
                              lapse_error* error) const noexcept;
    // Why a window or host function cannot go on `native` now (a graph
    // capture), or null.
    const char* capture_refusal(CUstream native) noexcept;
    lapse_status refuse_capture(lapse_error* error, const char* call, lapse_stream stream,
                                const char* why) const noexcept;
    // A CUDA error happened: every window open now reads FAILED.
    void poison() noexcept { error_epoch_.fetch_add(1, std::memory_order_acq_rel); }

    sdk::Host host_;
    Options options_;
    std::unique_ptr<Driver> driver_;
    const DriverApi* api_ = nullptr;
    CUdevice cu_device_ = 0;
    CUcontext context_ = nullptr;
    bool context_retained_ = false;
    std::string name_;

    uint32_t owned_streams_ = 0;
    uint32_t stream_capacity_ = 0;
    std::unique_ptr<StreamEntry[]> streams_;
    std::atomic<uint32_t> stream_high_water_{0};

    std::atomic<uint64_t> error_epoch_{0};
    std::unique_ptr<AnchorClock> anchor_;

    HostCalls host_calls_;  // after the streams: destroyed before them, drained in teardown

    std::unique_ptr<WindowTable> windows_;  // sized by max_windows at open

    lapse_cuda_stream_ext stream_ext_{};
};

}  // namespace lapse::cuda
