// CUDA graph capture: an event recorded inside a capture is a node of the
// graph, not a timestamp, and cannot be queried. Windows are refused on a
// capturing host stream with the reason; a window recorded into a capture
// otherwise fails alone; no other window is poisoned.
#include "cuda_support.hpp"

using namespace lapse::test;

using Catch::Matchers::Contains;

namespace {
constexpr int64_t kMs = 1000000;
}

TEST_CASE("cuda: profile_start on a capturing host stream is refused with the reason, harming nothing", "[cuda][capture]")
{
    FakeDevice d;
    HostStream host(d.context());
    CUstream_st* mine = host.stream;
    const lapse_stream index = d.register_stream(mine);

    lapse_token other = d.start(0);
    fake_cuda_set_capturing(mine, 1);  // the host captures a graph on its stream
    lapse_token t{};
    lapse_error e = make_error();
    CHECK(d.p().profile_start(d.device, index, &t, &e) == LAPSE_ERROR_UNSUPPORTED);
    CHECK_THAT(std::string(e.message), Contains("profile_start on stream " + std::to_string(index) + " refused"));
    CHECK_THAT(std::string(e.message), Contains("capturing a CUDA graph"));
    fake_cuda_set_capturing(mine, 0);

    d.busy(0, 2 * kMs);
    d.end(other);
    lapse_duration r = d.resolve(other);
    CHECK(r.state == LAPSE_DURATION_READY);
    CHECK(r.end_ns - r.start_ns >= 2 * kMs - 1000);
    lapse_token after = d.start(index);  // the stream is usable again
    d.end(after);
    CHECK(d.resolve(after).state == LAPSE_DURATION_READY);
    REQUIRE(d.ext->unregister_stream(d.device, index, nullptr) == LAPSE_OK);
    host.reset();
}

TEST_CASE("cuda: a window opened inside a capture on the device's own stream fails alone", "[cuda][capture]")
{
    FakeDevice d({{"streams", int64_t{2}}});
    lapse_token other = d.start(1);
    CUstream_st* s = d.stream(0);
    fake_cuda_set_capturing(s, 1);  // begun by the host inside a submit
    lapse_token t = d.start(0);     // not checked on the hot path of own streams
    d.end(t);
    fake_cuda_set_capturing(s, 0);
    d.end(other);
    lapse_status st = LAPSE_OK;
    CHECK(d.resolve(t, LAPSE_WAIT_FOREVER, &st).state == LAPSE_DURATION_FAILED);
    CHECK_THAT(d.last_message, Contains("CUDA_ERROR_CAPTURED_EVENT"));
    CHECK(d.resolve(other).state == LAPSE_DURATION_READY);
}

TEST_CASE("cuda: a window whose stream began a capture while it was open fails alone", "[cuda][capture]")
{
    FakeDevice d({{"streams", int64_t{2}}});
    lapse_token other = d.start(1);
    lapse_token t = d.start(0);
    CUstream_st* s = d.stream(0);
    fake_cuda_set_capturing(s, 1);
    d.end(t);  // its end event is now a node of the graph
    fake_cuda_set_capturing(s, 0);
    d.busy(1, 1 * kMs);
    d.end(other);

    lapse_status st = LAPSE_OK;
    lapse_duration r = d.resolve(t, LAPSE_WAIT_FOREVER, &st);
    CHECK(r.state == LAPSE_DURATION_FAILED);
    CHECK(st == LAPSE_ERROR_DEVICE);
    CHECK_THAT(d.last_message, Contains("CUDA_ERROR_CAPTURED_EVENT"));
    // Not poisoned: the window open on the other stream across all this.
    CHECK(d.resolve(other).state == LAPSE_DURATION_READY);
}

TEST_CASE("cuda: host work is refused on a capturing stream (it would run at graph launch)", "[cuda][capture][submit]")
{
    FakeDevice d({{"submit", std::string("host")}});
    fake_cuda_set_capturing(d.stream(0), 1);
    bool called = false;
    lapse_error e = make_error();
    CHECK(d.p().submit(
              d.device, 0, [](void* u, void*) { *static_cast<bool*>(u) = true; }, &called, &e) ==
          LAPSE_ERROR_UNSUPPORTED);
    CHECK_THAT(std::string(e.message), Contains("submit on stream 0 refused"));
    fake_cuda_set_capturing(d.stream(0), 0);
    REQUIRE(d.p().sync(d.device, 0, nullptr) == LAPSE_OK);
    CHECK_FALSE(called);
}
