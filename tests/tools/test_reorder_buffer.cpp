// ReorderBuffer: events leave in (stamp, arrival) order while the disorder
// fits the buffer, equal stamps in arrival order, and none is lost when it
// does not fit.
#include "export/reorder_buffer.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

using lapse::cli::HeldEvent;
using lapse::cli::ReorderBuffer;

namespace {

std::vector<std::pair<int64_t, uint64_t>> pass_through(ReorderBuffer& buffer, const std::vector<int64_t>& stamps)
{
    std::vector<std::pair<int64_t, uint64_t>> out;
    auto write = [&](const HeldEvent& e) {
        CHECK(e.size == 1);
        CHECK(e.bytes[0] == static_cast<char>(e.order & 0x7f));
        out.emplace_back(e.ns, e.order);
    };
    for (uint64_t i = 0; i < stamps.size(); ++i) {
        HeldEvent e{};
        e.ns = stamps[i];
        e.order = i;
        e.size = 1;
        e.bytes[0] = static_cast<char>(i & 0x7f);
        buffer.add(e, write);
    }
    buffer.drain(write);
    return out;
}

}  // namespace

TEST_CASE("reorder buffer: disorder within the buffer comes out sorted, equal stamps in arrival order", "[export]")
{
    std::mt19937_64 rng(5);
    std::vector<int64_t> stamps;
    for (int i = 0; i < 20'000; ++i) stamps.push_back(i / 4 * 10 + static_cast<int64_t>(rng() % 300) / 100 * 100);
    ReorderBuffer buffer(256);  // the disorder spans ~120 events
    const auto out = pass_through(buffer, stamps);
    REQUIRE(out.size() == stamps.size());
    CHECK(std::is_sorted(out.begin(), out.end()));  // (stamp, arrival)
}

TEST_CASE("reorder buffer: disorder wider than the buffer loses nothing", "[export]")
{
    std::vector<int64_t> stamps;
    for (int i = 0; i < 10'000; ++i) stamps.push_back(10'000 - i);  // reversed
    ReorderBuffer buffer(64);
    auto out = pass_through(buffer, stamps);
    REQUIRE(out.size() == stamps.size());
    CHECK_FALSE(std::is_sorted(out.begin(), out.end()));
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    for (uint64_t i = 0; i < out.size(); ++i) CHECK(out[i] == std::pair{stamps[i], i});
}
