// The CPU plugin in stream mode: windows are markers the worker stamps.
#include "cpu_plugin.hpp"

#include <atomic>
#include <cmath>
#include <future>
#include <thread>
#include <vector>

using namespace lapse_test;

TEST_CASE("a window around a 20 ms busy job reads 20 ms within 5%, and the caller did not wait", "[stream][accuracy]")
{
    CpuDevice dev;
    REQUIRE(dev.opened());
    // On a loaded machine the OS may stretch the job itself (a busy loop
    // descheduled at its last check runs long), or deschedule the worker
    // between a marker and the job (the window then rightly holds the
    // pause). So every attempt must bracket the job, and one attempt of up
    // to eight must match what the job really took within 5%, and read
    // 20 ms within 5% when the job ran unstretched. A plugin that measures
    // wrongly fails every attempt.
    int matched = 0;
    int unstretched = 0;
    int unstretched_matched = 0;
    for (int attempt = 0; attempt < 8 && unstretched_matched == 0; ++attempt) {
        // The worker waits at a gate while the window is queued, so it runs
        // the start marker, the job and the end marker back to back: a caller
        // descheduled between its calls would otherwise (rightly) be part of
        // the device's window.
        Gate gate;
        dev.submit(0, &gate);
        BusyJob job{20'000'000};
        const int64_t t0 = now_ns();
        lapse_token t = dev.start(0);
        dev.submit(0, &job);
        dev.end_ok(t);
        const int64_t caller_ns = now_ns() - t0;
        gate.open = true;
        const lapse_duration d = dev.ready(t);

        // Nothing waited for the worker: the calls returned while it was
        // still held at the gate (loose bound for a loaded 2-core machine).
        CHECK(caller_ns < 10'000'000);
        const double ms = double(d.end_ns - d.start_ns) / 1e6;
        const double job_ms = double(job.ended - job.began) / 1e6;
        INFO("window " << ms << " ms, job " << job_ms << " ms");
        // Stamps are host-monotonic and bracket the job exactly as it ran.
        CHECK(d.start_ns + kClockAgreementNs >= t0);
        CHECK(d.start_ns <= job.began + kClockAgreementNs);
        CHECK(job.ended <= d.end_ns + kClockAgreementNs);
        const bool matches_job = std::abs(ms - job_ms) <= 0.05 * job_ms;
        matched += matches_job ? 1 : 0;
        if (job_ms <= 20.5) {
            ++unstretched;
            if (matches_job && std::abs(ms - 20.0) <= 0.05 * 20.0) ++unstretched_matched;
        }
    }
    CHECK(matched > 0);
    if (unstretched == 0) WARN("every 20 ms job was stretched by the OS: the absolute check did not run");
    else CHECK(unstretched_matched > 0);
}

