// Device::resolve over a span: its direct route (the span's windows asked
// about in chunks of a hundred and more, each gathered and written back in
// one pass) keeps every rule of the general way, over spans longer than a
// chunk: final windows are left as they are, named ones are recorded once,
// another device's window anywhere in the span is resolved too, an
// impossible answer is refused, and a timeout is spread over the chunks,
// not given to each.
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <lapse/core/session.hpp>
#include <lapse/resolve_compact.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using test::config;

namespace {

lapse::Device open(const std::string& backend) { return test::open_backend(backend); }

// More windows than a few chunks hold, so every test crosses chunk ends.
constexpr int kWindows = 1000;

lapse::Duration measured_window(lapse::Device& device, std::string_view name = {})
{
    return device.profile(0, [&] { device.submit(0, [] {}); }, {.name = name});
}

}  // namespace

TEST_CASE("a span longer than a chunk resolves whole, final windows left as they are", "[resolve][span]")
{
    lapse::Device device = open("plugin = \"clock\"\n");
    std::vector<lapse::Duration> durations;
    for (int i = 0; i < kWindows; ++i) {
        if (i % 7 == 3)
            durations.emplace_back();  // final already: not measured
        else
            durations.push_back(measured_window(device));
    }
    REQUIRE(durations[11].resolve());  // resolved on its own before the batch
    const lapse::Interval first = *durations[11].interval();
    CHECK(device.resolve(durations));
    for (int i = 0; i < kWindows; ++i) {
        INFO("window " << i);
        if (i % 7 == 3)
            CHECK(durations[static_cast<std::size_t>(i)].state() == lapse::DurationState::not_measured);
        else
            CHECK(durations[static_cast<std::size_t>(i)].ready());
    }
    CHECK(durations[11].interval()->start_ns == first.start_ns);
    CHECK(durations[11].interval()->end_ns == first.end_ns);
    CHECK(device.resolve(durations));  // all final: nothing changes
}

TEST_CASE("named windows of a span are recorded into the session exactly once", "[resolve][span][session]")
{
    lapse::Device device = open("plugin = \"clock\"\n");
    auto session = std::make_shared<lapse::Session>();
    device.record_into(session);
    std::vector<lapse::Duration> durations;
    int named = 0;
    for (int i = 0; i < kWindows; ++i) {
        const bool with_name = i % 3 == 0;
        named += with_name ? 1 : 0;
        durations.push_back(measured_window(device, with_name ? "w" + std::to_string(i) : std::string()));
    }
    CHECK(device.resolve(durations));
    CHECK(device.resolve(durations));
    std::vector<lapse::WindowRecord> records = session->windows();
    CHECK(records.size() == static_cast<std::size_t>(named));
    for (const lapse::WindowRecord& r : records) CHECK(r.state == lapse::DurationState::ready);
}

TEST_CASE("another device's window late in a span is resolved, and so is everything after it", "[resolve][span]")
{
    lapse::Device device = open("plugin = \"clock\"\n");
    lapse::Device other = open("plugin = \"clock\"\n");
    std::vector<lapse::Duration> durations;
    for (int i = 0; i < kWindows; ++i) durations.push_back(measured_window(i == 700 ? other : device));
    CHECK(device.resolve(durations));
    for (int i = 0; i < kWindows; ++i) {
        INFO("window " << i);
        CHECK(durations[static_cast<std::size_t>(i)].ready());
    }
}

TEST_CASE("an impossible answer in a span is refused, naming the plugin", "[resolve][span][impossible]")
{
    const char* answer = GENERATE("int64_extremes", "end_before_start", "bad_state", "bad_method", "bad_domain");
    INFO("answer = " << answer);
    lapse::Device device = open("plugin = \"misbehaving\"\nanswer = \"" + std::string(answer) + "\"\n");
    std::vector<lapse::Duration> durations;
    for (int i = 0; i < 300; ++i) durations.push_back(device.profile(0, [] {}));
    CHECK(device.resolve(durations));  // final, if failed
    for (const lapse::Duration& d : durations) {
        REQUIRE(d.failed());
        CHECK(d.error_status() == LAPSE_ERROR_INTERNAL);
        CHECK(std::string(d.error_message()).find("plugin 'misbehaving'") != std::string::npos);
    }
}

