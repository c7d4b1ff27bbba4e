// Token rules: opened_on enforced, invalid tokens named, abandon forgets,
// resolve releases, errors in a batch leave the rest resolved.
#include "shared_device.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace lapse::test;

TEST_CASE("a token whose opened_on does not match its window is WRONG_STREAM, not a guess", "[vulkan][tokens]")
{
    SharedDevice& s = shared();
    lapse_token t{};
    REQUIRE(s.device.start(0, t) == LAPSE_OK);
    lapse_token lie = t;
    lie.opened_on = 1;
    lapse_error e = make_error();
    CHECK(s.device.end(lie, &e) == LAPSE_ERROR_WRONG_STREAM);
    CHECK(std::string(e.message).find("opened_on") != std::string::npos);
    // The window is untouched by the refused call.
    REQUIRE(s.device.end(t) == LAPSE_OK);
    lapse_duration d{};
    CHECK(s.device.resolve_one(lie, d, LAPSE_WAIT_FOREVER, &e) == LAPSE_ERROR_WRONG_STREAM);
    CHECK(d.state == LAPSE_DURATION_FAILED);
    CHECK(d.failure == LAPSE_ERROR_WRONG_STREAM);
    // Abandon with the wrong stream is ignored; the right token still resolves.
    s.device.plugin().profile_abandon(s.device.get(), lie);
    CHECK(s.device.resolve_one(t, d) == LAPSE_OK);
    CHECK(d.state == LAPSE_DURATION_READY);
}

TEST_CASE("unknown, closed-twice, abandoned and still-open tokens are refused", "[vulkan][tokens]")
{
    SharedDevice& s = shared();
    lapse_error e = make_error();
    lapse_duration d{};

    SECTION("never issued")
    {
        CHECK(s.device.end(lapse_token{0, 0, 0}, &e) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(s.device.end(lapse_token{0xdead0000ull << 8, 0, 0}, &e) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(s.device.end(lapse_token{(5ull << 8) | 77, 77, 0}, &e) == LAPSE_ERROR_INVALID_TOKEN);  // no stream 77
        CHECK(s.device.resolve_one(lapse_token{0, 0, 0}, d, 0, &e) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(d.state == LAPSE_DURATION_FAILED);
        s.device.plugin().profile_abandon(s.device.get(), lapse_token{12345, 0, 0});  // ignored, no crash
    }
    SECTION("closed twice")
    {
        lapse_token t{};
        REQUIRE(s.device.start(0, t) == LAPSE_OK);
        REQUIRE(s.device.end(t) == LAPSE_OK);
        CHECK(s.device.end(t, &e) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(std::string(e.message).find("profile_end") != std::string::npos);
        REQUIRE(s.device.resolve_one(t, d) == LAPSE_OK);
    }
    SECTION("abandoned while open, then closed or resolved")
    {
        lapse_token t{};
        REQUIRE(s.device.start(0, t) == LAPSE_OK);
        s.device.plugin().profile_abandon(s.device.get(), t);
        CHECK(s.device.end(t, &e) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(s.device.resolve_one(t, d, 0, &e) == LAPSE_ERROR_INVALID_TOKEN);
        s.device.plugin().profile_abandon(s.device.get(), t);  // twice: still fine
    }
    SECTION("abandoned after close")
    {
        lapse_token t{};
        REQUIRE(s.device.start(0, t) == LAPSE_OK);
        REQUIRE(s.device.end(t) == LAPSE_OK);
        s.device.plugin().profile_abandon(s.device.get(), t);
        CHECK(s.device.resolve_one(t, d, 0, &e) == LAPSE_ERROR_INVALID_TOKEN);
    }
    SECTION("still open: resolve refuses it and leaves it open")
    {
        lapse_token t{};
        REQUIRE(s.device.start(0, t) == LAPSE_OK);
        CHECK(s.device.resolve_one(t, d, 0, &e) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(std::string(e.message).find("still open") != std::string::npos);
        REQUIRE(s.device.end(t) == LAPSE_OK);
        CHECK(s.device.resolve_one(t, d) == LAPSE_OK);
    }
    SECTION("a bad token in a batch fails alone; the others resolve")
    {
        lapse_token a{}, b{};
        REQUIRE(s.device.start(0, a) == LAPSE_OK);
        REQUIRE(s.device.start(0, b) == LAPSE_OK);
        REQUIRE(s.device.end(a) == LAPSE_OK);
        REQUIRE(s.device.end(b) == LAPSE_OK);
        lapse_token tokens[3] = {a, lapse_token{42, 0, 0}, b};
        lapse_duration out[3] = {make_duration(), make_duration(), make_duration()};
        CHECK(s.device.resolve(tokens, out, 3, LAPSE_WAIT_FOREVER, &e) == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(out[0].state == LAPSE_DURATION_READY);
        CHECK(out[1].state == LAPSE_DURATION_FAILED);
        CHECK(out[1].failure == LAPSE_ERROR_INVALID_TOKEN);
        CHECK(out[2].state == LAPSE_DURATION_READY);
    }
    SECTION("bad stream index and bad flags")
    {
        lapse_token t{};
        CHECK(s.device.start(7, t, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
        CHECK(s.device.sync(7, &e) == LAPSE_ERROR_INVALID_ARGUMENT);
        REQUIRE(s.device.start(0, t) == LAPSE_OK);
        CHECK(s.device.end(t, &e, 0x80) == LAPSE_ERROR_INVALID_ARGUMENT);
        CHECK(s.device.end(t, &e, LAPSE_END_FLUSH) == LAPSE_OK);  // accepted: nothing is held back
        CHECK(s.device.resolve_one(t, d) == LAPSE_OK);
    }
    CHECK(s.device.validation_messages() == 0);
}

TEST_CASE("token ids are unique across streams and never reused", "[vulkan][tokens]")
{
    SharedDevice& s = shared();
    lapse_token a{}, b{}, c{};
    REQUIRE(s.device.start(0, a) == LAPSE_OK);
    REQUIRE(s.device.start(1, b) == LAPSE_OK);
    REQUIRE(s.device.end(a) == LAPSE_OK);
    REQUIRE(s.device.end(b) == LAPSE_OK);
    lapse_duration d{};
    REQUIRE(s.device.resolve_one(a, d) == LAPSE_OK);
    REQUIRE(s.device.start(0, c) == LAPSE_OK);
    CHECK(a.id != b.id);
    CHECK(c.id != a.id);
    CHECK(c.id != b.id);
    REQUIRE(s.device.end(c) == LAPSE_OK);
    REQUIRE(s.device.resolve_one(b, d) == LAPSE_OK);
    REQUIRE(s.device.resolve_one(c, d) == LAPSE_OK);
}
