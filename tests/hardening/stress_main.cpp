// Stress: several threads open and close windows on shared streams of the
// CPU plugin, a quarter of them as split pairs ended on another thread.
// Every window must resolve exactly once (READY, its id seen once, and a
// second resolve of its token refused), none lost or duplicated, and the
// program's live heap must return to where it started once the device is
// closed (counted by the replaced operator new/delete of <lapse_test/alloc_counter.hpp>).
//
// LAPSE_STRESS_WINDOWS_PER_THREAD is 100,000 in a plain build; the CMake
// file scales it down under the sanitizers (TSan: 5,000; ASan: 25,000),
// which run many times slower, and the test prints the count it used.
#include <lapse_test/alloc_counter.hpp>

#include <lapse/core.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#ifndef LAPSE_STRESS_WINDOWS_PER_THREAD
#define LAPSE_STRESS_WINDOWS_PER_THREAD 100000
#endif

namespace {

constexpr int thread_count = 4;
constexpr uint32_t stream_count = 2;  // fewer streams than threads: streams are shared
constexpr std::size_t resolve_batch = 512;

// Windows handed to another thread to end (the split pairs).
struct Inbox {
    std::mutex mutex;
    std::deque<lapse::Window> windows;

    void push(lapse::Window w)
    {
        std::lock_guard lock(mutex);
        windows.push_back(std::move(w));
    }
    bool pop(lapse::Window& out)
    {
        std::lock_guard lock(mutex);
        if (windows.empty()) return false;
        out = std::move(windows.front());
        windows.pop_front();
        return true;
    }
};

struct Outcome {
    std::vector<lapse_token> resolved;  // tokens whose duration came back READY
    int64_t opened = 0, ended = 0, failures = 0;
};

struct Run {
    lapse::Device& device;
    std::vector<Inbox> inboxes = std::vector<Inbox>(thread_count);
    std::atomic<int> producers_done{0};
    std::vector<Outcome> outcomes = std::vector<Outcome>(thread_count);
};

void resolve_pending(Run& run, Outcome& out, std::vector<lapse::Duration>& pending, std::vector<lapse_token>& tokens)
{
    if (pending.empty()) return;
    bool all_final = run.device.resolve(pending, lapse::wait_forever);
    if (!all_final) ++out.failures;
    for (std::size_t i = 0; i < pending.size(); ++i) {
        if (pending[i].ready() && pending[i].method() == lapse::TimingMethod::device &&
            pending[i].interval()->ns() >= 0)
            out.resolved.push_back(tokens[i]);
        else
            ++out.failures;
    }
    pending.clear();
    tokens.clear();
}

void end_into(Run& run, Outcome& out, lapse::Window& w, std::vector<lapse::Duration>& pending,
              std::vector<lapse_token>& tokens)
{
    const lapse_token token = w.token();
    pending.push_back(run.device.profile_end(w));
    tokens.push_back(token);
    ++out.ended;
    if (pending.size() >= resolve_batch) {
        resolve_pending(run, out, pending, tokens);
    }
}

void worker(Run& run, int self, int windows)
{
    Outcome& out = run.outcomes[self];
    Inbox& mine = run.inboxes[self];
    Inbox& partner = run.inboxes[(self + 1) % thread_count];
    std::vector<lapse::Duration> pending;
    std::vector<lapse_token> tokens;
    pending.reserve(resolve_batch);
    tokens.reserve(resolve_batch);
    lapse::Window received;
    for (int i = 0; i < windows; ++i) {
        const lapse::Stream stream = static_cast<lapse::Stream>((self + i) % stream_count);
        lapse::Window w = run.device.profile_start(stream);
        if (w.kind() != lapse::Window::Kind::device) {
            ++out.failures;
            continue;
        }
        ++out.opened;
        if (i % 4 == 0)
            partner.push(std::move(w));  // a split pair: another thread ends it
        else
            end_into(run, out, w, pending, tokens);
        if (i % 16 == 0)
            while (mine.pop(received)) end_into(run, out, received, pending, tokens);
    }
    run.producers_done.fetch_add(1);
    // Keep ending what the neighbour hands over until every producer is done
    // and the inbox is empty.
    for (;;) {
        bool done = run.producers_done.load() == thread_count;
        bool any = false;
        while (mine.pop(received)) {
            any = true;
            end_into(run, out, received, pending, tokens);
        }
        if (done && !any) break;
        if (!any) std::this_thread::yield();
    }
    resolve_pending(run, out, pending, tokens);
}

struct Totals {
    int64_t opened = 0, ended = 0, failures = 0;
    std::vector<lapse_token> resolved;
};

Totals stress(int windows_per_thread)
{
    lapse::Runtime runtime;
    lapse::Device device = runtime.open(lapse::Config::from_string(
        "[backend]\nplugin = \"cpu\"\nstreams = " + std::to_string(stream_count) + "\n", "<stress>", {}));
    Run run{device};
    {
        std::vector<std::thread> threads;
        for (int t = 0; t < thread_count; ++t) threads.emplace_back(worker, std::ref(run), t, windows_per_thread);
        for (auto& t : threads) t.join();
    }
    Totals totals;
    for (auto& o : run.outcomes) {
        totals.opened += o.opened;
        totals.ended += o.ended;
        totals.failures += o.failures;
        totals.resolved.insert(totals.resolved.end(), o.resolved.begin(), o.resolved.end());
    }
    // Exactly once: a second resolve of any resolved token is refused.
    const lapse_plugin& p = device.plugin();
    std::size_t step = std::max<std::size_t>(1, totals.resolved.size() / 2000);
    for (std::size_t i = 0; i < totals.resolved.size(); i += step) {
        lapse_duration again{};
        again.struct_size = sizeof again;
        lapse_status s = p.resolve(device.handle(), &totals.resolved[i], &again, 1, 0, nullptr);
        if (s != LAPSE_ERROR_INVALID_TOKEN || again.state != LAPSE_DURATION_FAILED) ++totals.failures;
    }
    device.close();
    return totals;
}

}  // namespace

