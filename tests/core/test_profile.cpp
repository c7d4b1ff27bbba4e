// The C++ API's window behaviour, on test-double plugins: system-time
// fallback, run-anyway, abandon on throw, pending resolve, not measured,
// split across threads, batch resolve, session recording.
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <thread>

using test::config;

namespace {

lapse::Device open(const std::string& backend)
{
    static lapse::Runtime runtime(lapse::RuntimeOptions{{test::fixture_dir()}, nullptr});
    return runtime.open(config("[backend]\n" + backend));
}

uint64_t sync_count(const lapse::Device& device)
{
    auto* count = static_cast<const std::atomic<uint64_t>*>(device.extension("lapse.test.sync_count/1"));
    REQUIRE(count != nullptr);
    return count->load();
}

constexpr int64_t ms = 1000000;

}  // namespace

TEST_CASE("profile falls back to system time when the backend opens no window", "[profile][system]")
{
    lapse::Device device = open("plugin = \"noclock\"\n");
    uint64_t syncs_before = sync_count(device);
    bool ran = false;
    lapse::Duration d = device.profile(0, [&] {
        device.submit(0, [&](void* native) {
            CHECK(native == nullptr);
            test::spin_for_ns(5 * ms);
            ran = true;
        });
    });
    CHECK(ran);
    REQUIRE(d.state() == lapse::DurationState::ready);
    CHECK(d.method() == lapse::TimingMethod::system);
    auto iv = d.resolve(lapse::poll);
    REQUIRE(iv);
    CHECK(iv->domain == lapse::ClockDomain::host_monotonic);
    CHECK(iv->method == lapse::TimingMethod::system);
    CHECK(iv->ns() >= 5 * ms);
    // One sync before reading the start clock, one before the end clock.
    CHECK(sync_count(device) - syncs_before == 2);
}

TEST_CASE("system-time windows nest: the inner one lies within the outer one", "[profile][system]")
{
    lapse::Device device = open("plugin = \"noclock\"\n");
    lapse::Duration inner;
    lapse::Duration outer = device.profile(0, [&] {
        device.submit(0, [] { test::spin_for_ns(1 * ms); });
        inner = device.profile(0, [&] { device.submit(0, [] { test::spin_for_ns(2 * ms); }); });
    });
    auto o = outer.resolve();
    auto i = inner.resolve();
    REQUIRE(o);
    REQUIRE(i);
    CHECK(o->start_ns <= i->start_ns);
    CHECK(i->end_ns <= o->end_ns);
    CHECK(i->ns() >= 2 * ms);
    CHECK(o->ns() >= 3 * ms);
}

TEST_CASE("the split API falls back to system time too", "[profile][system]")
{
    lapse::Device device = open("plugin = \"noclock\"\n");
    lapse::Window w = device.profile_start(0, "split");
    CHECK(w.kind() == lapse::Window::Kind::system);
    device.submit(0, [] { test::spin_for_ns(1 * ms); });
    lapse::Duration d = device.profile_end(w);
    CHECK_FALSE(w.open());
    CHECK(d.method() == lapse::TimingMethod::system);
    CHECK(d.name() == "split");
    auto iv = d.resolve();
    REQUIRE(iv);
    CHECK(iv->ns() >= 1 * ms);
}

TEST_CASE("when a window cannot open the closure still runs and the error comes back", "[profile][run-anyway]")
{
    lapse::Device device = open("plugin = \"noclock\"\nfail_start = true\n");
    bool ran = false;
    lapse::Duration d = device.profile(0, [&] { device.submit(0, [&] { ran = true; }); }, {.name = "lost"});
    CHECK(ran);
    CHECK(d.state() == lapse::DurationState::failed);
    CHECK(d.method() == lapse::TimingMethod::none);
    CHECK(d.error_status() == LAPSE_ERROR_DEVICE);
    CHECK(d.error_message() == "noclock: profile_start: device lost (test double)");
    CHECK(d.name() == "lost");
    CHECK_FALSE(d.resolve());
    CHECK(d.state() == lapse::DurationState::failed);
}

TEST_CASE("a sync that fails around a system-time window fails the window, not the work", "[profile][system]")
{
    lapse::Device device = open("plugin = \"noclock\"\nfail_sync = true\n");
    bool ran = false;
    lapse::Duration d = device.profile(0, [&] { device.submit(0, [&] { ran = true; }); });
    CHECK(ran);
    CHECK(d.failed());
    CHECK(d.error_status() == LAPSE_ERROR_DEVICE);
    CHECK_THAT(std::string(d.error_message()), Catch::Contains("syncing stream 0 for a system-time window"));
    CHECK_THAT(std::string(d.error_message()), Catch::Contains("noclock: sync failed (test double)"));
}

