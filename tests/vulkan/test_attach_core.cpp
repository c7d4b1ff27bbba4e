// Attach mode through the core's C++ API (lapse::Device, lapse::VulkanAttach,
// the session and the capture) on lavapipe, and own mode's compact resolve
// under Device::resolve, the test being the host
// application with its own Vulkan objects (host_vulkan.hpp). A binary of
// its own, vulkan_core_tests: it is the only one in tests/vulkan that loads
// liblapse_core (see CMakeLists.txt for why that matters under ASan).
#include "host_vulkan.hpp"

#include <catch2/catch.hpp>

#include <lapse/core.hpp>
#include <lapse/core/capture.hpp>
#include <lapse/core/session.hpp>
#include <lapse/core/vulkan_attach.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace lapse::test;

namespace {

// An attach-mode device of `plugin_path` through the core, validation on.
lapse::Device open_attach_device(lapse::Runtime& runtime, const char* plugin_path = LAPSE_VULKAN_PLUGIN_PATH)
{
    return runtime.open(lapse::Config::from_string(
        std::string("[backend]\nplugin = \"") + plugin_path + "\"\nmode = \"attach\"\nvalidation = true\n",
        "<attach test>", "/"));
}

}  // namespace

TEST_CASE("Device::info() after an attach shows the attached streams, with no refresh_info", "[vulkan][attach][core]")
{
    g_validation_messages = 0;
    {
        HostVulkan vk(/*host_query_reset=*/true);
        lapse::Runtime runtime;
        lapse::Device dev = open_attach_device(runtime);
        const lapse::DeviceInfo& at_open = dev.info();
        CHECK(at_open.stream_count == 0);
        const std::string name_at_open = at_open.name;
        const auto* ext = static_cast<const lapse_vulkan_commands*>(dev.extension(LAPSE_VULKAN_COMMANDS_ID));
        REQUIRE(ext != nullptr);
        lapse_vulkan_attach_info info = vk.attach_info(true);
        lapse_stream first = 99, second = 99;
        lapse_error e = make_error();
        REQUIRE(ext->attach(dev.handle(), &info, &first, &e) == LAPSE_OK);
        CHECK(dev.info().stream_count == 1);
        CHECK(dev.info().has(LAPSE_CAP_DEVICE_CLOCK));
        INFO("device name after attach: " << dev.info().name);
        CHECK(dev.info().name.find("not attached") == std::string::npos);
        CHECK(dev.info().plugin == "vulkan");  // what the core adds is kept
        REQUIRE(ext->attach(dev.handle(), &info, &second, &e) == LAPSE_OK);
        CHECK(dev.info().stream_count == 2);
        // A reference taken before the attach still reads what it read.
        CHECK(at_open.stream_count == 0);
        CHECK(at_open.name == name_at_open);
        // The session records the device as it is now.
        auto session = std::make_shared<lapse::Session>();
        dev.record_into(session);
        CHECK(session->backend().stream_count == 2);
    }
    INFO(g_last_message);
    CHECK(g_validation_messages == 0);
}

TEST_CASE("Device::refresh_info asks the backend again and sees the stream an attach added", "[vulkan][attach][core]")
{
    g_validation_messages = 0;
    {
        HostVulkan vk(/*host_query_reset=*/true);
        lapse::Runtime runtime;
        lapse::Device dev = open_attach_device(runtime);
        CHECK(dev.info().stream_count == 0);
        const auto* ext = static_cast<const lapse_vulkan_commands*>(dev.extension(LAPSE_VULKAN_COMMANDS_ID));
        REQUIRE(ext != nullptr);
        lapse_vulkan_attach_info info = vk.attach_info(true);
        lapse_stream stream = 99;
        lapse_error e = make_error();
        REQUIRE(ext->attach(dev.handle(), &info, &stream, &e) == LAPSE_OK);
        const lapse::DeviceInfo& fresh = dev.refresh_info();
        CHECK(fresh.stream_count == 1);
        CHECK(dev.info().stream_count == 1);
        CHECK(dev.info().has(LAPSE_CAP_DEVICE_CLOCK));
        CHECK(dev.info().plugin == "vulkan");
        INFO("device name after attach: " << dev.info().name);
        CHECK(dev.info().name.find("not attached") == std::string::npos);
        dev.close();
        CHECK_THROWS_AS(dev.refresh_info(), lapse::Error);
    }
    INFO(g_last_message);
    CHECK(g_validation_messages == 0);
}

