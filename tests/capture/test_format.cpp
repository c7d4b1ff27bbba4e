// The capture file survives what a long run meets: a host killed mid-run,
// a file cut short, bits flipped on disk. Damage is found by checksums,
// named by its offset, and never read as other data.
#include "capture_test_support.hpp"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

using namespace capture_test;

namespace {

// A capture of `n` windows in several chunks, written through the core.
std::string recorded_bytes(int n)
{
    auto sink = std::make_shared<ThrottledMemorySink>();
    lapse::CaptureOptions o;
    o.sink = sink;
    o.budget_bytes = 64u << 20;
    auto capture = lapse::Capture::open(o);
    {
        lapse::Device device = lapse::Runtime().open(cpu_config());
        device.record_into(capture);
        for (int i = 0; i < n; ++i) device.profile(i % 2, [] {}, {.name = i % 3 == 0 ? "three" : "other"});
    }
    capture->close();
    return sink->bytes();
}

// Offsets of the chunks ("LCHK") in a capture.
std::vector<std::size_t> chunk_offsets(const std::string& bytes)
{
    std::vector<std::size_t> out;
    for (std::size_t at = 8; at + 16 <= bytes.size();) {
        REQUIRE(bytes.compare(at, 4, "LCHK") == 0);
        out.push_back(at);
        uint32_t size = 0;
        std::memcpy(&size, bytes.data() + at + 8, 4);  // the test runs little-endian
        at += 16 + size;
    }
    return out;
}

}  // namespace

TEST_CASE("a capture reads back whole: windows, header, the end chunk", "[capture][format]")
{
    const std::string bytes = recorded_bytes(50000);
    const ReadBack r = read_all(bytes);
    CHECK(r.damage.empty());
    CHECK(r.complete);
    CHECK(r.windows.size() == 50000);
    CHECK(r.header.version == 1);
    CHECK(r.count_by_name()["three"] == 16667);
    CHECK(chunk_offsets(bytes).size() > 4);  // several windows chunks
    CHECK(bytes.size() < 50000 * 24);          // the format's size target
}

TEST_CASE("a bit flipped inside a chunk: that chunk is named by its offset and skipped, the rest reads", "[capture][format][damage]")
{
    const std::string good = recorded_bytes(50000);
    const auto chunks = chunk_offsets(good);
    REQUIRE(chunks.size() > 4);
    const std::size_t victim = chunks[2];
    std::string bad = good;
    bad[victim + 40] = static_cast<char>(bad[victim + 40] ^ 0x10);
    const ReadBack r = read_all(bad);
    REQUIRE(r.damage.size() == 1);
    CHECK(r.damage[0].offset == victim);
    CHECK(r.damage[0].size == chunks[3] - victim);
    CHECK(r.damage[0].cause == "checksum mismatch");
    CHECK(r.complete);
    const ReadBack whole = read_all(good);
    CHECK(r.windows.size() < whole.windows.size());
    CHECK(r.windows.size() > whole.windows.size() / 2);
    // What was read is exactly the other chunks' windows, none invented.
    for (const ReadWindow& w : r.windows) CHECK((w.name == "three" || w.name == "other"));
}

TEST_CASE("a capture cut short mid-chunk reads up to its last complete chunk and says so", "[capture][format][damage]")
{
    const std::string good = recorded_bytes(50000);
    const auto chunks = chunk_offsets(good);
    const std::size_t cut = chunks[3] + 100;
    const ReadBack r = read_all(good.substr(0, cut));
    CHECK_FALSE(r.complete);
    REQUIRE(r.damage.size() == 1);
    CHECK(r.damage[0].offset == chunks[3]);
    CHECK(r.damage[0].cause.find("cut short") != std::string::npos);
    CHECK(r.windows.size() > 0);
}

TEST_CASE("bytes that are not a capture are refused with the file named", "[capture][format]")
{
    TempDir dir;
    write_file(dir.path / "not.lapse-capture", "22 serialization::archive 19 0 0");
    try {
        lapse::CaptureReader reader(dir.path / "not.lapse-capture");
        FAIL("no error");
    } catch (const lapse::Error& e) {
        CHECK(std::string(e.what()).find("not.lapse-capture: not a lapse capture") != std::string::npos);
    }
    CHECK_FALSE(lapse::is_capture_file(dir.path / "not.lapse-capture"));
}

TEST_CASE("a host SIGKILLed mid-run leaves a capture readable to its last complete chunk, cut short", "[capture][format][crash]")
{
    TempDir dir;
    const auto file = dir.path / "killed.lapse-capture";
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // The host: records until killed.
        try {
            lapse::CaptureOptions o;
            o.path = file;
            o.flush_interval = std::chrono::milliseconds(10);
            lapse::Runtime runtime;
            runtime.record_into(lapse::Capture::open(o));
            lapse::Device device = runtime.open(cpu_config());
            for (;;) device.profile(0, [] {}, {.name = "until killed"});
        } catch (...) {
        }
        ::_exit(3);
    }
    // Wait for a few chunks, then kill it without warning.
    for (int i = 0; i < 500 && read_file(file).size() < 200000; ++i) ::usleep(10000);
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    const ReadBack r = read_all(file);
    CHECK_FALSE(r.complete);
    CHECK(r.windows.size() > 1000);
    CHECK(r.last_chunk_ns > r.header.anchor_monotonic_ns);
    for (const auto& d : r.damage) CHECK(d.cause.find("cut short") != std::string::npos);  // at most the torn tail
}
