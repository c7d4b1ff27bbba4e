// The statistics of `lapse report`: exact values on inputs whose answers are
// known by hand.
#include "statistics.hpp"

#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

using lapse::cli::nearest_rank;
using lapse::cli::summarize;

TEST_CASE("statistics: no data has no summary", "[statistics]")
{
    std::vector<int64_t> none;
    CHECK_FALSE(summarize(none).has_value());
    CHECK_THROWS(nearest_rank(none, 50));
}

TEST_CASE("statistics: one sample", "[statistics]")
{
    std::vector<int64_t> one{42};
    auto s = summarize(one).value();
    CHECK(s.count == 1);
    CHECK(s.total_ns == 42);
    CHECK(s.min_ns == 42);
    CHECK(s.max_ns == 42);
    CHECK(s.median_ns == 42.0);
    CHECK(s.p99_ns == 42);
    CHECK(s.stddev_ns == 0.0);
}

TEST_CASE("statistics: 1..100 in reverse order", "[statistics]")
{
    std::vector<int64_t> v(100);
    std::iota(v.rbegin(), v.rend(), 1);  // 100, 99, ..., 1: the input order must not matter
    const std::vector<int64_t> copy = v;
    auto s = summarize(v).value();
    CHECK(v == copy);  // the input is left alone
    CHECK(s.count == 100);
    CHECK(s.total_ns == 5050);
    CHECK(s.min_ns == 1);
    CHECK(s.max_ns == 100);
    CHECK(s.median_ns == 50.5);  // even count: mean of the two middle values
    CHECK(s.p99_ns == 99);       // nearest rank: ceil(0.99 * 100) = 99th value
    CHECK(s.mean_ns == 50.5);
    // Sample variance of 1..n is n(n+1)/12 = 841.666...
    CHECK(s.stddev_ns == Approx(29.011491975882016).epsilon(1e-12));
}

TEST_CASE("statistics: p99 of fewer than 100 samples is the maximum", "[statistics]")
{
    std::vector<int64_t> v{5, 1, 9, 3, 7, 2, 8, 4, 6, 10};
    auto s = summarize(v).value();
    CHECK(s.p99_ns == 10);
    CHECK(s.median_ns == 5.5);
    std::vector<int64_t> sorted{1, 2, 3, 4};
    CHECK(nearest_rank(sorted, 50) == 2);
    CHECK(nearest_rank(sorted, 51) == 3);
    CHECK(nearest_rank(sorted, 100) == 4);
    CHECK_THROWS(nearest_rank(sorted, 0));
    CHECK_THROWS(nearest_rank(sorted, 100.5));
}

TEST_CASE("statistics: a 1000-sample tail lands on the 990th value", "[statistics]")
{
    std::vector<int64_t> v(1000);
    std::iota(v.begin(), v.end(), 1);
    CHECK(summarize(v)->p99_ns == 990);
}

TEST_CASE("statistics: stddev keeps precision on large, close values", "[statistics]")
{
    // A naive sum of squares loses everything here (values ~1e12 ns, spread 1).
    std::vector<int64_t> v{1'000'000'000'000, 1'000'000'000'001, 1'000'000'000'002};
    auto s = summarize(v).value();
    CHECK(s.stddev_ns == Approx(1.0).epsilon(1e-9));
    CHECK(s.median_ns == 1'000'000'000'001.0);
}

TEST_CASE("statistics: zero durations are durations", "[statistics]")
{
    std::vector<int64_t> v{0, 0, 0, 30};
    auto s = summarize(v).value();
    CHECK(s.count == 4);
    CHECK(s.min_ns == 0);
    CHECK(s.median_ns == 0.0);
    CHECK(s.total_ns == 30);
}