TEST_CASE("1000 named attach windows whose Durations are dropped unresolved are 1000 windows in the capture",
          "[vulkan][attach][capture]")
{
    g_validation_messages = 0;
    const auto file =
        std::filesystem::temp_directory_path() / ("lapse-attach-" + std::to_string(::getpid()) + ".lapse-capture");
    {
        HostVulkan vk(/*host_query_reset=*/true);
        lapse::Runtime runtime;
        lapse::Device dev = open_attach_device(runtime);
        lapse::VulkanAttach attach(dev);
        const lapse::Stream stream = attach.attach(vk.attach_info(true));
        CHECK(dev.info().stream_count == 1);
        lapse::CaptureOptions o;
        o.path = file;
        auto capture = lapse::Capture::open(o);
        dev.record_into(capture);
        const uint64_t query_calls_before = serialized_queries::calls.load();
        for (int batch = 0; batch < 10; ++batch) {
            VkCommandBuffer cb = vk.begin();
            for (int i = 0; i < 100; ++i) {
                if (i % 2 == 0) {
                    lapse::Window w = attach.start(cb, stream, "pass");
                    attach.end(cb, w);  // the Duration is dropped at once
                } else {
                    attach.profile(cb, stream, [] {}, "blit");
                }
            }
            vk.submit_and_wait(cb);
        }
        dev.close();  // drains what the collector has not resolved yet
        capture->close();
        CHECK(capture->stats().dropped == 0);
        CHECK(capture->stats().recorded == 1000);
        // The collector's reads went through the host's proc addr, so they
        // never ran beside a submission (host_vulkan.hpp says why).
        CHECK(serialized_queries::calls.load() > query_calls_before);
    }
    std::map<std::string, int> by_name;
    int ready_on_device = 0;
    std::string odd;  // the windows that were not, for the failure message
    {
        lapse::CaptureReader reader(file);
        lapse::CapturedWindow w;
        while (reader.next(w)) {
            ++by_name[std::string(w.name)];
            ready_on_device += w.state == lapse::DurationState::ready && w.method == lapse::TimingMethod::device;
            if (w.state != lapse::DurationState::ready || w.method != lapse::TimingMethod::device)
                odd += std::string(w.name) + ": state " + std::to_string(int(w.state)) + ", method " +
                       std::to_string(int(w.method)) + ", cause '" + std::string(w.cause) + "'\n";
        }
        CHECK(reader.complete());
        CHECK(reader.damage().empty());
    }
    std::filesystem::remove(file);
    INFO(odd);
    CHECK(by_name == std::map<std::string, int>{{"blit", 500}, {"pass", 500}});
    CHECK(ready_on_device == 1000);
    INFO(g_last_message);
    CHECK(g_validation_messages == 0);
}

TEST_CASE("attach windows kept and resolved by the caller are recorded once, with the caller's numbers", "[vulkan][attach][core]")
{
    g_validation_messages = 0;
    std::vector<int64_t> kept;
    {
        HostVulkan vk(/*host_query_reset=*/true);
        lapse::Runtime runtime;
        lapse::Device dev = open_attach_device(runtime);
        lapse::VulkanAttach attach(dev);
        const lapse::Stream stream = attach.attach(vk.attach_info(true));
        auto session = std::make_shared<lapse::Session>();
        dev.record_into(session);
        VkCommandBuffer cb = vk.begin();
        std::vector<lapse::Duration> durations;
        for (int i = 0; i < 4; ++i) durations.push_back(attach.profile(cb, stream, [] {}, "kept"));
        CHECK(durations[0].pending());
        CHECK(durations[0].name() == "kept");
        vk.submit_and_wait(cb);
        REQUIRE(dev.resolve(durations));
        for (const lapse::Duration& d : durations) {
            REQUIRE(d.ready());
            CHECK(d.method() == lapse::TimingMethod::device);
            kept.push_back(d.interval()->ns());
        }
        // Resolved by the caller: recorded once, with the caller's numbers.
        const std::vector<lapse::WindowRecord> recorded = session->windows();
        std::vector<int64_t> in_session;
        for (const lapse::WindowRecord& r : recorded) in_session.push_back(r.end_ns - r.start_ns);
        std::vector<int64_t> sorted_kept = kept;
        std::sort(in_session.begin(), in_session.end());
        std::sort(sorted_kept.begin(), sorted_kept.end());
        CHECK(in_session == sorted_kept);
    }
    CHECK(kept.size() == 4);
    INFO(g_last_message);
    CHECK(g_validation_messages == 0);
}

TEST_CASE("VulkanAttach refuses a device whose backend has no Vulkan commands, saying so", "[vulkan][attach][core]")
{
    lapse::Runtime runtime;
    lapse::Device dev = runtime.open(lapse::Config::builtin());
    try {
        lapse::VulkanAttach attach(dev);
        FAIL("no error");
    } catch (const lapse::Error& e) {
        CHECK(e.status() == LAPSE_ERROR_UNSUPPORTED);
        CHECK(std::string(e.what()).find(LAPSE_VULKAN_COMMANDS_ID) != std::string::npos);
    }
}

