// lapse::sdk::Deadline: resolve's timeout as a plugin must read it.
#include <lapse/sdk/deadline.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

using lapse::sdk::Deadline;
using namespace std::chrono_literals;

TEST_CASE("a timeout of 0 polls: it has expired at once and looks once", "[sdk][deadline]")
{
    const Deadline d(0);
    CHECK(d.polls());
    CHECK(d.expired());
    std::mutex m;
    std::condition_variable cv;
    std::unique_lock lock(m);
    int looks = 0;
    CHECK_FALSE(d.wait(cv, lock, [&] { return ++looks > 5; }));
    CHECK(looks == 1);
}

TEST_CASE("LAPSE_WAIT_FOREVER never expires and leaves the most time there is", "[sdk][deadline]")
{
    const Deadline d(LAPSE_WAIT_FOREVER);
    CHECK(d.forever());
    CHECK_FALSE(d.expired());
    CHECK(d.remaining() == Deadline::clock::duration::max());
}

TEST_CASE("timeouts too large for the clock saturate instead of wrapping into the past", "[sdk][deadline]")
{
    // LAPSE_WAIT_FOREVER - 1 and INT64_MAX are not "forever", but adding
    // them to now() overflows the steady clock: a naive deadline would lie
    // in the past and a wait would return at once, forever.
    for (uint64_t timeout : {LAPSE_WAIT_FOREVER - 1, uint64_t(INT64_MAX), uint64_t(INT64_MAX) + 7}) {
        const Deadline d(timeout);
        CHECK_FALSE(d.forever());
        CHECK_FALSE(d.expired());
        CHECK(d.remaining() > std::chrono::hours(24 * 365));
    }
}

TEST_CASE("a finite deadline waits about as long as asked, then reports the time ran out", "[sdk][deadline]")
{
    const Deadline d(std::chrono::nanoseconds(30ms).count());
    std::mutex m;
    std::condition_variable cv;
    std::unique_lock lock(m);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_FALSE(d.wait(cv, lock, [] { return false; }));
    CHECK(std::chrono::steady_clock::now() - t0 >= 30ms);
    CHECK(d.expired());
    CHECK(d.remaining() == Deadline::clock::duration::zero());
}

TEST_CASE("a wait returns true as soon as the condition holds", "[sdk][deadline]")
{
    const Deadline d(LAPSE_WAIT_FOREVER);
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::thread setter([&] {
        std::this_thread::sleep_for(5ms);
        std::lock_guard g(m);
        done = true;
        cv.notify_all();
    });
    std::unique_lock lock(m);
    CHECK(d.wait(cv, lock, [&] { return done; }));
    lock.unlock();
    setter.join();
}

TEST_CASE("what is left, handed on as a timeout: forever stays forever, expired and 0 poll", "[sdk][deadline]")
{
    CHECK(Deadline(LAPSE_WAIT_FOREVER).timeout_ns() == LAPSE_WAIT_FOREVER);
    CHECK(Deadline(0).timeout_ns() == 0);
    // Just short of forever: saturates, never wraps into "forever" or into the past.
    const uint64_t huge = Deadline(LAPSE_WAIT_FOREVER - 1).timeout_ns();
    CHECK(huge != LAPSE_WAIT_FOREVER);
    CHECK(huge > (uint64_t{1} << 62));
    const Deadline soon(uint64_t{2'000'000});  // 2 ms
    const uint64_t left = soon.timeout_ns();
    CHECK(left <= 2'000'000u);
    CHECK(left > 0u);
    std::this_thread::sleep_for(5ms);
    CHECK(soon.timeout_ns() == 0);
}
