// Misuse through the raw C ABI (Device::plugin() / handle()), where no C++
// wrapper guards anything: tokens closed twice, after abandon, with a
// stream that is not their own, from another device; durations resolved
// twice or before their window closed; null error structs. Each call
// returns a clear status and message; the device keeps working after it.
#include "support.hpp"

#include <catch2/catch.hpp>

#include <cinttypes>
#include <cstdio>

namespace {

struct Raw {
    lapse::Device device;
    const lapse_plugin* p;
    lapse_device* d;

    Raw(lapse::Runtime& runtime, const hardening::BackendCase& c)
        : device(runtime.open(lapse::Config::from_string(c.toml, "<" + c.label + ">", {}))),
          p(&device.plugin()),
          d(device.handle())
    {
    }

    lapse_token start(lapse_stream stream)
    {
        lapse_token t{};
        REQUIRE(p->profile_start(d, stream, &t, nullptr) == LAPSE_OK);
        return t;
    }
    lapse_status end(lapse_token t, lapse_error* error)
    {
        lapse_end_options options{sizeof(lapse_end_options), 0};
        return p->profile_end(d, t, &options, error);
    }
    lapse_duration resolve(lapse_token t, lapse_status* status, lapse_error* error)
    {
        lapse_duration out{};
        out.struct_size = sizeof out;
        *status = p->resolve(d, &t, &out, 1, LAPSE_WAIT_FOREVER, error);
        return out;
    }
    // The device still measures after the misuse.
    void require_still_works()
    {
        lapse_token t = start(0);
        REQUIRE(end(t, nullptr) == LAPSE_OK);
        lapse_status s = LAPSE_ERROR_INTERNAL;
        lapse_duration out = resolve(t, &s, nullptr);
        REQUIRE(s == LAPSE_OK);
        CHECK(out.state == LAPSE_DURATION_READY);
        CHECK(out.end_ns >= out.start_ns);
    }
};

lapse_error fresh_error()
{
    lapse_error e{};
    e.struct_size = sizeof e;
    return e;
}

// The message each backend gives for one misuse: the CPU plugin's, which
// names the exact fate of the token (its window table remembers it);
// forward keeps its own table of the same kind and prefixes its name.
std::string expected(const hardening::BackendCase& c, const std::string& cpu)
{
    return c.label == "cpu" ? cpu : "forward: " + cpu;
}

std::string id(const lapse_token& t)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%" PRIu64, t.id);
    return buf;
}

}  // namespace

TEST_CASE("raw ABI: closing a token twice is LAPSE_ERROR_INVALID_TOKEN", "[misuse][abi]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            lapse::Runtime runtime;
            Raw raw(runtime, c);
            lapse_token t = raw.start(0);
            REQUIRE(raw.end(t, nullptr) == LAPSE_OK);
            lapse_error e = fresh_error();
            CHECK(raw.end(t, &e) == LAPSE_ERROR_INVALID_TOKEN);
            CHECK(e.code == LAPSE_ERROR_INVALID_TOKEN);
            CHECK(std::string(e.message) ==
                  expected(c, "profile_end: token " + id(t) + " (stream 0) was closed already (a window closes once)"));
            CHECK(raw.end(t, nullptr) == LAPSE_ERROR_INVALID_TOKEN);  // a null error struct is allowed
            lapse_status s = LAPSE_ERROR_INTERNAL;
            CHECK(raw.resolve(t, &s, nullptr).state == LAPSE_DURATION_READY);  // the first close still counts
            raw.require_still_works();
        }
    }
}

TEST_CASE("raw ABI: closing or resolving after abandon is LAPSE_ERROR_INVALID_TOKEN", "[misuse][abi]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            lapse::Runtime runtime;
            Raw raw(runtime, c);
            lapse_token t = raw.start(1);
            raw.p->profile_abandon(raw.d, t);
            raw.p->profile_abandon(raw.d, t);  // twice: ignored
            lapse_error e = fresh_error();
            CHECK(raw.end(t, &e) == LAPSE_ERROR_INVALID_TOKEN);
            CHECK(std::string(e.message) ==
                  expected(c, "profile_end: token " + id(t) + " (stream 1) was abandoned"));
            lapse_status s = LAPSE_OK;
            lapse_error r = fresh_error();
            lapse_duration out = raw.resolve(t, &s, &r);
            CHECK(s == LAPSE_ERROR_INVALID_TOKEN);
            CHECK(out.state == LAPSE_DURATION_FAILED);
            CHECK(out.failure == LAPSE_ERROR_INVALID_TOKEN);
            CHECK(std::string(r.message) ==
                  expected(c, "resolve: token " + id(t) + " (stream 1) was abandoned"));
            raw.require_still_works();
        }
    }
}

