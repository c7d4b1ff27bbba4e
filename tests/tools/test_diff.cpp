// lapse diff: the shift statistics against brute force, verdicts on
// generated sessions with known shifts, the false-positive rate over many
// repetitions of one distribution, and the exit codes a CI gate reads.
#include "diff_model.hpp"
#include "session_maker.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sys/wait.h>

using namespace lapse;
using namespace lapse::test;
using namespace lapse::cli;

namespace {

DiffResult diff_sessions(const Session& base, const Session& next, DiffOptions options = {})
{
    TempFile a("base.lapse"), b("new.lapse");
    base.save(a.path());
    next.save(b.path());
    auto source = open_record_source({a.str(), b.str()});
    return compute_diff(*source, options);
}

Session busy_windows(uint64_t seed, double mean_ms, std::size_t count = 200)
{
    std::mt19937_64 rng(seed);
    Session s;
    // Busy work around mean_ms with 2 % noise, and a few preempted outliers.
    add_serial_windows(s, rng, "busy", 0, count, mean_ms * 1e6, mean_ms * 2e4);
    for (std::size_t i = 0; i < count / 50; ++i) s.add(device_window("busy", 0, 0, static_cast<int64_t>(mean_ms * 3e6)));
    return s;
}

int exit_code_of(const std::string& command)
{
    const int rc = std::system(command.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

TEST_CASE("diff statistics: the k-th pairwise difference agrees with brute force", "[diff]")
{
    std::mt19937_64 rng(GENERATE(1u, 2u, 3u));
    std::uniform_int_distribution<int64_t> v(-50, 50);
    std::vector<int64_t> x(37), y(23);
    for (auto& e : x) e = v(rng);
    for (auto& e : y) e = v(rng);
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    std::vector<int64_t> all;
    for (int64_t a : x)
        for (int64_t b : y) all.push_back(b - a);
    std::sort(all.begin(), all.end());
    for (uint64_t k : {uint64_t{1}, uint64_t{2}, uint64_t{100}, uint64_t{all.size() / 2}, uint64_t{all.size()}})
        CHECK(kth_pairwise_difference(x, y, k) == all[k - 1]);
}

TEST_CASE("diff statistics: a known shift is estimated inside its interval", "[diff]")
{
    std::vector<int64_t> x, y;
    for (int i = 0; i < 500; ++i) {
        x.push_back(1000 + (i * 37) % 101);
        y.push_back(1030 + (i * 53) % 101);  // shifted by 30
    }
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    const ShiftEstimate e = hodges_lehmann_shift(x, y, 0.99);
    CHECK(e.shift_ns == Approx(30).margin(2));
    CHECK(e.low_ns <= 30);
    CHECK(e.high_ns >= 30);
    CHECK(e.low_ns > 0);
    CHECK(e.p_value < 1e-6);
    const ShiftEstimate same = hodges_lehmann_shift(x, x, 0.99);
    CHECK(same.shift_ns == 0);
    CHECK(same.low_ns <= 0);
    CHECK(same.high_ns >= 0);
}

TEST_CASE("diff: windows of 1.00 ms against 1.06 ms are flagged slower, and the reverse faster", "[diff]")
{
    const Session base = busy_windows(1, 1.00), slower = busy_windows(2, 1.06);
    const DiffResult r = diff_sessions(base, slower);
    REQUIRE(r.rows.size() == 1);
    CHECK(r.rows[0].verdict == Verdict::slower);
    CHECK(r.rows[0].change == Approx(0.06).margin(0.01));
    CHECK(r.rows[0].change_low > 0.02);
    CHECK(r.any_slower());
    CHECK(diff_sessions(slower, base).rows[0].verdict == Verdict::faster);
    // A threshold above the change: significant, but not a regression.
    DiffOptions loose;
    loose.threshold = 0.10;
    CHECK(diff_sessions(base, slower, loose).rows[0].verdict == Verdict::no_change);
}

TEST_CASE("diff: two sessions of one distribution say no change over many repetitions", "[diff]")
{
    constexpr int repetitions = 300;
    int flagged = 0, significant = 0;
    DiffOptions no_threshold;
    no_threshold.threshold = 0;
    for (int i = 0; i < repetitions; ++i) {
        std::mt19937_64 rng(1000 + i);
        Session a, b;
        add_serial_windows(a, rng, "busy", 0, 200, 1e6, 2e4);
        add_serial_windows(b, rng, "busy", 0, 200, 1e6, 2e4);
        TempFile fa("a.lapse"), fb("b.lapse");
        a.save(fa.path());
        b.save(fb.path());
        auto s1 = open_record_source({fa.str(), fb.str()});
        const DiffResult r = compute_diff(*s1, DiffOptions{});
        flagged += r.rows[0].verdict != Verdict::no_change;
        auto s2 = open_record_source({fa.str(), fb.str()});
        significant += compute_diff(*s2, no_threshold).rows[0].verdict != Verdict::no_change;
    }
    std::cout << "diff false positives over " << repetitions << " repetitions: " << flagged
              << " with the 2% threshold, " << significant << " with no threshold (99% interval)\n";
    CHECK(flagged == 0);
    // The interval's own level: about 1 % expected; 4 % allows for chance.
    CHECK(significant <= repetitions * 4 / 100);
}

TEST_CASE("diff: failed and not-measured windows are counted apart; device and system times never mixed", "[diff]")
{
    std::mt19937_64 rng(5);
    Session base, next;
    add_serial_windows(base, rng, "step", 0, 50, 1e6, 1e4);
    add_serial_windows(next, rng, "step", 0, 50, 1e6, 1e4);
    for (int i = 0; i < 7; ++i) {
        WindowRecord failed;
        failed.name = "step";
        failed.method = TimingMethod::device;
        failed.state = DurationState::failed;  // no interval: must not read as a 0 ns window
        next.add(failed);
    }
    WindowRecord lost;
    lost.name = "step";
    lost.method = TimingMethod::device;
    base.add(lost);
    for (int i = 0; i < 50; ++i)  // the same name, timed on the host: its own row
        next.add(make_window("step", 9, 0, TimingMethod::system, ClockDomain::host_monotonic, 0, 5'000'000));
    const DiffResult r = diff_sessions(base, next);
    REQUIRE(r.rows.size() == 2);
    const DiffRow& device = r.rows[0].method == TimingMethod::device ? r.rows[0] : r.rows[1];
    const DiffRow& system = r.rows[0].method == TimingMethod::system ? r.rows[0] : r.rows[1];
    CHECK(device.next.failed == 7);
    CHECK(device.base.not_measured == 1);
    CHECK(device.next.count == 50);
    CHECK(device.verdict == Verdict::no_change);
    CHECK(system.verdict == Verdict::only_in_new);
}

#ifdef LAPSE_CLI
TEST_CASE("diff: exit 1 when slower, 0 otherwise, 2 for bad input", "[diff][cli]")
{
    TempFile a("base.lapse"), b("new.lapse"), junk("junk.lapse");
    busy_windows(1, 1.00).save(a.path());
    busy_windows(2, 1.06).save(b.path());
    std::ofstream(junk.path()) << "not a session\n";
    const std::string cli = std::string(LAPSE_CLI) + " diff ";
    CHECK(exit_code_of(cli + a.str() + " " + b.str() + " > /dev/null") == 1);
    CHECK(exit_code_of(cli + b.str() + " " + a.str() + " > /dev/null") == 0);
    CHECK(exit_code_of(cli + a.str() + " " + b.str() + " --threshold 10% --json > /dev/null") == 0);
    CHECK(exit_code_of(cli + a.str() + " " + junk.str() + " > /dev/null 2>&1") == 2);
    CHECK(exit_code_of(cli + a.str() + " " + b.str() + " --threshold lots > /dev/null 2>&1") == 2);
    CHECK(exit_code_of(cli + a.str() + " > /dev/null 2>&1") == 2);  // NEW is required
    CHECK(exit_code_of(cli + "--no-such-option > /dev/null 2>&1") == 2);
}
#endif

// Figures for docs/performance.md (hidden: `tools_view_tests "[.perf]"`).
TEST_CASE("diff: two sessions of a million windows", "[.perf]")
{
    std::mt19937_64 rng(9);
    Session a, b;
    for (Stream s = 0; s < 4; ++s) {
        add_serial_windows(a, rng, "kernel_" + std::to_string(s), s, 250'000, 1e6, 2e4);
        add_serial_windows(b, rng, "kernel_" + std::to_string(s), s, 250'000, 1.01e6, 2e4);
    }
    TempFile fa("a.lapse"), fb("b.lapse");
    a.save(fa.path());
    b.save(fb.path());
    auto t0 = std::chrono::steady_clock::now();
    { Session::load(fa.path()); Session::load(fb.path()); }
    const double load = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t0 = std::chrono::steady_clock::now();
    auto source = open_record_source({fa.str(), fb.str()});
    const DiffResult r = compute_diff(*source, DiffOptions{});
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "diff of 1M vs 1M windows (load + statistics): " << total << " s, of which loading the two archives "
              << load << " s\n";
    CHECK(r.rows.size() == 4);
#ifdef LAPSE_CLI
    t0 = std::chrono::steady_clock::now();
    exit_code_of(std::string(LAPSE_CLI) + " diff " + fa.str() + " " + fb.str() + " > /dev/null");
    std::cout << "lapse diff of 1M vs 1M windows: "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
#endif
}
