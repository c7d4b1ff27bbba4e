// Loading, negotiation and "unavailable is an answer": every way the driver
// can be missing gives LAPSE_ERROR_UNAVAILABLE with a message that names the
// case and what to do, and nothing crashes or hangs.
#include "cuda_support.hpp"

#include <dlfcn.h>

#include <fstream>

using namespace lapse::test;
using Catch::Matchers::Contains;

namespace {

std::string open_failure(const ConfigTable& config, lapse_status expected = LAPSE_ERROR_UNAVAILABLE)
{
    LoadedPlugin loaded(LAPSE_CUDA_PLUGIN_PATH);
    lapse_device* device = nullptr;
    lapse_status s = loaded.open(config, &device);
    INFO(loaded.last_error().message);
    CHECK(s == expected);
    CHECK(device == nullptr);
    CHECK(loaded.last_error().code == expected);
    // Every key the plugin accepts is read even when the driver is missing,
    // so the host can tell a typo from a key that is merely unused.
    std::set<std::string> keys = loaded.host().keys_read();
    if (expected == LAPSE_ERROR_CONFIG) return loaded.last_error().message;  // stops at the bad key
    for (const char* k : {"driver", "nvml", "device", "streams", "max_windows", "max_registered_streams",
                          "anchor_period_ms", "submit"})
        CHECK(keys.count(k) == 1);
    return loaded.last_error().message;
}

}  // namespace

TEST_CASE("cuda: the plugin loads, negotiates and describes itself without a driver", "[cuda][loading]")
{
    LoadedPlugin loaded(LAPSE_CUDA_PLUGIN_PATH);
    const lapse_plugin* p = loaded.plugin();
    REQUIRE(p != nullptr);
    CHECK(p->struct_size >= sizeof(lapse_plugin));
    CHECK(p->abi_major == LAPSE_ABI_MAJOR);
    CHECK(std::string(p->name) == "cuda");
    CHECK((p->capabilities & LAPSE_CAP_DEVICE_CLOCK) != 0);
    CHECK((p->capabilities & LAPSE_CAP_BATCHING) == 0);
    CHECK((p->capabilities & LAPSE_CAP_SINGLE_WINDOW) == 0);
    for (auto fn : {(void*)p->open, (void*)p->close, (void*)p->describe, (void*)p->sync, (void*)p->submit,
                    (void*)p->profile_start, (void*)p->profile_end, (void*)p->profile_abandon, (void*)p->resolve,
                    (void*)p->get_extension})
        CHECK(fn != nullptr);
    // One export: nothing of the plugin's C++ leaks out of the .so.
    CHECK(dlsym(loaded.library(), "cuInit") == nullptr);
    CHECK(dlsym(loaded.library(), "_ZN5lapse4cuda10CudaDevice4openENS_3sdk4HostENS2_6ConfigE") == nullptr);
}

TEST_CASE("cuda: a host of another ABI major is refused, with a reason in its log", "[cuda][loading]")
{
    LoadedPlugin loaded(LAPSE_CUDA_PLUGIN_PATH, LAPSE_ABI_MAJOR + 1);
    CHECK(loaded.plugin() == nullptr);
    REQUIRE(loaded.host().logs().size() == 1);
    CHECK_THAT(loaded.host().logs()[0].text, Contains("refusing"));
}

TEST_CASE("cuda: the default driver is absent here and says so", "[cuda][loading][unavailable]")
{
    void* real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (real != nullptr) {
        dlclose(real);
        WARN("libcuda.so.1 exists on this machine: the no-driver case cannot be observed here");
        return;
    }
    std::string m = open_failure({});
    CHECK_THAT(m, Contains("no CUDA driver"));
    CHECK_THAT(m, Contains("libcuda.so.1"));
    CHECK_THAT(m, Contains("Install the NVIDIA driver"));
}

TEST_CASE("cuda: a driver path that does not exist says which path and what to do", "[cuda][loading][unavailable]")
{
    std::string m = open_failure({{"driver", std::string("/nonexistent/lapse/libcuda.so.1")}});
    CHECK_THAT(m, Contains("/nonexistent/lapse/libcuda.so.1"));
    CHECK_THAT(m, Contains("could not be loaded"));
    CHECK_THAT(m, Contains("Check the path"));
}

TEST_CASE("cuda: a file that is not a shared library is refused as unavailable", "[cuda][loading][unavailable]")
{
    std::string path = "lapse_cuda_not_a_library.so";
    std::ofstream(path) << "this is not an ELF file\n";
    std::string m = open_failure({{"driver", "./" + path}});
    CHECK_THAT(m, Contains(path));
    CHECK_THAT(m, Contains("could not be loaded"));
    std::remove(path.c_str());
}