TEST_CASE("a device window resolves later with device timing", "[profile][device]")
{
    lapse::Device device = open("plugin = \"clock\"\n");
    lapse::Duration d = device.profile(0, [&] { device.submit(0, [] { test::spin_for_ns(2 * ms); }); });
    CHECK(d.pending());
    auto iv = d.resolve();
    REQUIRE(iv);
    CHECK(d.state() == lapse::DurationState::ready);
    CHECK(iv->method == lapse::TimingMethod::device);
    CHECK(iv->ns() >= 2 * ms);
    // Asking again answers the same.
    auto again = d.resolve(lapse::poll);
    REQUIRE(again);
    CHECK(again->ns() == iv->ns());
}

TEST_CASE("a throwing closure abandons its window and the exception propagates", "[profile][abandon]")
{
    lapse::Device device = open("plugin = \"clock\"\n");
    // The double hands out ids in order: a probe tells which id comes next.
    lapse::Window probe = device.profile_start(0);
    REQUIRE(probe.kind() == lapse::Window::Kind::device);
    lapse_token next{probe.token().id + 1, 0, 0};
    device.profile_abandon(probe);
    CHECK_FALSE(probe.open());

    CHECK_THROWS_WITH(device.profile(0, [] { throw std::runtime_error("closure failed"); }), "closure failed");
    // The window that closure had is gone: closing it now is an invalid token.
    lapse_error error{sizeof(lapse_error), 0, {}};
    lapse_status s = device.plugin().profile_end(device.handle(), next, nullptr, &error);
    CHECK(s == LAPSE_ERROR_INVALID_TOKEN);
}