TEST_CASE("a good answer in a span reads as written, partial flags included", "[resolve][span][flags]")
{
    lapse::Device device = open("plugin = \"misbehaving\"\nanswer = \"flags\"\n");
    std::vector<lapse::Duration> durations;
    for (int i = 0; i < 300; ++i) durations.push_back(device.profile(0, [] {}));
    CHECK(device.resolve(durations));
    for (const lapse::Duration& d : durations) {
        REQUIRE(d.ready());
        CHECK(d.interval()->ns() == 1000);
        CHECK(d.work_queued());
        CHECK(d.holds_earlier_work());
        CHECK(d.queued_ops() == 7);
        CHECK(d.method() != lapse::TimingMethod::none);
    }
}

TEST_CASE("a span's timeout is the whole call's, not each chunk's", "[resolve][span][timeout]")
{
    // Windows pending for 30 s: a call that gave each of its chunks the
    // full timeout would wait 16 times 100 ms; the call waits about 100 ms.
    lapse::Device device = open("plugin = \"clock\"\nresolve_delay_ms = 30000\n");
    std::vector<lapse::Duration> durations;
    for (int i = 0; i < 2048; ++i) durations.push_back(measured_window(device));
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_FALSE(device.resolve(durations, std::chrono::milliseconds(100)));
    const auto waited = std::chrono::steady_clock::now() - t0;
    CHECK(waited >= std::chrono::milliseconds(90));
    CHECK(waited < std::chrono::milliseconds(1000));  // 16 x 100 ms would be 1.6 s
    for (const lapse::Duration& d : durations) CHECK(d.pending());
    CHECK_FALSE(device.resolve(durations, lapse::poll));
    for (lapse::Duration& d : durations) d.abandon();
}

// The compact route: a device that offers lapse.resolve_compact/1 is asked
// that first over a span, and resolved in full only for what it leaves.
// Against the misbehaving double, whose full resolve answers `answer` and
// whose compact one `compact` (fixtures/test_double_misbehaving.cpp).
namespace {

std::vector<lapse::Duration> closed_windows(lapse::Device& device, int n = kWindows)
{
    std::vector<lapse::Duration> durations;
    for (int i = 0; i < n; ++i) durations.push_back(device.profile(0, [] {}));
    return durations;
}

// `strided`: the double offers resolve_compact_strided too, which the
// host then takes (each window resolved in its own words).
lapse::Device misbehaving(const std::string& compact, const std::string& answer, bool strided,
                          const std::string& throws = "")
{
    return open("plugin = \"misbehaving\"\ncompact = \"" + compact + "\"\nanswer = \"" + answer + "\"\nthrows = \"" +
                throws + "\"\nstrided = " + (strided ? "true" : "false") + "\n");
}

}  // namespace

TEST_CASE("a span on a device that resolves compactly reads its pairs, and the full resolve is not asked",
          "[resolve][span][compact]")
{
    // The full resolve would answer an impossible state: every window
    // reading READY shows the pairs were used and nothing else.
    const bool strided = GENERATE(false, true);
    INFO("strided = " << strided);
    lapse::Device device = misbehaving("good", "bad_state", strided);
    std::vector<lapse::Duration> durations = closed_windows(device);
    CHECK(device.resolve(durations));
    for (const lapse::Duration& d : durations) {
        REQUIRE(d.ready());
        CHECK(d.interval()->start_ns == 1000);
        CHECK(d.interval()->end_ns == 2000);
        CHECK(d.method() == lapse::TimingMethod::device);
        CHECK(d.interval()->domain == lapse::ClockDomain::host_monotonic);
    }
}

TEST_CASE("what the compact resolve leaves or refuses is answered in full, never lost", "[resolve][span][compact]")
{
    const char* compact = GENERATE("full", "bad_state", "refuses", "bad_method");
    const bool strided = GENERATE(false, true);
    INFO("compact = " << compact << ", strided = " << strided);
    lapse::Device device = misbehaving(compact, "good", strided);
    std::vector<lapse::Duration> durations = closed_windows(device);
    CHECK(device.resolve(durations));
    for (const lapse::Duration& d : durations) {
        REQUIRE(d.ready());
        CHECK(d.interval()->end_ns - d.interval()->start_ns == 1000);
    }
}

