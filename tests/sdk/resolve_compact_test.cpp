// The SDK's two halves of lapse.resolve_compact/1: resolve_compact_of
// trusts an offered extension only as far as it holds up (a host then
// resolves in full), and the trampoline refuses what the ABI forbids before
// the device class sees it. The plugin and device here are test doubles,
// named as such: a broken extension and the trampoline's refusals are what
// is under test. The CPU plugin's real extension is tested in
// tests/cpu/cpu_resolve_compact_test.cpp.
#include <lapse/sdk/resolve_compact.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

const void* g_answer = nullptr;
const char* g_asked = nullptr;

const void* answer(lapse_device*, const char* id)
{
    g_asked = id;
    return g_answer;
}

// A device class double: answers every window READY with stamps i..i+1,
// and counts the calls that reached it.
struct FakeDevice {
    int calls = 0;
    lapse_status resolve_compact(const lapse_token*, lapse_stamp_pair* stamps, uint8_t* states, uint32_t count,
                                 uint64_t, lapse_error*) noexcept
    {
        ++calls;
        for (uint32_t i = 0; i < count; ++i) lapse::sdk::set_compact_ready(stamps[i], states[i], i, i + 1);
        return LAPSE_OK;
    }
};

lapse_plugin fake_plugin()
{
    lapse_plugin p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.name = "fake";
    p.get_extension = &answer;
    return p;
}

}  // namespace

TEST_CASE("resolve_compact_of takes a sound extension and refuses a broken one", "[sdk][compact]")
{
    const lapse_plugin plugin = fake_plugin();
    FakeDevice fake;
    lapse_device* device = reinterpret_cast<lapse_device*>(&fake);
    lapse_resolve_compact offered = lapse::sdk::make_resolve_compact<FakeDevice>(LAPSE_TIMING_DEVICE, LAPSE_CLOCK_DEVICE);
    g_answer = &offered;

    SECTION("sound")
    {
        CHECK(lapse::sdk::resolve_compact_of(&plugin, device) == &offered);
        CHECK(std::string(g_asked) == LAPSE_RESOLVE_COMPACT_EXTENSION);
        CHECK(offered.struct_size == sizeof(lapse_resolve_compact));
        CHECK(offered.reserved == 0);
    }
    SECTION("too short to reach the function")
    {
        offered.struct_size = 16;
        CHECK(lapse::sdk::resolve_compact_of(&plugin, device) == nullptr);
    }
    SECTION("a null function")
    {
        offered.resolve_compact = nullptr;
        CHECK(lapse::sdk::resolve_compact_of(&plugin, device) == nullptr);
    }
    SECTION("READY pairs with no timing method, or one a duration cannot have")
    {
        offered.method = GENERATE(uint32_t{LAPSE_TIMING_NONE}, 9u);
        CHECK(lapse::sdk::resolve_compact_of(&plugin, device) == nullptr);
    }
    SECTION("READY pairs on a clock a duration cannot have")
    {
        offered.clock_domain = GENERATE(uint32_t{LAPSE_CLOCK_NONE}, 9u);
        CHECK(lapse::sdk::resolve_compact_of(&plugin, device) == nullptr);
    }
    SECTION("not offered, or no get_extension at all")
    {
        g_answer = nullptr;
        CHECK(lapse::sdk::resolve_compact_of(&plugin, device) == nullptr);
        lapse_plugin bare = fake_plugin();
        bare.get_extension = nullptr;
        CHECK(lapse::sdk::resolve_compact_of(&bare, device) == nullptr);
        CHECK(lapse::sdk::resolve_compact_of(nullptr, device) == nullptr);
        CHECK(lapse::sdk::resolve_compact_of(&plugin, nullptr) == nullptr);
    }
    g_answer = nullptr;
}

