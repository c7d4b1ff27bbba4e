#include "anchor_clock.hpp"

#include "context_scope.hpp"

#include <lapse/sdk/error.hpp>
#include <lapse/sdk/host.hpp>

#include <chrono>
#include <cmath>
#include <string>

namespace lapse::cuda {

AnchorClock::AnchorClock(const Driver& driver, CUcontext context, std::atomic<uint64_t>& error_epoch)
    : driver_(driver), context_(context), error_epoch_(error_epoch)
{
    const DriverApi& api = driver_.api();
    auto check = [&](const char* call, CUresult r) {
        if (r == CUDA_SUCCESS) return;
        lapse_error e = sdk::make_error();
        cuda_fail(&e, driver_, call, r);
        throw sdk::Error(LAPSE_ERROR_DEVICE, std::string(e.message) + " (creating the host-clock anchor)");
    };
    try {
        // Non-blocking, and used for nothing else: an anchor recorded here
        // completes as soon as the device sees it, not after the host's work.
        check("cuStreamCreate", api.stream_create(&stream_, CU_STREAM_NON_BLOCKING));
        for (Entry& e : ring_) check("cuEventCreate", api.event_create(&e.event, CU_EVENT_DEFAULT));
        check("cuEventRecord", refresh());
    } catch (...) {
        for (Entry& e : ring_)
            if (e.event != nullptr) api.event_destroy(e.event);
        if (stream_ != nullptr) api.stream_destroy(stream_);
        throw;
    }
}

AnchorClock::~AnchorClock()
{
    {
        std::lock_guard<std::mutex> lock(thread_mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    const DriverApi& api = driver_.api();
    api.stream_synchronize(stream_);
    for (Entry& e : ring_) api.event_destroy(e.event);
    api.stream_destroy(stream_);
}

void AnchorClock::start(int64_t period_ms)
{
    thread_ = std::thread([this, period_ms] { run(period_ms); });
}

void AnchorClock::run(int64_t period_ms)
{
    // This thread is ours, but push/pop keeps the rule the same everywhere.
    ContextScope scope(driver_.api(), context_);
    std::unique_lock<std::mutex> lock(thread_mutex_);
    while (!stop_) {
        if (wake_.wait_for(lock, std::chrono::milliseconds(period_ms), [this] { return stop_; })) break;
        lock.unlock();
        if (scope.result() == CUDA_SUCCESS) refresh();
        else error_epoch_.fetch_add(1, std::memory_order_acq_rel);
        lock.lock();
    }
}

CUresult AnchorClock::refresh() noexcept
{
    const DriverApi& api = driver_.api();
    // One refresh at a time; place() never takes this lock.
    std::lock_guard<std::mutex> refreshing(refresh_mutex_);
    uint64_t seq = current_.load(std::memory_order_relaxed) + 1;
    Entry& e = ring_[seq % kRing];
    {
        // The entry about to be re-recorded is withdrawn first: a window
        // that captured it is placed through the newest anchor instead.
        std::unique_lock<std::shared_mutex> ring(ring_mutex_);
        e.seq = 0;
    }
    // The wait happens with no lock a resolve needs: under load the
    // anchor's stream may share a hardware queue with busy work, and this
    // synchronisation then takes as long as that work.
    CUresult r = api.event_record(e.event, stream_);
    // The stream is idle, so the event completes as soon as the device
    // reaches it; the host clock read right after the wait is later by the
    // wake-up latency of the synchronisation only (about a microsecond).
    if (r == CUDA_SUCCESS) r = api.event_synchronize(e.event);
    int64_t host_ns = sdk::monotonic_ns();
    if (r != CUDA_SUCCESS) {
        // The entry stays withdrawn: its event may hold a half-made record.
        error_epoch_.fetch_add(1, std::memory_order_acq_rel);
        return r;
    }
    std::unique_lock<std::shared_mutex> ring(ring_mutex_);
    e.host_ns = host_ns;
    e.seq = seq;
    current_.store(seq, std::memory_order_release);
    return CUDA_SUCCESS;
}

CUresult AnchorClock::place(uint64_t seq, CUevent event, int64_t& host_ns) const noexcept
{
    std::shared_lock<std::shared_mutex> lock(ring_mutex_);
    const Entry* e = &ring_[seq % kRing];
    if (seq == 0 || e->seq != seq) {
        uint64_t newest = current_.load(std::memory_order_acquire);
        e = &ring_[newest % kRing];
        if (e->seq != newest) return CUDA_ERROR_NOT_FOUND;  // no anchor ever succeeded
    }
    float ms = 0.0f;
    CUresult r = driver_.api().event_elapsed_time(&ms, e->event, event);
    if (r != CUDA_SUCCESS) return r;
    host_ns = e->host_ns + static_cast<int64_t>(std::llround(static_cast<double>(ms) * 1e6));
    return CUDA_SUCCESS;
}

}  // namespace lapse::cuda
