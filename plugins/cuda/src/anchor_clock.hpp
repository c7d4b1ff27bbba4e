// Places device events on the host's monotonic clock.
//
// CUDA events carry no absolute time: cuEventElapsedTime only gives the f32
// milliseconds between two events. An f32 keeps ~7 digits, so the distance
// from an event recorded at the start of a long run would lose microseconds
// after minutes. Instead an *anchor* event is recorded on a private, idle
// stream about once a second, synchronised, and the host clock read right
// after: (anchor event, host ns) is a fresh correspondence. A window
// remembers the anchor current when it opened and is placed at
//     start_host = anchor_host + elapsed(anchor, start)
// — a distance of about a second at most, where f32 resolves ~0.1 µs. The
// window's duration never goes through the anchor: it is measured between
// the window's own two events.
//
// Anchors live in a small ring so a window placed after a refresh still
// finds the one it captured; a window resolved so late that its anchor was
// recycled uses the newest one (placement stays correct, only coarser).
#pragma once

#include "driver.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <thread>

namespace lapse::cuda {

class AnchorClock {
public:
    static constexpr uint32_t kRing = 8;

    // `error_epoch` is bumped when a refresh fails: a CUDA error while
    // windows are open poisons them. Throws sdk::Error if the first anchor
    // cannot be taken. Needs `context` current on the calling thread.
    AnchorClock(const Driver& driver, CUcontext context, std::atomic<uint64_t>& error_epoch);
    ~AnchorClock();
    AnchorClock(const AnchorClock&) = delete;
    AnchorClock& operator=(const AnchorClock&) = delete;

    // Starts the thread that refreshes the anchor every `period_ms`.
    void start(int64_t period_ms);

    // The anchor to capture when a window opens. [hot path: one atomic load]
    uint64_t current() const noexcept { return current_.load(std::memory_order_acquire); }

    // Host-monotonic ns of `event`, through anchor `seq` if it is still in
    // the ring, else through the newest. Returns the driver's result.
    CUresult place(uint64_t seq, CUevent event, int64_t& host_ns) const noexcept;

    // Takes a new anchor now. Returns the driver's result. [any thread]
    CUresult refresh() noexcept;

    uint64_t refreshes() const noexcept { return current(); }

private:
    struct Entry {
        CUevent event = nullptr;
        int64_t host_ns = 0;
        uint64_t seq = 0;  // which refresh wrote it; 0 = never
    };

    void run(int64_t period_ms);

    const Driver& driver_;
    CUcontext context_;
    std::atomic<uint64_t>& error_epoch_;
    CUstream stream_ = nullptr;
    Entry ring_[kRing];
    std::atomic<uint64_t> current_{0};
    // shared: place; exclusive: refresh, only to edit an entry, never across
    // a wait on the device.
    mutable std::shared_mutex ring_mutex_;
    std::mutex refresh_mutex_;  // one refresh at a time

    std::mutex thread_mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace lapse::cuda
