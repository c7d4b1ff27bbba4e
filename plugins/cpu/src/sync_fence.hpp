// cpu plugin — what sync() waits on.
//
// sync queues one fence entry per stream it waits for; each worker arrives
// at the fence when it reaches it, i.e. after everything queued before the
// sync call ran. The fence lives on the syncing thread's stack; a worker
// signals under the mutex so the fence cannot be destroyed under it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace lapse::cpu {

class SyncFence {
public:
    explicit SyncFence(uint32_t streams) noexcept : remaining_(streams) {}

    // [worker] This stream reached the fence.
    void arrive() noexcept
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--remaining_ == 0) cv_.notify_all();
    }

    // [syncing thread] A stream whose fence could not be queued.
    void cancel_one() noexcept { arrive(); }

    // [syncing thread] Until every stream arrived.
    void wait() noexcept
    {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return remaining_ == 0; });
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    uint32_t remaining_;  // guarded by mutex_
};

}  // namespace lapse::cpu
