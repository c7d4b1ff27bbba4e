// submit = "host": the work runs as a CUDA host function, on the driver's
// thread, in stream order, and exactly once on every path the ABI promises
// it: also when the launch fails (then never, and the caller keeps `user`),
// when the context fails before the driver reached it (the driver then
// never calls it), and when the device closes with it still pending.
#include "cuda_support.hpp"

#include <atomic>
#include <thread>

using namespace lapse::test;
using Catch::Matchers::Contains;


namespace {

constexpr int64_t kMs = 1000000;
constexpr int kIllegalAddress = 700;

// The work box a host hands submit: counts its calls, remembers where it ran.
struct Box {
    std::atomic<int> calls{0};
    std::atomic<bool> on_driver_thread{false};
    std::thread::id thread;
};

void run_box(void* user, void*)
{
    auto* b = static_cast<Box*>(user);
    b->thread = std::this_thread::get_id();
    b->on_driver_thread = fake_cuda_on_host_function_thread() != 0;
    ++b->calls;
}

}  // namespace

TEST_CASE("cuda: host work runs on the driver's thread, not the submitter's, exactly once", "[cuda][submit]")
{
    FakeDevice d({{"submit", std::string("host")}});
    Box box;
    lapse_token t = d.start(0);
    REQUIRE(d.p().submit(d.device, 0, &run_box, &box, nullptr) == LAPSE_OK);
    d.end(t);
    CHECK(d.resolve(t).state == LAPSE_DURATION_READY);
    REQUIRE(d.p().sync(d.device, 0, nullptr) == LAPSE_OK);
    CHECK(box.calls == 1);
    CHECK(box.on_driver_thread);
    CHECK(box.thread != std::this_thread::get_id());
}

TEST_CASE("cuda: a failed cuLaunchHostFunc never calls the work and fails the open windows", "[cuda][submit][errors]")
{
    FakeDevice d({{"submit", std::string("host")}});
    Box box;
    lapse_token t = d.start(0);
    fake_cuda_fail_next("cuLaunchHostFunc", kIllegalAddress, 1);
    lapse_error e = make_error();
    CHECK(d.p().submit(d.device, 0, &run_box, &box, &e) == LAPSE_ERROR_DEVICE);
    CHECK_THAT(std::string(e.message), Contains("submit: cuLaunchHostFunc failed: CUDA_ERROR_ILLEGAL_ADDRESS"));
    d.end(t);
    lapse_status st = LAPSE_OK;
    CHECK(d.resolve(t, LAPSE_WAIT_FOREVER, &st).state == LAPSE_DURATION_FAILED);
    REQUIRE(d.p().sync(d.device, LAPSE_ALL_STREAMS, nullptr) == LAPSE_OK);
    CHECK(box.calls == 0);  // the caller still owns it
}

TEST_CASE("cuda: host work the driver drops after a context error still runs once, and its window fails", "[cuda][submit][errors]")
{
    FakeDevice d({{"submit", std::string("host")}});
    CUstream_st* s = d.stream(0);
    Box box;
    fake_cuda_hold(s);  // the work is queued behind something long
    lapse_token t = d.start(0);
    REQUIRE(d.p().submit(d.device, 0, &run_box, &box, nullptr) == LAPSE_OK);
    d.end(t);
    fake_cuda_set_sticky_error(kIllegalAddress);  // the context fails before the stream reaches it

    SECTION("found by sync")
    {
        lapse_error e = make_error();
        CHECK(d.p().sync(d.device, 0, &e) == LAPSE_ERROR_DEVICE);
        CHECK(box.calls == 1);  // run by the plugin: the driver never will
        CHECK_FALSE(box.on_driver_thread);
        // Should the driver still reach it, it does not run twice.
        fake_cuda_set_sticky_error(0);
        fake_cuda_release(s);
        REQUIRE(d.p().sync(d.device, 0, nullptr) == LAPSE_OK);
        CHECK(box.calls == 1);
        lapse_status st = LAPSE_OK;
        CHECK(d.resolve(t, LAPSE_WAIT_FOREVER, &st).state == LAPSE_DURATION_FAILED);
        CHECK(st == LAPSE_ERROR_DEVICE);
    }
    SECTION("found by close")
    {
        fake_cuda_release(s);  // the driver drops it: context in error
        CHECK(counters().host_functions_dropped == 1);
        CHECK(box.calls == 0);
        d.close();
        CHECK(box.calls == 1);
        bool said = false;
        for (const auto& line : d.loaded.host().logs())
            said = said || line.text.find("1 host function(s) the driver will not run") != std::string::npos;
        CHECK(said);
        fake_cuda_set_sticky_error(0);
    }
}

TEST_CASE("cuda: closing drains host work pending on a host-owned stream before it returns", "[cuda][submit][extension]")
{
    FakeDevice d({{"submit", std::string("host")}});
    HostStream host(d.context());
    CUstream_st* mine = host.stream;
    const lapse_stream index = d.register_stream(mine);
    Box box;
    fake_cuda_hold(mine);
    REQUIRE(d.p().submit(d.device, index, &run_box, &box, nullptr) == LAPSE_OK);
    std::thread releaser([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        fake_cuda_release(mine);
    });
    int64_t t0 = now_ns();
    // Closed by hand: the host's own stream outlives the device here.
    d.p().close(d.device);  // must not return while the driver can still call into the plugin
    d.device = nullptr;
    int64_t waited = now_ns() - t0;
    releaser.join();
    CHECK(box.calls == 1);
    CHECK(box.on_driver_thread);
    CHECK(waited >= 40 * kMs);
    host.reset();
    CHECK(counters().streams_live == 0);
    CHECK(counters().events_live == 0);
}

TEST_CASE("cuda: unregistering a host-owned stream waits for the host work submitted to it", "[cuda][submit][extension]")
{
    FakeDevice d({{"submit", std::string("host")}});
    HostStream host(d.context());
    CUstream_st* mine = host.stream;
    const lapse_stream index = d.register_stream(mine);
    Box box;
    REQUIRE(d.p().submit(d.device, index, &run_box, &box, nullptr) == LAPSE_OK);
    REQUIRE(d.ext->unregister_stream(d.device, index, nullptr) == LAPSE_OK);
    // Once unregistered the host may destroy the stream: nothing of ours is
    // pending on it any more.
    CHECK(box.calls == 1);
    host.reset();
}

TEST_CASE("cuda: host work of another stream can sit inside a window: the driver runs host functions one at a time", "[cuda][submit]")
{
    // What README.md warns about, shown through the double (which, like the
    // real driver may, runs every stream's host functions on one thread).
    FakeDevice d({{"submit", std::string("host")}, {"streams", int64_t{2}}});
    struct Spin {
        int64_t ns;
    } slow{60 * kMs}, quick{1};
    auto spin = [](void* user, void*) {
        int64_t until = now_ns() + static_cast<Spin*>(user)->ns;
        while (now_ns() < until) {
        }
    };
    REQUIRE(d.p().submit(d.device, 0, spin, &slow, nullptr) == LAPSE_OK);
    lapse_token t = d.start(1);
    REQUIRE(d.p().submit(d.device, 1, spin, &quick, nullptr) == LAPSE_OK);
    d.end(t);
    lapse_duration r = d.resolve(t);
    REQUIRE(d.p().sync(d.device, LAPSE_ALL_STREAMS, nullptr) == LAPSE_OK);
    CHECK(r.state == LAPSE_DURATION_READY);
    CHECK(r.end_ns - r.start_ns >= 20 * kMs);  // stream 1's window waited for stream 0's host work
}
