// Errors poison: a CUDA error while windows are open marks them FAILED, so
// a failed run never reads as a fast one; and every CUresult failure becomes
// a status whose message names the call and the driver's name for the code.
#include "cuda_support.hpp"

using namespace lapse::test;
using Catch::Matchers::Contains;

namespace {
constexpr int kIllegalAddress = 700;
constexpr int kLaunchFailed = 719;
}  // namespace

TEST_CASE("cuda: a sticky device error fails the windows open across it", "[cuda][errors]")
{
    FakeDevice d;
    lapse_token before = d.start(0);
    d.end(before);
    lapse_token open = d.start(0);
    fake_cuda_set_sticky_error(kIllegalAddress);

    // Starting now fails, naming the call and the error.
    lapse_token t{};
    lapse_error e = make_error();
    CHECK(d.p().profile_start(d.device, 0, &t, &e) == LAPSE_ERROR_DEVICE);
    CHECK_THAT(std::string(e.message), Contains("profile_start: cu"));
    CHECK_THAT(std::string(e.message), Contains("failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)"));

    // Closing the open window fails too, and it reads FAILED, not a duration.
    CHECK(d.p().profile_end(d.device, open, nullptr, &e) == LAPSE_ERROR_DEVICE);
    fake_cuda_set_sticky_error(0);  // (the double lets the test look afterwards)
    lapse_status st = LAPSE_OK;
    lapse_duration r = d.resolve(open, LAPSE_WAIT_FOREVER, &st);
    CHECK(st == LAPSE_ERROR_DEVICE);
    CHECK(r.state == LAPSE_DURATION_FAILED);
    CHECK(r.failure == LAPSE_ERROR_DEVICE);
    // A window closed before the error, but not yet resolved, is failed too:
    // the error may come from its own work, reported late.
    r = d.resolve(before, LAPSE_WAIT_FOREVER, &st);
    CHECK(r.state == LAPSE_DURATION_FAILED);

    // Windows opened after the error are measured again.
    lapse_token after = d.start(0);
    d.busy(0, 1000000);
    d.end(after);
    CHECK(d.resolve(after).state == LAPSE_DURATION_READY);
}

TEST_CASE("cuda: a failed end record fails that window and the others open with it", "[cuda][errors]")
{
    FakeDevice d({{"streams", int64_t{2}}});
    lapse_token other = d.start(1);
    lapse_token t = d.start(0);
    fake_cuda_fail_next("cuEventRecord", kLaunchFailed, 1);
    lapse_error e = make_error();
    CHECK(d.p().profile_end(d.device, t, nullptr, &e) == LAPSE_ERROR_DEVICE);
    CHECK_THAT(std::string(e.message), Contains("profile_end: cuEventRecord failed: CUDA_ERROR_LAUNCH_FAILED (719)"));
    CHECK_THAT(std::string(e.message), Contains("unspecified launch failure"));
    lapse_status st = LAPSE_OK;
    CHECK(d.resolve(t, LAPSE_WAIT_FOREVER, &st).state == LAPSE_DURATION_FAILED);
    CHECK(st == LAPSE_ERROR_DEVICE);
    d.end(other);
    CHECK(d.resolve(other, LAPSE_WAIT_FOREVER, &st).state == LAPSE_DURATION_FAILED);
}

TEST_CASE("cuda: a failed start leaves nothing behind and poisons the open windows", "[cuda][errors]")
{
    FakeDevice d;
    lapse_token open = d.start(0);
    fake_cuda_fail_next("cuEventRecord", kLaunchFailed, 1);
    lapse_token t{};
    lapse_error e = make_error();
    CHECK(d.p().profile_start(d.device, 0, &t, &e) == LAPSE_ERROR_DEVICE);
    CHECK_THAT(std::string(e.message), Contains("profile_start: cuEventRecord failed"));
    d.end(open);
    lapse_status st = LAPSE_OK;
    CHECK(d.resolve(open, LAPSE_WAIT_FOREVER, &st).state == LAPSE_DURATION_FAILED);
}

TEST_CASE("cuda: an error met while resolving fails the window and names the call", "[cuda][errors]")
{
    FakeDevice d;
    lapse_token t = d.start(0);
    d.end(t);
    fake_cuda_fail_next("cuEventQuery", kIllegalAddress, 1);
    lapse_status st = LAPSE_OK;
    lapse_duration r = d.resolve(t, LAPSE_WAIT_FOREVER, &st);
    CHECK(st == LAPSE_ERROR_DEVICE);
    CHECK(r.state == LAPSE_DURATION_FAILED);
    CHECK_THAT(d.last_message, Contains("resolve: cuEventQuery failed: CUDA_ERROR_ILLEGAL_ADDRESS"));
}

TEST_CASE("cuda: a failed sync poisons the windows open during it", "[cuda][errors]")
{
    FakeDevice d;
    lapse_token t = d.start(0);
    fake_cuda_fail_next("cuStreamSynchronize", kIllegalAddress, 1);
    lapse_error e = make_error();
    CHECK(d.p().sync(d.device, 0, &e) == LAPSE_ERROR_DEVICE);
    CHECK_THAT(std::string(e.message), Contains("sync of stream 0: cuStreamSynchronize failed"));
    d.end(t);
    lapse_status st = LAPSE_OK;
    CHECK(d.resolve(t, LAPSE_WAIT_FOREVER, &st).state == LAPSE_DURATION_FAILED);
}

TEST_CASE("cuda: an error while waiting forever fails the window instead of hanging", "[cuda][errors]")
{
    FakeDevice d;
    CUstream_st* s = d.stream(0);
    fake_cuda_hold(s);
    lapse_token t = d.start(0);
    d.end(t);
    fake_cuda_fail_next("cuEventSynchronize", kIllegalAddress, 1);
    lapse_status st = LAPSE_OK;
    lapse_duration r = d.resolve(t, LAPSE_WAIT_FOREVER, &st);
    CHECK(r.state == LAPSE_DURATION_FAILED);
    CHECK(st == LAPSE_ERROR_DEVICE);
    fake_cuda_release(s);
}
