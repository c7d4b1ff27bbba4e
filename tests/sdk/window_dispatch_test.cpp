// sdk::window_dispatch_target trusts an extension only as far as it holds
// up: a dispatch struct that is short, names no device, or points at a
// plugin without window entry points is ignored, and the device stays its
// own target. The plugins here are hand-made descriptors (test doubles,
// named as such): a broken extension is what is under test, and no shipped
// plugin offers one. forward's real extension is tested in
// tests/forward/forward_dispatch_test.cpp.
#include <lapse/sdk/window_dispatch.hpp>

#include <catch2/catch.hpp>

#include <cstring>

namespace {

// What the fake plugin's get_extension answers, set per test.
const void* g_answer = nullptr;
const char* g_asked = nullptr;

const void* answer(lapse_device*, const char* id)
{
    g_asked = id;
    return g_answer;
}
lapse_status start(lapse_device*, lapse_stream, lapse_token*, lapse_error*) { return LAPSE_OK; }
lapse_status end(lapse_device*, lapse_token, const lapse_end_options*, lapse_error*) { return LAPSE_OK; }
void abandon(lapse_device*, lapse_token) {}

lapse_plugin fake_plugin(bool windows)
{
    lapse_plugin p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.name = "fake";
    p.get_extension = &answer;
    if (windows) {
        p.profile_start = &start;
        p.profile_end = &end;
        p.profile_abandon = &abandon;
    }
    return p;
}

// Opaque handles: the helper never dereferences a device.
lapse_device* handle(int& storage) { return reinterpret_cast<lapse_device*>(&storage); }

}  // namespace

TEST_CASE("window_dispatch_target follows a sound extension and refuses a broken one", "[sdk][dispatch]")
{
    const lapse_plugin top = fake_plugin(true);
    const lapse_plugin target = fake_plugin(true);
    const lapse_plugin windowless = fake_plugin(false);
    int top_storage = 0, target_storage = 0;
    lapse_device* top_device = handle(top_storage);
    lapse_device* target_device = handle(target_storage);
    g_asked = nullptr;

    SECTION("a sound extension names the target")
    {
        const lapse_window_dispatch d{sizeof(lapse_window_dispatch), 0, &target, target_device};
        g_answer = &d;
        const lapse_window_dispatch got = lapse::sdk::window_dispatch_target(&top, top_device);
        CHECK(got.plugin == &target);
        CHECK(got.device == target_device);
        CHECK(got.struct_size == sizeof(lapse_window_dispatch));
        REQUIRE(g_asked != nullptr);
        CHECK(std::strcmp(g_asked, LAPSE_WINDOW_DISPATCH_EXTENSION) == 0);
    }
    SECTION("no extension, a short struct, a null device or a target without window calls: the device itself")
    {
        const lapse_window_dispatch short_one{sizeof(uint32_t), 0, &target, target_device};
        const lapse_window_dispatch no_device{sizeof(lapse_window_dispatch), 0, &target, nullptr};
        const lapse_window_dispatch no_plugin{sizeof(lapse_window_dispatch), 0, nullptr, target_device};
        const lapse_window_dispatch no_windows{sizeof(lapse_window_dispatch), 0, &windowless, target_device};
        for (const void* broken : {static_cast<const void*>(nullptr), static_cast<const void*>(&short_one),
                                   static_cast<const void*>(&no_device), static_cast<const void*>(&no_plugin),
                                   static_cast<const void*>(&no_windows)}) {
            g_answer = broken;
            const lapse_window_dispatch got = lapse::sdk::window_dispatch_target(&top, top_device);
            CHECK(got.plugin == &top);
            CHECK(got.device == top_device);
        }
    }
    SECTION("a plugin without get_extension is its own target")
    {
        lapse_plugin bare = fake_plugin(true);
        bare.get_extension = nullptr;
        const lapse_window_dispatch got = lapse::sdk::window_dispatch_target(&bare, top_device);
        CHECK(got.plugin == &bare);
        CHECK(got.device == top_device);
        CHECK(g_asked == nullptr);
    }
}
