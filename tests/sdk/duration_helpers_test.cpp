// The SDK's duration writers and checker (lapse/sdk/duration.hpp).
#include <lapse/sdk/duration.hpp>

#include <catch2/catch.hpp>

#include <climits>
#include <cstring>

using namespace lapse::sdk;

namespace {
lapse_duration garbage()
{
    lapse_duration d;
    std::memset(&d, 0xAB, sizeof d);
    d.struct_size = sizeof d;
    return d;
}
}  // namespace

TEST_CASE("set_failed writes method none, no clock, no times, no flags, and keeps struct_size", "[sdk][duration]")
{
    lapse_duration d = garbage();
    set_failed(d, LAPSE_ERROR_DEVICE);
    CHECK(d.struct_size == sizeof d);
    CHECK(d.state == LAPSE_DURATION_FAILED);
    CHECK(d.failure == LAPSE_ERROR_DEVICE);
    CHECK(d.method == LAPSE_TIMING_NONE);
    CHECK(d.clock_domain == LAPSE_CLOCK_NONE);
    CHECK(d.start_ns == 0);
    CHECK(d.end_ns == 0);
    CHECK(d.flags == 0);
    CHECK(d.queued_ops == 0);
}

TEST_CASE("set_duration keeps a method only for READY, and saturates queued_ops", "[sdk][duration]")
{
    lapse_duration d = garbage();
    set_duration(d, LAPSE_DURATION_FAILED, LAPSE_ERROR_DEVICE, LAPSE_TIMING_DEVICE, LAPSE_CLOCK_DEVICE, 1, 2);
    CHECK(d.method == LAPSE_TIMING_NONE);
    set_duration(d, LAPSE_DURATION_READY, LAPSE_OK, LAPSE_TIMING_DEVICE, LAPSE_CLOCK_DEVICE, 1, 2,
                 LAPSE_DURATION_WORK_QUEUED, 1u << 20);
    CHECK(d.method == LAPSE_TIMING_DEVICE);
    CHECK(d.flags == LAPSE_DURATION_WORK_QUEUED);
    CHECK(d.queued_ops == LAPSE_DURATION_QUEUED_OPS_MAX);
    lapse_duration copy = garbage();
    copy_duration(copy, d);
    CHECK(copy.flags == d.flags);
    CHECK(copy.queued_ops == d.queued_ops);
    CHECK(copy.end_ns == 2);
}

TEST_CASE("impossible_duration names what no duration may be", "[sdk][duration]")
{
    lapse_duration d = garbage();
    set_duration(d, LAPSE_DURATION_READY, LAPSE_OK, LAPSE_TIMING_DEVICE, LAPSE_CLOCK_DEVICE, 10, 20);
    CHECK(impossible_duration(d) == nullptr);
    lapse_duration e = d;
    e.start_ns = INT64_MIN;
    e.end_ns = INT64_MAX;
    CHECK(impossible_duration(e) != nullptr);
    e = d;
    e.end_ns = 5;
    CHECK(impossible_duration(e) != nullptr);
    e = d;
    e.method = 3;
    CHECK(impossible_duration(e) != nullptr);
    e = d;
    e.clock_domain = 0;
    CHECK(impossible_duration(e) != nullptr);
    e = d;
    e.state = 4;
    CHECK(impossible_duration(e) != nullptr);
    e = d;
    e.clock_domain = LAPSE_CLOCK_HOST_MONOTONIC;
    e.start_ns = -5;
    CHECK(impossible_duration(e) != nullptr);
    set_failed(e, LAPSE_ERROR_DEVICE);
    CHECK(impossible_duration(e) == nullptr);
}