namespace {

// One window through VulkanAttach on a plugin whose commands table is
// `struct_size` bytes (a test double that resizes the real plugin's).
void time_one_window_through(const char* plugin_path, std::size_t struct_size)
{
    g_validation_messages = 0;
    {
        HostVulkan vk(/*host_query_reset=*/true);
        lapse::Runtime runtime;
        lapse::Device dev = open_attach_device(runtime, plugin_path);
        lapse::VulkanAttach attach(dev);
        REQUIRE(attach.commands().struct_size == struct_size);  // the double is in place
        const lapse::Stream stream = attach.attach(vk.attach_info(true));
        CHECK(dev.info().stream_count == 1);
        VkCommandBuffer cb = vk.begin();
        lapse::Duration d = attach.profile(cb, stream, [] {}, "through a resized table");
        vk.submit_and_wait(cb);
        REQUIRE(d.resolve().has_value());
        REQUIRE(d.ready());
        CHECK(d.method() == lapse::TimingMethod::device);
        CHECK(d.interval()->ns() >= 0);
    }
    INFO(g_last_message);
    CHECK(g_validation_messages == 0);
}

}  // namespace

TEST_CASE("VulkanAttach accepts a commands table longer than this build's and times windows through it",
          "[vulkan][attach][core][abi]")
{
    // The double appends four 8-byte members a later minor might have.
    time_one_window_through(LAPSE_VULKAN_COMMANDS_LONGER_PATH, sizeof(lapse_vulkan_commands) + 4 * sizeof(uint64_t));
}

TEST_CASE("VulkanAttach accepts a commands table that ends right after cmd_profile_end, the last member it calls",
          "[vulkan][attach][core][abi]")
{
    STATIC_REQUIRE(lapse::VulkanAttach::required_commands_size < sizeof(lapse_vulkan_commands));
    time_one_window_through(LAPSE_VULKAN_COMMANDS_THROUGH_CMD_PROFILE_END_PATH,
                            lapse::VulkanAttach::required_commands_size);
}

TEST_CASE("VulkanAttach refuses a commands table that ends before cmd_profile_end, naming the struct and both sizes",
          "[vulkan][attach][core][abi]")
{
    lapse::Runtime runtime;
    lapse::Device dev = open_attach_device(runtime, LAPSE_VULKAN_COMMANDS_THROUGH_CMD_PROFILE_START_PATH);
    const auto* ext = static_cast<const lapse_vulkan_commands*>(dev.extension(LAPSE_VULKAN_COMMANDS_ID));
    REQUIRE(ext != nullptr);
    const std::size_t short_size = offsetof(lapse_vulkan_commands, cmd_profile_end);
    REQUIRE(ext->struct_size == short_size);  // the double is in place
    STATIC_REQUIRE(lapse::VulkanAttach::required_commands_size == short_size + sizeof(void*));
    try {
        lapse::VulkanAttach attach(dev);
        FAIL("a table without cmd_profile_end was accepted");
    } catch (const lapse::Error& e) {
        const std::string message = e.what();
        INFO(message);
        CHECK(e.status() == LAPSE_ERROR_UNSUPPORTED);
        CHECK(message.find("lapse_vulkan_commands") != std::string::npos);
        CHECK(message.find("struct_size " + std::to_string(short_size)) != std::string::npos);
        CHECK(message.find("need " + std::to_string(lapse::VulkanAttach::required_commands_size) + " bytes") !=
              std::string::npos);
        CHECK(message.find("cmd_profile_end") != std::string::npos);
    }
}

TEST_CASE("own mode through Device::resolve over a span: each stamp pair lands in its own Duration, on the host clock",
          "[vulkan][own][core][compact]")
{
    {
        lapse::Runtime runtime;
        lapse::Device dev = runtime.open(lapse::Config::from_string(
            std::string("[backend]\nplugin = \"") + LAPSE_VULKAN_PLUGIN_PATH + "\"\nvalidation = true\n",
            "<own test>", "/"));
        // The span resolve asks the device's compact resolve first; each
        // inner Duration resolves alone, in full. Outer windows each
        // enclose an inner one, so a pair written into the wrong Duration,
        // or converted otherwise than the full resolve converts, breaks the
        // enclosure. More than one chunk (128) and one segment (256).
        constexpr std::size_t n = 300;
        std::vector<lapse::Duration> outer(n), inner(n);
        for (std::size_t k = 0; k < n; ++k) {
            lapse::Window o = dev.profile_start(0);
            lapse::Window i = dev.profile_start(0);
            inner[k] = dev.profile_end(i);
            outer[k] = dev.profile_end(o);
        }
        REQUIRE(dev.resolve(outer));
        for (lapse::Duration& d : inner) REQUIRE(d.resolve().has_value());
        for (std::size_t k = 0; k < n; ++k) {
            INFO("window " << k);
            const auto o = outer[k].interval();
            const auto i = inner[k].interval();
            REQUIRE(o.has_value());
            REQUIRE(i.has_value());
            CHECK(o->method == lapse::TimingMethod::device);
            CHECK(o->domain == lapse::ClockDomain::host_monotonic);
            CHECK(o->start_ns <= i->start_ns);
            CHECK(o->end_ns >= i->end_ns);
        }
        // The plugin's own validation layer counts what it said.
        const auto* ext = static_cast<const lapse_vulkan_commands*>(dev.extension(LAPSE_VULKAN_COMMANDS_ID));
        REQUIRE(ext != nullptr);
        CHECK(ext->validation_message_count(dev.handle()) == 0);
    }
}
