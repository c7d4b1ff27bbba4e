// Recording is the core's job: every named window closed while a device
// records into a capture lands in the file exactly once, whatever the
// caller does with its Duration.
#include "capture_test_support.hpp"

#include <catch2/catch.hpp>

#include <lapse/core/scope.hpp>

#include <unistd.h>

#include <filesystem>
#include <set>
#include <span>
#include <stdexcept>
#include <thread>

using namespace capture_test;

TEST_CASE("1000 named windows whose Durations are dropped unresolved are 1000 windows in the capture", "[capture][recording]")
{
    TempDir dir;
    const auto file = dir.path / "dropped.lapse-capture";
    {
        lapse::Runtime runtime;
        lapse::Device device = runtime.open(cpu_config());
        device.record_into(open_capture(file));
        for (int i = 0; i < 1000; ++i) device.profile(i % 2, [&] { device.submit(i % 2, [] {}); }, {.name = "dropped"});
        // Closing the device drains what is pending into the capture.
    }
    const ReadBack r = read_all(file);
    CHECK(r.damage.empty());
    CHECK(r.complete);
    REQUIRE(r.windows.size() == 1000);
    for (const ReadWindow& w : r.windows) {
        CHECK(w.name == "dropped");
        CHECK(w.w.state == lapse::DurationState::ready);
        CHECK(w.w.end_ns >= w.w.start_ns);
    }
    REQUIRE(r.sources.size() == 1);
    CHECK(r.sources[0].plugin == "cpu");
    CHECK(r.sources[0].stack == "cpu (backend)");
    CHECK(r.sources[0].stream_domains.size() == 2);
    CHECK(r.header.pid == static_cast<uint64_t>(::getpid()));
    CHECK(r.header.anchor_realtime_ns > 0);
}

TEST_CASE("a caller who resolves gets the number the capture records, once", "[capture][recording]")
{
    TempDir dir;
    const auto file = dir.path / "resolved.lapse-capture";
    std::vector<lapse::Interval> seen;
    {
        lapse::Device device = lapse::Runtime().open(cpu_config());
        device.record_into(open_capture(file));
        std::vector<lapse::Duration> kept;
        for (int i = 0; i < 300; ++i) kept.push_back(device.profile(0, [&] { device.submit(0, [] {}); }, {.name = "kept"}));
        // Some resolved at once, one by one; the rest in one batch later,
        // racing the collector.
        for (int i = 0; i < 100; ++i) REQUIRE(kept[static_cast<std::size_t>(i)].resolve());
        REQUIRE(device.resolve(kept));
        for (auto& d : kept) {
            REQUIRE(d.ready());
            seen.push_back(*d.interval());
        }
        device.profile(1, [] {}, {.name = "unkept"});
    }
    const ReadBack r = read_all(file);
    CHECK(r.count_by_name() == std::map<std::string, uint64_t>{{"kept", 300}, {"unkept", 1}});
    std::multiset<std::pair<int64_t, int64_t>> in_file, by_caller;
    for (const ReadWindow& w : r.windows)
        if (w.name == "kept") in_file.insert({w.w.start_ns, w.w.end_ns});
    for (const auto& iv : seen) by_caller.insert({iv.start_ns, iv.end_ns});
    CHECK(in_file == by_caller);
}

