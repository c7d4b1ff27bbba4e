// The CPU plugin as a whole: descriptor, config, inline mode, close.
#include "cpu_plugin.hpp"
#include "stamp_clock.hpp"

#include <atomic>
#include <thread>

using namespace lapse_test;

TEST_CASE("the descriptor names the plugin and its static capabilities", "[device]")
{
    TestHost host;
    const lapse_plugin* p = cpu_entry()(host.get());
    REQUIRE(p != nullptr);
    CHECK(p->struct_size == sizeof(lapse_plugin));
    CHECK(p->abi_major == LAPSE_ABI_MAJOR);
    CHECK(std::string(p->name) == "cpu");
    const uint64_t want = LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING |
                          LAPSE_CAP_SPLIT_THREADS | LAPSE_CAP_HOST_TIMELINE;
    CHECK(p->capabilities == want);
    CHECK((p->capabilities & (LAPSE_CAP_SINGLE_WINDOW | LAPSE_CAP_BATCHING)) == 0);
}

TEST_CASE("a host of another ABI major is refused, saying why", "[device]")
{
    TestHost host;
    host.mutable_host()->abi_major = LAPSE_ABI_MAJOR + 1;
    CHECK(cpu_entry()(host.get()) == nullptr);
    CHECK(host.logged(LAPSE_LOG_ERROR, "ABI"));
}

TEST_CASE("stream mode describes N streams with a device clock on the host timeline", "[device]")
{
    CpuDevice dev({{"streams", int64_t{5}}});
    REQUIRE(dev.opened());
    lapse_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE(dev.plugin().describe(dev.device(), &info, nullptr) == LAPSE_OK);
    CHECK(info.stream_count == 5);
    CHECK(info.capabilities == (LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING |
                                LAPSE_CAP_SPLIT_THREADS | LAPSE_CAP_HOST_TIMELINE));
    CHECK_THAT(info.name, Catch::Contains("5 worker streams"));
    // Which clock the workers stamp with: what a marker costs them, and
    // the source of every number.
    const bool tsc = lapse::cpu::StampClock::detect_tsc();
    CHECK_THAT(info.name, Catch::EndsWith(tsc ? ", TSC stamps)" : ", CLOCK_MONOTONIC stamps)"));
    dev.ready([&] {
        lapse_token t = dev.start(4);
        dev.end_ok(t);
        return t;
    }());
}

TEST_CASE("the default device has two streams", "[device][config]")
{
    CpuDevice dev;
    lapse_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE(dev.plugin().describe(dev.device(), &info, nullptr) == LAPSE_OK);
    CHECK(info.stream_count == 2);
    // Every accepted key is read, so the host can refuse typos.
    const auto keys = dev.host().keys_read();
    for (const char* k : {"mode", "streams", "queue_capacity", "window_capacity"}) CHECK(keys.count(k) == 1);
}

TEST_CASE("bad config values are config errors naming the key", "[device][config]")
{
    struct Case {
        std::map<std::string, ConfigValue> config;
        const char* key;
    };
    const Case cases[] = {
        {{{"streams", int64_t{0}}}, "streams"},
        {{{"streams", int64_t{65}}}, "streams"},
        {{{"streams", std::string("two")}}, "streams"},
        {{{"mode", std::string("gpu")}}, "mode"},
        {{{"mode", int64_t{1}}}, "mode"},
        {{{"queue_capacity", int64_t{8}}}, "queue_capacity"},
        {{{"mode", std::string("inline")}, {"streams", int64_t{-1}}}, "streams"},
    };
    for (const Case& c : cases) {
        CpuDevice dev(c.config);
        INFO(dev.error.message);
        CHECK_FALSE(dev.opened());
        CHECK(dev.status == LAPSE_ERROR_CONFIG);
        CHECK(dev.error.code == LAPSE_ERROR_CONFIG);
        CHECK_THAT(dev.error.message, Catch::Contains(c.key));
    }
}

TEST_CASE("queue capacities that would hold more than 64 MiB while idle are refused, naming the key and the limit",
          "[device][config]")
{
    // 2^24 cells of 4 bytes on 4 streams: in range for the key, 256 MiB of
    // rings at open.
    CpuDevice big({{"streams", int64_t{4}}, {"queue_capacity", int64_t{1} << 24}});
    CHECK_FALSE(big.opened());
    CHECK(big.status == LAPSE_ERROR_CONFIG);
    CHECK_THAT(big.error.message, Catch::Contains("queue_capacity") &&
                                      Catch::Contains("16777216 cells on each of 4 streams would hold 256 MiB") &&
                                      Catch::Contains("more than the limit of 64 MiB"));
    // The largest first ring on one stream (64 MiB) is still accepted.
    CpuDevice fits({{"streams", int64_t{1}}, {"queue_capacity", int64_t{1} << 24}});
    CHECK(fits.opened());
}

