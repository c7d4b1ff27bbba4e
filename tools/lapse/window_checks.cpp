// Window checks of `lapse validate`: windows, tokens and resolve through the
// raw C ABI of a device opened by the host (see conformance_checks.cpp).
#include "device_under_test.hpp"

namespace lapse::cli {
namespace {

using namespace device_checks;

void check_window_basic(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    std::string methods;
    for (lapse_stream s = 0; s < dut.info.stream_count; ++s) {
        HostWork w;
        const int64_t t0 = now_ns();
        lapse_token t = dut.open(s);
        submit(dut, s, w);
        dut.end(t, LAPSE_END_FLUSH);
        lapse_duration d = dut.resolve(t);
        const int64_t t1 = now_ns();
        require(d.state != LAPSE_DURATION_FAILED,
                "window on stream " + std::to_string(s) + " FAILED (" + status_text(d.failure) + ")");
        require(w.runs.load() == 1, "the work inside the window did not run by the time it resolved (with flush)");
        if (d.state == LAPSE_DURATION_READY && d.clock_domain == LAPSE_CLOCK_HOST_MONOTONIC) {
            require(d.start_ns >= t0 - host_placement_tolerance_ns && d.end_ns <= t1 + host_placement_tolerance_ns,
                    "window on stream " + std::to_string(s) + " claims the host clock but lies outside the calls that "
                    "opened and resolved it (start " + std::to_string(d.start_ns - t0) + " ns after open, end " +
                    std::to_string(d.end_ns - t1) + " ns after resolve)");
        }
        if (s == 0)
            methods = d.state == LAPSE_DURATION_READY
                          ? std::string(d.method == LAPSE_TIMING_DEVICE ? "device" : "system") + " timing, " +
                                (d.clock_domain == LAPSE_CLOCK_HOST_MONOTONIC ? "host clock" : "device clock")
                          : "not measured";
    }
    note = "a window on each of " + std::to_string(dut.info.stream_count) + " stream(s) resolved: " + methods;
}

void check_window_empty(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    lapse_token t = dut.open(0);
    dut.end(t);
    lapse_duration d = dut.resolve(t);
    require(d.state == LAPSE_DURATION_READY || d.state == LAPSE_DURATION_NOT_MEASURED,
            "an empty window resolved as " + std::to_string(d.state) + " (" + status_text(d.failure) +
                "): expected READY (zero is a duration) or NOT_MEASURED");
    note = d.state == LAPSE_DURATION_READY ? "empty window READY, " + std::to_string(d.end_ns - d.start_ns) + " ns"
                                           : "empty window NOT_MEASURED (distinct from zero)";
}

void check_accuracy(const CheckContext& ctx, std::string& note)
{
    // 20 ms of host work inside a window: a backend whose streams run host
    // work (a CPU worker) must read it as at least that long.
    constexpr int64_t spin = 20'000'000;
    Dut dut(ctx);
    HostWork w;
    w.spin_ns = spin;
    lapse_token t = dut.open(0);
    submit(dut, 0, w);
    dut.end(t, LAPSE_END_FLUSH);
    lapse_duration d = dut.resolve(t);
    if (w.native_seen.load())
        skip("stream work receives a native device context here: a host busy-loop is not device work, so a generic "
             "accuracy check does not apply (see the backend's own accuracy tests)");
    require(d.state == LAPSE_DURATION_READY, "a window around 20 ms of work resolved as state " + std::to_string(d.state) +
                                                 " (" + status_text(d.failure) + "), not READY");
    const int64_t ns = d.end_ns - d.start_ns;
    require(ns >= spin - spin / 100, "a window around 20 ms of work measured " + std::to_string(ns) + " ns");
    require(ns <= spin + 500'000'000, "a window around 20 ms of work measured " + std::to_string(ns) + " ns (> 0.5 s over)");
    note = "20 ms of work measured as " + std::to_string(static_cast<double>(ns) / 1e6).substr(0, 6) + " ms";
}

void check_nested(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    if (!dut.has(LAPSE_CAP_NESTED) && !dut.has(LAPSE_CAP_SINGLE_WINDOW))
        skip("declares neither nested nor single-window");
    lapse_token outer = dut.open(0);
    if (!dut.has(LAPSE_CAP_NESTED)) {
        lapse_token inner{};
        lapse_error err = Dut::error();
        lapse_status s = dut.p->profile_start(dut.h, 0, &inner, &err);
        expect_status(s, err, LAPSE_ERROR_CAPACITY, "a second window on a single-window stream");
        dut.end(outer);
        dut.resolve(outer);
        note = "single-window: a nested open is refused with LAPSE_ERROR_CAPACITY";
        return;
    }
    HostWork a, b, c;
    a.spin_ns = b.spin_ns = c.spin_ns = 1'000'000;
    submit(dut, 0, a);
    lapse_token inner = dut.open(0);
    submit(dut, 0, b);
    dut.end(inner, LAPSE_END_FLUSH);
    submit(dut, 0, c);
    dut.end(outer, LAPSE_END_FLUSH);
    lapse_duration di = dut.resolve(inner);
    lapse_duration dout = dut.resolve(outer);
    require(di.state != LAPSE_DURATION_FAILED && dout.state != LAPSE_DURATION_FAILED, "a nested window FAILED");
    require(inner.id != outer.id, "two open windows got the same token id");
    if (di.state == LAPSE_DURATION_READY && dout.state == LAPSE_DURATION_READY && di.clock_domain == dout.clock_domain) {
        require(dout.start_ns <= di.start_ns && di.end_ns <= dout.end_ns,
                "the inner window [" + std::to_string(di.start_ns) + ", " + std::to_string(di.end_ns) +
                    "] is not inside the outer one [" + std::to_string(dout.start_ns) + ", " +
                    std::to_string(dout.end_ns) + "]");
        note = "inner " + std::to_string(di.end_ns - di.start_ns) + " ns inside outer " +
               std::to_string(dout.end_ns - dout.start_ns) + " ns";
    } else {
        note = "nested windows resolved (not both READY on one clock: containment not compared)";
    }
}

void check_overlapping(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    if (!dut.has(LAPSE_CAP_OVERLAPPING)) skip("does not declare overlapping windows");
    HostWork w1, w2, w3;
    w1.spin_ns = w2.spin_ns = w3.spin_ns = 1'000'000;
    lapse_token a = dut.open(0);
    submit(dut, 0, w1);
    lapse_token b = dut.open(0);
    submit(dut, 0, w2);
    dut.end(a, LAPSE_END_FLUSH);  // A closes while B is open: keyed on the token, not "the current window"
    submit(dut, 0, w3);
    dut.end(b, LAPSE_END_FLUSH);
    lapse_duration da = dut.resolve(a), db = dut.resolve(b);
    require(da.state != LAPSE_DURATION_FAILED && db.state != LAPSE_DURATION_FAILED, "an overlapping window FAILED");
    if (da.state == LAPSE_DURATION_READY && db.state == LAPSE_DURATION_READY && da.clock_domain == db.clock_domain) {
        require(da.start_ns <= db.start_ns && da.end_ns <= db.end_ns && db.start_ns <= da.end_ns,
                "A=[" + std::to_string(da.start_ns) + ", " + std::to_string(da.end_ns) + "] and B=[" +
                    std::to_string(db.start_ns) + ", " + std::to_string(db.end_ns) +
                    "] do not overlap as opened (A then B, A closed first)");
        note = "A " + std::to_string(da.end_ns - da.start_ns) + " ns, B " + std::to_string(db.end_ns - db.start_ns) +
               " ns, overlapping as opened";
    } else {
        note = "overlapping windows resolved";
    }
}

void check_split_threads(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    if (!dut.has(LAPSE_CAP_SPLIT_THREADS)) skip("does not declare split-threads");
    const lapse_stream stream = dut.info.stream_count - 1;
    lapse_token t{};
    std::thread opener([&] { t = dut.open(stream); });
    opener.join();
    // Checks inside threads report through these, not by throwing there.
    std::string problem;
    std::thread closer([&] {
        try {
            dut.end(t, LAPSE_END_FLUSH);
        } catch (const std::exception& e) {
            problem = e.what();
        }
    });
    closer.join();
    require(problem.empty(), "closing on another thread: " + problem);
    lapse_duration d{};
    std::thread resolver([&] {
        try {
            d = dut.resolve(t);
        } catch (const std::exception& e) {
            problem = e.what();
        }
    });
    resolver.join();
    require(problem.empty(), "resolving on a third thread: " + problem);
    require(d.state != LAPSE_DURATION_FAILED, "a window split across threads FAILED (" + status_text(d.failure) + ")");
    note = "opened, closed and resolved on three threads (stream " + std::to_string(stream) + ")";
}

void check_wrong_stream(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    if (dut.info.stream_count < 2) skip("one stream: no other stream to misuse");
    lapse_token t = dut.open(0);
    lapse_token forged = t;
    forged.opened_on = 1;
    lapse_error err = Dut::error();
    lapse_status s = dut.p->profile_end(dut.h, forged, nullptr, &err);
    expect_status(s, err, LAPSE_ERROR_WRONG_STREAM, "profile_end with opened_on changed from 0 to 1");
    dut.end(t);  // the refusal consumed nothing
    dut.resolve(t);
    note = "a token with another opened_on is refused: " + std::string(err.message);
}

void check_closed_twice(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    lapse_token t = dut.open(0);
    dut.end(t);
    lapse_error err = Dut::error();
    lapse_status s = dut.p->profile_end(dut.h, t, nullptr, &err);
    expect_status(s, err, LAPSE_ERROR_INVALID_TOKEN, "closing a window twice");
    dut.resolve(t);
    note = std::string("second close refused: ") + err.message;
}

void check_end_after_abandon(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    lapse_token t = dut.open(0);
    dut.p->profile_abandon(dut.h, t);
    lapse_error err = Dut::error();
    lapse_status s = dut.p->profile_end(dut.h, t, nullptr, &err);
    expect_status(s, err, LAPSE_ERROR_INVALID_TOKEN, "closing an abandoned window");
    dut.p->profile_abandon(dut.h, t);  // twice: ignored
    // Closed, then abandoned before resolve: resolve refuses the token.
    lapse_token u = dut.open(0);
    dut.end(u);
    dut.p->profile_abandon(dut.h, u);
    lapse_duration d{};
    d.struct_size = sizeof d;
    err = Dut::error();
    s = dut.p->resolve(dut.h, &u, &d, 1, LAPSE_WAIT_FOREVER, &err);
    expect_status(s, err, LAPSE_ERROR_INVALID_TOKEN, "resolving an abandoned window");
    require(d.state == LAPSE_DURATION_FAILED && d.failure == LAPSE_ERROR_INVALID_TOKEN,
            "resolving an abandoned window left out[0] state " + std::to_string(d.state) + " failure " +
                status_text(d.failure) + " (expected FAILED / INVALID_TOKEN)");
    // The device is still healthy.
    lapse_token v = dut.open(0);
    dut.end(v);
    dut.resolve(v);
    note = "abandoned windows refuse close and resolve; abandon twice is ignored";
}

void check_unknown_token(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    for (uint64_t id : {uint64_t{0}, uint64_t{0x7eadbeef00001234ull}}) {
        lapse_token t{id, 0, 0};
        lapse_error err = Dut::error();
        lapse_status s = dut.p->profile_end(dut.h, t, nullptr, &err);
        expect_status(s, err, LAPSE_ERROR_INVALID_TOKEN, "closing never-issued token id " + std::to_string(id));
        dut.p->profile_abandon(dut.h, t);  // ignored, cannot fail
    }
    // One bad token among good ones: the good one still resolves.
    lapse_token good = dut.open(0);
    dut.end(good);
    lapse_token tokens[2] = {good, {0x7eadbeef00001234ull, 0, 0}};
    lapse_duration out[2]{};
    out[0].struct_size = out[1].struct_size = sizeof(lapse_duration);
    lapse_error err = Dut::error();
    lapse_status s = dut.p->resolve(dut.h, tokens, out, 2, LAPSE_WAIT_FOREVER, &err);
    expect_status(s, err, LAPSE_ERROR_INVALID_TOKEN, "resolve of [good, unknown]");
    require(out[1].state == LAPSE_DURATION_FAILED && out[1].failure == LAPSE_ERROR_INVALID_TOKEN,
            "the unknown token's out[1] is not FAILED / INVALID_TOKEN");
    require(out[0].state == LAPSE_DURATION_READY || out[0].state == LAPSE_DURATION_NOT_MEASURED,
            "the good token beside an unknown one was not resolved (state " + std::to_string(out[0].state) + ")");
    dut.check_final(out[0], "the good token");
    note = "unknown ids refused; a good token beside one still resolves";
}

void check_resolve_twice(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    lapse_token t = dut.open(0);
    dut.end(t);
    dut.resolve(t);
    lapse_duration d{};
    d.struct_size = sizeof d;
    lapse_error err = Dut::error();
    lapse_status s = dut.p->resolve(dut.h, &t, &d, 1, LAPSE_WAIT_FOREVER, &err);
    expect_status(s, err, LAPSE_ERROR_INVALID_TOKEN, "resolving a window twice");
    require(d.state == LAPSE_DURATION_FAILED, "the second resolve did not mark out[0] FAILED");
    note = std::string("second resolve refused: ") + err.message;
}

void check_resolve_short_struct(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    lapse_token t = dut.open(0);
    dut.end(t);
    // A duration struct claiming 8 bytes, ending at an unmapped page: the
    // plugin must refuse it, not write a full lapse_duration into it.
    const long page = sysconf(_SC_PAGESIZE);
    void* mem = mmap(nullptr, static_cast<std::size_t>(page) * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    require(mem != MAP_FAILED, "mmap failed");
    char* guard = static_cast<char*>(mem) + page;
    require(mprotect(guard, static_cast<std::size_t>(page), PROT_NONE) == 0, "mprotect failed");
    auto* d = reinterpret_cast<lapse_duration*>(guard - 8);
    d->struct_size = 8;
    lapse_error err = Dut::error();
    lapse_status s = dut.p->resolve(dut.h, &t, d, 1, LAPSE_WAIT_FOREVER, &err);
    expect_status(s, err, LAPSE_ERROR_INVALID_ARGUMENT, "resolve into an 8-byte lapse_duration");
    dut.resolve(t);
    note = "a short lapse_duration is refused without writing past it";
}

void check_resolve_timeouts(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    // Slow work queued ahead of the window: the window cannot finish for
    // ~300 ms on a stream that runs host work.
    HostWork slow;
    slow.spin_ns = 300'000'000;
    submit(dut, 0, slow);
    lapse_token t = dut.open(0);
    dut.end(t, LAPSE_END_FLUSH);
    lapse_duration d{};
    d.struct_size = sizeof d;
    lapse_error err = Dut::error();
    int64_t t0 = now_ns();
    lapse_status s = dut.p->resolve(dut.h, &t, &d, 1, 0, &err);
    const int64_t polled = now_ns() - t0;
    require(s == LAPSE_OK || s == LAPSE_NOT_READY, "resolve(timeout 0) = " + status_text(s) + ": " + err.message);
    require(polled < 100'000'000, "resolve with timeout 0 took " + std::to_string(polled / 1000000) + " ms: 0 polls");
    const bool host_work = !slow.native_seen.load();
    if (s == LAPSE_NOT_READY) {
        require(d.state == LAPSE_DURATION_PENDING, "resolve answered NOT_READY but out[0] is not PENDING");
        // A bounded wait honours its bound.
        err = Dut::error();
        t0 = now_ns();
        s = dut.p->resolve(dut.h, &t, &d, 1, 20'000'000, &err);
        const int64_t waited = now_ns() - t0;
        require(s == LAPSE_OK || s == LAPSE_NOT_READY, "resolve(20 ms) = " + status_text(s) + ": " + err.message);
        if (s == LAPSE_NOT_READY)
            require(waited < 150'000'000, "resolve(timeout 20 ms) returned after " + std::to_string(waited / 1000000) + " ms");
        if (s == LAPSE_NOT_READY) d = dut.resolve(t);
    } else {
        require(!host_work || slow.runs.load() == 1,
                "resolve(timeout 0) answered READY for a window queued behind 300 ms of work that has not finished");
    }
    dut.check_final(d, "the window");
    require(d.state != LAPSE_DURATION_FAILED, "the window FAILED (" + status_text(d.failure) + ")");
    note = "timeout 0 returned in " + std::to_string(polled / 1000) + " us (" + (s == LAPSE_OK ? "final" : "pending") +
           "); forever waited for the final state";
}

void check_flush(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    HostWork w;
    w.spin_ns = 2'000'000;
    lapse_token t = dut.open(0);
    submit(dut, 0, w);
    dut.end(t, LAPSE_END_FLUSH);
    lapse_duration d = dut.resolve(t);
    require(d.state != LAPSE_DURATION_FAILED, "a flushed window FAILED (" + status_text(d.failure) + ")");
    require(w.runs.load() == 1, "work registered inside a flushed window had not run when the window resolved");
    if (dut.has(LAPSE_CAP_BATCHING) && !w.native_seen.load() && d.state == LAPSE_DURATION_READY)
        require(d.end_ns - d.start_ns >= w.spin_ns - w.spin_ns / 100,
                "batching backend: a flushed window measured " + std::to_string(d.end_ns - d.start_ns) +
                    " ns around 2 ms of work it should hold");
    // Without flush: accepted; the work still runs exactly once by sync.
    HostWork later;
    lapse_token u = dut.open(0);
    submit(dut, 0, later);
    dut.end(u);
    dut.sync();
    dut.resolve(u);
    require(later.runs.load() == 1, "work submitted in a window closed without flush did not run by sync");
    note = dut.has(LAPSE_CAP_BATCHING) ? "batching: a flushed window holds its work" : "flush accepted (not batching)";
}

void check_concurrency(const CheckContext& ctx, std::string& note)
{
    Dut dut(ctx);
    {  // Skip up front when there are no windows at all.
        lapse_token probe = dut.open(0);
        dut.end(probe);
        dut.resolve(probe);
    }
    constexpr int threads = 4;
    constexpr int per_thread = 400;
    const bool nested = dut.has(LAPSE_CAP_NESTED);
    const bool single = dut.has(LAPSE_CAP_SINGLE_WINDOW);
    std::mutex problem_mutex;
    std::string problem;
    std::atomic<uint64_t> resolved{0};
    auto report = [&](const std::string& what) {
        std::lock_guard lock(problem_mutex);
        if (problem.empty()) problem = what;
    };
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) {
        pool.emplace_back([&, i] {
            std::mt19937_64 rng(ctx.seed + static_cast<uint64_t>(i));
            // A single-window backend gets a stream per thread (a shared one
            // would refuse with CAPACITY, correctly); the rest share streams.
            const lapse_stream stream = single ? static_cast<lapse_stream>(i) % dut.info.stream_count
                                               : static_cast<lapse_stream>(rng() % dut.info.stream_count);
            if (single && static_cast<uint32_t>(i) >= dut.info.stream_count) return;
            try {
                for (int n = 0; n < per_thread;) {
                    const int depth = nested ? 1 + static_cast<int>(rng() % 3) : 1;
                    lapse_token open[3];
                    for (int k = 0; k < depth; ++k) open[k] = dut.open(stream);
                    for (int k = depth - 1; k >= 0; --k) dut.end(open[k]);
                    lapse_duration out[3];
                    for (auto& o : out) o = lapse_duration{sizeof(lapse_duration), 0, 0, 0, 0, 0, 0, 0, 0};
                    lapse_error err = Dut::error();
                    lapse_status s = dut.p->resolve(dut.h, open, out, static_cast<uint32_t>(depth), LAPSE_WAIT_FOREVER, &err);
                    if (s != LAPSE_OK) fail("resolve = " + status_text(s) + ": " + err.message);
                    for (int k = 0; k < depth; ++k) {
                        dut.check_final(out[k], "token " + std::to_string(open[k].id));
                        if (out[k].state == LAPSE_DURATION_FAILED) fail("a window FAILED under concurrent use");
                    }
                    resolved.fetch_add(static_cast<uint64_t>(depth));
                    n += depth;
                }
            } catch (const CheckSkipped& e) {
                report(std::string("skip: ") + e.what());
            } catch (const std::exception& e) {
                report(e.what());
            }
        });
    }
    for (auto& t : pool) t.join();
    require(problem.empty(), problem);
    note = std::to_string(resolved.load()) + " windows from " + std::to_string(threads) + " threads (seed " +
           std::to_string(ctx.seed) + ")";
}

}  // namespace

void append_window_checks(std::vector<Check>& out)
{
    out.push_back({"window.basic", "a window per stream resolves, placed within its calls on the host clock",
                   &check_window_basic});
    out.push_back({"window.empty", "an empty window is zero or not measured, never failed or negative", &check_window_empty});
    out.push_back({"window.accuracy", "a window around 20 ms of host work reads at least 20 ms", &check_accuracy});
    out.push_back({"window.nested", "nested windows nest (or a single-window backend refuses with CAPACITY)",
                   &check_nested});
    out.push_back({"window.overlapping", "A opens, B opens, A closes, B closes", &check_overlapping});
    out.push_back({"window.split_threads", "open, close and resolve on three different threads", &check_split_threads});
    out.push_back({"window.flush", "a flushed window holds its work; no flush is accepted", &check_flush});
    out.push_back({"token.wrong_stream", "a token whose opened_on was changed is WRONG_STREAM", &check_wrong_stream});
    out.push_back({"token.closed_twice", "closing twice is INVALID_TOKEN", &check_closed_twice});
    out.push_back({"token.after_abandon", "close and resolve after abandon are INVALID_TOKEN", &check_end_after_abandon});
    out.push_back({"token.unknown", "never-issued ids are INVALID_TOKEN; good tokens beside them resolve",
                   &check_unknown_token});
    out.push_back({"token.resolve_twice", "resolving twice is INVALID_TOKEN", &check_resolve_twice});
    out.push_back({"resolve.short_struct", "a short lapse_duration is refused, not written past",
                   &check_resolve_short_struct});
    out.push_back({"resolve.timeouts", "timeout 0 polls, a bounded timeout is honoured, forever waits",
                   &check_resolve_timeouts});
    out.push_back({"concurrency.threads", "4 threads open, nest, close and resolve windows at once",
                   &check_concurrency});
}

}  // namespace lapse::cli
