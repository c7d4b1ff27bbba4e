// Damaged session archives, made from a real saved session: truncated,
// wrong archive version, wrong class version, wrong class, absurd counts
// and sizes, out-of-range values. Loading is bounded (nothing is allocated
// from a count in the file before it is checked) and every failure is a
// lapse::Error that names the file and the cause; nothing else escapes.
#include "support.hpp"

#include <catch2/catch.hpp>

#include <cctype>
#include <chrono>
#include <sstream>

namespace fs = std::filesystem;
using hardening::error_of;

namespace {

// A real session: the CPU plugin, named windows on two streams, saved.
std::string saved_session_text()
{
    lapse::Runtime runtime;
    lapse::Device device =
        runtime.open(lapse::Config::from_string("[backend]\nplugin = \"cpu\"\nstreams = 2\n", "<session>", {}));
    auto session = std::make_shared<lapse::Session>();
    device.record_into(session);
    const char* names[] = {"alpha", "beta", "gamma"};
    for (int i = 0; i < 3; ++i) {
        lapse::Duration d = device.profile(static_cast<lapse::Stream>(i % 2), [] {}, {.name = names[i]});
        REQUIRE(d.resolve().has_value());
    }
    REQUIRE(session->size() == 3);
    std::ostringstream out;
    session->save(out);
    return out.str();
}

// The text archive's whitespace-separated tokens, with their offsets.
struct Token {
    std::size_t at, size;
};
std::vector<Token> tokens_of(const std::string& text)
{
    std::vector<Token> out;
    for (std::size_t i = 0; i < text.size();) {
        if (std::isspace(static_cast<unsigned char>(text[i]))) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
        out.push_back({i, j - i});
        i = j;
    }
    return out;
}

// Where things are in the archive of saved_session_text() (Boost 1.74 text
// archive of SessionData; checked below so a format change fails loudly
// rather than testing the wrong bytes).
enum : std::size_t {
    tok_archive_version = 2,   // "22 serialization::archive <18>"
    tok_session_version = 4,   // SessionData class version
    tok_magic_size = 5,        // "lapse.session" is 13 bytes
    tok_window_count = 17,
    tok_first_name_size = 20,  // "alpha" is 5 bytes
    tok_first_method = 24,
    tok_first_state = 25,
    tok_first_start = 26,
    tok_first_end = 27,
};

std::string token(const std::string& text, std::size_t index)
{
    auto t = tokens_of(text);
    REQUIRE(index < t.size());
    return text.substr(t[index].at, t[index].size);
}

std::string with_token(std::string text, std::size_t index, const std::string& value)
{
    auto t = tokens_of(text);
    REQUIRE(index < t.size());
    return text.replace(t[index].at, t[index].size, value);
}

// Saves `text` as a file and loads it through Session::load(path).
struct ArchiveFile {
    hardening::TempDir dir;
    fs::path file = dir.path / "damaged.lapse-session";
    explicit ArchiveFile(const std::string& text) { hardening::write_file(file, text); }
    lapse::Error load_error() const
    {
        return error_of([&] { lapse::Session::load(file); });
    }
    std::string prefix() const { return file.string() + ": "; }
};

}  // namespace

TEST_CASE("the archive layout the damage cases rely on", "[session]")
{
    const std::string text = saved_session_text();
    CHECK(token(text, 1) == "serialization::archive");
    CHECK(token(text, tok_session_version) == "1");
    CHECK(token(text, tok_magic_size) == "13");
    CHECK(token(text, tok_window_count) == "3");
    CHECK(token(text, tok_first_name_size) == "5");
    CHECK(token(text, tok_first_method) == "2");  // device
    CHECK(token(text, tok_first_state) == "1");   // ready
    // And the undamaged file loads back to the same windows.
    ArchiveFile f(text);
    lapse::Session s = lapse::Session::load(f.file);
    REQUIRE(s.size() == 3);
    CHECK(s.windows()[0].name == "alpha");
    CHECK(s.backend().plugin == "cpu");
}

TEST_CASE("a truncated archive fails cleanly at every length", "[session]")
{
    const std::string text = saved_session_text();
    // Every prefix: each must either load completely (only a cut in the
    // trailing whitespace can) or fail with an Error naming the source.
    std::size_t failures = 0;
    for (std::size_t n = 0; n < text.size(); ++n) {
        std::istringstream in(text.substr(0, n));
        try {
            lapse::Session s = lapse::Session::load(in, "cut.lapse-session");
            CHECK(s.size() == 3);
        } catch (const lapse::Error& e) {
            ++failures;
            CHECK(e.status() == LAPSE_ERROR_INVALID_ARGUMENT);
            CHECK_THAT(e.what(), Catch::StartsWith("cut.lapse-session: not a"));
        }
    }
    CHECK(failures > text.size() / 2);

    // One exact message for one representative cut (inside the first window).
    ArchiveFile f(text.substr(0, tokens_of(text)[tok_first_method].at));
    lapse::Error e = f.load_error();
    CHECK(std::string(e.what()) == f.prefix() + "not a readable lapse session: input stream error");
}

TEST_CASE("an empty file and a file of garbage are not sessions", "[session]")
{
    ArchiveFile empty("");
    CHECK(std::string(empty.load_error().what()) == empty.prefix() + "not a readable lapse session: invalid signature");
    ArchiveFile garbage("\x7f" "ELF\x02\x01\x01 this is not an archive");
    CHECK(std::string(garbage.load_error().what()) == garbage.prefix() + "not a readable lapse session: invalid signature");
    ArchiveFile other_signature("22 serialization::archivX 18 0 1 13\n");
    CHECK(std::string(other_signature.load_error().what()) ==
          other_signature.prefix() + "not a readable lapse session: invalid signature");
    ArchiveFile missing("");
    fs::remove(missing.file);
    CHECK(std::string(missing.load_error().what()) == missing.file.string() + ": cannot read the session file");
}

