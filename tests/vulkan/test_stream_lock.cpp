// The stream's lock (plugins/vulkan/src/stream_lock.hpp), without a device:
// mutual exclusion, and a thread that waits sleeps and is woken. Also run
// under ThreadSanitizer (scripts/ci-sanitizers.sh), which sees a lost
// exclusion as a data race on the counters below.
#include "stream_lock.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <thread>
#include <vector>

using lapse::vulkan::StreamLock;

namespace {

double thread_cpu_seconds()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

TEST_CASE("stream lock: four threads adding under it lose no addition", "[vulkan][stream_lock]")
{
    StreamLock lock;
    uint64_t counter = 0;  // plain: only the lock orders the threads' writes
    uint64_t pairs = 0;    // changed with counter: a thread that sees them differ was not excluded
    std::atomic<int> torn{0};  // Catch2's assertions are not for other threads
    constexpr int kThreads = 4;
    constexpr int kAdds = 20000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < kAdds; ++i) {
                std::lock_guard<StreamLock> hold(lock);
                if (counter != pairs) torn.fetch_add(1);
                // A read, a pause, a write: without exclusion another
                // thread's addition lands in the pause and is lost.
                const uint64_t seen = counter;
                for (volatile int k = 0; k < 64; k = k + 1) {
                }
                counter = seen + 1;
                ++pairs;
                // Now and then hold it long enough that the others give up
                // spinning and sleep.
                if (i % 4096 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
    for (auto& t : threads) t.join();
    CHECK(torn.load() == 0);
    CHECK(counter == uint64_t{kThreads} * kAdds);
    CHECK(pairs == counter);
}

TEST_CASE("stream lock: try_lock fails while it is held and succeeds once it is released", "[vulkan][stream_lock]")
{
    StreamLock lock;
    REQUIRE(lock.try_lock());
    bool other_got_it = true;
    std::thread([&] { other_got_it = lock.try_lock(); }).join();
    CHECK_FALSE(other_got_it);
    lock.unlock();
    std::thread([&] {
        other_got_it = lock.try_lock();
        if (other_got_it) lock.unlock();
    }).join();
    CHECK(other_got_it);
}

TEST_CASE("stream lock: a thread waiting while it is held for 200 ms sleeps, and gets it when it is released",
          "[vulkan][stream_lock]")
{
    StreamLock lock;
    lock.lock();
    std::atomic<bool> acquired{false};
    double waiter_cpu = 0;
    std::thread waiter([&] {
        const double before = thread_cpu_seconds();
        lock.lock();
        waiter_cpu = thread_cpu_seconds() - before;
        acquired.store(true);
        lock.unlock();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK_FALSE(acquired.load());
    lock.unlock();
    waiter.join();
    CHECK(acquired.load());
    // A waiter that spun would have burnt most of the 200 ms; one that slept
    // burns microseconds (its spins, a membarrier and a futex wait). The
    // bound is generous for a loaded machine and a sanitizer's slowdown.
    CHECK(waiter_cpu < 0.05);
}

TEST_CASE("stream lock: a condition_variable_any waits on it and wakes with it held", "[vulkan][stream_lock]")
{
    StreamLock lock;
    std::condition_variable_any cv;
    bool ready = false;  // guarded by lock
    bool seen = false;
    std::thread waiter([&] {
        std::unique_lock<StreamLock> hold(lock);
        cv.wait(hold, [&] { return ready; });
        seen = ready;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    {
        std::lock_guard<StreamLock> hold(lock);
        ready = true;
    }
    cv.notify_all();
    waiter.join();
    CHECK(seen);
}