TEST_CASE("a span of unnamed windows with recorded ones among them resolves whole, each named one recorded once",
          "[capture][recording][span]")
{
    TempDir dir;
    const auto file = dir.path / "mixed.lapse-capture";
    uint64_t named = 0;
    std::multiset<std::pair<int64_t, int64_t>> by_caller;
    {
        lapse::Device device = lapse::Runtime().open(cpu_config());
        const auto capture = open_capture(file);
        device.record_into(capture);
        // Runs of unnamed windows broken by named ones at uneven places,
        // over more than one of the core's chunks: each named window is
        // shared with the collector, so a run resolved in place must stop
        // before it and leave it to the claim. Half the span is resolved
        // after the collector took its named windows' tokens (their numbers
        // then come from the collector), half before it can.
        std::vector<lapse::Duration> mixed;
        for (int i = 0; i < 700; ++i) {
            const bool is_named = i % 7 == 3 || i % 131 == 0;
            named += is_named;
            mixed.push_back(is_named ? device.profile(0, [] {}, {.name = "among"}) : device.profile(0, [] {}));
        }
        const std::span<lapse::Duration> first(mixed.data(), 350), second(mixed.data() + 350, 350);
        REQUIRE(device.resolve(second));
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (capture->stats().recorded < named && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        REQUIRE(capture->stats().recorded == named);
        REQUIRE(device.resolve(first));
        for (const lapse::Duration& d : mixed) {
            REQUIRE(d.ready());
            if (d.name() == "among") by_caller.insert({d.interval()->start_ns, d.interval()->end_ns});
        }
        CHECK(by_caller.size() == named);
    }
    const ReadBack r = read_all(file);
    CHECK(r.count_by_name() == std::map<std::string, uint64_t>{{"among", named}});
    std::multiset<std::pair<int64_t, int64_t>> in_file;
    for (const ReadWindow& w : r.windows) in_file.insert({w.w.start_ns, w.w.end_ns});
    CHECK(in_file == by_caller);
}

TEST_CASE("the scoped guard records at scope exit and abandons on an exception", "[capture][recording][scope]")
{
    TempDir dir;
    const auto file = dir.path / "scope.lapse-capture";
    {
        lapse::Device device = lapse::Runtime().open(cpu_config());
        device.record_into(open_capture(file));
        for (int i = 0; i < 1000; ++i) {
            LAPSE_SCOPE(device, 0, "guarded");
            device.submit(0, [] {});
        }
        try {
            LAPSE_SCOPE(device, 0, "thrown");
            throw std::runtime_error("left by an exception");
        } catch (const std::runtime_error&) {
        }
        lapse::ScopedWindow early(device, 1, "early");
        lapse::Duration d = early.duration();
        CHECK(d.resolve());
    }
    const ReadBack r = read_all(file);
    CHECK(r.count_by_name() == std::map<std::string, uint64_t>{{"early", 1}, {"guarded", 1000}});
}

TEST_CASE("split pairs closed on another thread record both threads", "[capture][recording][split]")
{
    TempDir dir;
    const auto file = dir.path / "split.lapse-capture";
    uint64_t opener = 0, closer = 0;
    {
        lapse::Device device = lapse::Runtime().open(cpu_config());
        device.record_into(open_capture(file));
        std::vector<lapse::Window> open;
        for (int i = 0; i < 1000; ++i) open.push_back(device.profile_start(1, "handoff"));
        opener = static_cast<uint64_t>(::gettid());
        std::thread other([&] {
            closer = static_cast<uint64_t>(::gettid());
            for (auto& w : open) device.profile_end(w);  // Durations dropped
        });
        other.join();
    }
    const ReadBack r = read_all(file);
    REQUIRE(r.windows.size() == 1000);
    for (const ReadWindow& w : r.windows) {
        CHECK(w.w.thread == opener);
        CHECK(w.w.close_thread == closer);
    }
    CHECK(opener != closer);
}

TEST_CASE("failed and not-measured windows are recorded with their state and cause", "[capture][recording]")
{
    TempDir dir;
    const auto file = dir.path / "failed.lapse-capture";
    {
        lapse::Device device = lapse::Runtime().open(cpu_config(1));
        device.record_into(open_capture(file));
        lapse::Window w = device.profile_start(7, "bad stream");  // no stream 7: fails to open
        lapse::Duration d = device.profile_end(w);
        CHECK(d.failed());
        device.profile(0, [] {}, {.name = "nothing ran"});  // cpu: empty window is not measured or ready
    }
    const ReadBack r = read_all(file);
    REQUIRE(r.windows.size() == 2);
    bool saw_failed = false;
    for (const ReadWindow& w : r.windows)
        if (w.name == "bad stream") {
            saw_failed = true;
            CHECK(w.w.state == lapse::DurationState::failed);
            CHECK(w.w.failure < 0);
            CHECK_FALSE(w.cause.empty());
        }
    CHECK(saw_failed);
}

TEST_CASE("a sink that cannot keep up: recorded + dropped == opened per name, memory within the budget", "[capture][budget]")
{
    auto sink = std::make_shared<ThrottledMemorySink>(std::chrono::milliseconds(20));
    lapse::CaptureOptions o;
    o.sink = sink;
    o.budget_bytes = 64 * 1024;
    o.flush_interval = std::chrono::milliseconds(1);
    auto capture = lapse::Capture::open(o);
    const std::map<std::string, uint64_t> opened{{"alpha", 20000}, {"beta", 10000}};
    {
        lapse::Device device = lapse::Runtime().open(cpu_config());
        device.record_into(capture);
        for (int i = 0; i < 20000; ++i) {
            device.profile(0, [] {}, {.name = "alpha"});
            if (i % 2 == 0) device.profile(1, [] {}, {.name = "beta"});
        }
    }
    capture->close();
    const lapse::CaptureStats stats = capture->stats();
    CHECK(stats.dropped > 0);  // the throttle made it drop
    CHECK(stats.peak_held_bytes <= o.budget_bytes);
    const ReadBack r = read_all(sink->bytes());
    CHECK(r.damage.empty());
    CHECK(r.complete);
    std::map<std::string, uint64_t> recorded = r.count_by_name(), dropped;
    for (const auto& d : r.dropped) dropped[d.name] = d.count;
    for (const auto& [name, count] : opened) {
        INFO(name);
        CHECK(recorded[name] + dropped[name] == count);
    }
    CHECK(stats.recorded + stats.dropped == 30000);
}

TEST_CASE("the block policy never drops", "[capture][budget]")
{
    auto sink = std::make_shared<ThrottledMemorySink>(std::chrono::milliseconds(2));
    lapse::CaptureOptions o;
    o.sink = sink;
    o.budget_bytes = 64 * 1024;
    o.policy = lapse::CapturePolicy::block;
    auto capture = lapse::Capture::open(o);
    {
        lapse::Device device = lapse::Runtime().open(cpu_config());
        device.record_into(capture);
        for (int i = 0; i < 5000; ++i) device.profile(0, [] {}, {.name = "blocked"});
    }
    capture->close();
    CHECK(capture->stats().dropped == 0);
    CHECK(capture->stats().peak_held_bytes <= o.budget_bytes);
    CHECK(read_all(sink->bytes()).windows.size() == 5000);
}

TEST_CASE("unnamed windows are not recorded", "[capture][recording]")
{
    TempDir dir;
    const auto file = dir.path / "unnamed.lapse-capture";
    {
        lapse::Device device = lapse::Runtime().open(cpu_config());
        device.record_into(open_capture(file));
        for (int i = 0; i < 100; ++i) device.profile(0, [] {});
        device.profile(0, [] {}, {.name = "one"});
    }
    CHECK(read_all(file).windows.size() == 1);
}

namespace {

// How many of this process's threads carry `name` (/proc/self/task/*/comm).
int threads_named(const std::string& name)
{
    int n = 0;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::string comm = read_file(task.path() / "comm");
        while (!comm.empty() && comm.back() == '\n') comm.pop_back();
        n += comm == name;
    }
    return n;
}

}  // namespace

