// The window rules on the CUDA plugin, over the driver test double: each
// duration between its own two events, nesting, overlap, split threads,
// opened_on, invalid tokens, deferred resolve, pool reuse and abandon.
#include "cuda_support.hpp"

#include <set>
#include <thread>
#include <vector>

using namespace lapse::test;
using Catch::Matchers::Contains;

namespace {

constexpr int64_t kMs = 1000000;

int64_t length(const lapse_duration& d) { return d.end_ns - d.start_ns; }

}  // namespace

TEST_CASE("cuda: a window around known work reads that work, placed on the host clock", "[cuda][windows]")
{
    FakeDevice d;
    int64_t t0 = now_ns();
    lapse_token t = d.start(0);
    d.busy(0, 20 * kMs);
    int64_t t1 = now_ns();
    d.end(t);
    lapse_duration r = d.resolve(t);
    REQUIRE(r.state == LAPSE_DURATION_READY);
    CHECK(r.method == LAPSE_TIMING_DEVICE);
    CHECK(r.clock_domain == LAPSE_CLOCK_HOST_MONOTONIC);
    // The double stamps the start when recorded and runs the kernel from
    // when it was launched: the window holds 20 ms plus the host's gap
    // between the two calls, never less.
    CHECK(length(r) >= 20 * kMs - 1000);
    CHECK(length(r) <= 20 * kMs + (t1 - t0) + 1000);
    // Placement: the anchor is read after its event completed, so it can only
    // be late, by the wake-up of one synchronisation.
    CHECK(r.start_ns >= t0 - 1000);
    CHECK(r.start_ns <= t1 + 2 * kMs);
}

TEST_CASE("cuda: an empty window reads as a real, small duration, not as unmeasured", "[cuda][windows]")
{
    FakeDevice d;
    lapse_token t = d.start(0);
    d.end(t);
    lapse_duration r = d.resolve(t);
    CHECK(r.state == LAPSE_DURATION_READY);
    CHECK(length(r) >= 0);
    CHECK(length(r) < 50 * kMs);
}

TEST_CASE("cuda: nested windows on one stream", "[cuda][windows]")
{
    FakeDevice d;
    lapse_token outer = d.start(0);
    d.busy(0, 5 * kMs);
    lapse_token inner = d.start(0);
    d.busy(0, 5 * kMs);
    d.end(inner);
    d.busy(0, 5 * kMs);
    d.end(outer);
    lapse_duration o = d.resolve(outer);
    lapse_duration i = d.resolve(inner);
    CHECK(length(o) >= 15 * kMs - 1000);
    CHECK(length(i) >= 5 * kMs - 1000);
    CHECK(length(i) < length(o) - 9 * kMs);
    CHECK(i.start_ns >= o.start_ns + 5 * kMs - 1000);
    CHECK(i.end_ns <= o.end_ns - 5 * kMs + 1000);
}

TEST_CASE("cuda: overlapping windows on one stream", "[cuda][windows]")
{
    FakeDevice d;
    lapse_token a = d.start(0);
    d.busy(0, 4 * kMs);
    lapse_token b = d.start(0);
    d.busy(0, 4 * kMs);
    d.end(a);
    d.busy(0, 4 * kMs);
    d.end(b);
    lapse_token tokens[2] = {b, a};  // resolved in a batch, out of order
    lapse_duration out[2] = {make_duration(), make_duration()};
    REQUIRE(d.p().resolve(d.device, tokens, out, 2, LAPSE_WAIT_FOREVER, nullptr) == LAPSE_OK);
    const lapse_duration& rb = out[0];
    const lapse_duration& ra = out[1];
    CHECK(ra.start_ns < rb.start_ns);
    CHECK(rb.start_ns < ra.end_ns);
    CHECK(ra.end_ns < rb.end_ns);
    CHECK(length(ra) >= 8 * kMs - 1000);
    CHECK(length(rb) >= 8 * kMs - 1000);
}

TEST_CASE("cuda: windows on two streams each time their own stream", "[cuda][windows]")
{
    FakeDevice d({{"streams", int64_t{2}}});
    lapse_token a = d.start(0);
    lapse_token b = d.start(1);
    d.busy(0, 10 * kMs);
    d.busy(1, 30 * kMs);
    d.end(a);
    d.end(b);
    lapse_duration ra = d.resolve(a);
    lapse_duration rb = d.resolve(b);
    CHECK(length(ra) >= 10 * kMs - 1000);
    CHECK(length(ra) < 30 * kMs);
    CHECK(length(rb) >= 30 * kMs - 1000);
}

TEST_CASE("cuda: a window opened on one thread closes on another", "[cuda][windows]")
{
    FakeDevice d;
    lapse_token t{};
    std::thread([&] {
        t = d.start(0);
        d.busy(0, 3 * kMs);
    }).join();
    std::thread([&] { d.end(t); }).join();
    lapse_duration r{};
    std::thread([&] { r = d.resolve(t); }).join();
    CHECK(r.state == LAPSE_DURATION_READY);
    CHECK(length(r) >= 3 * kMs - 1000);
    // The host's threads are left as they were: no context left current.
    CHECK(fake_cuda_current_context() == nullptr);
}

