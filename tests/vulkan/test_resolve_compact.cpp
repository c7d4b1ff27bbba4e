// lapse.resolve_compact/1 on the Vulkan plugin (own mode, lavapipe): a
// measured window comes back as its two stamps and is released; anything
// two stamps cannot say is left exactly as it was, for the full resolve to
// answer and name.
#include "shared_device.hpp"

#include <lapse/resolve_compact.h>
#include <lapse/sdk/resolve_compact.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace lapse::test;

namespace {

const lapse_resolve_compact* compact_of(const OpenDevice& dev)
{
    return lapse::sdk::resolve_compact_of(&dev.plugin(), dev.get());
}

// A compact resolve of `tokens`, its arrays first filled with values no
// answer has, so that every element the call writes shows.
struct CompactResult {
    lapse_status status;
    std::vector<lapse_stamp_pair> stamps;
    std::vector<uint8_t> states;
};

CompactResult resolve_compact(const OpenDevice& dev, const std::vector<lapse_token>& tokens, uint64_t timeout)
{
    const lapse_resolve_compact* c = compact_of(dev);
    REQUIRE(c != nullptr);
    CompactResult r{LAPSE_OK, std::vector<lapse_stamp_pair>(tokens.size(), lapse_stamp_pair{-7, -7}),
                    std::vector<uint8_t>(tokens.size(), 0xEE)};
    lapse_error e = make_error();
    r.status = c->resolve_compact(dev.get(), tokens.data(), r.stamps.data(), r.states.data(),
                                  static_cast<uint32_t>(tokens.size()), timeout, &e);
    return r;
}

}  // namespace

TEST_CASE("own mode offers resolve_compact: device timing, on the host clock when calibrated, else the device's",
          "[vulkan][own][compact]")
{
    SharedDevice& s = shared();
    const lapse_resolve_compact* c = compact_of(s.device);
    REQUIRE(c != nullptr);
    CHECK(c->struct_size == sizeof(lapse_resolve_compact));
    CHECK(c->method == LAPSE_TIMING_DEVICE);
    CHECK(c->clock_domain == LAPSE_CLOCK_HOST_MONOTONIC);  // lavapipe offers CLOCK_MONOTONIC calibration

    OpenDevice uncalibrated(base_config({{"calibrate", false}}));
    REQUIRE(uncalibrated.open_status() == LAPSE_OK);
    const lapse_resolve_compact* d = compact_of(uncalibrated);
    REQUIRE(d != nullptr);
    CHECK(d->clock_domain == LAPSE_CLOCK_DEVICE);
    CHECK(uncalibrated.validation_messages() == 0);
}

TEST_CASE("attach mode does not offer resolve_compact: its clock is known only once a queue is attached",
          "[vulkan][attach][compact]")
{
    OpenDevice dev(TestHost::Config{{"mode", std::string("attach")}});
    REQUIRE(dev.open_status() == LAPSE_OK);
    CHECK(compact_of(dev) == nullptr);
}

