// Streams: the device's own (non-blocking, created at open), submit handing
// the CUstream with the context current, sync, and lapse.cuda.stream/1
// registering streams the host owns.
#include "cuda_support.hpp"

using namespace lapse::test;
using Catch::Matchers::Contains;

// More of the double's driver entry points, for the test to play the host
// that owns a CUDA stream (exported by libfake_cuda_driver.so, linked in).
extern "C" {
int cuStreamSynchronize(CUstream_st* stream);
int cuDevicePrimaryCtxRetain(CUctx_st** ctx, int device);
int cuDevicePrimaryCtxRelease_v2(int device);
}

namespace {

constexpr int64_t kMs = 1000000;

}  // namespace

TEST_CASE("cuda: describe reports the streams, capabilities and the device's name", "[cuda][streams]")
{
    FakeDevice d({{"streams", int64_t{3}}});
    lapse_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE(d.p().describe(d.device, &info, nullptr) == LAPSE_OK);
    CHECK(info.stream_count == 3);
    CHECK((info.capabilities & LAPSE_CAP_DEVICE_CLOCK) != 0);
    CHECK((info.capabilities & LAPSE_CAP_HOST_TIMELINE) != 0);
    CHECK_THAT(std::string(info.name), Contains("Fake CUDA Device 0"));
    CHECK(d.p().get_extension(d.device, "lapse.cuda.nothing/1") == nullptr);
    // Three distinct streams, plus the anchor's private one.
    CHECK(d.stream(0) != d.stream(1));
    CHECK(d.stream(1) != d.stream(2));
    CHECK(counters().streams_live == 4);
}

TEST_CASE("cuda: submit hands the callback the stream's CUstream with the context current", "[cuda][streams]")
{
    FakeDevice d({{"streams", int64_t{2}}});
    CUctx_st* ctx = nullptr;
    REQUIRE(d.ext->context(d.device, &ctx, nullptr) == LAPSE_OK);
    REQUIRE(ctx != nullptr);
    struct Seen {
        void* native = nullptr;
        CUctx_st* current = nullptr;
        int calls = 0;
    } seen;
    REQUIRE(fake_cuda_current_context() == nullptr);
    REQUIRE(d.p().submit(
                d.device, 1,
                [](void* user, void* native) {
                    auto* s = static_cast<Seen*>(user);
                    s->native = native;
                    s->current = fake_cuda_current_context();
                    ++s->calls;
                },
                &seen, nullptr) == LAPSE_OK);
    CHECK(seen.calls == 1);
    CHECK(seen.native == d.stream(1));
    CHECK(seen.current == ctx);
    CHECK(fake_cuda_current_context() == nullptr);  // and put back afterwards
}

