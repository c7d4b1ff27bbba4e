// The CPU plugin's tokens: misuse answers with a status and a message that
// names the token, never a crash and never a number from another window.
#include "cpu_plugin.hpp"

#include <atomic>
#include <set>
#include <string>
#include <thread>

using namespace lapse_test;

namespace {

std::string id_text(const lapse_token& t) { return std::to_string(t.id); }

}  // namespace

TEST_CASE("closing a window twice is an invalid token naming it", "[tokens]")
{
    CpuDevice dev;
    lapse_token t = dev.start(0);
    dev.end_ok(t);
    lapse_error e = make_error();
    CHECK(dev.end(t, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(e.code == LAPSE_ERROR_INVALID_TOKEN);
    CHECK_THAT(e.message, Catch::Contains(id_text(t)) && Catch::Contains("closed already"));
    dev.ready(t);  // the first close still measures
}

TEST_CASE("closing after abandon is an invalid token", "[tokens]")
{
    CpuDevice dev;
    lapse_token t = dev.start(0);
    dev.sync(0);  // the start marker is stamped: abandon frees the record at once
    dev.abandon(t);
    lapse_error e = make_error();
    CHECK(dev.end(t, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK_THAT(e.message, Catch::Contains(id_text(t)) && Catch::Contains("abandoned"));

    Gate gate;  // and while its start marker is still in flight
    dev.submit(0, &gate);
    lapse_token u = dev.start(0);
    dev.abandon(u);
    e = make_error();
    CHECK(dev.end(u, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK_THAT(e.message, Catch::Contains(id_text(u)) && Catch::Contains("abandoned"));
    gate.open = true;
    dev.sync(0);
}

TEST_CASE("a token whose stream does not match its window is refused and the window survives", "[tokens]")
{
    CpuDevice dev({{"streams", int64_t{3}}});
    lapse_token t = dev.start(0);

    lapse_token other = t;
    other.opened_on = 2;
    lapse_error e = make_error();
    CHECK(dev.end(other, &e) == LAPSE_ERROR_WRONG_STREAM);
    CHECK_THAT(e.message, Catch::Contains(id_text(t)) && Catch::Contains("stream 2") && Catch::Contains("stream 0"));

    lapse_token missing = t;
    missing.opened_on = 7;
    e = make_error();
    CHECK(dev.end(missing, &e) == LAPSE_ERROR_WRONG_STREAM);
    CHECK_THAT(e.message, Catch::Contains(id_text(t)) && Catch::Contains("does not exist"));

    missing.opened_on = LAPSE_ALL_STREAMS;
    CHECK(dev.end(missing, nullptr) == LAPSE_ERROR_WRONG_STREAM);

    dev.abandon(other);  // abandon with the wrong stream does not touch it
    dev.end_ok(t);
    dev.ready(t);
}

TEST_CASE("tokens never handed out are invalid", "[tokens]")
{
    CpuDevice dev;
    for (uint64_t id : {uint64_t{0}, uint64_t{1} << 32, uint64_t{0xFFFFFFFF}, uint64_t{0x12345678'00000001},
                        ~uint64_t{0}}) {
        lapse_error e = make_error();
        lapse_token t{id, 0, 0};
        CHECK(dev.end(t, &e) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK_THAT(e.message, Catch::Contains(std::to_string(id)));
        dev.abandon(t);  // ignored
        lapse_duration d;
        CHECK(dev.resolve(t, d, 0) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(d.state == LAPSE_DURATION_FAILED);
        CHECK(d.failure == LAPSE_ERROR_INVALID_TOKEN);
    }
}

TEST_CASE("a resolved window cannot be resolved or closed again", "[tokens]")
{
    CpuDevice dev;
    lapse_token t = dev.start(0);
    dev.end_ok(t);
    dev.ready(t);
    lapse_duration d;
    lapse_error e = make_error();
    CHECK(dev.resolve(t, d, LAPSE_WAIT_FOREVER, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(d.state == LAPSE_DURATION_FAILED);
    CHECK_THAT(e.message, Catch::Contains(id_text(t)) && Catch::Contains("resolved already"));
    e = make_error();
    CHECK(dev.end(t, &e) == LAPSE_ERROR_INVALID_TOKEN);
}

TEST_CASE("an old token does not reach the window that reuses its record", "[tokens]")
{
    CpuDevice dev({{"streams", int64_t{1}}});
    std::set<uint64_t> ids;
    lapse_token old = dev.start(0);
    dev.end_ok(old);
    dev.ready(old);
    ids.insert(old.id);
    // Records are reused at once (LIFO free list): the next windows live in
    // the record `old` had, with new generations.
    for (int i = 0; i < 1000; ++i) {
        lapse_token t = dev.start(0);
        REQUIRE(ids.insert(t.id).second);  // never reused
        if (i == 0) CHECK(uint32_t(t.id) == uint32_t(old.id));
        BusyJob job{10'000};
        dev.submit(0, &job);
        CHECK(dev.end(old, nullptr) == LAPSE_ERROR_INVALID_TOKEN);
        dev.abandon(old);
        dev.end_ok(t);
        CHECK(dev.end(old, nullptr) == LAPSE_ERROR_INVALID_TOKEN);
        const lapse_duration d = dev.ready(t);
        CHECK(d.end_ns - d.start_ns >= 10'000);
    }
}

TEST_CASE("abandon forgets open and closed windows, ignores unknown ones, and cannot hurt the next window",
          "[tokens][abandon]")
{
    CpuDevice dev;
    Gate gate;
    dev.submit(0, &gate);  // markers below stay in flight

    lapse_token open = dev.start(0);
    lapse_token closed = dev.start(0);
    dev.end_ok(closed);
    dev.abandon(open);
    dev.abandon(closed);
    dev.abandon(closed);           // twice: no effect
    dev.abandon({0, 0, 0});        // unknown: ignored
    dev.abandon({closed.id, 9, 0}); // no such stream: ignored

    // A window opened now must not take a record whose markers are still
    // queued: their stamps would land in it.
    lapse_token next = dev.start(0);
    CHECK(uint32_t(next.id) != uint32_t(open.id));
    CHECK(uint32_t(next.id) != uint32_t(closed.id));
    const int64_t released = now_ns();
    gate.open = true;
    BusyJob job{1'000'000};
    dev.submit(0, &job);
    dev.end_ok(next);
    const lapse_duration d = dev.ready(next);
    CHECK(d.start_ns >= released);

    for (lapse_token t : {open, closed}) {
        lapse_duration r;
        lapse_error e = make_error();
        CHECK(dev.resolve(t, r, LAPSE_WAIT_FOREVER, &e) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(r.state == LAPSE_DURATION_FAILED);
        CHECK_THAT(e.message, Catch::Contains("abandoned"));
    }
}

TEST_CASE("resolve with timeout 0 answers pending, then ready once the worker reached the end", "[tokens][resolve]")
{
    CpuDevice dev;
    Gate gate;
    dev.submit(0, &gate);
    lapse_token t = dev.start(0);
    dev.end_ok(t);

    lapse_duration d;
    CHECK(dev.resolve(t, d, 0) == LAPSE_NOT_READY);
    CHECK(d.state == LAPSE_DURATION_PENDING);

    const int64_t before = now_ns();
    CHECK(dev.resolve(t, d, 20'000'000) == LAPSE_NOT_READY);  // a bounded wait gives up
    CHECK(now_ns() - before >= 20'000'000);
    CHECK(d.state == LAPSE_DURATION_PENDING);

    std::thread opener([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        gate.open = true;
    });
    const lapse_duration r = dev.ready(t);  // waits forever: woken by the worker
    opener.join();
    CHECK(r.start_ns >= before);
}

TEST_CASE("resolving a window that is still open is an invalid token, and the window stays usable",
          "[tokens][resolve]")
{
    CpuDevice dev;
    lapse_token t = dev.start(0);
    lapse_duration d;
    lapse_error e = make_error();
    CHECK(dev.resolve(t, d, LAPSE_WAIT_FOREVER, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK_THAT(e.message, Catch::Contains("still open"));
    dev.end_ok(t);
    dev.ready(t);
}

TEST_CASE("a batch with one bad token resolves the others and returns the error", "[tokens][resolve]")
{
    CpuDevice dev;
    lapse_token a = dev.start(0);
    dev.end_ok(a);
    lapse_token b = dev.start(1);
    dev.end_ok(b);
    lapse_token tokens[3] = {a, {12345, 0, 0}, b};
    lapse_duration out[3] = {make_duration(), make_duration(), make_duration()};
    lapse_error e = make_error();
    CHECK(dev.plugin().resolve(dev.device(), tokens, out, 3, LAPSE_WAIT_FOREVER, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK_THAT(e.message, Catch::Contains("12345"));
    CHECK(out[0].state == LAPSE_DURATION_READY);
    CHECK(out[1].state == LAPSE_DURATION_FAILED);
    CHECK(out[1].failure == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(out[2].state == LAPSE_DURATION_READY);
}

TEST_CASE("end and abandon of one token racing on two threads never crash or measure", "[tokens][race]")
{
    CpuDevice dev;
    const int rounds = 2000;
    int ended = 0;
    for (int i = 0; i < rounds; ++i) {
        lapse_token t = dev.start(i % 2);
        std::atomic<int> go{0};
        lapse_status end_status = LAPSE_OK;
        std::thread a([&] {
            go.fetch_add(1);
            while (go.load() < 2) std::this_thread::yield();
            end_status = dev.end(t, nullptr);
        });
        std::thread b([&] {
            go.fetch_add(1);
            while (go.load() < 2) std::this_thread::yield();
            dev.abandon(t);
        });
        a.join();
        b.join();
        REQUIRE((end_status == LAPSE_OK || end_status == LAPSE_ERROR_INVALID_TOKEN));
        ended += end_status == LAPSE_OK;
        // Either order ends with the window forgotten: abandon also forgets
        // a closed window.
        lapse_duration d;
        REQUIRE(dev.resolve(t, d, LAPSE_WAIT_FOREVER) == LAPSE_ERROR_INVALID_TOKEN);
        REQUIRE(d.state == LAPSE_DURATION_FAILED);
    }
    INFO("end won " << ended << " of " << rounds);
    dev.sync(LAPSE_ALL_STREAMS);
}
