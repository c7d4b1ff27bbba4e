// lapse.resolve_compact/1 on the CPU plugin: measured windows come back as
// stamp pairs, every other window is left untouched for the full resolve,
// which then answers it (its failure, or the token's error and message).
#include "cpu_plugin.hpp"

#include <lapse/sdk/resolve_compact.hpp>

#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace lapse_test;

namespace {

const lapse_resolve_compact& compact_of(CpuDevice& dev)
{
    const lapse_resolve_compact* c = lapse::sdk::resolve_compact_of(&dev.plugin(), dev.device());
    REQUIRE(c != nullptr);
    return *c;
}

// A compact resolve of `tokens`, its arrays filled with values no answer
// has, so a slot the plugin forgot to write shows.
struct Compact {
    std::vector<lapse_stamp_pair> stamps;
    std::vector<uint8_t> states;
    lapse_status status = LAPSE_OK;

    Compact(CpuDevice& dev, const std::vector<lapse_token>& tokens, uint64_t timeout_ns)
        : stamps(tokens.size(), lapse_stamp_pair{-7, -7}), states(tokens.size(), 0xEE)
    {
        lapse_error e = make_error();
        status = compact_of(dev).resolve_compact(dev.device(), tokens.data(), stamps.data(), states.data(),
                                                 static_cast<uint32_t>(tokens.size()), timeout_ns, &e);
        INFO(e.message);
        REQUIRE(status >= 0);
    }
};

void check_no_stamp(const lapse_stamp_pair& p)
{
    CHECK(p.start_ns == 0);
    CHECK(p.end_ns == LAPSE_COMPACT_NO_STAMP);
    CHECK(p.end_ns < p.start_ns);  // never reads as a duration, let alone a fast one
}

struct Throws {
    void operator()() { throw std::runtime_error("boom in a window"); }
};

}  // namespace

TEST_CASE("stream mode offers resolve_compact with device timing on the host timeline", "[compact]")
{
    CpuDevice dev;
    const lapse_resolve_compact& c = compact_of(dev);
    CHECK(c.struct_size == sizeof(lapse_resolve_compact));
    CHECK(c.method == LAPSE_TIMING_DEVICE);
    CHECK(c.clock_domain == LAPSE_CLOCK_HOST_MONOTONIC);
    CHECK(c.reserved == 0);
}

TEST_CASE("inline mode does not offer resolve_compact: a host resolves in full", "[compact][inline]")
{
    CpuDevice dev({{"mode", std::string("inline")}});
    REQUIRE(dev.opened());
    CHECK(dev.plugin().get_extension(dev.device(), LAPSE_RESOLVE_COMPACT_EXTENSION) == nullptr);
    CHECK(lapse::sdk::resolve_compact_of(&dev.plugin(), dev.device()) == nullptr);
}