TEST_CASE("cuda: a stream index that is not the device's is refused everywhere", "[cuda][streams]")
{
    FakeDevice d;
    lapse_error e = make_error();
    lapse_token t{};
    CHECK(d.p().profile_start(d.device, 1, &t, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(e.message), Contains("stream 1 is not a stream of this device"));
    bool called = false;
    CHECK(d.p().submit(
              d.device, 7, [](void* u, void*) { *static_cast<bool*>(u) = true; }, &called, &e) ==
          LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK_FALSE(called);
    CHECK(d.p().sync(d.device, 5, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("cuda: sync returns once the stream's work has run", "[cuda][streams]")
{
    FakeDevice d({{"streams", int64_t{2}}});
    int64_t t0 = now_ns();
    d.busy(0, 30 * kMs);
    d.busy(1, 10 * kMs);
    REQUIRE(d.p().sync(d.device, 1, nullptr) == LAPSE_OK);
    CHECK(now_ns() - t0 >= 10 * kMs);
    REQUIRE(d.p().sync(d.device, LAPSE_ALL_STREAMS, nullptr) == LAPSE_OK);
    CHECK(now_ns() - t0 >= 30 * kMs);
}

TEST_CASE("cuda: a host-owned stream registers, carries windows, and unregisters", "[cuda][streams][extension]")
{
    FakeDevice d({{"streams", int64_t{2}}});
    CUctx_st* ctx = nullptr;
    REQUIRE(d.ext->context(d.device, &ctx, nullptr) == LAPSE_OK);
    HostStream mine(ctx);

    lapse_stream index = 0;
    lapse_error e = make_error();
    REQUIRE(d.ext->register_stream(d.device, mine.stream, &index, &e) == LAPSE_OK);
    CHECK(index >= 2);
    CHECK(d.stream(index) == mine.stream);
    lapse_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE(d.p().describe(d.device, &info, nullptr) == LAPSE_OK);
    CHECK(info.stream_count == index + 1);

    // The host launches on its own stream, between the plugin's events.
    lapse_token t = d.start(index);
    REQUIRE(cuCtxPushCurrent_v2(ctx) == 0);
    REQUIRE(fake_cuda_launch_busy(mine.stream, 5 * kMs) == 0);
    CUctx_st* popped = nullptr;
    cuCtxPopCurrent_v2(&popped);

    CHECK(d.ext->unregister_stream(d.device, index, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(e.message), Contains("still open"));
    d.end(t);
    REQUIRE(d.ext->unregister_stream(d.device, index, &e) == LAPSE_OK);
    // Closed before unregistering: it still resolves.
    lapse_duration r = d.resolve(t);
    CHECK(r.state == LAPSE_DURATION_READY);
    CHECK(r.end_ns - r.start_ns >= 5 * kMs - 1000);

    lapse_token u{};
    CHECK(d.p().profile_start(d.device, index, &u, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(d.ext->unregister_stream(d.device, index, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(d.ext->unregister_stream(d.device, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(e.message), Contains("own streams"));

    // The index is handed out again.
    lapse_stream again = 0;
    REQUIRE(d.ext->register_stream(d.device, mine.stream, &again, &e) == LAPSE_OK);
    CHECK(again == index);
    REQUIRE(d.ext->unregister_stream(d.device, again, &e) == LAPSE_OK);
}

TEST_CASE("cuda: registering refuses the per-thread stream, other devices' streams, and past the limit", "[cuda][streams][extension]")
{
    FakeDevice d({{"max_registered_streams", int64_t{2}}}, false);
    fake_cuda_set_device_count(2);
    d.open();
    lapse_stream index = 0;
    lapse_error e = make_error();
    auto* per_thread = reinterpret_cast<CUstream_st*>(uintptr_t{2});  // CU_STREAM_PER_THREAD
    CHECK(d.ext->register_stream(d.device, per_thread, &index, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(e.message), Contains("CU_STREAM_PER_THREAD names a different stream on each thread"));

    CUctx_st* other = nullptr;
    REQUIRE(cuDevicePrimaryCtxRetain(&other, 1) == 0);
    {
        // The check the plugin can make: the stream's context, and through
        // it the device, named in the refusal.
        HostStream foreign(other);
        CHECK(d.ext->register_stream(d.device, foreign.stream, &index, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
        CHECK_THAT(std::string(e.message), Contains("belongs to a context of CUDA device 1"));
        CHECK_THAT(std::string(e.message), Contains("open a lapse device on device 1"));
    }
    cuDevicePrimaryCtxRelease_v2(1);
    CHECK(fake_cuda_current_context() == nullptr);  // the foreign context was popped again

    CUctx_st* ctx = nullptr;
    REQUIRE(d.ext->context(d.device, &ctx, nullptr) == LAPSE_OK);
    HostStream a(ctx), b(ctx), c(ctx);
    lapse_stream ia = 0, ib = 0, ic = 0;
    REQUIRE(d.ext->register_stream(d.device, a.stream, &ia, &e) == LAPSE_OK);
    REQUIRE(d.ext->register_stream(d.device, b.stream, &ib, &e) == LAPSE_OK);
    CHECK(ia != ib);
    CHECK(d.ext->register_stream(d.device, c.stream, &ic, &e) == LAPSE_ERROR_CAPACITY);
    CHECK_THAT(std::string(e.message), Contains("max_registered_streams"));
    d.ext->unregister_stream(d.device, ia, nullptr);
    d.ext->unregister_stream(d.device, ib, nullptr);
}

TEST_CASE("cuda: submit = \"host\" runs the work in stream order, timed like a kernel", "[cuda][streams][submit]")
{
    FakeDevice d({{"submit", std::string("host")}});
    struct Spin {
        int64_t ns;
        int calls = 0;
        void* native = nullptr;
    } spin{8 * kMs};
    auto fn = [](void* user, void* native) {
        auto* s = static_cast<Spin*>(user);
        int64_t until = now_ns() + s->ns;
        while (now_ns() < until) {
        }
        s->native = native;
        ++s->calls;
    };
    lapse_token t = d.start(0);
    REQUIRE(d.p().submit(d.device, 0, fn, &spin, nullptr) == LAPSE_OK);
    d.end(t);
    lapse_duration r = d.resolve(t);
    CHECK(spin.calls == 1);
    CHECK(spin.native == d.stream(0));
    CHECK(r.end_ns - r.start_ns >= 8 * kMs - 1000);

    // Behind a held stream the work waits its turn, then runs exactly once.
    CUstream_st* s = d.stream(0);
    fake_cuda_hold(s);
    spin.calls = 0;
    lapse_token u = d.start(0);
    REQUIRE(d.p().submit(d.device, 0, fn, &spin, nullptr) == LAPSE_OK);
    d.end(u);
    CHECK(spin.calls == 0);
    lapse_status st = LAPSE_OK;
    d.resolve(u, 0, &st);
    CHECK(st == LAPSE_NOT_READY);
    fake_cuda_release(s);
    CHECK(d.resolve(u).state == LAPSE_DURATION_READY);
    CHECK(spin.calls == 1);
}

TEST_CASE("cuda: submit must be \"launch\" or \"host\"", "[cuda][streams][submit]")
{
    FakeDevice d({{"submit", std::string("later")}}, false);
    lapse_device* device = nullptr;
    CHECK(d.loaded.open(d.config, &device) == LAPSE_ERROR_CONFIG);
    CHECK_THAT(std::string(d.loaded.last_error().message), Contains("submit"));
}

TEST_CASE("cuda: the legacy default stream registers, and its windows time the host's work on it", "[cuda][streams][legacy]")
{
    FakeDevice d;
    CUctx_st* ctx = nullptr;
    REQUIRE(d.ext->context(d.device, &ctx, nullptr) == LAPSE_OK);
    lapse_stream legacy = 0;
    lapse_error e = make_error();
    REQUIRE(d.ext->register_stream(d.device, nullptr, &legacy, &e) == LAPSE_OK);  // NULL: the legacy stream
    CHECK(d.stream(legacy) == reinterpret_cast<CUstream_st*>(uintptr_t{1}));     // kept as CU_STREAM_LEGACY

    // A PyTorch host launches on the legacy stream by default.
    lapse_token on_legacy = d.start(legacy);
    lapse_token on_own = d.start(0);
    REQUIRE(cuCtxPushCurrent_v2(ctx) == 0);
    REQUIRE(fake_cuda_launch_busy(nullptr, 10 * kMs) == 0);
    CUctx_st* popped = nullptr;
    cuCtxPopCurrent_v2(&popped);
    d.end(on_legacy);
    d.end(on_own);
    lapse_duration r = d.resolve(on_legacy);
    CHECK(r.end_ns - r.start_ns >= 10 * kMs - 1000);
    // The plugin's own streams are non-blocking: work on the legacy stream
    // is not in their windows (README.md: register the legacy stream).
    r = d.resolve(on_own);
    CHECK(r.end_ns - r.start_ns < 5 * kMs);
    REQUIRE(d.ext->unregister_stream(d.device, legacy, nullptr) == LAPSE_OK);
}

TEST_CASE("cuda: a window on the legacy stream includes the host's blocking streams' work, not non-blocking", "[cuda][streams][legacy]")
{
    FakeDevice d;
    CUctx_st* ctx = nullptr;
    REQUIRE(d.ext->context(d.device, &ctx, nullptr) == LAPSE_OK);
    lapse_stream legacy = 0;
    REQUIRE(d.ext->register_stream(d.device, reinterpret_cast<CUstream_st*>(uintptr_t{1}), &legacy, nullptr) ==
            LAPSE_OK);
    CUstream_st* blocking = nullptr;
    CUstream_st* non_blocking = nullptr;
    REQUIRE(cuCtxPushCurrent_v2(ctx) == 0);
    REQUIRE(cuStreamCreate(&blocking, 0) == 0);  // as cudaStreamCreate makes them
    REQUIRE(cuStreamCreate(&non_blocking, 1) == 0);
    CUctx_st* popped = nullptr;
    cuCtxPopCurrent_v2(&popped);

    // CUDA's documented implicit synchronisation: the legacy stream's end
    // event waits for the work of every blocking stream of the context.
    auto window_around = [&](CUstream_st* where) {
        lapse_token t = d.start(legacy);
        REQUIRE(cuCtxPushCurrent_v2(ctx) == 0);
        REQUIRE(fake_cuda_launch_busy(where, 15 * kMs) == 0);
        cuCtxPopCurrent_v2(&popped);
        d.end(t);
        lapse_duration r = d.resolve(t);
        REQUIRE(r.state == LAPSE_DURATION_READY);
        return r.end_ns - r.start_ns;
    };
    CHECK(window_around(blocking) >= 15 * kMs - 1000);
    REQUIRE(d.p().sync(d.device, LAPSE_ALL_STREAMS, nullptr) == LAPSE_OK);
    REQUIRE(cuCtxPushCurrent_v2(ctx) == 0);
    REQUIRE(cuStreamSynchronize(blocking) == 0);
    cuCtxPopCurrent_v2(&popped);
    CHECK(window_around(non_blocking) < 10 * kMs);

    REQUIRE(d.ext->unregister_stream(d.device, legacy, nullptr) == LAPSE_OK);
    REQUIRE(cuCtxPushCurrent_v2(ctx) == 0);
    cuStreamSynchronize(non_blocking);
    cuCtxPopCurrent_v2(&popped);
    cuStreamDestroy_v2(blocking);
    cuStreamDestroy_v2(non_blocking);
}