TEST_CASE("raw ABI: a token whose stream is not its own is LAPSE_ERROR_WRONG_STREAM", "[misuse][abi]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            lapse::Runtime runtime;
            Raw raw(runtime, c);
            lapse_token t = raw.start(0);
            lapse_token lied = t;
            lied.opened_on = 1;
            lapse_error e = fresh_error();
            CHECK(raw.end(lied, &e) == LAPSE_ERROR_WRONG_STREAM);
            CHECK(std::string(e.message) ==
                  expected(c, "profile_end: token " + id(t) + " says stream 1, but its window was opened on stream 0"));
            // Abandon with the wrong stream is ignored: the window survives.
            raw.p->profile_abandon(raw.d, lied);

            lapse_token nowhere = t;
            nowhere.opened_on = 99;
            lapse_error n = fresh_error();
            CHECK(raw.end(nowhere, &n) == LAPSE_ERROR_WRONG_STREAM);
            CHECK(std::string(n.message) ==
                  expected(c, "profile_end: token " + id(t) +
                               " says stream 99, which does not exist (the device has 2): not a token of this device"));

            // The real window is intact and closes normally.
            REQUIRE(raw.end(t, nullptr) == LAPSE_OK);
            lapse_status s = LAPSE_ERROR_INTERNAL;
            CHECK(raw.resolve(t, &s, nullptr).state == LAPSE_DURATION_READY);
            CHECK(s == LAPSE_OK);
        }
    }
}

TEST_CASE("raw ABI: resolving twice, or before the window closed, is refused", "[misuse][abi]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            lapse::Runtime runtime;
            Raw raw(runtime, c);
            lapse_token open_one = raw.start(0);
            lapse_status s = LAPSE_OK;
            lapse_error e = fresh_error();
            lapse_duration early = raw.resolve(open_one, &s, &e);
            CHECK(s == LAPSE_ERROR_INVALID_TOKEN);
            CHECK(early.state == LAPSE_DURATION_FAILED);
            CHECK(std::string(e.message) ==
                  expected(c, "resolve: token " + id(open_one) + " (stream 0) is still open (close it before resolving)"));

            REQUIRE(raw.end(open_one, nullptr) == LAPSE_OK);
            CHECK(raw.resolve(open_one, &s, nullptr).state == LAPSE_DURATION_READY);
            CHECK(s == LAPSE_OK);
            lapse_error again = fresh_error();
            lapse_duration twice = raw.resolve(open_one, &s, &again);
            CHECK(s == LAPSE_ERROR_INVALID_TOKEN);
            CHECK(twice.state == LAPSE_DURATION_FAILED);
            CHECK(twice.failure == LAPSE_ERROR_INVALID_TOKEN);
            CHECK(std::string(again.message) ==
                  expected(c, "resolve: token " + id(open_one) + " (stream 0) was resolved already"));

            // In a batch, the bad token fails alone; the good one resolves.
            lapse_token good = raw.start(1);
            REQUIRE(raw.end(good, nullptr) == LAPSE_OK);
            lapse_token batch[2] = {open_one, good};
            lapse_duration out[2] = {};
            out[0].struct_size = out[1].struct_size = sizeof(lapse_duration);
            CHECK(raw.p->resolve(raw.d, batch, out, 2, LAPSE_WAIT_FOREVER, nullptr) == LAPSE_ERROR_INVALID_TOKEN);
            CHECK(out[0].state == LAPSE_DURATION_FAILED);
            CHECK(out[1].state == LAPSE_DURATION_READY);
            // Zero tokens is not an error.
            CHECK(raw.p->resolve(raw.d, batch, out, 0, 0, nullptr) == LAPSE_OK);
            raw.require_still_works();
        }
    }
}