TEST_CASE("a dense compact resolve that throws is answered in full, never lost", "[resolve][span][compact]")
{
    lapse::Device device = misbehaving("good", "good", false, "resolve_compact");
    std::vector<lapse::Duration> durations = closed_windows(device);
    CHECK(device.resolve(durations));
    for (const lapse::Duration& d : durations) {
        REQUIRE(d.ready());
        CHECK(d.interval()->end_ns - d.interval()->start_ns == 1000);
    }
}

TEST_CASE("a strided compact resolve that throws fails every window of its run, naming the call, never a number",
          "[resolve][span][compact]")
{
    // Stopped halfway, it may have written stamps over tokens: none of
    // them is read as a token again, and none as a duration.
    lapse::Device device = misbehaving("good", "good", true, "resolve_compact");
    std::vector<lapse::Duration> durations = closed_windows(device);
    CHECK(device.resolve(durations));
    for (const lapse::Duration& d : durations) {
        REQUIRE(d.failed());
        CHECK_FALSE(d.interval().has_value());
        CHECK(std::string(d.error_message()).find("resolve_compact_strided") != std::string::npos);
        CHECK(std::string(d.error_message()).find("misbehaving: resolve_compact throws") != std::string::npos);
    }
}

TEST_CASE("an impossible stamp pair is refused as the plugin's error, never handed up as a number",
          "[resolve][span][compact]")
{
    const bool strided = GENERATE(false, true);
    INFO("strided = " << strided);
    lapse::Device device = misbehaving("end_before_start", "good", strided);
    std::vector<lapse::Duration> durations = closed_windows(device);
    device.resolve(durations);
    for (const lapse::Duration& d : durations) {
        REQUIRE(d.failed());
        CHECK_FALSE(d.interval().has_value());
        CHECK(d.error_status() == LAPSE_ERROR_INTERNAL);
        CHECK(std::string(d.error_message()).find("plugin 'misbehaving'") != std::string::npos);
        CHECK(std::string(d.error_message()).find("impossible stamp pair") != std::string::npos);
    }
}

TEST_CASE("on the CPU plugin a span resolves compactly, with failed and pending windows answered in full",
          "[resolve][span][compact][cpu]")
{
    lapse::Device device = open("plugin = \"cpu\"\nstreams = 1\n");
    REQUIRE(device.extension(LAPSE_RESOLVE_COMPACT_EXTENSION) != nullptr);
    // Work that throws on the worker, submitted through the C ABI (the C++
    // submit keeps the exception for sync): the window around it fails.
    const lapse_work_fn throwing = [](void*, void*) { throw std::runtime_error("work failed (test)"); };
    std::vector<lapse::Duration> durations;
    for (int i = 0; i < kWindows; ++i) {
        if (i % 9 == 4)
            durations.push_back(device.profile(0, [&] {
                REQUIRE(device.plugin().submit(device.handle(), 0, throwing, nullptr, nullptr) == LAPSE_OK);
            }));
        else
            durations.push_back(measured_window(device));
    }
    // A window the worker has not reached when the span is resolved, for a
    // while: it stays pending, then resolves.
    std::atomic<bool> release{false};
    device.submit(0, [&] {
        while (!release.load()) std::this_thread::yield();
    });
    durations.push_back(measured_window(device));
    CHECK_FALSE(device.resolve(durations, std::chrono::milliseconds(20)));
    CHECK(durations.back().pending());
    release.store(true);
    CHECK(device.resolve(durations));
    for (int i = 0; i <= kWindows; ++i) {
        INFO("window " << i);
        const lapse::Duration& d = durations[static_cast<std::size_t>(i)];
        if (i < kWindows && i % 9 == 4) {
            CHECK(d.failed());
            CHECK(d.error_status() == LAPSE_ERROR_DEVICE);
        } else {
            REQUIRE(d.ready());
            CHECK(d.method() == lapse::TimingMethod::device);
            CHECK(d.interval()->end_ns >= d.interval()->start_ns);
        }
    }
}
