// Today's host (lapse::core, today's headers) against a plugin of the next
// minor (next_plugin.cpp, every struct one field longer): the plugin is
// loaded, opened and measured, and writes no byte past the structs today's
// host hands it: each is followed by a canary that must survive.
#include <lapse/core.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr unsigned char kCanary = 0xAB;

std::string next_plugin() { return LAPSE_ABI_GROWTH_NEXT_PLUGIN; }

lapse::Config config()
{
    return lapse::Config::from_string("[backend]\nplugin = \"" + next_plugin() + "\"\nstreams = 2\n", "<next minor>",
                                      {});
}

template <class T>
struct Guarded {
    T value{};
    unsigned char canary[64];
    Guarded()
    {
        std::memset(canary, kCanary, sizeof canary);
        value.struct_size = sizeof(T);
    }
    bool canary_intact() const
    {
        for (unsigned char c : canary)
            if (c != kCanary) return false;
        return true;
    }
};

}  // namespace

TEST_CASE("today's host loads a plugin of the next minor and reads its longer descriptor", "[abi][growth]")
{
    lapse::Runtime runtime;
    lapse::PluginLibrary lib = runtime.load_plugin(next_plugin());
    CHECK(lib.descriptor().abi_major == LAPSE_ABI_MAJOR);
    CHECK(lib.descriptor().abi_minor == LAPSE_ABI_MINOR + 1);
    CHECK(lib.descriptor().struct_size > sizeof(lapse_plugin));
    CHECK(lib.name() == "next_minor");
}

TEST_CASE("a plugin of the next minor writes only what today's structs hold", "[abi][growth]")
{
    lapse::Runtime runtime;
    lapse::Device device = runtime.open(config());
    CHECK(device.info().name == "next minor device");
    CHECK(device.info().stream_count == 2);
    const lapse_plugin& plugin = device.plugin();
    lapse_device* raw = device.handle();

    SECTION("describe")
    {
        Guarded<lapse_device_info> info;
        REQUIRE(plugin.describe(raw, &info.value, nullptr) == LAPSE_OK);
        CHECK(std::string(info.value.name) == "next minor device");
        CHECK(info.value.struct_size == sizeof(lapse_device_info));
        CHECK(info.canary_intact());
    }
    SECTION("resolve: today's stride, not the plugin's")
    {
        constexpr uint32_t n = 40;  // more than one of the adapter's slices
        std::vector<lapse_token> tokens(n);
        for (uint32_t i = 0; i < n; ++i) {
            REQUIRE(plugin.profile_start(raw, i % 2, &tokens[i], nullptr) == LAPSE_OK);
            lapse_end_options options{sizeof(lapse_end_options), LAPSE_END_FLUSH};
            REQUIRE(plugin.profile_end(raw, tokens[i], &options, nullptr) == LAPSE_OK);
        }
        std::vector<unsigned char> bytes(n * sizeof(lapse_duration) + 64, kCanary);
        auto* out = reinterpret_cast<lapse_duration*>(bytes.data());
        for (uint32_t i = 0; i < n; ++i) {
            out[i] = lapse_duration{};
            out[i].struct_size = sizeof(lapse_duration);
        }
        REQUIRE(plugin.resolve(raw, tokens.data(), out, n, LAPSE_WAIT_FOREVER, nullptr) == LAPSE_OK);
        for (uint32_t i = 0; i < n; ++i) {
            INFO("duration " << i);
            CHECK(out[i].struct_size == sizeof(lapse_duration));
            CHECK(out[i].state == LAPSE_DURATION_READY);
            CHECK(out[i].method == LAPSE_TIMING_DEVICE);
            CHECK(out[i].end_ns >= out[i].start_ns);
            CHECK(out[i].start_ns > 0);
        }
        for (std::size_t k = n * sizeof(lapse_duration); k < bytes.size(); ++k) CHECK(bytes[k] == kCanary);
    }
    SECTION("an error is written into today's lapse_error and no further")
    {
        Guarded<lapse_error> error;
        lapse_token bogus{12345, 0, 0};
        CHECK(plugin.profile_end(raw, bogus, nullptr, &error.value) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(std::string(error.value.message) == "profile_end: unknown token");
        CHECK(error.canary_intact());
    }
    SECTION("through the C++ API")
    {
        lapse::Window w = device.profile_start(0, "work");
        lapse::Duration d = device.profile_end(w);
        CHECK(d.resolve().has_value());
        CHECK(d.ready());
    }
}
