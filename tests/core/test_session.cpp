// Sessions round-trip through their archive unchanged; damaged or hostile
// archives fail with a clear error naming the source, without allocating
// what the file claims.
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <sstream>

namespace {

lapse::Session sample()
{
    lapse::Session s;
    s.set_backend({"cpu", "0.1.0", "cpu workers (2 streams)", 2, LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED});
    s.add({"phase one", 1234, 0, lapse::TimingMethod::device, lapse::DurationState::ready, 100, 250,
           lapse::ClockDomain::host_monotonic, LAPSE_OK});
    s.add({"ünïcode name with spaces\nand a newline", 99, 1, lapse::TimingMethod::system, lapse::DurationState::ready,
           -5, 0, lapse::ClockDomain::device, LAPSE_OK});
    s.add({"lost", 7, 1, lapse::TimingMethod::none, lapse::DurationState::failed, 0, 0, lapse::ClockDomain::none,
           LAPSE_ERROR_DEVICE});
    s.add({"", 7, 0, lapse::TimingMethod::none, lapse::DurationState::not_measured, 0, 0, lapse::ClockDomain::none,
           LAPSE_OK});
    return s;
}

std::string saved(const lapse::Session& s)
{
    std::ostringstream out;
    s.save(out);
    return out.str();
}

// The archive inside a saved session (after the header line that carries
// its checksum), loadable on its own as a file of format 1: the parser's
// bounds are what a crafted file meets.
std::string archive_of(const std::string& file)
{
    const auto eol = file.find('\n');
    REQUIRE(eol != std::string::npos);
    return file.substr(eol + 1);
}

lapse::Error load_error(const std::string& text)
{
    std::istringstream in(text);
    return test::error_of([&] { lapse::Session::load(in, "damaged.session"); });
}

}  // namespace

TEST_CASE("a session round-trips through its archive unchanged", "[session]")
{
    lapse::Session original = sample();
    std::istringstream in(saved(original));
    lapse::Session loaded = lapse::Session::load(in, "memory");
    CHECK(loaded.backend() == original.backend());
    CHECK(loaded.windows() == original.windows());

    test::TempDir dir;
    original.save(dir.path / "run.session");
    lapse::Session from_file = lapse::Session::load(dir.path / "run.session");
    CHECK(from_file.windows() == original.windows());
    CHECK(from_file.backend() == original.backend());
}

TEST_CASE("an empty session round-trips", "[session]")
{
    lapse::Session empty;
    std::istringstream in(saved(empty));
    lapse::Session loaded = lapse::Session::load(in, "memory");
    CHECK(loaded.size() == 0);
    CHECK(loaded.backend() == lapse::BackendRecord{});
}

TEST_CASE("a truncated archive is refused naming its source", "[session]")
{
    std::string text = saved(sample());
    for (std::size_t cut : {std::size_t(0), std::size_t(10), text.size() / 2, text.size() - 3}) {
        auto e = load_error(text.substr(0, cut));
        CHECK(e.status() == LAPSE_ERROR_INVALID_ARGUMENT);
        CHECK_THAT(e.what(), Catch::StartsWith("damaged.session: not a"));
    }
}

TEST_CASE("an archive that claims absurd counts or sizes is refused before allocating", "[session]")
{
    // The last number of an empty session's archive is its window count.
    std::string text = archive_of(saved(lapse::Session()));
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    REQUIRE(text.back() == '0');
    text.back() = '9';
    text += "99999999999";
    auto e = load_error(text);
    CHECK(std::string(e.what()) ==
          "damaged.session: not a valid lapse session: claims 999999999999 windows, more than the limit of " +
              std::to_string(lapse::Session::max_windows));

    // The first string (the session tag) carries its length first.
    std::string header = archive_of(saved(lapse::Session()));
    auto at = header.find(" 13\n");  // strlen("lapse.session")
    REQUIRE(at != std::string::npos);
    header.replace(at, 4, " 4000000000\n");
    auto big = load_error(header);
    CHECK_THAT(big.what(), Catch::Contains("is 4000000000 bytes, more than the limit of 4096"));
}

TEST_CASE("a file that is not a session archive is refused", "[session]")
{
    auto e = load_error("hello, I am not an archive\n");
    CHECK_THAT(e.what(), Catch::StartsWith("damaged.session: not a readable lapse session: "));
    auto missing = test::error_of([] { lapse::Session::load(std::filesystem::path("/nonexistent/run.session")); });
    CHECK(std::string(missing.what()) == "/nonexistent/run.session: cannot read the session file");
}