TEST_CASE("a window is ended once: the second end is an invalid token", "[profile][misuse]")
{
    lapse::Device device = open("plugin = \"clock\"\n");
    lapse::Window w = device.profile_start(0);
    device.submit(0, [] {});
    lapse::Duration first = device.profile_end(w);
    lapse::Duration second = device.profile_end(w);
    CHECK(first.pending());
    CHECK(second.failed());
    CHECK(second.error_status() == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(second.error_message() == "profile_end: the window is not open (already ended or abandoned)");
    CHECK(first.resolve());
}

TEST_CASE("an unresolved duration that is destroyed abandons its window", "[profile][abandon]")
{
    lapse::Device device = open("plugin = \"clock\"\n");
    lapse::Window w = device.profile_start(0);
    lapse_token token = w.token();
    device.submit(0, [] {});
    {
        lapse::Duration d = device.profile_end(w);
        CHECK(d.pending());
    }
    lapse_duration out{};
    out.struct_size = sizeof out;
    lapse_error error{sizeof(lapse_error), 0, {}};
    CHECK(device.plugin().resolve(device.handle(), &token, &out, 1, 0, &error) == LAPSE_ERROR_INVALID_TOKEN);
}

TEST_CASE("resolve with timeout zero answers pending, then resolves later", "[profile][resolve]")
{
    lapse::Device device = open("plugin = \"clock\"\nresolve_delay_ms = 30\n");
    lapse::Duration d = device.profile(0, [&] { device.submit(0, [] {}); });
    CHECK_FALSE(d.resolve(lapse::poll));
    CHECK(d.state() == lapse::DurationState::pending);
    CHECK(d.method() == lapse::TimingMethod::none);
    auto iv = d.resolve(std::chrono::seconds(10));
    REQUIRE(iv);
    CHECK(d.ready());
}

TEST_CASE("a window nothing ran in is not measured, which is not zero", "[profile][not-measured]")
{
    lapse::Device device = open("plugin = \"clock\"\n");
    lapse::Duration empty = device.profile(0, [] {});
    CHECK_FALSE(empty.resolve());
    CHECK(empty.state() == lapse::DurationState::not_measured);
    CHECK(empty.method() == lapse::TimingMethod::none);
    CHECK_FALSE(empty.interval());

    lapse::Duration worked = device.profile(0, [&] { device.submit(0, [] {}); });
    auto iv = worked.resolve();
    REQUIRE(iv);
    CHECK(iv->ns() >= 0);
}

TEST_CASE("a split pair may end on another thread", "[profile][split]")
{
    lapse::Device device = open("plugin = \"clock\"\nstreams = 2\n");
    lapse::Window w = device.profile_start(1, "split");
    device.submit(1, [] { test::spin_for_ns(2 * ms); });
    lapse::Duration d;
    std::thread closer([&] { d = device.profile_end(w); });
    closer.join();
    auto iv = d.resolve();
    REQUIRE(iv);
    CHECK(d.stream() == 1);
    CHECK(iv->ns() >= 2 * ms);
}

TEST_CASE("many durations resolve in one batch", "[profile][resolve]")
{
    lapse::Device device = open("plugin = \"clock\"\nstreams = 2\n");
    std::vector<lapse::Duration> durations;
    for (int i = 0; i < 20; ++i)
        durations.push_back(device.profile(i % 2, [&] { device.submit(i % 2, [] {}); }));
    durations.push_back(lapse::Duration());  // a final one in the batch is left as it is
    CHECK(device.resolve(durations));
    for (std::size_t i = 0; i + 1 < durations.size(); ++i) CHECK(durations[i].ready());
    CHECK(durations.back().state() == lapse::DurationState::not_measured);
}

TEST_CASE("a duration keeps its stream, state, interval and error through moves", "[profile][duration]")
{
    // A Duration packs what each state needs into shared words (the token
    // while pending, start/end once ready, the status once failed): every
    // state must read back whole, before and after a move.
    lapse::Device device = open("plugin = \"clock\"\nstreams = 2\n");
    lapse::Window w = device.profile_start(1);
    device.submit(1, [] { test::spin_for_ns(1 * ms); });
    lapse::Duration pending = device.profile_end(w);
    CHECK(pending.pending());
    CHECK(pending.stream() == 1);
    CHECK(pending.method() == lapse::TimingMethod::none);
    CHECK(pending.error_status() == LAPSE_OK);
    CHECK_FALSE(pending.interval());

    lapse::Duration moved = std::move(pending);
    CHECK(pending.state() == lapse::DurationState::not_measured);  // NOLINT(bugprone-use-after-move)
    CHECK(pending.stream() == 1);
    CHECK_FALSE(pending.interval());
    REQUIRE(moved.pending());
    const auto iv = moved.resolve();  // resolves the token the move carried
    REQUIRE(iv);
    CHECK(iv->ns() >= 1 * ms);
    CHECK(iv->start_ns > 0);
    CHECK(iv->method == lapse::TimingMethod::device);
    CHECK(iv->domain != lapse::ClockDomain::none);
    CHECK(moved.stream() == 1);
    CHECK(moved.error_status() == LAPSE_OK);

    lapse::Duration ready;
    ready = std::move(moved);
    const auto again = ready.interval();
    REQUIRE(again);
    CHECK(again->start_ns == iv->start_ns);
    CHECK(again->end_ns == iv->end_ns);
    CHECK(again->domain == iv->domain);
    CHECK(again->method == iv->method);

    lapse::Duration failed = device.profile_end(w);  // ended already
    REQUIRE(failed.failed());
    lapse::Duration failed_moved(std::move(failed));
    CHECK(failed_moved.error_status() == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(failed_moved.stream() == 1);
    CHECK(failed_moved.method() == lapse::TimingMethod::none);
    CHECK_FALSE(failed_moved.interval());
    CHECK(failed_moved.error_message() == "profile_end: the window is not open (already ended or abandoned)");
}

TEST_CASE("named windows are recorded into the session when they resolve", "[profile][session]")
{
    lapse::Device device = open("plugin = \"clock\"\nstreams = 2\n");
    auto session = std::make_shared<lapse::Session>();
    device.record_into(session);
    CHECK(session->backend().plugin == "clock");
    CHECK(session->backend().stream_count == 2);

    lapse::Duration named = device.profile(1, [&] { device.submit(1, [] {}); }, {.name = "phase"});
    lapse::Duration unnamed = device.profile(1, [&] { device.submit(1, [] {}); });
    CHECK(session->size() == 0);  // not before they resolve
    auto iv = named.resolve();
    REQUIRE(iv);
    REQUIRE(unnamed.resolve());
    auto windows = session->windows();
    REQUIRE(windows.size() == 1);
    CHECK(windows[0].name == "phase");
    CHECK(windows[0].stream == 1);
    CHECK(windows[0].state == lapse::DurationState::ready);
    CHECK(windows[0].method == lapse::TimingMethod::device);
    CHECK(windows[0].start_ns == iv->start_ns);
    CHECK(windows[0].end_ns == iv->end_ns);
    CHECK(windows[0].thread == static_cast<uint64_t>(::syscall(SYS_gettid)));
}

TEST_CASE("an exception thrown by submitted work is rethrown by the next sync", "[device]")
{
    lapse::Device device = open("plugin = \"clock\"\n");
    device.submit(0, [] { throw std::runtime_error("work failed"); });
    CHECK_THROWS_WITH(device.sync(), "work failed");
    CHECK_NOTHROW(device.sync());  // reported once
}

TEST_CASE("a closed device refuses calls clearly", "[device][misuse]")
{
    lapse::Device device = open("plugin = \"clock\"\n");
    device.close();
    CHECK_FALSE(device);
    auto e = test::error_of([&] { device.sync(); });
    CHECK(e.status() == LAPSE_ERROR_CLOSED);
    CHECK(std::string(e.what()) == "sync: the device is closed");
    bool ran = false;
    lapse::Duration d = device.profile(0, [&] { ran = true; });
    CHECK(ran);
    CHECK(d.error_status() == LAPSE_ERROR_CLOSED);
}

TEST_CASE("submit to a stream that does not exist throws with the plugin's message", "[device]")
{
    lapse::Device device = open("plugin = \"clock\"\n");
    auto e = test::error_of([&] { device.submit(7, [] {}); });
    CHECK(e.status() == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()) == "submit: no stream 7");
}