TEST_CASE("cuda: a token is bound to the stream it was opened on", "[cuda][windows][opened_on]")
{
    FakeDevice d({{"streams", int64_t{2}}});
    lapse_token t = d.start(0);
    lapse_token forged = t;
    forged.opened_on = 1;

    lapse_error e = make_error();
    CHECK(d.p().profile_end(d.device, forged, nullptr, &e) == LAPSE_ERROR_WRONG_STREAM);
    CHECK_THAT(std::string(e.message), Contains("opened on stream 0"));
    d.p().profile_abandon(d.device, forged);  // ignored: not that window's token
    d.end(t);                                 // the window is still open for its real token

    lapse_status s = LAPSE_OK;
    lapse_duration r = d.resolve(forged, LAPSE_WAIT_FOREVER, &s);
    CHECK(s == LAPSE_ERROR_WRONG_STREAM);
    CHECK(r.state == LAPSE_DURATION_FAILED);
    CHECK(r.failure == LAPSE_ERROR_WRONG_STREAM);
    CHECK(d.resolve(t).state == LAPSE_DURATION_READY);
}

TEST_CASE("cuda: invalid tokens are refused by name, never guessed", "[cuda][windows][tokens]")
{
    FakeDevice d;
    lapse_error e = make_error();
    lapse_token zero{0, 0, 0};
    CHECK(d.p().profile_end(d.device, zero, nullptr, &e) == LAPSE_ERROR_INVALID_TOKEN);
    lapse_token never{(uint64_t{7} << 24) | 100000, 0, 0};
    CHECK(d.p().profile_end(d.device, never, nullptr, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK_THAT(std::string(e.message), Contains("never issued"));

    lapse_token t = d.start(0);
    lapse_status s = LAPSE_OK;
    d.resolve(t, 0, &s);
    CHECK(s == LAPSE_ERROR_INVALID_TOKEN);  // still open
    CHECK_THAT(d.last_message, Contains("still open"));
    d.end(t);
    CHECK(d.p().profile_end(d.device, t, nullptr, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK_THAT(std::string(e.message), Contains("already closed"));
    CHECK(d.resolve(t).state == LAPSE_DURATION_READY);
    lapse_duration again = d.resolve(t, 0, &s);
    CHECK(s == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(again.state == LAPSE_DURATION_FAILED);
    CHECK(again.failure == LAPSE_ERROR_INVALID_TOKEN);

    // A stale token is not mistaken for the window that reuses its slot.
    lapse_token next = d.start(0);
    CHECK((next.id & 0xffffff) == (t.id & 0xffffff));  // same slot (LIFO pool)...
    CHECK(next.id != t.id);                            // ...new generation
    CHECK(d.p().profile_end(d.device, t, nullptr, &e) == LAPSE_ERROR_INVALID_TOKEN);
    d.p().profile_abandon(d.device, t);  // ignored
    d.end(next);
    CHECK(d.resolve(next).state == LAPSE_DURATION_READY);

    lapse_end_options bad{sizeof(lapse_end_options), 0x80};
    lapse_token u = d.start(0);
    CHECK(d.p().profile_end(d.device, u, &bad, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    lapse_end_options flush{sizeof(lapse_end_options), LAPSE_END_FLUSH};
    CHECK(d.p().profile_end(d.device, u, &flush, &e) == LAPSE_OK);  // not batching: flush changes nothing
    CHECK(d.resolve(u).state == LAPSE_DURATION_READY);
}

TEST_CASE("cuda: ids are never reused by a device", "[cuda][windows][tokens]")
{
    FakeDevice d;
    std::set<uint64_t> seen;
    for (int i = 0; i < 2000; ++i) {
        lapse_token t = d.start(0);
        CHECK(seen.insert(t.id).second);
        if (i % 3 == 0) d.p().profile_abandon(d.device, t);
        else {
            d.end(t);
            d.resolve(t);
        }
    }
}

TEST_CASE("cuda: a batch resolves the good tokens and names the first bad one", "[cuda][windows][tokens]")
{
    FakeDevice d;
    lapse_token a = d.start(0);
    d.end(a);
    lapse_token bad{12345, 0, 0};
    lapse_token c = d.start(0);
    d.end(c);
    lapse_token tokens[3] = {a, bad, c};
    lapse_duration out[3] = {make_duration(), make_duration(), make_duration()};
    lapse_error e = make_error();
    CHECK(d.p().resolve(d.device, tokens, out, 3, LAPSE_WAIT_FOREVER, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(out[0].state == LAPSE_DURATION_READY);
    CHECK(out[1].state == LAPSE_DURATION_FAILED);
    CHECK(out[1].failure == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(out[2].state == LAPSE_DURATION_READY);
}

TEST_CASE("cuda: closing does not wait; resolve polls, times out, or waits", "[cuda][windows][resolve]")
{
    FakeDevice d;
    CUstream_st* s = d.stream(0);
    fake_cuda_hold(s);  // the stream is stuck behind work of unknown length
    lapse_token t = d.start(0);
    d.busy(0, 2 * kMs);
    int64_t before_end = now_ns();
    d.end(t);
    CHECK(now_ns() - before_end < 50 * kMs);  // end returned without waiting

    lapse_status st = LAPSE_OK;
    lapse_duration r = d.resolve(t, 0, &st);
    CHECK(st == LAPSE_NOT_READY);
    CHECK(r.state == LAPSE_DURATION_PENDING);

    int64_t t0 = now_ns();
    r = d.resolve(t, 20 * kMs, &st);
    CHECK(st == LAPSE_NOT_READY);
    CHECK(r.state == LAPSE_DURATION_PENDING);
    CHECK(now_ns() - t0 >= 20 * kMs);

    // Waiting forever returns once the stream moves.
    std::thread releaser([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        fake_cuda_release(s);
    });
    r = d.resolve(t);
    releaser.join();
    CHECK(r.state == LAPSE_DURATION_READY);
    CHECK(length(r) >= 2 * kMs - 1000);
}

TEST_CASE("cuda: the event pool is reused: steady windows create no events", "[cuda][windows][pool]")
{
    FakeDevice d;
    auto cycle = [&](int n) {
        for (int i = 0; i < n; ++i) {
            lapse_token a = d.start(0);
            lapse_token b = d.start(0);
            d.end(b);
            d.end(a);
            d.resolve(a);
            d.resolve(b);
        }
    };
    cycle(10);
    int64_t created = counters().events_created;
    cycle(3000);
    CHECK(counters().events_created == created);
}

TEST_CASE("cuda: the pool grows past its first chunk and is bounded by max_windows", "[cuda][windows][pool]")
{
    FakeDevice d({{"max_windows", int64_t{512}}});
    std::vector<lapse_token> open;
    for (int i = 0; i < 512; ++i) open.push_back(d.start(0));
    lapse_token t{};
    lapse_error e = make_error();
    CHECK(d.p().profile_start(d.device, 0, &t, &e) == LAPSE_ERROR_CAPACITY);
    CHECK_THAT(std::string(e.message), Contains("max_windows"));
    for (lapse_token& o : open) d.end(o);
    std::vector<lapse_duration> out(open.size(), make_duration());
    CHECK(d.p().resolve(d.device, open.data(), out.data(), static_cast<uint32_t>(open.size()), LAPSE_WAIT_FOREVER,
                        nullptr) == LAPSE_OK);
    for (auto& r : out) CHECK(r.state == LAPSE_DURATION_READY);
    CHECK(d.p().profile_start(d.device, 0, &t, &e) == LAPSE_OK);
    d.p().profile_abandon(d.device, t);
}

TEST_CASE("cuda: an abandoned window's events are reused only once they completed", "[cuda][windows][abandon]")
{
    FakeDevice d({{"max_windows", int64_t{256}}, {"streams", int64_t{2}}});
    CUstream_st* s1 = d.stream(1);
    fake_cuda_hold(s1);
    lapse_token stuck = d.start(1);
    d.p().profile_abandon(d.device, stuck);  // its start event is still pending on the device

    std::vector<lapse_token> open;
    for (int i = 0; i < 255; ++i) open.push_back(d.start(0));
    // Every other slot is in use; the abandoned one is pending: full.
    lapse_token t{};
    CHECK(d.p().profile_start(d.device, 0, &t, nullptr) == LAPSE_ERROR_CAPACITY);

    fake_cuda_release(s1);
    REQUIRE(d.p().sync(d.device, 1, nullptr) == LAPSE_OK);
    CHECK(d.p().profile_start(d.device, 0, &t, nullptr) == LAPSE_OK);  // reclaimed now
    open.push_back(t);

    lapse_status st = LAPSE_OK;
    d.resolve(stuck, 0, &st);
    CHECK(st == LAPSE_ERROR_INVALID_TOKEN);  // abandoned means forgotten
    for (lapse_token& o : open) d.p().profile_abandon(d.device, o);
    // (FakeDevice::close checks no event was ever re-recorded while pending.)
}

TEST_CASE("cuda: abandoning a closed, unresolved window forgets it", "[cuda][windows][abandon]")
{
    FakeDevice d;
    lapse_token t = d.start(0);
    d.end(t);
    d.p().profile_abandon(d.device, t);
    d.p().profile_abandon(d.device, t);  // twice: still nothing
    lapse_status st = LAPSE_OK;
    d.resolve(t, 0, &st);
    CHECK(st == LAPSE_ERROR_INVALID_TOKEN);
    lapse_error e = make_error();
    CHECK(d.p().profile_end(d.device, t, nullptr, &e) == LAPSE_ERROR_INVALID_TOKEN);
}

TEST_CASE("cuda: closing the device with windows left open says how many", "[cuda][windows]")
{
    FakeDevice d;
    d.start(0);
    lapse_token closed = d.start(0);
    d.end(closed);
    d.close();
    bool said = false;
    for (const auto& line : d.loaded.host().logs())
        said = said || line.text.find("1 window(s) still open and 1 closed but never resolved") != std::string::npos;
    CHECK(said);
}
