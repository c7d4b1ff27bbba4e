// The pure timestamp arithmetic: subtraction under the valid-bits mask
// (stamps either side of a wrap), signed placement against a calibration
// point, period conversion in double, and the no-clock decision.
#include "timestamp_math.hpp"
#include "token.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace lapse::vulkan;

TEST_CASE("valid_mask has exactly `bits` low bits set", "[vulkan][math]")
{
    CHECK(valid_mask(0) == 0);
    CHECK(valid_mask(36) == 0xFFFFFFFFFull);
    CHECK(valid_mask(48) == 0xFFFFFFFFFFFFull);
    CHECK(valid_mask(64) == ~uint64_t{0});
}

TEST_CASE("a queue with zero valid bits has no device clock", "[vulkan][math]")
{
    CHECK_FALSE(has_device_clock(0));
    CHECK(has_device_clock(1));
    CHECK(has_device_clock(36));
    CHECK(has_device_clock(64));
}

TEST_CASE("subtraction under the mask survives a wrap", "[vulkan][math]")
{
    for (uint32_t bits : {36u, 48u, 64u}) {
        DYNAMIC_SECTION(bits << " valid bits")
        {
            const uint64_t mask = valid_mask(bits);
            // No wrap.
            CHECK(ticks_between(1000, 1500, mask) == 500);
            // Start 100 ticks before the wrap, end 400 after it.
            const uint64_t start = mask - 99;
            const uint64_t end = 400;
            CHECK(ticks_between(start, end, mask) == 500);
            // Zero is a duration (the fastest), not a special value.
            CHECK(ticks_between(start, start, mask) == 0);
            // A stamp whose invalid high bits are garbage must be masked first
            // by the caller; masked, it gives the same answer.
            if (bits < 64) {
                const uint64_t junk = ~mask;
                CHECK(ticks_between(start & mask, (end | junk) & mask, mask) == 500);
                // The unmasked difference would be nonsense: prove the mask matters.
                CHECK((end - start) != 500);
            }
            // The longest interval the counter can express.
            CHECK(ticks_between(1, 0, mask) == mask);
        }
    }
}

TEST_CASE("signed placement picks the nearer way round the circle", "[vulkan][math]")
{
    for (uint32_t bits : {36u, 48u, 64u}) {
        DYNAMIC_SECTION(bits << " valid bits")
        {
            const uint64_t mask = valid_mask(bits);
            CHECK(signed_ticks(1000, 1500, mask) == 500);
            CHECK(signed_ticks(1500, 1000, mask) == -500);
            // The calibration point just after the wrap, the stamp just before.
            CHECK(signed_ticks(50, mask - 49, mask) == -100);
            // The calibration point just before the wrap, the stamp just after.
            CHECK(signed_ticks(mask - 49, 50, mask) == 100);
            CHECK(signed_ticks(7, 7, mask) == 0);
        }
    }
    CHECK(signed_ticks(0, 5, 0) == 0);  // no clock: nothing to place
}

TEST_CASE("ticks convert to ns with the period in double", "[vulkan][math]")
{
    CHECK(ticks_to_ns(1000, 1.0) == 1000);
    // A non-integral period must not be truncated to an integer first.
    CHECK(ticks_to_ns(3, 83.333333) == 250);
    CHECK(ticks_to_ns(1000000, 83.333333) == 83333333);
    CHECK(ticks_to_ns(12, 52.08) == 625);  // 624.96 rounds to nearest
    CHECK(ticks_to_ns(0, 40.0) == 0);
    // Saturates rather than wrapping negative.
    CHECK(ticks_to_ns(~uint64_t{0}, 10.0) == INT64_MAX);
    CHECK(signed_ticks_to_ns(-3, 83.333333) == -250);
    CHECK(signed_ticks_to_ns(INT64_MIN, 1.0) < 0);
}

TEST_CASE("rounding without the library call agrees with std::nearbyint, ties to even", "[vulkan][math]")
{
    CHECK(round_nonnegative(2.5) == 2.0);
    CHECK(round_nonnegative(3.5) == 4.0);
    CHECK(round_nonnegative(0.49999999999999994) == 0.0);
    CHECK(round_nonnegative(4503599627370497.0) == 4503599627370497.0);  // 2^52 + 1: already whole
    CHECK(round_nonnegative(1e300) == 1e300);
    CHECK(std::isnan(round_nonnegative(std::nan(""))));
    // Products of the kind resolve converts: ticks times a period.
    for (double period : {1.0, 0.5, 52.08, 83.333333, 41.666666666666664, 1.0000001}) {
        uint64_t ticks = 1;
        for (int i = 0; i < 60; ++i, ticks = ticks * 3 + 1) {
            const double ns = static_cast<double>(ticks) * period;
            INFO("ticks " << ticks << " period " << period);
            CHECK(round_nonnegative(ns) == std::nearbyint(ns));
        }
    }
}

TEST_CASE("token ids carry the stream and are never 0", "[vulkan][token]")
{
    uint64_t pos = 99;
    uint32_t stream = 99;
    CHECK(encode_token_id(0, 0) != 0);
    CHECK_FALSE(decode_token_id(0, pos, stream));
    CHECK_FALSE(decode_token_id(5, pos, stream));  // a stream part without a position
    REQUIRE(decode_token_id(encode_token_id(12345, 3), pos, stream));
    CHECK(pos == 12345);
    CHECK(stream == 3);
    CHECK(encode_token_id(1, 0) != encode_token_id(0, 1));
}
