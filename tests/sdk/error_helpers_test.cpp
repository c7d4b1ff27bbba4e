// The SDK's error helpers write into a caller-owned, fixed-size struct: they
// must never overrun it, and a forwarding plugin's prefix must keep the
// inner message intact (truncating its tail, never its head).
#include <lapse/sdk/error.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

using lapse::sdk::fail;
using lapse::sdk::make_error;
using lapse::sdk::prefix_error;

TEST_CASE("prefix_error keeps the inner message behind the layer's name")
{
    lapse_error e = make_error();
    fail(&e, LAPSE_ERROR_INVALID_TOKEN, "cpu: profile_end: token 7 was closed already");
    prefix_error(&e, "forward");
    CHECK(std::string(e.message) == "forward: cpu: profile_end: token 7 was closed already");
    CHECK(e.code == LAPSE_ERROR_INVALID_TOKEN);
}

TEST_CASE("prefix_error truncates a long inner message at its tail and stays terminated")
{
    lapse_error e = make_error();
    fail(&e, LAPSE_ERROR_DEVICE, std::string(700, 'x'));
    prefix_error(&e, "fusion");
    std::string m(e.message);
    CHECK(m.size() == LAPSE_ERROR_MESSAGE_CAPACITY - 1);
    CHECK(m.rfind("fusion: xxx", 0) == 0);

    fail(&e, LAPSE_ERROR_DEVICE, "cause");
    prefix_error(&e, std::string(700, 'p'));
    CHECK(std::string(e.message).size() == LAPSE_ERROR_MESSAGE_CAPACITY - 1);
}

TEST_CASE("a null or short error struct is left alone")
{
    CHECK(fail(nullptr, LAPSE_ERROR_CONFIG, "ignored") == LAPSE_ERROR_CONFIG);
    lapse_error small{};
    small.struct_size = 8;  // a caller built against a smaller struct
    small.message[0] = 'k';
    fail(&small, LAPSE_ERROR_CONFIG, "must not be written");
    prefix_error(&small, "forward");
    CHECK(small.message[0] == 'k');
}

TEST_CASE("exceptions become statuses with the call named")
{
    lapse_error e = make_error();
    lapse_status s = LAPSE_OK;
    try {
        throw std::runtime_error("boom");
    } catch (...) {
        s = lapse::sdk::status_from_current_exception(&e, "profile_start");
    }
    CHECK(s == LAPSE_ERROR_INTERNAL);
    CHECK(std::string(e.message) == "profile_start: unexpected exception: boom");
    try {
        throw lapse::sdk::Error(LAPSE_ERROR_CAPACITY, "ring full: 8 windows pending");
    } catch (...) {
        s = lapse::sdk::status_from_current_exception(&e, "profile_start");
    }
    CHECK(s == LAPSE_ERROR_CAPACITY);
    CHECK(std::string(e.message) == "ring full: 8 windows pending");
}