TEST_CASE("a window on one stream measures that stream's work, not another's", "[stream]")
{
    CpuDevice dev;
    Gate other;   // stream 0 stays blocked until stream 1's window resolved
    Gate held;    // stream 1 runs start, job, end back to back
    BusyJob mine{5'000'000};
    dev.submit(0, &other);
    dev.submit(1, &held);
    lapse_token t = dev.start(1);
    dev.submit(1, &mine);
    dev.end_ok(t);
    held.open = true;
    lapse_duration d;
    const lapse_status s = dev.resolve(t, d, 10'000'000'000);
    other.open = true;
    REQUIRE(s == LAPSE_OK);
    REQUIRE(d.state == LAPSE_DURATION_READY);
    const double ms = double(d.end_ns - d.start_ns) / 1e6;
    CHECK(ms >= 5.0);
    CHECK(d.start_ns <= mine.began + kClockAgreementNs);
    CHECK(mine.ended <= d.end_ns + kClockAgreementNs);
    dev.sync(LAPSE_ALL_STREAMS);
}

TEST_CASE("a stream runs work and markers in the order they were queued", "[stream]")
{
    CpuDevice dev;
    std::vector<int> seen;
    struct Append {
        std::vector<int>* seen;
        int value;
        void operator()() { seen->push_back(value); }
    };
    std::vector<Append> jobs;
    for (int i = 0; i < 2000; ++i) jobs.push_back({&seen, i});
    // Each 100 µs long, so that the order of the stamps and the jobs'
    // own clock reads holds by far more than the clocks' agreement.
    BusyJob before{100'000}, inside{100'000}, after{100'000};
    for (int i = 0; i < 1000; ++i) dev.submit(0, &jobs[i]);
    dev.submit(0, &before);
    lapse_token t = dev.start(0);
    dev.submit(0, &inside);
    dev.end_ok(t);
    dev.submit(0, &after);
    for (int i = 1000; i < 2000; ++i) dev.submit(0, &jobs[i]);
    dev.sync(0);
    REQUIRE(seen.size() == 2000);
    for (int i = 0; i < 2000; ++i) REQUIRE(seen[i] == i);
    const lapse_duration d = dev.ready(t);
    CHECK(before.ended <= d.start_ns + kClockAgreementNs);
    CHECK(d.start_ns <= inside.began + kClockAgreementNs);
    CHECK(inside.ended <= d.end_ns + kClockAgreementNs);
    CHECK(d.end_ns <= after.began + kClockAgreementNs);
}

TEST_CASE("windows nest: the inner one lies inside the outer one", "[stream]")
{
    CpuDevice dev;
    BusyJob a{3'000'000}, b{3'000'000}, c{3'000'000};
    lapse_token outer = dev.start(0);
    dev.submit(0, &a);
    lapse_token inner = dev.start(0);
    dev.submit(0, &b);
    dev.end_ok(inner);
    dev.submit(0, &c);
    dev.end_ok(outer);
    const lapse_duration o = dev.ready(outer);
    const lapse_duration i = dev.ready(inner);
    CHECK(o.start_ns <= a.began + kClockAgreementNs);
    CHECK(a.ended <= i.start_ns + kClockAgreementNs);
    CHECK(i.start_ns <= b.began + kClockAgreementNs);
    CHECK(b.ended <= i.end_ns + kClockAgreementNs);
    CHECK(i.end_ns <= c.began + kClockAgreementNs);
    CHECK(c.ended <= o.end_ns + kClockAgreementNs);
    CHECK(i.end_ns - i.start_ns <= o.end_ns - o.start_ns);
    CHECK(o.end_ns - o.start_ns >= 9'000'000);
}

TEST_CASE("windows overlap: A opens, B opens, A closes, B closes", "[stream]")
{
    CpuDevice dev;
    BusyJob x{2'000'000}, y{2'000'000}, z{2'000'000};
    lapse_token a = dev.start(0);
    dev.submit(0, &x);
    lapse_token b = dev.start(0);
    dev.submit(0, &y);
    dev.end_ok(a);
    dev.submit(0, &z);
    dev.end_ok(b);
    const lapse_duration da = dev.ready(a);
    const lapse_duration db = dev.ready(b);
    CHECK(da.start_ns <= x.began + kClockAgreementNs);
    CHECK(x.ended <= db.start_ns + kClockAgreementNs);
    CHECK(y.ended <= da.end_ns + kClockAgreementNs);
    CHECK(da.end_ns <= z.began + kClockAgreementNs);
    CHECK(z.ended <= db.end_ns + kClockAgreementNs);
    CHECK(da.end_ns - da.start_ns >= 4'000'000);
    CHECK(db.end_ns - db.start_ns >= 4'000'000);
}

TEST_CASE("a window started on one thread and ended on another measures the stream's work", "[stream][split]")
{
    CpuDevice dev;
    BusyJob job{5'000'000};
    std::promise<lapse_token> handoff;
    std::thread opener([&] { handoff.set_value(dev.start(1)); });
    lapse_token t{};
    std::thread closer([&] {
        t = handoff.get_future().get();
        lapse_error e = make_error();
        dev.plugin().submit(
            dev.device(), 1, [](void* u, void*) { (*static_cast<BusyJob*>(u))(); }, &job, &e);
        dev.plugin().profile_end(dev.device(), t, nullptr, &e);
    });
    opener.join();
    closer.join();
    const lapse_duration d = dev.ready(t);
    CHECK(d.start_ns <= job.began + kClockAgreementNs);
    CHECK(job.ended <= d.end_ns + kClockAgreementNs);
    CHECK(d.end_ns - d.start_ns >= 5'000'000);
}

TEST_CASE("a window brackets the work another thread queued while it was open, and none queued after it closed",
          "[stream][split]")
{
    CpuDevice dev;
    // The worker runs `busy` while everything else is queued, so it finds
    // the window's markers and the other thread's work all waiting.
    BusyJob busy{5'000'000}, inside{2'000'000}, after{2'000'000};
    dev.submit(0, &busy);
    const auto submit_from_another_thread = [&](BusyJob& job) {
        std::thread([&] {
            lapse_error e = make_error();
            dev.plugin().submit(
                dev.device(), 0, [](void* u, void*) { (*static_cast<BusyJob*>(u))(); }, &job, &e);
        }).join();
    };
    lapse_token t = dev.start(0);
    submit_from_another_thread(inside);
    dev.end_ok(t);
    submit_from_another_thread(after);
    const lapse_duration d = dev.ready(t);
    dev.sync(0);  // `after` has run
    CHECK(busy.ended <= d.start_ns + kClockAgreementNs);
    CHECK(d.start_ns <= inside.began + kClockAgreementNs);
    CHECK(inside.ended <= d.end_ns + kClockAgreementNs);
    CHECK(d.end_ns <= after.began + kClockAgreementNs);
}

TEST_CASE("an empty window is a measurement (zero or more), not 'not measured'", "[stream]")
{
    CpuDevice dev;
    lapse_token t = dev.start(0);
    dev.end_ok(t);
    const lapse_duration d = dev.ready(t);  // READY, DEVICE, end >= start
    CHECK(d.end_ns - d.start_ns < 50'000'000);
}

TEST_CASE("sync returns once the stream ran everything queued before it", "[stream][sync]")
{
    CpuDevice dev({{"streams", int64_t{3}}});
    std::atomic<int> done{0};
    struct Sleepy {
        std::atomic<int>* done;
        void operator()()
        {
            std::this_thread::sleep_for(std::chrono::microseconds(500));
            done->fetch_add(1);
        }
    } job{&done};
    for (int i = 0; i < 20; ++i) dev.submit(1, &job);
    dev.sync(1);
    CHECK(done.load() == 20);
    for (lapse_stream s = 0; s < 3; ++s)
        for (int i = 0; i < 10; ++i) dev.submit(s, &job);
    dev.sync(LAPSE_ALL_STREAMS);
    CHECK(done.load() == 50);
}

TEST_CASE("work that throws on the worker poisons the windows around it, and the stream keeps running",
          "[stream][errors]")
{
    CpuDevice dev;
    struct Throws {
        void operator()() { throw std::runtime_error("boom"); }
    } bad;
    BusyJob fine{1'000'000};
    lapse_token outer = dev.start(0);
    lapse_token hit = dev.start(0);
    dev.submit(0, &bad);
    dev.end_ok(hit);
    dev.end_ok(outer);
    lapse_token after = dev.start(0);
    dev.submit(0, &fine);
    dev.end_ok(after);

    for (lapse_token t : {hit, outer}) {
        lapse_duration d;
        lapse_status s = dev.resolve(t, d, LAPSE_WAIT_FOREVER);
        CHECK(s == LAPSE_OK);
        CHECK(d.state == LAPSE_DURATION_FAILED);
        CHECK(d.failure == LAPSE_ERROR_DEVICE);
    }
    const lapse_duration d = dev.ready(after);
    CHECK(d.end_ns - d.start_ns >= 1'000'000);
    CHECK(dev.host().logged(LAPSE_LOG_ERROR, "boom"));
}

TEST_CASE("markers the worker finds queued back to back share one reading: the empty windows among them read 0",
          "[stream]")
{
    CpuDevice dev;
    Gate gate;
    dev.submit(0, &gate);
    // 100 empty windows, then the start of one around a job: 201 markers
    // with no work between them, all queued before the worker gets to them
    // (fewer than the 256 it stamps with one reading).
    std::vector<lapse_token> empty(100);
    for (auto& t : empty) {
        t = dev.start(0);
        dev.end_ok(t);
    }
    const lapse_token around = dev.start(0);
    BusyJob job{2'000'000};
    dev.submit(0, &job);
    dev.end_ok(around);
    const int64_t opened = now_ns();
    gate.open = true;
    const lapse_duration job_window = dev.ready(around);
    // The stream reached them all when the gate let it go, before the job.
    CHECK(job_window.start_ns + kClockAgreementNs >= opened);
    CHECK(job_window.start_ns <= job.began + kClockAgreementNs);
    CHECK(job.ended <= job_window.end_ns + kClockAgreementNs);
    for (const lapse_token& t : empty) {
        const lapse_duration d = dev.ready(t);
        CHECK(d.start_ns == job_window.start_ns);
        CHECK(d.end_ns == job_window.start_ns);
    }
}

TEST_CASE("no stamp is earlier than the call that queued its marker, in a burst of windows either", "[stream]")
{
    CpuDevice dev;
    constexpr int n = 20000;
    std::vector<lapse_token> tokens(n);
    std::vector<int64_t> called(n);
    for (int i = 0; i < n; ++i) {
        called[i] = now_ns();
        tokens[i] = dev.start(0);
        dev.end_ok(tokens[i]);
    }
    int early = 0;
    for (int i = 0; i < n; ++i) {
        const lapse_duration d = dev.ready(tokens[i]);
        if (d.start_ns + kClockAgreementNs < called[i]) ++early;
    }
    CHECK(early == 0);
}

TEST_CASE("a burst of windows is stamped soon after its caller stops, with no resolver waiting", "[stream]")
{
    CpuDevice dev;
    constexpr int n = 20000;
    std::vector<lapse_token> tokens(n);
    for (auto& t : tokens) {
        t = dev.start(0);
        dev.end_ok(t);
    }
    // The worker leaves the lines a busy caller is writing; once the caller
    // stops, it takes them within a few polls (microseconds). 100 ms is
    // the bound a loaded machine needs, not the expected time.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::vector<lapse_duration> out(n);
    for (auto& d : out) d = make_duration();
    const lapse_status s = dev.plugin().resolve(dev.device(), tokens.data(), out.data(), n, 0, nullptr);
    CHECK(s == LAPSE_OK);
    int pending = 0;
    for (const auto& d : out) pending += d.state == LAPSE_DURATION_PENDING ? 1 : 0;
    CHECK(pending == 0);
}