TEST_CASE("the compact trampoline refuses null arguments before the device sees them", "[sdk][compact]")
{
    FakeDevice fake;
    lapse_device* device = reinterpret_cast<lapse_device*>(&fake);
    const lapse_resolve_compact c = lapse::sdk::make_resolve_compact<FakeDevice>(LAPSE_TIMING_DEVICE, LAPSE_CLOCK_DEVICE);
    lapse_token tokens[2] = {{1, 0, 0}, {2, 0, 0}};
    lapse_stamp_pair stamps[2];
    uint8_t states[2];
    lapse_error e;
    e.struct_size = sizeof e;

    CHECK(c.resolve_compact(nullptr, tokens, stamps, states, 2, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(c.resolve_compact(device, tokens, nullptr, states, 2, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(e.message, Catch::Contains("stamps"));
    CHECK(c.resolve_compact(device, tokens, stamps, nullptr, 2, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(e.message, Catch::Contains("states"));
    CHECK(c.resolve_compact(device, nullptr, stamps, states, 2, 0, nullptr) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(fake.calls == 0);
    CHECK(c.resolve_compact(device, nullptr, nullptr, nullptr, 0, 0, &e) == LAPSE_OK);
    CHECK(fake.calls == 0);

    REQUIRE(c.resolve_compact(device, tokens, stamps, states, 2, 0, &e) == LAPSE_OK);
    CHECK(fake.calls == 1);
    CHECK(states[1] == LAPSE_COMPACT_READY);
    CHECK(stamps[1].start_ns == 1);
    CHECK(stamps[1].end_ns == 2);
}

namespace {

// A device class double that resolves strided records too.
struct FakeStridedDevice : FakeDevice {
    lapse_status resolve_compact_strided(const lapse_token*, std::size_t, lapse_stamp_pair* stamps,
                                         std::size_t stamp_stride, uint8_t* states, uint32_t count, uint64_t,
                                         lapse_error*) noexcept
    {
        ++calls;
        auto* bytes = reinterpret_cast<unsigned char*>(stamps);
        for (uint32_t i = 0; i < count; ++i)
            lapse::sdk::set_compact_ready(*reinterpret_cast<lapse_stamp_pair*>(bytes + i * stamp_stride), states[i],
                                          i, i + 1);
        return LAPSE_OK;
    }
};

}  // namespace

TEST_CASE("the strided form is offered only by a class that has it, and read only when the struct reaches it",
          "[sdk][compact][strided]")
{
    const lapse_resolve_compact dense =
        lapse::sdk::make_resolve_compact<FakeDevice>(LAPSE_TIMING_DEVICE, LAPSE_CLOCK_DEVICE);
    CHECK(dense.resolve_compact_strided == nullptr);
    CHECK(lapse::sdk::resolve_compact_strided_of(dense) == nullptr);
    lapse_resolve_compact c =
        lapse::sdk::make_resolve_compact<FakeStridedDevice>(LAPSE_TIMING_DEVICE, LAPSE_CLOCK_DEVICE);
    CHECK(lapse::sdk::resolve_compact_strided_of(c) == c.resolve_compact_strided);
    CHECK(c.resolve_compact_strided != nullptr);
    // A plugin of the first minor: its struct ends before the field.
    c.struct_size = static_cast<uint32_t>(offsetof(lapse_resolve_compact, resolve_compact_strided));
    CHECK(lapse::sdk::resolve_compact_strided_of(c) == nullptr);
}

TEST_CASE("the strided trampoline refuses null arguments and strides a record cannot have", "[sdk][compact][strided]")
{
    FakeStridedDevice fake;
    lapse_device* device = reinterpret_cast<lapse_device*>(&fake);
    const lapse_resolve_compact c =
        lapse::sdk::make_resolve_compact<FakeStridedDevice>(LAPSE_TIMING_DEVICE, LAPSE_CLOCK_DEVICE);
    const lapse_resolve_compact_strided_fn strided = c.resolve_compact_strided;
    REQUIRE(strided != nullptr);
    struct Record {
        lapse_token token;
        uint64_t host_word;
    };
    Record records[2] = {{{1, 0, 0}, 11}, {{2, 0, 0}, 22}};
    auto* pairs = reinterpret_cast<lapse_stamp_pair*>(&records[0].token);
    uint8_t states[2];
    lapse_error e;
    e.struct_size = sizeof e;

    CHECK(strided(nullptr, &records[0].token, 24, pairs, 24, states, 2, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(strided(device, &records[0].token, 24, nullptr, 24, states, 2, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(e.message, Catch::Contains("stamps"));
    CHECK(strided(device, &records[0].token, 24, pairs, 24, nullptr, 2, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(e.message, Catch::Contains("states"));
    for (std::size_t bad : {std::size_t{0}, std::size_t{8}, std::size_t{20}}) {
        INFO("stride " << bad);
        CHECK(strided(device, &records[0].token, bad, pairs, 24, states, 2, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
        CHECK_THAT(e.message, Catch::Contains("stride " + std::to_string(bad)));
        CHECK(strided(device, &records[0].token, 24, pairs, bad, states, 2, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    }
    CHECK(fake.calls == 0);

    REQUIRE(strided(device, &records[0].token, 24, pairs, 24, states, 2, 0, &e) == LAPSE_OK);
    CHECK(fake.calls == 1);
    CHECK(states[1] == LAPSE_COMPACT_READY);
    lapse_stamp_pair second;
    std::memcpy(&second, &records[1].token, sizeof second);
    CHECK(second.start_ns == 1);
    CHECK(second.end_ns == 2);
    CHECK(records[1].host_word == 22);  // the stride kept the host's field out of the pair
}

TEST_CASE("a slot left untouched never reads as a duration", "[sdk][compact]")
{
    lapse_stamp_pair pair{5, 5};
    uint8_t state = LAPSE_COMPACT_READY;
    lapse::sdk::set_compact_not_ready(pair, state, LAPSE_COMPACT_RESOLVE_FULL);
    CHECK(state == LAPSE_COMPACT_RESOLVE_FULL);
    CHECK(pair.start_ns == 0);
    CHECK(pair.end_ns == LAPSE_COMPACT_NO_STAMP);
    CHECK(pair.end_ns < pair.start_ns);
}

TEST_CASE("a READY pair is checked as a READY duration would be", "[sdk][compact]")
{
    lapse_resolve_compact c{};
    c.method = LAPSE_TIMING_DEVICE;
    c.clock_domain = LAPSE_CLOCK_HOST_MONOTONIC;
    CHECK(lapse::sdk::impossible_pair(c, {1000, 2000}) == nullptr);
    CHECK(lapse::sdk::impossible_pair(c, {1000, 1000}) == nullptr);  // an empty window is a window
    CHECK(std::string(lapse::sdk::impossible_pair(c, {2000, 1000})) == "an end before its start");
    CHECK(std::string(lapse::sdk::impossible_pair(c, {-5, 10})) == "a host-clock start before the clock's origin");
    c.clock_domain = LAPSE_CLOCK_DEVICE;
    CHECK(lapse::sdk::impossible_pair(c, {-5, 10}) == nullptr);  // a device clock may start anywhere
    CHECK(std::string(lapse::sdk::impossible_pair(c, {INT64_MIN, INT64_MAX})) ==
          "a span that does not fit in 64 bits");
}