TEST_CASE("measured windows resolve compactly into their stamps and are released", "[compact]")
{
    CpuDevice dev;
    const int64_t before = now_ns();
    std::vector<lapse_token> tokens;
    BusyJob job{2'000'000};
    tokens.push_back(dev.start(0));
    dev.submit(0, &job);
    dev.end_ok(tokens.back());
    for (int i = 0; i < 300; ++i) {  // past a FreeBatch's flush, on both streams
        tokens.push_back(dev.start(static_cast<lapse_stream>(i % 2)));
        dev.end_ok(tokens.back());
    }
    dev.sync(LAPSE_ALL_STREAMS);
    const int64_t after = now_ns();

    Compact r(dev, tokens, LAPSE_WAIT_FOREVER);
    CHECK(r.status == LAPSE_OK);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        INFO("window " << i);
        REQUIRE(r.states[i] == LAPSE_COMPACT_READY);
        CHECK(r.stamps[i].start_ns >= before - 1'000'000);  // the TSC conversion's error is far below this
        CHECK(r.stamps[i].end_ns >= r.stamps[i].start_ns);
        CHECK(r.stamps[i].end_ns <= after + 1'000'000);
    }
    CHECK(r.stamps[0].end_ns - r.stamps[0].start_ns >= 2'000'000);

    // Taken: the full resolve now says so, naming the token.
    lapse_duration d;
    lapse_error e = make_error();
    CHECK(dev.resolve(tokens[5], d, 0, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK_THAT(e.message, Catch::Contains(std::to_string(tokens[5].id)));
    CHECK(d.state == LAPSE_DURATION_FAILED);
}

TEST_CASE("a window not reached yet is pending, untouched, and resolves once the worker got there",
          "[compact][resolve]")
{
    CpuDevice dev;
    Gate gate;
    dev.submit(0, &gate);
    const lapse_token t = dev.start(0);
    dev.end_ok(t);

    {
        Compact r(dev, {t}, 0);
        CHECK(r.status == LAPSE_NOT_READY);
        CHECK(r.states[0] == LAPSE_COMPACT_PENDING);
        check_no_stamp(r.stamps[0]);
    }
    const int64_t before = now_ns();
    {
        Compact r(dev, {t}, 20'000'000);  // a bounded wait gives up
        CHECK(now_ns() - before >= 20'000'000);
        CHECK(r.status == LAPSE_NOT_READY);
        CHECK(r.states[0] == LAPSE_COMPACT_PENDING);
        check_no_stamp(r.stamps[0]);
    }
    std::thread opener([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        gate.open = true;
    });
    Compact r(dev, {t}, LAPSE_WAIT_FOREVER);  // woken by the worker
    opener.join();
    CHECK(r.status == LAPSE_OK);
    CHECK(r.states[0] == LAPSE_COMPACT_READY);
    CHECK(r.stamps[0].start_ns >= before);
}

TEST_CASE("a pending window left by resolve_compact can be resolved in full instead", "[compact][resolve]")
{
    CpuDevice dev;
    Gate gate;
    dev.submit(0, &gate);
    const lapse_token t = dev.start(0);
    dev.end_ok(t);
    Compact r(dev, {t}, 0);
    CHECK(r.states[0] == LAPSE_COMPACT_PENDING);
    gate.open = true;
    dev.ready(t);
}

TEST_CASE("a failed window is left for the full resolve, which answers FAILED", "[compact][errors]")
{
    CpuDevice dev;
    Throws bad;
    const lapse_token t = dev.start(0);
    dev.submit(0, &bad);
    dev.end_ok(t);
    dev.sync(0);

    Compact r(dev, {t}, LAPSE_WAIT_FOREVER);
    CHECK(r.status == LAPSE_NOT_READY);
    CHECK(r.states[0] == LAPSE_COMPACT_RESOLVE_FULL);
    check_no_stamp(r.stamps[0]);
    // Asking again changes nothing: the window was not taken.
    Compact again(dev, {t}, 0);
    CHECK(again.states[0] == LAPSE_COMPACT_RESOLVE_FULL);

    lapse_duration d;
    CHECK(dev.resolve(t, d, 0) == LAPSE_OK);
    CHECK(d.state == LAPSE_DURATION_FAILED);
    CHECK(d.failure == LAPSE_ERROR_DEVICE);
}

TEST_CASE("tokens that name no live window read RESOLVE_FULL, and resolve then names each one", "[compact][tokens]")
{
    CpuDevice dev;
    const lapse_token abandoned = dev.start(0);
    dev.end_ok(abandoned);
    dev.abandon(abandoned);
    const lapse_token resolved = dev.start(0);
    dev.end_ok(resolved);
    dev.ready(resolved);
    const lapse_token open = dev.start(1);
    const lapse_token closed = dev.start(1);
    dev.end_ok(closed);
    const lapse_token other_stream{closed.id, 0, 0};
    const lapse_token unknown{0x0000'7777'0000'0099ull, 0, 0};
    const lapse_token no_such_stream{closed.id, 9, 0};
    const lapse_token never{0, 0, 0};
    dev.sync(LAPSE_ALL_STREAMS);

    const std::vector<lapse_token> bad{abandoned, resolved, open, other_stream, unknown, no_such_stream, never};
    Compact r(dev, bad, LAPSE_WAIT_FOREVER);
    CHECK(r.status == LAPSE_NOT_READY);
    for (std::size_t i = 0; i < bad.size(); ++i) {
        INFO("token " << i);
        CHECK(r.states[i] == LAPSE_COMPACT_RESOLVE_FULL);
        check_no_stamp(r.stamps[i]);
    }
    for (const lapse_token& t : bad) {
        lapse_duration d;
        lapse_error e = make_error();
        const lapse_status s = dev.resolve(t, d, 0, &e);
        INFO(e.message);
        CHECK(s < 0);
        CHECK(d.state == LAPSE_DURATION_FAILED);
        if (t.id != 0) CHECK_THAT(e.message, Catch::Contains(std::to_string(t.id)));
    }
    // Neither the open window nor the closed one behind the wrong tokens was
    // hurt: both still close and measure.
    dev.end_ok(open);
    dev.ready(open);
    dev.ready(closed);
}

TEST_CASE("null arrays are refused before anything is taken", "[compact][errors]")
{
    CpuDevice dev;
    const lapse_resolve_compact& c = compact_of(dev);
    const lapse_token t = dev.start(0);
    dev.end_ok(t);
    dev.sync(0);
    lapse_stamp_pair pair{};
    uint8_t state = 0;
    lapse_error e = make_error();
    CHECK(c.resolve_compact(dev.device(), &t, nullptr, &state, 1, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(e.message, Catch::Contains("stamps"));
    CHECK(c.resolve_compact(dev.device(), &t, &pair, nullptr, 1, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(e.message, Catch::Contains("states"));
    CHECK(c.resolve_compact(dev.device(), nullptr, &pair, &state, 1, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(c.resolve_compact(nullptr, &t, &pair, &state, 1, 0, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(c.resolve_compact(dev.device(), nullptr, nullptr, nullptr, 0, 0, &e) == LAPSE_OK);
    dev.ready(t);  // still there
}

TEST_CASE("two threads resolving the same windows compactly: each window goes to exactly one", "[compact][threads]")
{
    CpuDevice dev({{"window_capacity", int64_t{4096}}});
    constexpr int kWindows = 3000;
    for (int round = 0; round < 5; ++round) {
        std::vector<lapse_token> tokens;
        for (int i = 0; i < kWindows; ++i) {
            tokens.push_back(dev.start(static_cast<lapse_stream>(i % 2)));
            dev.end_ok(tokens.back());
        }
        dev.sync(LAPSE_ALL_STREAMS);
        std::vector<lapse_stamp_pair> stamps[2] = {std::vector<lapse_stamp_pair>(kWindows),
                                                   std::vector<lapse_stamp_pair>(kWindows)};
        std::vector<uint8_t> states[2] = {std::vector<uint8_t>(kWindows), std::vector<uint8_t>(kWindows)};
        lapse_status status[2] = {};
        const lapse_resolve_compact& c = compact_of(dev);
        std::atomic<int> ready_to_go{0};
        auto resolver = [&](int k) {
            ready_to_go.fetch_add(1);
            while (ready_to_go.load() < 2) {
            }
            status[k] = c.resolve_compact(dev.device(), tokens.data(), stamps[k].data(), states[k].data(), kWindows,
                                          LAPSE_WAIT_FOREVER, nullptr);
        };
        std::thread a(resolver, 0);
        std::thread b(resolver, 1);
        a.join();
        b.join();
        int taken = 0;
        for (int i = 0; i < kWindows; ++i) {
            INFO("round " << round << ", window " << i);
            const bool in0 = states[0][i] == LAPSE_COMPACT_READY;
            const bool in1 = states[1][i] == LAPSE_COMPACT_READY;
            REQUIRE(in0 != in1);
            CHECK(states[in0 ? 1 : 0][i] == LAPSE_COMPACT_RESOLVE_FULL);
            CHECK(stamps[in0 ? 0 : 1][i].end_ns >= stamps[in0 ? 0 : 1][i].start_ns);
            taken += in0 ? 1 : 0;
        }
        CHECK((status[0] == LAPSE_OK) == (taken == kWindows));
        CHECK((status[1] == LAPSE_OK) == (taken == 0));
        // The loser's full resolve fails cleanly: resolved already.
        lapse_duration d;
        CHECK(dev.resolve(tokens[kWindows / 2], d, 0) == LAPSE_ERROR_INVALID_TOKEN);
    }
    // Every record went back exactly once: the table hands out distinct
    // windows that all measure.
    std::vector<lapse_token> more;
    for (int i = 0; i < kWindows; ++i) {
        more.push_back(dev.start(0));
        dev.end_ok(more.back());
    }
    Compact r(dev, more, LAPSE_WAIT_FOREVER);
    CHECK(r.status == LAPSE_OK);
}

TEST_CASE("a mixed span: each window answered by what it is, the rest resolved in full after", "[compact]")
{
    CpuDevice dev;
    Throws bad;
    Gate gate;
    const lapse_token ready_a = dev.start(0);
    dev.end_ok(ready_a);
    const lapse_token abandoned = dev.start(0);
    dev.end_ok(abandoned);
    dev.abandon(abandoned);
    const lapse_token failed = dev.start(0);
    dev.submit(0, &bad);
    dev.end_ok(failed);
    const lapse_token ready_b = dev.start(0);
    dev.end_ok(ready_b);
    dev.sync(0);
    dev.submit(1, &gate);
    const lapse_token pending = dev.start(1);
    dev.end_ok(pending);

    const std::vector<lapse_token> span{ready_a, abandoned, failed, pending, ready_b};
    Compact r(dev, span, 0);
    CHECK(r.status == LAPSE_NOT_READY);
    CHECK(r.states[0] == LAPSE_COMPACT_READY);
    CHECK(r.states[1] == LAPSE_COMPACT_RESOLVE_FULL);
    CHECK(r.states[2] == LAPSE_COMPACT_RESOLVE_FULL);
    CHECK(r.states[3] == LAPSE_COMPACT_PENDING);
    CHECK(r.states[4] == LAPSE_COMPACT_READY);
    CHECK(r.stamps[0].end_ns >= r.stamps[0].start_ns);
    CHECK(r.stamps[4].start_ns >= r.stamps[0].end_ns);  // one stream, in order
    for (int i : {1, 2, 3}) check_no_stamp(r.stamps[static_cast<std::size_t>(i)]);

    // What a host does next: the full resolve for exactly the others.
    gate.open = true;
    lapse_duration d;
    lapse_error e = make_error();
    CHECK(dev.resolve(abandoned, d, 0, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK_THAT(e.message, Catch::Contains(std::to_string(abandoned.id)));
    CHECK(dev.resolve(failed, d, 0) == LAPSE_OK);
    CHECK(d.state == LAPSE_DURATION_FAILED);
    CHECK(d.failure == LAPSE_ERROR_DEVICE);
    dev.ready(pending);
}

TEST_CASE("the strided form resolves records in place: a READY pair over its token, every other record untouched",
          "[compact][strided]")
{
    // A host's own record, as the C++ Duration is: the token becomes the
    // pair in the same bytes, with fields of the host's on either side.
    struct Record {
        uint64_t before = 0xB0B0B0B0B0B0B0B0u;
        lapse_token token;
        uint64_t after = 0xAFAFAFAFAFAFAFAFu;
    };
    static_assert(sizeof(Record) == 32);
    CpuDevice dev;
    Throws bad;
    Gate gate;
    std::vector<Record> records(5);
    records[0].token = dev.start(0);
    dev.end_ok(records[0].token);
    records[1].token = dev.start(0);
    dev.end_ok(records[1].token);
    dev.abandon(records[1].token);
    records[2].token = dev.start(0);
    dev.submit(0, &bad);
    dev.end_ok(records[2].token);
    records[4].token = dev.start(0);
    dev.end_ok(records[4].token);
    dev.sync(0);
    dev.submit(1, &gate);
    records[3].token = dev.start(1);
    dev.end_ok(records[3].token);
    const std::vector<Record> as_given = records;

    const lapse_resolve_compact& c = compact_of(dev);
    const lapse_resolve_compact_strided_fn strided = lapse::sdk::resolve_compact_strided_of(c);
    REQUIRE(strided != nullptr);
    std::vector<uint8_t> states(records.size(), 0xEE);
    lapse_error e = make_error();
    lapse_token* tokens = &records[0].token;
    auto* pairs = reinterpret_cast<lapse_stamp_pair*>(&records[0].token);
    CHECK(strided(dev.device(), tokens, sizeof(Record), pairs, sizeof(Record), states.data(), 5, 0, &e) ==
          LAPSE_NOT_READY);
    CHECK(states == std::vector<uint8_t>{LAPSE_COMPACT_READY, LAPSE_COMPACT_RESOLVE_FULL, LAPSE_COMPACT_RESOLVE_FULL,
                                         LAPSE_COMPACT_PENDING, LAPSE_COMPACT_READY});
    for (std::size_t i = 0; i < records.size(); ++i) {
        INFO("record " << i);
        CHECK(records[i].before == as_given[i].before);
        CHECK(records[i].after == as_given[i].after);
        if (states[i] == LAPSE_COMPACT_READY) continue;
        // Untouched, so the full resolve still has the token.
        CHECK(records[i].token.id == as_given[i].token.id);
        CHECK(records[i].token.opened_on == as_given[i].token.opened_on);
    }
    lapse_stamp_pair a;
    lapse_stamp_pair b;
    std::memcpy(&a, &records[0].token, sizeof a);
    std::memcpy(&b, &records[4].token, sizeof b);
    CHECK(a.start_ns > 0);
    CHECK(a.end_ns >= a.start_ns);
    CHECK(b.start_ns >= a.end_ns);  // one stream, in order

    // The pending record, once reached, is resolved in place by a second call.
    gate.open = true;
    dev.sync(1);
    auto* pending_pair = reinterpret_cast<lapse_stamp_pair*>(&records[3].token);
    CHECK(strided(dev.device(), &records[3].token, sizeof(Record), pending_pair, sizeof(Record), &states[3], 1,
                  LAPSE_WAIT_FOREVER, &e) == LAPSE_OK);
    CHECK(states[3] == LAPSE_COMPACT_READY);
    lapse_duration d;
    CHECK(dev.resolve(records[2].token, d, 0) == LAPSE_OK);  // the failed one, in full
    CHECK(d.state == LAPSE_DURATION_FAILED);
}
