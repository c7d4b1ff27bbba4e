// Chrome trace export: tracks, nesting, overlap lanes, clock domains, and
// the windows that have no interval.
#include "chrome_trace.hpp"
#include "session_maker.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <string>

using namespace lapse;
using lapse::test::make_window;

namespace {

const nlohmann::json* slice(const nlohmann::json& trace, const std::string& name)
{
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "X" && e["name"] == name) return &e;
    return nullptr;
}

std::string thread_name(const nlohmann::json& trace, int pid, int64_t tid)
{
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == pid && e["tid"] == tid)
            return e["args"]["name"];
    return "";
}

}  // namespace

TEST_CASE("chrome trace: tracks, nesting, overlap lanes and device clocks", "[export]")
{
    Session session;
    session.set_backend({"cpu", "0.1.0", "cpu (2 worker streams)", 2, 0});
    // Host thread 111, system time: outer contains inner.
    session.add(make_window("outer", 111, 0, TimingMethod::system, ClockDomain::host_monotonic, 1'000, 10'000));
    session.add(make_window("inner", 111, 0, TimingMethod::system, ClockDomain::host_monotonic, 2'000, 3'000));
    // Stream 0, device windows on the host clock: A and B overlap without nesting.
    session.add(make_window("A", 111, 0, TimingMethod::device, ClockDomain::host_monotonic, 5'000, 8'000));
    session.add(make_window("B", 222, 0, TimingMethod::device, ClockDomain::host_monotonic, 6'000, 9'000));
    // Stream 1, on the device's own clock.
    session.add(make_window("dev", 111, 1, TimingMethod::device, ClockDomain::device, 500'000, 500'250));
    WindowRecord lost;
    lost.name = "lost";
    lost.state = DurationState::not_measured;
    session.add(lost);
    WindowRecord broke;
    broke.name = "broke";
    broke.state = DurationState::failed;
    broke.failure = LAPSE_ERROR_DEVICE;
    session.add(broke);

    lapse::cli::ChromeTraceStats stats;
    // Through text and back: what a viewer would read.
    const nlohmann::json trace = nlohmann::json::parse(lapse::cli::chrome_trace(session, stats).dump());
    CHECK(stats.slices == 5);
    CHECK(stats.not_measured == 1);
    CHECK(stats.failed == 1);
    CHECK(stats.overlap_lanes == 1);
    CHECK(slice(trace, "lost") == nullptr);
    CHECK(slice(trace, "broke") == nullptr);

    const auto* outer = slice(trace, "outer");
    const auto* inner = slice(trace, "inner");
    REQUIRE(outer != nullptr);
    REQUIRE(inner != nullptr);
    CHECK((*outer)["pid"] == 1);
    CHECK((*outer)["tid"] == (*inner)["tid"]);  // one track: nested slices
    CHECK((*outer)["ts"].get<double>() == 0.0);  // host origin = earliest host start (1000 ns)
    CHECK((*outer)["dur"].get<double>() == 9.0);
    CHECK((*inner)["ts"].get<double>() == 1.0);
    CHECK((*inner)["dur"].get<double>() == 1.0);
    CHECK(thread_name(trace, 1, (*outer)["tid"]) == "thread 111");

    const auto* a = slice(trace, "A");
    const auto* b = slice(trace, "B");
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    CHECK((*a)["pid"] == 2);  // same timeline as the host threads
    CHECK((*b)["pid"] == 2);
    CHECK((*a)["ts"].get<double>() == 4.0);
    CHECK((*a)["tid"] != (*b)["tid"]);  // overlapping, not nested: separate lanes
    CHECK(thread_name(trace, 2, (*a)["tid"]) == "stream 0");
    CHECK(thread_name(trace, 2, (*b)["tid"]) == "stream 0 (overlap 1)");

    const auto* dev = slice(trace, "dev");
    REQUIRE(dev != nullptr);
    CHECK((*dev)["pid"] == 3);  // its own timeline
    CHECK((*dev)["ts"].get<double>() == 0.0);
    CHECK((*dev)["dur"].get<double>() == 0.25);
    CHECK((*dev)["args"]["clock"] == "device");

    std::map<int, std::string> processes;
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "M" && e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
    CHECK(processes[1] == "host threads");
    CHECK(processes[2] == "cpu streams (host clock)");
    CHECK(processes[3].find("not aligned with host") != std::string::npos);
}

TEST_CASE("chrome trace: equal starts put the longer window outside", "[export]")
{
    Session session;
    session.add(make_window("short", 7, 0, TimingMethod::device, ClockDomain::host_monotonic, 0, 10));
    session.add(make_window("long", 7, 0, TimingMethod::device, ClockDomain::host_monotonic, 0, 100));
    session.add(make_window("after", 7, 0, TimingMethod::device, ClockDomain::host_monotonic, 100, 150));  // touches: not overlap
    lapse::cli::ChromeTraceStats stats;
    const nlohmann::json trace = lapse::cli::chrome_trace(session, stats);
    CHECK(stats.overlap_lanes == 0);
    std::vector<std::string> order;
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "X") order.push_back(e["name"]);
    CHECK(order == std::vector<std::string>{"long", "short", "after"});
}

TEST_CASE("chrome trace: many overlapping windows cost a bounded number of lane tries each", "[export]")
{
    // A staircase: every window overlaps every other without nesting, so
    // each needs its own lane; trying every lane would be n^2 / 2 tries.
    constexpr int n = 20'000;
    Session session;
    for (int i = 0; i < n; ++i)
        session.add(make_window("w", 0, 7, TimingMethod::device, ClockDomain::host_monotonic, i * 10, i * 10 + 1'000'000'000));
    lapse::cli::ChromeTraceStats stats;
    const auto trace = lapse::cli::chrome_trace(session, stats);
    CHECK(stats.slices == n);
    CHECK(stats.overlap_lanes == n - 1);
    CHECK(stats.lane_probes <= 10 * uint64_t{n});
}