TEST_CASE("inline mode runs work on the caller's thread and opens no windows", "[inline]")
{
    CpuDevice dev({{"mode", std::string("inline")}, {"streams", int64_t{3}}});
    REQUIRE(dev.opened());
    const auto keys = dev.host().keys_read();
    for (const char* k : {"mode", "streams", "queue_capacity", "window_capacity"}) CHECK(keys.count(k) == 1);

    lapse_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE(dev.plugin().describe(dev.device(), &info, nullptr) == LAPSE_OK);
    CHECK(info.stream_count == 3);
    CHECK((info.capabilities & LAPSE_CAP_DEVICE_CLOCK) == 0);
    CHECK(info.capabilities == 0);

    lapse_token t{};
    CHECK(dev.plugin().profile_start(dev.device(), 2, &t, nullptr) == LAPSE_NO_WINDOW);
    CHECK(t.id == 0);

    struct WhereAmI {
        std::thread::id ran_on;
        bool ran = false;
        void operator()()
        {
            ran_on = std::this_thread::get_id();
            ran = true;
        }
    } job;
    dev.submit(2, &job);
    CHECK(job.ran);  // before submit returned
    CHECK(job.ran_on == std::this_thread::get_id());
    dev.sync(LAPSE_ALL_STREAMS);
    dev.sync(1);

    lapse_error e = make_error();
    CHECK(dev.end({1, 0, 0}, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK_THAT(e.message, Catch::Contains("inline"));
    dev.abandon({1, 0, 0});
    lapse_duration d;
    CHECK(dev.resolve({1, 0, 0}, d, 0) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(d.state == LAPSE_DURATION_FAILED);
    lapse_token bad{};
    CHECK(dev.plugin().profile_start(dev.device(), 3, &bad, nullptr) == LAPSE_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("streams that do not exist are invalid arguments", "[device]")
{
    CpuDevice dev;
    lapse_token t{};
    lapse_error e = make_error();
    CHECK(dev.plugin().profile_start(dev.device(), 2, &t, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(e.message, Catch::Contains("stream 2"));
    int x = 0;
    CHECK(dev.plugin().submit(dev.device(), 9, [](void* u, void*) { ++*static_cast<int*>(u); }, &x, nullptr) ==
          LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(dev.plugin().sync(dev.device(), 2, nullptr) == LAPSE_ERROR_INVALID_ARGUMENT);
    dev.sync(LAPSE_ALL_STREAMS);
    CHECK(x == 0);
}

TEST_CASE("close runs the work still queued and abandons open windows, saying how many", "[device][close]")
{
    CpuDevice dev;
    std::atomic<int> ran{0};
    struct Sleepy {
        std::atomic<int>* ran;
        void operator()()
        {
            std::this_thread::sleep_for(std::chrono::microseconds(300));
            ran->fetch_add(1);
        }
    } job{&ran};
    for (int i = 0; i < 3; ++i) dev.start(0);  // never closed
    lapse_token closed = dev.start(1);
    dev.end_ok(closed);  // closed, never resolved
    for (int i = 0; i < 40; ++i) dev.submit(i % 2, &job);
    dev.close();
    CHECK(ran.load() == 40);
    CHECK(dev.host().logged(LAPSE_LOG_WARN, "3 window(s) still open"));
}

TEST_CASE("a device with nothing open closes silently", "[device][close]")
{
    CpuDevice dev;
    lapse_token t = dev.start(0);
    dev.end_ok(t);
    dev.ready(t);
    dev.close();
    for (const auto& l : dev.host().logs()) CHECK(l.level < LAPSE_LOG_WARN);
}

TEST_CASE("an idle worker sleeps and still wakes for new work", "[device]")
{
    CpuDevice dev({{"streams", int64_t{1}}});
    for (int i = 0; i < 5; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // long enough to fall asleep
        BusyJob job{100'000};
        lapse_token t = dev.start(0);
        dev.submit(0, &job);
        dev.end_ok(t);
        const lapse_duration d = dev.ready(t);
        CHECK(d.end_ns - d.start_ns >= 100'000);
    }
}

TEST_CASE("a tiny queue grows instead of dropping or blocking", "[device]")
{
    CpuDevice dev({{"streams", int64_t{1}}, {"queue_capacity", int64_t{16}}, {"window_capacity", int64_t{16}}});
    REQUIRE(dev.opened());
    std::atomic<bool> gate{false};
    struct Gate {
        std::atomic<bool>* open;
        void operator()()
        {
            while (!open->load()) std::this_thread::yield();
        }
    } g{&gate};
    dev.submit(0, &g);  // the worker is stuck: everything below stays queued
    std::vector<lapse_token> tokens;
    std::vector<int> order;
    struct Append {
        std::vector<int>* order;
        int v;
        void operator()() { order->push_back(v); }
    };
    std::vector<Append> jobs;
    jobs.reserve(5000);
    for (int i = 0; i < 5000; ++i) jobs.push_back({&order, i});
    for (int i = 0; i < 5000; ++i) {
        lapse_token t = dev.start(0);
        dev.submit(0, &jobs[i]);
        dev.end_ok(t);
        tokens.push_back(t);
    }
    gate = true;
    std::vector<lapse_duration> out(tokens.size(), make_duration());
    REQUIRE(dev.plugin().resolve(dev.device(), tokens.data(), out.data(), uint32_t(tokens.size()), LAPSE_WAIT_FOREVER,
                                 nullptr) == LAPSE_OK);
    for (const auto& d : out) REQUIRE(d.state == LAPSE_DURATION_READY);
    for (size_t i = 1; i < out.size(); ++i) REQUIRE(out[i - 1].end_ns <= out[i].start_ns);
    REQUIRE(order.size() == 5000);
    for (int i = 0; i < 5000; ++i) REQUIRE(order[i] == i);
}

TEST_CASE("sync from work running on the stream itself is refused instead of deadlocking", "[device][sync]")
{
    CpuDevice dev;
    struct SyncsItself {
        const lapse_plugin* p;
        lapse_device* d;
        lapse_status own = LAPSE_OK, all = LAPSE_OK, other = LAPSE_ERROR_INTERNAL;
        void operator()()
        {
            own = p->sync(d, 0, nullptr);
            all = p->sync(d, LAPSE_ALL_STREAMS, nullptr);
            other = p->sync(d, 1, nullptr);  // another stream: fine
        }
    } job{&dev.plugin(), dev.device()};
    dev.submit(0, &job);
    dev.sync(0);
    CHECK(job.own == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(job.all == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(job.other == LAPSE_OK);
}
