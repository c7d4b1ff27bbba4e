// Test support for the stacking plugins (forward, fusion): a runtime that
// also finds the test-only plugins, configs from strings, and busy work of
// known duration that records when it really ran.
//
// Busy intervals are stamped with CLOCK_MONOTONIC, the clock the CPU plugin
// and the single-window fixture stamp their windows with, so a test can
// check not only a window's length but which work it held: a covered
// interval lies inside [start, end], an excluded one outside.
#pragma once

#include <lapse/core.hpp>
#include <lapse/sdk/host.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

namespace lapse::test {

// forward over the CPU plugin's stream mode, which is whole: forward hands
// the inner tokens through (and offers window dispatch).
inline constexpr std::string_view kForwardOverCpu = R"(
[backend]
plugin = "forward"
[backend.inner]
plugin = "cpu"
mode = "stream"
streams = 2
)";

// The same with forward's own token map kept.
inline constexpr std::string_view kForwardOwnTokensOverCpu = R"(
[backend]
plugin = "forward"
own_tokens = true
[backend.inner]
plugin = "cpu"
mode = "stream"
streams = 2
)";

// forward over the single-window fixture: one window per stream, so
// forward maps its tokens onto segments (segment_log.hpp).
inline constexpr std::string_view kForwardOverSingleWindow = R"(
[backend]
plugin = "forward"
[backend.inner]
plugin = "single_window"
streams = 2
)";

// forward over the CPU plugin's inline mode, which opens no windows:
// forward times every window itself, in system time.
inline constexpr std::string_view kForwardOverInlineCpu = R"(
[backend]
plugin = "forward"
[backend.inner]
plugin = "cpu"
mode = "inline"
)";

using namespace std::chrono_literals;

inline int64_t now_ns() noexcept { return sdk::monotonic_ns(); }

inline Runtime make_runtime()
{
    RuntimeOptions options;
    options.search_paths = {LAPSE_TEST_PLUGIN_DIR};
    return Runtime(options);
}

inline Config config(std::string_view toml)
{
    return Config::from_string(toml, "<test config>", LAPSE_TEST_PLUGIN_DIR);
}

inline void spin_for(std::chrono::nanoseconds d) noexcept
{
    const int64_t until = now_ns() + d.count();
    while (now_ns() < until) {
    }
}

// Where one piece of busy work actually ran.
struct Busy {
    std::atomic<int64_t> start_ns{0};
    std::atomic<int64_t> end_ns{0};
    int64_t ns() const noexcept { return end_ns.load() - start_ns.load(); }
    bool ran() const noexcept { return end_ns.load() != 0; }
};

// Submits work that spins for `d` on `stream` and records its interval.
inline void submit_busy(Device& device, Stream stream, std::chrono::nanoseconds d, Busy& busy)
{
    device.submit(stream, [d, &busy] {
        busy.start_ns.store(now_ns());
        spin_for(d);
        busy.end_ns.store(now_ns());
    });
}

// Holds a stream's worker until opened, so that everything queued behind it
// runs back to back. A device window measures the stream between its
// markers, idle time included; without the gate, how long the stream idles
// while the test thread queues the next piece would be up to the (loaded)
// machine's scheduler, and the expected lengths would not be known.
// Declare it after the Device: it opens itself on destruction, before the
// device closes.
class Gate {
public:
    Gate() = default;
    Gate(const Gate&) = delete;
    Gate& operator=(const Gate&) = delete;
    ~Gate() { open(); }
    // Queues the gate on `stream`. Through fusion it waits in the queue
    // until a window opens (which hands the queue over) or a sync.
    void close_on(Device& device, Stream stream)
    {
        device.submit(stream, [this] {
            while (!open_.load()) std::this_thread::yield();
        });
    }
    void open() noexcept { open_.store(true); }

private:
    std::atomic<bool> open_{false};
};

