// "No CUDA here" and "CUDA here, and it failed" are different answers: only
// the first is LAPSE_ERROR_UNAVAILABLE (a host skips), the second is an
// error whose message names the call, the code, its CUDA name and meaning,
// so a broken GPU never passes as "no GPU".
#include "cuda_support.hpp"

using namespace lapse::test;
using Catch::Matchers::Contains;

namespace {

struct Opened {
    lapse_status status;
    std::string message;
};

// Opens the plugin over the driver test double (set up by the caller after
// fake_cuda_reset), NVML answered by the double too.
Opened open_over_double()
{
    LoadedPlugin loaded(LAPSE_CUDA_PLUGIN_PATH);
    lapse_device* device = nullptr;
    lapse_status s = loaded.open({{"driver", std::string(LAPSE_FAKE_CUDA_DRIVER_PATH)},
                                  {"nvml", std::string(LAPSE_FAKE_CUDA_DRIVER_PATH)}},
                                 &device);
    if (device != nullptr) loaded.plugin()->close(device);
    Opened o{s, loaded.last_error().message};
    // Nothing taken is kept, whatever the answer.
    fake_cuda_counters c = counters();
    CHECK(c.primary_ctx_retained == 0);
    CHECK(c.streams_live == 0);
    CHECK(c.events_live == 0);
    return o;
}

struct Fault {
    int code;
    const char* name;
    const char* meaning;
};

const Fault kFaults[] = {
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "exclusive-process"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "kernel module are of different versions"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward-compatibility"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "failed for a reason of its own"},
};

void check_is_a_failure(const Opened& o, const Fault& f, const char* call)
{
    INFO(o.message);
    CHECK(o.status == LAPSE_ERROR_DEVICE);
    CHECK_THAT(o.message, Contains(std::string(call) + " failed"));
    CHECK_THAT(o.message, Contains(std::string(f.name) + " (" + std::to_string(f.code) + ")"));
    CHECK_THAT(o.message, Contains(f.meaning));
    CHECK_THAT(o.message, Contains("not \"no GPU\""));
}

}  // namespace

TEST_CASE("cuda: a driver whose cuInit fails with a fault is an error, not unavailable", "[cuda][availability]")
{
    for (const Fault& f : kFaults) {
        DYNAMIC_SECTION(f.name)
        {
            REQUIRE(fake_cuda_reset() == 0);
            fake_cuda_set_init_result(f.code);
            check_is_a_failure(open_over_double(), f, "cuInit");
        }
    }
}

TEST_CASE("cuda: faults of the device calls while opening are errors, not unavailable", "[cuda][availability]")
{
    for (const char* call : {"cuDeviceGetCount", "cuDeviceGet", "cuDevicePrimaryCtxRetain"})
        for (const Fault& f : kFaults) {
            DYNAMIC_SECTION(call << " " << f.name)
            {
                REQUIRE(fake_cuda_reset() == 0);
                fake_cuda_fail_next(call, f.code, 1);
                check_is_a_failure(open_over_double(), f, call);
            }
        }
}

TEST_CASE("cuda: no device and no MIG GPU is unavailable, and says NVML was asked", "[cuda][availability]")
{
    SECTION("cuInit says CUDA_ERROR_NO_DEVICE")
    {
        REQUIRE(fake_cuda_reset() == 0);
        fake_cuda_set_init_result(100);
        fake_cuda_set_nvml(0, 0);
        Opened o = open_over_double();
        CHECK(o.status == LAPSE_ERROR_UNAVAILABLE);
        CHECK_THAT(o.message, Contains("no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE, 100)"));
        CHECK_THAT(o.message, Contains("NVML reports 0 GPU(s), none with MIG enabled"));
    }
    SECTION("cuDeviceGetCount says NO_DEVICE")
    {
        REQUIRE(fake_cuda_reset() == 0);
        fake_cuda_fail_next("cuDeviceGetCount", 100, 1);
        Opened o = open_over_double();
        CHECK(o.status == LAPSE_ERROR_UNAVAILABLE);
        CHECK_THAT(o.message, Contains("cuDeviceGetCount: CUDA_ERROR_NO_DEVICE"));
    }
}

TEST_CASE("cuda: no device while MIG is on with no instance is an error naming MIG", "[cuda][availability]")
{
    SECTION("cuInit says CUDA_ERROR_NO_DEVICE")
    {
        REQUIRE(fake_cuda_reset() == 0);
        fake_cuda_set_init_result(100);
        fake_cuda_set_nvml(2, 1);
        Opened o = open_over_double();
        INFO(o.message);
        CHECK(o.status == LAPSE_ERROR_DEVICE);
        CHECK_THAT(o.message, Contains("MIG is enabled on 1 of 2 GPU(s)"));
        CHECK_THAT(o.message, Contains("Fake MIG-capable GPU 0"));
        CHECK_THAT(o.message, Contains("nvidia-smi mig"));
    }
    SECTION("the driver counts 0 devices")
    {
        REQUIRE(fake_cuda_reset() == 0);
        fake_cuda_set_device_count(0);
        fake_cuda_set_nvml(1, 1);
        Opened o = open_over_double();
        CHECK(o.status == LAPSE_ERROR_DEVICE);
        CHECK_THAT(o.message, Contains("0 devices"));
        CHECK_THAT(o.message, Contains("MIG is enabled"));
    }
}

TEST_CASE("cuda: without NVML a missing device is unavailable and says MIG could not be checked", "[cuda][availability]")
{
    REQUIRE(fake_cuda_reset() == 0);
    fake_cuda_set_init_result(100);
    LoadedPlugin loaded(LAPSE_CUDA_PLUGIN_PATH);
    lapse_device* device = nullptr;
    CHECK(loaded.open({{"driver", std::string(LAPSE_FAKE_CUDA_DRIVER_PATH)},
                       {"nvml", std::string("/nonexistent/libnvidia-ml.so.1")}},
                      &device) == LAPSE_ERROR_UNAVAILABLE);
    CHECK_THAT(std::string(loaded.last_error().message), Contains("MIG could not be checked"));
    CHECK_THAT(std::string(loaded.last_error().message), Contains("/nonexistent/libnvidia-ml.so.1"));
}

TEST_CASE("cuda: the stub library stays unavailable even through the classification", "[cuda][availability]")
{
    REQUIRE(fake_cuda_reset() == 0);
    fake_cuda_set_init_result(34);
    Opened o = open_over_double();
    CHECK(o.status == LAPSE_ERROR_UNAVAILABLE);
    CHECK_THAT(o.message, Contains("stub library"));
}

TEST_CASE("cuda: entry points are never asked for at a version newer than the driver", "[cuda][availability][loading]")
{
    FakeDevice d({}, false);
    // A 12.4 driver: cuEventElapsedTime's 12.8 flavour does not exist there
    // and asking for it is CUDA_ERROR_INVALID_VALUE.
    fake_cuda_set_driver_version(12040);
    d.open();
    CHECK(counters().get_proc_address_too_new == 0);
    CHECK(counters().get_proc_address_hits >= 19);
    lapse_token t = d.start(0);
    d.busy(0, 1000000);
    d.end(t);
    lapse_duration r = d.resolve(t);
    CHECK(r.state == LAPSE_DURATION_READY);
    CHECK(r.end_ns - r.start_ns >= 1000000 - 1000);
}