TEST_CASE("an archive from a newer Boost archive format is refused", "[session][version]")
{
    const std::string text = saved_session_text();
    ArchiveFile f(with_token(text, tok_archive_version, "99"));
    lapse::Error e = f.load_error();
    CHECK(e.status() == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()) == f.prefix() + "not a readable lapse session: unsupported version");
}

TEST_CASE("a session class version newer than this build is refused", "[session][version]")
{
    // Boost 1.74 hands the file's class version to load() and does not
    // refuse a newer one itself: the core's load() must.
    const std::string text = saved_session_text();
    ArchiveFile f(with_token(text, tok_session_version, "7"));
    std::string refusal;
    try {
        lapse::Session::load(f.file);
    } catch (const lapse::Error& e) {
        CHECK(e.status() == LAPSE_ERROR_INVALID_ARGUMENT);
        refusal = e.what();
    }
    CHECK_THAT(refusal, Catch::StartsWith(f.prefix() + "not a "));
}

TEST_CASE("an archive of another class is not a session", "[session][class]")
{
    SECTION("a Boost text archive of a std::vector<int>")
    {
        ArchiveFile f("22 serialization::archive 18 0 0 3 0 1 2 3\n");
        lapse::Error e = f.load_error();
        CHECK(std::string(e.what()) == f.prefix() + "not a valid lapse session: not a lapse session archive");
    }
    SECTION("the right shape with another tag")
    {
        const std::string text = saved_session_text();
        // "lapse.sessioN" in base64 (13 bytes, same size).
        const std::string other = with_token(text, tok_magic_size + 1, "bGFwc2Uuc2Vzc2lvTg==");
        ArchiveFile f(other);
        CHECK(std::string(f.load_error().what()) == f.prefix() + "not a valid lapse session: not a lapse session archive");
    }
}

TEST_CASE("absurd counts and sizes are refused before anything is allocated for them", "[session][bounds]")
{
    const std::string text = saved_session_text();
    auto quickly = [](const ArchiveFile& f) {
        auto t0 = std::chrono::steady_clock::now();
        lapse::Error e = f.load_error();
        CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
        return std::string(e.what());
    };
    SECTION("2^60 windows")
    {
        ArchiveFile f(with_token(text, tok_window_count, "1152921504606846976"));
        CHECK(quickly(f) == f.prefix() + "not a valid lapse session: claims 1152921504606846976 windows, more than the "
                                         "limit of 16777216");
    }
    SECTION("2^64-1 windows")
    {
        ArchiveFile f(with_token(text, tok_window_count, "18446744073709551615"));
        CHECK(quickly(f) == f.prefix() + "not a valid lapse session: claims 18446744073709551615 windows, more than "
                                         "the limit of 16777216");
    }
    SECTION("the largest count allowed, in a file that holds three windows")
    {
        // Accepted as a count, then the file runs out: memory grows only
        // with what was actually read.
        ArchiveFile f(with_token(text, tok_window_count, "16777216"));
        CHECK(quickly(f) == f.prefix() + "not a readable lapse session: input stream error");
    }
    SECTION("a 4 GiB window name")
    {
        ArchiveFile f(with_token(text, tok_first_name_size, "4294967295"));
        CHECK(quickly(f) == f.prefix() + "not a valid lapse session: window name is 4294967295 bytes, more than the "
                                         "limit of 4096");
    }
    SECTION("a string size past 32 bits")
    {
        ArchiveFile f(with_token(text, tok_first_name_size, "1152921504606846976"));
        CHECK(quickly(f) == f.prefix() + "not a readable lapse session: input stream error");
    }
    SECTION("a session tag that claims 2^32-1 bytes")
    {
        ArchiveFile f(with_token(text, tok_magic_size, "4294967295"));
        CHECK(quickly(f) == f.prefix() + "not a valid lapse session: session tag is 4294967295 bytes, more than the "
                                         "limit of 4096");
    }
}

TEST_CASE("out-of-range values in a window are refused", "[session][values]")
{
    const std::string text = saved_session_text();
    SECTION("an unknown timing method")
    {
        ArchiveFile f(with_token(text, tok_first_method, "9"));
        CHECK(std::string(f.load_error().what()) ==
              f.prefix() + "not a valid lapse session: window timing method has the unknown value 9");
    }
    SECTION("an unknown state")
    {
        ArchiveFile f(with_token(text, tok_first_state, "4"));
        CHECK(std::string(f.load_error().what()) ==
              f.prefix() + "not a valid lapse session: window state has the unknown value 4");
    }
    SECTION("a ready window that ends before it starts")
    {
        ArchiveFile f(with_token(with_token(text, tok_first_start, "200"), tok_first_end, "100"));
        CHECK(std::string(f.load_error().what()) ==
              f.prefix() + "not a valid lapse session: window 'alpha' ends before it starts");
    }
    SECTION("a negative number where an unsigned one belongs")
    {
        ArchiveFile f(with_token(text, tok_first_method, "-1"));
        CHECK_THAT(f.load_error().what(), Catch::StartsWith(f.prefix() + "not a "));
    }
}