// Resolves and insists on a READY interval.
inline Interval ready(Duration& d)
{
    std::optional<Interval> iv = d.resolve();
    INFO("state " << to_string(d.state()) << ", error: " << d.error_message());
    REQUIRE(iv.has_value());
    return *iv;
}

// A device window's stamps, converted from the TSC by the cpu plugin,
// agree with CLOCK_MONOTONIC (what busy work reads) only as well as its
// calibration pairs do (StampClock::refine accepts a pair whose two clock
// reads lie up to 10 µs apart; tests/cpu/cpu_plugin.hpp allows the same):
// an order between a stamp and a busy interval's own clock reads, which
// the worker takes nanoseconds apart, is checked with that much allowed.
// Every such order here holds by milliseconds of work when it holds at all.
inline constexpr int64_t kClockAgreementNs = 10'000;

// The window [iv] holds the busy interval [b].
inline bool holds(const Interval& iv, const Busy& b) noexcept
{
    return iv.start_ns <= b.start_ns.load() + kClockAgreementNs && b.end_ns.load() <= iv.end_ns + kClockAgreementNs;
}

// What a window that holds the busy intervals `first` through `last` (run
// in that order on one stream) should read: from the first one's start to
// the last one's end. A sum of their lengths would leave out the gaps
// between them, which the stream spent inside the window: short when the
// machine is idle, whole milliseconds when the worker is preempted on a
// loaded one.
inline int64_t span_ns(const Busy& first, const Busy& last) noexcept
{
    return last.end_ns.load() - first.start_ns.load();
}

// |actual - expected| <= 5% of expected, plus `slack` for the markers'
// own cost (a window is a little longer than the work it holds, never
// shorter).
inline bool within_5pct(int64_t actual, int64_t expected, int64_t slack = 200'000) noexcept
{
    return actual >= expected && actual <= expected + expected / 20 + slack;
}

// The lengths one attempt's windows read. A window measures its stream's
// timeline, so a worker preempted between a marker and the work (the
// workers and the test share two cores under ctest -j2) rightly reads
// long, by milliseconds; it can never rightly read short. So a length
// short of its work fails at once, on every attempt, and one too long is
// noted: within_5pct_on_one_of runs the attempt again.
class Lengths {
public:
    void expect_within_5pct(std::string_view what, int64_t actual, int64_t expected, int64_t slack = 200'000)
    {
        INFO(what << " read " << actual << " ns, its work took " << expected << " ns");
        CHECK(actual >= expected);
        if (!within_5pct(actual, expected, slack)) {
            long_ += std::string(what) + " read " + std::to_string(actual) + " ns over " + std::to_string(expected) +
                     " ns of work; ";
        }
    }
    // A length derived from several windows (a sum less another window):
    // a worker preempted between two markers that one of those windows
    // holds and another does not moves it either way, so a miss on either
    // side is noted for a rerun, not failed at once.
    void expect_near(std::string_view what, int64_t actual, int64_t expected, int64_t slack)
    {
        if (actual < expected - slack || actual > expected + expected / 20 + slack) {
            long_ += std::string(what) + " read " + std::to_string(actual) + " ns against " + std::to_string(expected) +
                     " ns; ";
        }
    }
    bool within() const noexcept { return long_.empty(); }
    const std::string& long_ones() const noexcept { return long_; }

private:
    std::string long_;
};

// Runs `attempt(Lengths&)` until one run's lengths are all within 5%, at
// most `attempts` times. A plugin that measures wrongly reads long (or
// short) every time, and fails.
template <class Attempt>
void within_5pct_on_one_of(int attempts, Attempt&& attempt)
{
    std::string last;
    for (int i = 0; i < attempts; ++i) {
        Lengths lengths;
        attempt(lengths);
        if (lengths.within()) return;
        last = lengths.long_ones();
        WARN("attempt " << i << " read out of bounds (a preempted worker?): " << last << "running it again");
    }
    FAIL_CHECK("all " << attempts << " attempts read out of bounds; the last: " << last);
}

inline constexpr int kAttempts = 5;

}  // namespace lapse::test