TEST_CASE("a capture's collector runs on a thread named lapse-capture, gone once the capture closes", "[capture][recording]")
{
    TempDir dir;
    const int before = threads_named("lapse-capture");
    auto capture = open_capture(dir.path / "named-thread.lapse-capture");
    CHECK(threads_named("lapse-capture") == before + 1);
    capture->close();
    CHECK(threads_named("lapse-capture") == before);
}

TEST_CASE("a capture reaches the file while the run goes on, within the flush interval", "[capture][recording]")
{
    TempDir dir;
    const auto file = dir.path / "live.lapse-capture";
    lapse::Device device = lapse::Runtime().open(cpu_config());
    auto capture = open_capture(file);
    device.record_into(capture);
    for (int i = 0; i < 10; ++i) device.profile(0, [] {}, {.name = "early"});
    // 100 ms is the promise; a loaded machine gets ten times that.
    std::size_t seen = 0;
    for (int i = 0; i < 100 && seen < 10; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        seen = read_all(file).windows.size();
    }
    CHECK(seen == 10);
    CHECK_FALSE(read_all(file).complete);  // still open
}

TEST_CASE("windows resolved by their callers on several threads while the collector runs are each recorded once", "[capture][recording][threads]")
{
    TempDir dir;
    const auto file = dir.path / "threads.lapse-capture";
    constexpr int threads = 4, per_thread = 3000;
    std::vector<std::vector<std::pair<int64_t, int64_t>>> resolved(threads);
    {
        lapse::Device device = lapse::Runtime().open(cpu_config());
        device.record_into(open_capture(file));
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                const std::string name = "thread " + std::to_string(t);
                for (int i = 0; i < per_thread; ++i) {
                    lapse::Duration d = device.profile(t % 2, [&] { device.submit(t % 2, [] {}); }, {.name = name});
                    if (i % 2 == 0) continue;  // dropped: the collector's
                    if (auto iv = d.resolve()) resolved[static_cast<std::size_t>(t)].push_back({iv->start_ns, iv->end_ns});
                }
            });
        for (auto& th : pool) th.join();
    }
    const ReadBack r = read_all(file);
    std::map<std::string, std::multiset<std::pair<int64_t, int64_t>>> in_file;
    for (const ReadWindow& w : r.windows) in_file[w.name].insert({w.w.start_ns, w.w.end_ns});
    for (int t = 0; t < threads; ++t) {
        const std::string name = "thread " + std::to_string(t);
        INFO(name);
        CHECK(in_file[name].size() == per_thread);
        for (const auto& iv : resolved[static_cast<std::size_t>(t)]) CHECK(in_file[name].count(iv) >= 1);
    }
}