TEST_CASE("cuda: a shared library that is not a CUDA driver is refused", "[cuda][loading][unavailable]")
{
    std::string m = open_failure({{"driver", std::string("libm.so.6")}});
    CHECK_THAT(m, Contains("not a CUDA driver"));
    CHECK_THAT(m, Contains("cuInit"));
}

TEST_CASE("cuda: the toolkit's stub library is recognised (CUDA_ERROR_STUB_LIBRARY)", "[cuda][loading][unavailable]")
{
#ifndef LAPSE_CUDA_STUB_PATH
    WARN("no stub library was found in the CUDA toolkit at configure time");
#else
    std::string m = open_failure({{"driver", std::string(LAPSE_CUDA_STUB_PATH)}});
    CHECK_THAT(m, Contains("stub library"));
    CHECK_THAT(m, Contains("CUDA_ERROR_STUB_LIBRARY, 34"));
    CHECK_THAT(m, Contains("Install the NVIDIA driver"));
#endif
}

TEST_CASE("cuda: a driver with no device is unavailable (cuInit says CUDA_ERROR_NO_DEVICE)", "[cuda][loading][unavailable]")
{
    REQUIRE(fake_cuda_reset() == 0);
    fake_cuda_set_init_result(100);
    std::string m = open_failure({{"driver", std::string(LAPSE_FAKE_CUDA_DRIVER_PATH)},
                                  {"nvml", std::string(LAPSE_FAKE_CUDA_DRIVER_PATH)}});
    CHECK_THAT(m, Contains("no CUDA device"));
    CHECK_THAT(m, Contains("CUDA_ERROR_NO_DEVICE"));
}

TEST_CASE("cuda: a driver that counts zero devices is unavailable", "[cuda][loading][unavailable]")
{
    REQUIRE(fake_cuda_reset() == 0);
    fake_cuda_set_device_count(0);
    std::string m = open_failure({{"driver", std::string(LAPSE_FAKE_CUDA_DRIVER_PATH)},
                                  {"nvml", std::string(LAPSE_FAKE_CUDA_DRIVER_PATH)}});
    CHECK_THAT(m, Contains("no CUDA device"));
    CHECK(counters().primary_ctx_retained == 0);
}

TEST_CASE("cuda: a device index out of range is unavailable and names the range", "[cuda][loading][unavailable]")
{
    REQUIRE(fake_cuda_reset() == 0);
    fake_cuda_set_device_count(2);
    std::string m = open_failure({{"driver", std::string(LAPSE_FAKE_CUDA_DRIVER_PATH)}, {"device", int64_t{2}}});
    CHECK_THAT(m, Contains("device 2"));
    CHECK_THAT(m, Contains("2 CUDA device(s), numbered 0..1"));
}

TEST_CASE("cuda: out-of-range config values are config errors naming the key", "[cuda][loading][config]")
{
    std::string m = open_failure({{"streams", int64_t{0}}}, LAPSE_ERROR_CONFIG);
    CHECK_THAT(m, Contains("streams"));
    m = open_failure({{"device", std::string("zero")}}, LAPSE_ERROR_CONFIG);
    CHECK_THAT(m, Contains("device"));
}

TEST_CASE("cuda: a failure while opening gives back everything it took", "[cuda][loading]")
{
    FakeDevice probe({{"streams", int64_t{3}}}, false);
    // The first event is created after the streams and the context: a
    // failure there must give all of them back.
    fake_cuda_fail_next("cuEventCreate", 2, 1);
    lapse_device* device = nullptr;
    lapse_status s = probe.loaded.open(probe.config, &device);
    CHECK(s == LAPSE_ERROR_DEVICE);
    CHECK_THAT(std::string(probe.loaded.last_error().message), Contains("cuEventCreate failed"));
    fake_cuda_counters c = counters();
    CHECK(c.events_live == 0);
    CHECK(c.streams_live == 0);
    CHECK(c.primary_ctx_retained == 0);
}

TEST_CASE("cuda: the driver's entry points come through cuGetProcAddress_v2, or by exact name without it", "[cuda][loading]")
{
    {
        FakeDevice d;
        CHECK(counters().get_proc_address_hits > 10);
    }
    {
        FakeDevice d({}, false);
        fake_cuda_hide_get_proc_address(1);
        d.open();
        CHECK(counters().get_proc_address_hits == 0);
        // And it works that way too.
        lapse_token t = d.start(0);
        d.end(t);
        CHECK(d.resolve(t).state == LAPSE_DURATION_READY);
    }
}