TEST_CASE("threads sharing streams, with split pairs, resolve every window exactly once and leak nothing",
          "[stress]")
{
    const int per_thread = LAPSE_STRESS_WINDOWS_PER_THREAD;
    WARN("stress: " << thread_count << " threads x " << per_thread << " windows on " << stream_count
                    << " shared streams (a quarter ended on another thread)");

    // Warm up once (first loads, loggers, thread-local caches), then measure.
    (void)stress(1000);
    // The counter must be live, or the comparison below passes on zeros.
    REQUIRE(lapse_test::counting_allocations());
    const lapse_test::AllocStats before = lapse_test::alloc_stats();
    int64_t total = int64_t(thread_count) * per_thread;
    {
        Totals t = stress(per_thread);
        CHECK(t.failures == 0);
        CHECK(t.opened == total);
        CHECK(t.ended == total);
        REQUIRE(int64_t(t.resolved.size()) == total);
        std::vector<uint64_t> ids;
        ids.reserve(t.resolved.size());
        for (const auto& token : t.resolved) ids.push_back(token.id);
        std::sort(ids.begin(), ids.end());
        CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());  // none duplicated
    }
    const lapse_test::AllocStats after = lapse_test::alloc_stats();
    INFO("live bytes before " << before.live_bytes << ", after " << after.live_bytes << "; live blocks before "
                              << before.live_blocks << ", after " << after.live_blocks << "; "
                              << (after.total_allocations - before.total_allocations) << " allocations in the run");
    // Nothing per window may stay behind: a leak of one byte per window
    // would be hundreds of KiB. A few blocks of slack for lazily created
    // process-wide state (logger registry entries).
    CHECK(after.live_bytes - before.live_bytes <= 4096);
    CHECK(after.live_blocks - before.live_blocks <= 8);
}