TEST_CASE("a compact pair brackets a window opened inside it, resolved in full; a taken window is released",
          "[vulkan][own][compact]")
{
    SharedDevice& s = shared();
    // Each outer window opens before and closes after its inner one, on
    // one stream, around a short dispatch: the outer's stamps, answered
    // compactly, must enclose the inner's, answered in full, on the same
    // host timeline. A conversion or placement the compact path got wrong
    // breaks the enclosure; more windows than one segment holds (256)
    // take several runs of slots.
    constexpr uint32_t n = 300;
    std::vector<lapse_token> outer(n), inner(n);
    for (uint32_t k = 0; k < n; ++k) {
        REQUIRE(s.device.start(0, outer[k]) == LAPSE_OK);
        REQUIRE(s.device.start(0, inner[k]) == LAPSE_OK);
        if (k % 50 == 0) s.run_busy(0, 2000, /*sync=*/false);
        REQUIRE(s.device.end(inner[k]) == LAPSE_OK);
        REQUIRE(s.device.end(outer[k]) == LAPSE_OK);
    }
    REQUIRE(s.device.sync(0) == LAPSE_OK);

    const CompactResult r = resolve_compact(s.device, outer, 0);
    CHECK(r.status == LAPSE_OK);
    std::vector<lapse_duration> full(n, make_duration());
    REQUIRE(s.device.resolve(inner.data(), full.data(), n, LAPSE_WAIT_FOREVER) == LAPSE_OK);
    for (uint32_t k = 0; k < n; ++k) {
        INFO("window " << k);
        REQUIRE(r.states[k] == LAPSE_COMPACT_READY);
        REQUIRE(full[k].state == LAPSE_DURATION_READY);
        REQUIRE(full[k].clock_domain == LAPSE_CLOCK_HOST_MONOTONIC);
        CHECK(r.stamps[k].start_ns <= full[k].start_ns);
        CHECK(r.stamps[k].end_ns >= full[k].end_ns);
        CHECK(r.stamps[k].end_ns - r.stamps[k].start_ns < 1000000000);  // not a pair of raw ticks
    }

    // Taken means released: asked again, compactly they are not a live
    // window, and the full resolve says why.
    const CompactResult again = resolve_compact(s.device, {outer[0]}, 0);
    CHECK(again.status == LAPSE_NOT_READY);
    CHECK(again.states[0] == LAPSE_COMPACT_RESOLVE_FULL);
    CHECK(again.stamps[0].end_ns == LAPSE_COMPACT_NO_STAMP);
    lapse_duration d{};
    lapse_error e = make_error();
    CHECK(s.device.resolve_one(outer[0], d, 0, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(std::string(e.message).find("already resolved") != std::string::npos);
    CHECK(s.device.validation_messages() == 0);
}

TEST_CASE("a compact resolve leaves a running window pending with timeout 0 and waits for it when told to",
          "[vulkan][own][compact][resolve]")
{
    SharedDevice& s = shared();
    lapse_token t{};
    REQUIRE(s.device.start(0, t) == LAPSE_OK);
    s.run_busy(0, s.iterations_for_ms(50.0), /*sync=*/false);
    REQUIRE(s.device.end(t) == LAPSE_OK);

    const CompactResult polled = resolve_compact(s.device, {t}, 0);
    CHECK(polled.status == LAPSE_NOT_READY);
    CHECK(polled.states[0] == LAPSE_COMPACT_PENDING);
    CHECK(polled.stamps[0].end_ns == LAPSE_COMPACT_NO_STAMP);
    const int64_t polled_at = now_ns();

    const CompactResult waited = resolve_compact(s.device, {t}, LAPSE_WAIT_FOREVER);
    CHECK(waited.status == LAPSE_OK);
    REQUIRE(waited.states[0] == LAPSE_COMPACT_READY);
    // Still running when the poll answered: on the host timeline its end
    // lies after that moment (less the calibration's error).
    CHECK(waited.stamps[0].end_ns > polled_at - 100000);
    CHECK(waited.stamps[0].end_ns - waited.stamps[0].start_ns > 1000000);
}

TEST_CASE("what two stamps cannot say is left untouched for the full resolve, which names it",
          "[vulkan][own][compact]")
{
    SharedDevice& s = shared();
    lapse_token open{}, measured{}, abandoned{}, other{};
    REQUIRE(s.device.start(0, open) == LAPSE_OK);
    REQUIRE(s.device.start(0, other) == LAPSE_OK);
    REQUIRE(s.device.end(other) == LAPSE_OK);
    REQUIRE(s.device.start(0, measured) == LAPSE_OK);
    REQUIRE(s.device.end(measured) == LAPSE_OK);
    REQUIRE(s.device.start(0, abandoned) == LAPSE_OK);
    REQUIRE(s.device.end(abandoned) == LAPSE_OK);
    s.device.plugin().profile_abandon(s.device.get(), abandoned);
    REQUIRE(s.device.sync(0) == LAPSE_OK);
    lapse_token wrong_stream = other;
    wrong_stream.opened_on = 1;
    const lapse_token unknown{(uint64_t{1} << 40) << 8, 0, 0};          // a position never handed out
    const lapse_token no_such_stream{(uint64_t{1} << 8) | 5, 5, 0};     // the device has two streams

    const CompactResult r =
        resolve_compact(s.device, {open, wrong_stream, unknown, no_such_stream, abandoned, measured}, LAPSE_WAIT_FOREVER);
    CHECK(r.status == LAPSE_NOT_READY);
    for (int k = 0; k < 5; ++k) {
        INFO("token " << k);
        CHECK(r.states[k] == LAPSE_COMPACT_RESOLVE_FULL);
        CHECK(r.stamps[k].start_ns == 0);
        CHECK(r.stamps[k].end_ns == LAPSE_COMPACT_NO_STAMP);
    }
    // The measured window comes after them in the same call, and is read.
    CHECK(r.states[5] == LAPSE_COMPACT_READY);

    lapse_duration d{};
    lapse_error e = make_error();
    CHECK(s.device.resolve_one(open, d, 0, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(std::string(e.message).find("still open") != std::string::npos);
    // The open window was untouched: it still ends and measures.
    REQUIRE(s.device.end(open) == LAPSE_OK);
    CHECK(s.device.resolve_one(open, d) == LAPSE_OK);
    CHECK(d.state == LAPSE_DURATION_READY);
    e = make_error();
    CHECK(s.device.resolve_one(wrong_stream, d, 0, &e) == LAPSE_ERROR_WRONG_STREAM);
    CHECK(s.device.resolve_one(other, d) == LAPSE_OK);
    CHECK(d.state == LAPSE_DURATION_READY);
    e = make_error();
    CHECK(s.device.resolve_one(unknown, d, 0, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(std::string(e.message).find("names no closed window") != std::string::npos);
    e = make_error();
    CHECK(s.device.resolve_one(no_such_stream, d, 0, &e) == LAPSE_ERROR_INVALID_TOKEN);
    CHECK(std::string(e.message).find("not issued by this device") != std::string::npos);
    CHECK(s.device.validation_messages() == 0);
}