TEST_CASE("raw ABI: a token never handed out, or from another device, is refused", "[misuse][abi]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            lapse::Runtime runtime;
            Raw a(runtime, c);
            Raw b(runtime, c);
            lapse_token made_up{0x7777'0000'0042ull, 0, 0};
            lapse_error e = fresh_error();
            CHECK(a.end(made_up, &e) == LAPSE_ERROR_INVALID_TOKEN);
            CHECK(std::string(e.message) ==
                  expected(c, "profile_end: token " + id(made_up) + " (stream 0) was never opened on this device"));
            lapse_token zero{0, 0, 0};
            CHECK(a.end(zero, nullptr) == LAPSE_ERROR_INVALID_TOKEN);
            a.p->profile_abandon(a.d, made_up);  // ignored

            // A token of device A on device B, where B has no window open:
            // B refuses it. (The raw ABI cannot tell two devices' tokens
            // apart when their ids coincide; the C++ API checks the device.)
            // Synced first: forward opens and abandons a probe window per
            // stream when it opens, and an abandoned window stays live until
            // its stream reaches it, so B would rightly answer that a token
            // with a probe's id names a window on another stream.
            REQUIRE(b.p->sync(b.d, LAPSE_ALL_STREAMS, nullptr) == LAPSE_OK);
            lapse_token of_a = a.start(0);
            lapse_error wrong = fresh_error();
            CHECK(b.end(of_a, &wrong) == LAPSE_ERROR_INVALID_TOKEN);
            CHECK_THAT(std::string(wrong.message),
                       Catch::StartsWith(expected(c, "profile_end: token " + id(of_a) + " (stream 0) ")));
            REQUIRE(a.end(of_a, nullptr) == LAPSE_OK);
            lapse_status s = LAPSE_ERROR_INTERNAL;
            CHECK(a.resolve(of_a, &s, nullptr).state == LAPSE_DURATION_READY);
            a.require_still_works();
            b.require_still_works();
        }
    }
}

TEST_CASE("raw ABI: bad arguments are LAPSE_ERROR_INVALID_ARGUMENT", "[misuse][abi]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            lapse::Runtime runtime;
            Raw raw(runtime, c);
            lapse_token t{};
            lapse_error e = fresh_error();
            CHECK(raw.p->profile_start(raw.d, 2, &t, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
            CHECK(std::string(e.message) == expected(c, "profile_start: stream 2 does not exist (the device has 2)"));
            lapse_error s = fresh_error();
            CHECK(raw.p->submit(raw.d, 5, [](void*, void*) {}, nullptr, &s) == LAPSE_ERROR_INVALID_ARGUMENT);
            CHECK(std::string(s.message) == expected(c, "submit: stream 5 does not exist (the device has 2)"));
            CHECK(raw.p->sync(raw.d, 3, nullptr) == LAPSE_ERROR_INVALID_ARGUMENT);
            // An error struct too small to hold a message is left alone.
            lapse_error tiny = fresh_error();
            tiny.struct_size = 4;
            tiny.code = 12345;
            CHECK(raw.p->sync(raw.d, 3, &tiny) == LAPSE_ERROR_INVALID_ARGUMENT);
            CHECK(tiny.code == 12345);
            raw.require_still_works();
        }
    }
}

TEST_CASE("raw ABI: profile_end refuses a null device and end options shorter than the plugin reads, and takes "
          "NULL options or full ones",
          "[misuse][abi]")
{
    for (const auto& c : hardening::backend_cases()) {
        DYNAMIC_SECTION(c.label)
        {
            lapse::Runtime runtime;
            Raw raw(runtime, c);
            lapse_token t = raw.start(0);

            lapse_error e = fresh_error();
            CHECK(raw.p->profile_end(nullptr, t, nullptr, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
            CHECK(std::string(e.message) == "profile_end: device is null");

            lapse_end_options short_options{4, LAPSE_END_FLUSH};
            lapse_error s = fresh_error();
            CHECK(raw.p->profile_end(raw.d, t, &short_options, &s) == LAPSE_ERROR_INVALID_ARGUMENT);
            CHECK(std::string(s.message) ==
                  "profile_end: lapse_end_options is 4 bytes, shorter than the 8 this plugin reads");

            // Neither refusal closed the window: it still ends, with full
            // options, and a second one ends with none.
            lapse_end_options flush{sizeof(lapse_end_options), LAPSE_END_FLUSH};
            CHECK(raw.p->profile_end(raw.d, t, &flush, nullptr) == LAPSE_OK);
            lapse_token u = raw.start(0);
            CHECK(raw.p->profile_end(raw.d, u, nullptr, nullptr) == LAPSE_OK);
            for (lapse_token done : {t, u}) {
                lapse_status status = LAPSE_ERROR_INTERNAL;
                const lapse_duration d = raw.resolve(done, &status, nullptr);
                CHECK(status == LAPSE_OK);
                CHECK(d.state == LAPSE_DURATION_READY);
            }
            raw.require_still_works();
        }
    }
}
