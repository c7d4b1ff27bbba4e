// A host of the next minor (built against the synthetic "minor + 1"
// headers: every struct one field longer) against today's CPU plugin,
// loaded with dlopen as any third-party host would: the plugin accepts the
// longer structs, writes its durations at the host's stride, and leaves the
// fields it does not know alone.
//
// The host here is a test double of a next-minor lapse host: its config
// services answer every key with the plugin's default.
#include <lapse/lapse.h>

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

static_assert(LAPSE_ABI_MINOR >= 1, "built against the synthetic next-minor headers");

namespace {

constexpr uint64_t kUntouched = 0x5555aaaa5555aaaaull;

int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// The test double of a next-minor host.
struct NextMinorTestHost {
    lapse_host host{};
    int config_node = 0;  // the one node: its address is the handle

    NextMinorTestHost()
    {
        host.struct_size = sizeof(lapse_host);
        host.abi_major = LAPSE_ABI_MAJOR;
        host.abi_minor = LAPSE_ABI_MINOR;
        host.host_name = "abi_growth next-minor test host";
        host.log = [](const lapse_host*, lapse_log_level, const char*) {};
        host.config_string = [](const lapse_host*, const lapse_config*, const char*, const char* fallback,
                                const char** out, lapse_error*) -> lapse_status {
            *out = fallback;
            return LAPSE_OK;
        };
        host.config_int = [](const lapse_host*, const lapse_config*, const char*, int64_t fallback, int64_t* out,
                             lapse_error*) -> lapse_status {
            *out = fallback;
            return LAPSE_OK;
        };
        host.config_double = [](const lapse_host*, const lapse_config*, const char*, double fallback, double* out,
                                lapse_error*) -> lapse_status {
            *out = fallback;
            return LAPSE_OK;
        };
        host.config_bool = [](const lapse_host*, const lapse_config*, const char*, int fallback, int* out,
                              lapse_error*) -> lapse_status {
            *out = fallback;
            return LAPSE_OK;
        };
        host.config_child = [](const lapse_host*, const lapse_config*, const char*, const lapse_config** out,
                               lapse_error*) -> lapse_status {
            *out = nullptr;
            return LAPSE_OK;
        };
        host.config_error = [](const lapse_host*, const lapse_config*, const char*, const char*,
                               lapse_error*) -> lapse_status { return LAPSE_ERROR_CONFIG; };
        host.open_backend = [](const lapse_host*, const lapse_config*, lapse_backend*, lapse_error*) -> lapse_status {
            return LAPSE_ERROR_UNSUPPORTED;
        };
        host.close_backend = [](const lapse_host*, lapse_backend*) {};
        host.clock_ns = [](const lapse_host*) -> int64_t { return now_ns(); };
        host.next_minor_field = kUntouched;
    }
    const lapse_config* node() const { return reinterpret_cast<const lapse_config*>(&config_node); }
};

struct LoadedToday {
    void* handle = nullptr;
    const lapse_plugin* plugin = nullptr;
    explicit LoadedToday(const lapse_host* host)
    {
        handle = dlopen(LAPSE_ABI_GROWTH_TODAY_PLUGIN, RTLD_NOW | RTLD_LOCAL);
        REQUIRE(handle != nullptr);
        auto entry = reinterpret_cast<lapse_plugin_entry_fn>(dlsym(handle, LAPSE_ENTRY_SYMBOL));
        REQUIRE(entry != nullptr);
        plugin = entry(host);
        REQUIRE(plugin != nullptr);
    }
    ~LoadedToday() { dlclose(handle); }
};

void spin_for(void*, void*)
{
    const int64_t until = now_ns() + 100000;
    while (now_ns() < until) {
    }
}

}  // namespace

TEST_CASE("today's plugin serves a host of the next minor, at the host's struct sizes", "[abi][growth]")
{
    NextMinorTestHost host;
    LoadedToday today(&host.host);
    const lapse_plugin& p = *today.plugin;
    CHECK(p.abi_major == LAPSE_ABI_MAJOR);
    CHECK(p.abi_minor == LAPSE_ABI_MINOR - 1);
    CHECK(p.struct_size < sizeof(lapse_plugin));  // today's descriptor: the host reads only what it holds

    lapse_device* device = nullptr;
    lapse_error error{};
    error.struct_size = sizeof error;
    error.next_minor_field = kUntouched;
    REQUIRE(p.open(&host.host, host.node(), &device, &error) == LAPSE_OK);
    REQUIRE(device != nullptr);

    SECTION("describe fills today's fields and leaves the appended one")
    {
        lapse_device_info info{};
        info.struct_size = sizeof info;
        info.next_minor_field = kUntouched;
        REQUIRE(p.describe(device, &info, &error) == LAPSE_OK);
        CHECK(info.struct_size == sizeof info);
        CHECK(info.stream_count == 2);
        CHECK(std::strlen(info.name) > 0);
        CHECK(info.next_minor_field == kUntouched);
    }
    SECTION("durations land at the host's stride, appended fields untouched")
    {
        constexpr uint32_t n = 40;
        std::vector<lapse_token> tokens(n);
        for (uint32_t i = 0; i < n; ++i) {
            const lapse_stream stream = i % 2;
            REQUIRE(p.profile_start(device, stream, &tokens[i], &error) == LAPSE_OK);
            REQUIRE(p.submit(device, stream, &spin_for, nullptr, &error) == LAPSE_OK);
            lapse_end_options options{};
            options.struct_size = sizeof options;
            options.flags = LAPSE_END_FLUSH;
            options.next_minor_field = ~uint64_t{0};
            REQUIRE(p.profile_end(device, tokens[i], &options, &error) == LAPSE_OK);
        }
        std::vector<lapse_duration> out(n);
        for (auto& d : out) {
            d = lapse_duration{};
            d.struct_size = sizeof(lapse_duration);
            d.next_minor_field = kUntouched;
        }
        REQUIRE(p.resolve(device, tokens.data(), out.data(), n, LAPSE_WAIT_FOREVER, &error) == LAPSE_OK);
        for (uint32_t i = 0; i < n; ++i) {
            INFO("duration " << i);
            CHECK(out[i].struct_size == sizeof(lapse_duration));
            CHECK(out[i].state == LAPSE_DURATION_READY);
            CHECK(out[i].method == LAPSE_TIMING_DEVICE);
            CHECK(out[i].end_ns - out[i].start_ns >= 100000);  // the spin ran inside the window
            CHECK(out[i].next_minor_field == kUntouched);
        }
    }
    SECTION("an error fills today's message and leaves the appended field")
    {
        lapse_token bogus{987654321, 0, 0};
        CHECK(p.profile_end(device, bogus, nullptr, &error) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(std::strlen(error.message) > 0);
        CHECK(error.next_minor_field == kUntouched);
    }
    p.close(device);
}
