// Many threads, split pairs, two streams: every window resolves exactly once,
// and the hot path allocates nothing once warm.
#include <lapse_test/alloc_counter.hpp>
#include "cpu_plugin.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

using namespace lapse_test;

namespace {

// Tokens handed from the thread that opened a window to the one that closes it.
class Mailbox {
public:
    void put(lapse_token t)
    {
        std::lock_guard<std::mutex> lock(m_);
        q_.push_back(t);
        cv_.notify_one();
    }
    void finish()
    {
        std::lock_guard<std::mutex> lock(m_);
        done_ = true;
        cv_.notify_all();
    }
    bool take(lapse_token& t)
    {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [&] { return !q_.empty() || done_; });
        if (q_.empty()) return false;
        t = q_.front();
        q_.pop_front();
        return true;
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<lapse_token> q_;
    bool done_ = false;
};

}  // namespace

TEST_CASE("stress: 4 threads open, 4 others close and resolve, on 2 streams; every window resolves once",
          "[stress]")
{
#if defined(LAPSE_SANITIZED)
    constexpr int kPerThread = 10000;
#else
    constexpr int kPerThread = 100000;
#endif
    constexpr int kPairs = 4;
    CpuDevice dev;
    const lapse_plugin& p = dev.plugin();
    lapse_device* d = dev.device();
    std::vector<Mailbox> boxes(kPairs);
    std::atomic<int64_t> ready{0}, wrong{0}, work_ran{0};
    auto tick = [](void* u, void*) { static_cast<std::atomic<int64_t>*>(u)->fetch_add(1, std::memory_order_relaxed); };

    std::vector<std::thread> threads;
    for (int k = 0; k < kPairs; ++k) {
        threads.emplace_back([&, k] {  // opener
            for (int i = 0; i < kPerThread; ++i) {
                lapse_token t{};
                const lapse_stream s = (k + i) % 2;
                if (p.profile_start(d, s, &t, nullptr) != LAPSE_OK || t.id == 0 || t.opened_on != s) {
                    wrong.fetch_add(1);
                    continue;
                }
                if (i % 16 == 0 && p.submit(d, s, tick, &work_ran, nullptr) != LAPSE_OK) wrong.fetch_add(1);
                boxes[k].put(t);
            }
            boxes[k].finish();
        });
        threads.emplace_back([&, k] {  // closer + resolver, in batches
            std::vector<lapse_token> batch;
            auto flush = [&] {
                std::vector<lapse_duration> out(batch.size(), make_duration());
                if (p.resolve(d, batch.data(), out.data(), uint32_t(batch.size()), LAPSE_WAIT_FOREVER, nullptr) !=
                    LAPSE_OK)
                    wrong.fetch_add(1);
                for (const auto& r : out) {
                    if (r.state == LAPSE_DURATION_READY && r.end_ns >= r.start_ns && r.method == LAPSE_TIMING_DEVICE)
                        ready.fetch_add(1);
                    else
                        wrong.fetch_add(1);
                }
                // A second resolve of the same tokens finds them all gone.
                if (p.resolve(d, batch.data(), out.data(), uint32_t(batch.size()), 0, nullptr) !=
                    LAPSE_ERROR_INVALID_TOKEN)
                    wrong.fetch_add(1);
                for (const auto& r : out)
                    if (r.state != LAPSE_DURATION_FAILED || r.failure != LAPSE_ERROR_INVALID_TOKEN) wrong.fetch_add(1);
                batch.clear();
            };
            lapse_token t;
            while (boxes[k].take(t)) {
                if (p.profile_end(d, t, nullptr, nullptr) != LAPSE_OK) wrong.fetch_add(1);
                batch.push_back(t);
                if (batch.size() == 256) flush();
            }
            if (!batch.empty()) flush();
        });
    }
    for (auto& th : threads) th.join();
    dev.sync(LAPSE_ALL_STREAMS);
    CHECK(wrong.load() == 0);
    CHECK(ready.load() == int64_t{kPairs} * kPerThread);
    CHECK(work_ran.load() == int64_t{kPairs} * ((kPerThread + 15) / 16));
    dev.close();
    for (const auto& l : dev.host().logs()) CHECK(l.level < LAPSE_LOG_WARN);  // nothing left open
}

TEST_CASE("the hot path allocates nothing once warm (start, end, resolve, abandon)", "[alloc]")
{
    CpuDevice dev;
    const lapse_plugin& p = dev.plugin();
    lapse_device* d = dev.device();
    std::vector<lapse_token> tokens(512);
    std::vector<lapse_duration> out(512, make_duration());
    auto round = [&] {
        for (size_t i = 0; i < tokens.size(); ++i) {
            p.profile_start(d, i % 2, &tokens[i], nullptr);
            p.profile_end(d, tokens[i], nullptr, nullptr);
        }
        REQUIRE(p.resolve(d, tokens.data(), out.data(), uint32_t(tokens.size()), LAPSE_WAIT_FOREVER, nullptr) ==
                LAPSE_OK);
        for (size_t i = 0; i < 64; ++i) {
            lapse_token t{};
            p.profile_start(d, 0, &t, nullptr);
            p.profile_abandon(d, t);
        }
    };
    for (int i = 0; i < 20; ++i) round();  // warm: the table and rings reach their working size
    // The counter must be live, or the comparison below passes on zeros.
    REQUIRE(lapse_test::counting_allocations());
    const uint64_t before = allocations();
    for (int i = 0; i < 200; ++i) round();
    const uint64_t after = allocations();
    CHECK(after - before == 0);
}
