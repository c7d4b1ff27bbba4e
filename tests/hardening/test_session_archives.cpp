// Damaged session files, made from a real saved session. Damage (a bit
// flipped, a cut) is found by the checksum in the file's header before the
// archive is parsed. Files crafted with a right checksum (sealed() below:
// the checksum is not a signature) still meet a bounded parser: wrong
// archive version, wrong class version, wrong class, absurd counts and
// sizes, out-of-range values. Nothing is allocated from a count in the file
// before it is checked, and every failure is a lapse::Error that names the
// file and the cause; nothing else escapes.
#include "support.hpp"

#include <catch2/catch.hpp>

#include <openssl/evp.h>

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

// The archive inside a session file (what follows the header line).
std::string archive_of(const std::string& file)
{
    const auto eol = file.find('\n');
    REQUIRE(eol != std::string::npos);
    REQUIRE(file.rfind("lapse-session 2 sha256 ", 0) == 0);
    return file.substr(eol + 1);
}

std::string sha256_hex(const std::string& bytes)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    REQUIRE(EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) == 1);
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < length; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 15];
    }
    return out;
}

// A session file around `archive` with a right checksum: what someone who
// crafts a file (rather than damages one) writes.
std::string sealed(const std::string& archive)
{
    return "lapse-session 2 sha256 " + sha256_hex(archive) + " " + std::to_string(archive.size()) + "\n" + archive;
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

// Where things are in archive_of(saved_session_text()) (Boost 1.74 text
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
    const std::string file = saved_session_text();
    const std::string text = archive_of(file);
    CHECK(sealed(text) == file);  // the header is exactly what sealed() writes
    CHECK(token(text, 1) == "serialization::archive");
    CHECK(token(text, tok_session_version) == "1");
    CHECK(token(text, tok_magic_size) == "13");
    CHECK(token(text, tok_window_count) == "3");
    CHECK(token(text, tok_first_name_size) == "5");
    CHECK(token(text, tok_first_method) == "2");  // device
    CHECK(token(text, tok_first_state) == "1");   // ready
    // And the undamaged file loads back to the same windows, verified.
    ArchiveFile f(file);
    lapse::Session s = lapse::Session::load(f.file);
    CHECK_FALSE(s.unverified());
    REQUIRE(s.size() == 3);
    CHECK(s.windows()[0].name == "alpha");
    CHECK(s.backend().plugin == "cpu");
}

TEST_CASE("a truncated archive fails cleanly at every length", "[session]")
{
    const std::string text = saved_session_text();
    // Every prefix fails with an Error naming the source: the header says
    // how long the archive is.
    std::size_t failures = 0;
    for (std::size_t n = 0; n < text.size(); ++n) {
        std::istringstream in(text.substr(0, n));
        try {
            lapse::Session::load(in, "cut.lapse-session");
        } catch (const lapse::Error& e) {
            ++failures;
            CHECK(e.status() == LAPSE_ERROR_INVALID_ARGUMENT);
            CHECK_THAT(e.what(), Catch::StartsWith("cut.lapse-session: not a"));
        }
    }
    CHECK(failures == text.size());

    // One exact message for one representative cut (inside the first window).
    const std::string archive = archive_of(text);
    const std::size_t header = text.size() - archive.size();
    const std::size_t cut = header + tokens_of(archive)[tok_first_method].at;
    ArchiveFile f(text.substr(0, cut));
    lapse::Error e = f.load_error();
    CHECK(std::string(e.what()) == f.prefix() + "not a valid lapse session: the header says the archive is " +
                                       std::to_string(archive.size()) + " bytes, the file holds " +
                                       std::to_string(cut - header) +
                                       " after it (truncated or damaged, checksum not checked)");

    // A file crafted with a right checksum around a cut archive meets the
    // parser, which fails cleanly too.
    ArchiveFile crafted(sealed(archive.substr(0, tokens_of(archive)[tok_first_method].at)));
    CHECK(std::string(crafted.load_error().what()) == crafted.prefix() + "not a readable lapse session: input stream error");
}

TEST_CASE("a bit flipped anywhere in a saved session is refused, as a checksum mismatch inside the archive",
          "[session][checksum]")
{
    const std::string text = saved_session_text();
    const std::size_t header = text.size() - archive_of(text).size();
    // Every single-bit flip of the file: none loads, and every one in the
    // archive (and in the checksum's hex digits that stay hex) is named as
    // a checksum mismatch: before the checksum, such a flip in a number
    // loaded as another window.
    std::size_t checksum_refusals = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        for (int bit = 0; bit < 8; ++bit) {
            std::string damaged = text;
            damaged[i] = static_cast<char>(damaged[i] ^ (1 << bit));
            std::istringstream in(damaged);
            std::string message;
            try {
                lapse::Session::load(in, "flipped.lapse-session");
            } catch (const lapse::Error& e) {
                CHECK(e.status() == LAPSE_ERROR_INVALID_ARGUMENT);
                message = e.what();
            }
            INFO("byte " << i << " bit " << bit << ": " << message);
            REQUIRE_THAT(message, Catch::StartsWith("flipped.lapse-session: not a"));
            if (message.find("checksum") != std::string::npos) ++checksum_refusals;
            if (i >= header) CHECK_THAT(message, Catch::Contains("checksum mismatch, the file is damaged"));
        }
    }
    CHECK(checksum_refusals >= (text.size() - header) * 8);

    // One flip in the first window's start time, through a file: the error
    // names the file and says what was found.
    const std::string archive = archive_of(text);
    std::string damaged = text;
    damaged[header + tokens_of(archive)[tok_first_start].at + 3] ^= 1;
    ArchiveFile f(damaged);
    CHECK_THAT(f.load_error().what(),
               Catch::StartsWith(f.prefix() + "not a valid lapse session: checksum mismatch, the file is damaged: "
                                              "the archive's SHA-256 is ") &&
                   Catch::EndsWith(", its header records " + sha256_hex(archive)));
}

TEST_CASE("a session file written before the checksum (format 1) still loads, marked unverified",
          "[session][checksum]")
{
    // The seed corpus holds files written by lapse 0.1: the bare archive.
    const fs::path old_file = LAPSE_FORMAT1_SESSION;
    lapse::Session old = lapse::Session::load(old_file);
    CHECK(old.unverified());
    CHECK(old.size() > 0);
    CHECK(old.backend().plugin == "cpu");
    // The same archive as today's, without the header, reads the same.
    const std::string file = saved_session_text();
    std::istringstream bare(archive_of(file)), whole(file);
    lapse::Session a = lapse::Session::load(bare, "bare"), b = lapse::Session::load(whole, "whole");
    CHECK(a.unverified());
    CHECK_FALSE(b.unverified());
    CHECK(a.windows() == b.windows());
    // Saving an old file writes the checksummed format.
    std::ostringstream again;
    old.save(again);
    CHECK(again.str().rfind("lapse-session 2 sha256 ", 0) == 0);
    std::istringstream reread(again.str());
    lapse::Session c = lapse::Session::load(reread, "again");
    CHECK_FALSE(c.unverified());
    CHECK(c.windows() == old.windows());
    CHECK_FALSE(lapse::Session().unverified());
}

TEST_CASE("a session header this build cannot read is refused by name", "[session][checksum]")
{
    const std::string archive = archive_of(saved_session_text());
    const std::string sum = sha256_hex(archive), size = std::to_string(archive.size());
    auto error_for = [](const std::string& file) {
        std::istringstream in(file);
        return std::string(error_of([&] { lapse::Session::load(in, "h.lapse-session"); }).what());
    };
    const std::string p = "h.lapse-session: not a valid lapse session: ";
    CHECK(error_for("lapse-session 3 sha256 " + sum + " " + size + "\n" + archive) ==
          p + "session format 3 is newer than this build reads (2)");
    CHECK(error_for("lapse-session 2 crc32 " + sum + " " + size + "\n" + archive) ==
          p + "unknown checksum algorithm 'crc32' (this build checks sha256)");
    CHECK(error_for("lapse-session 2 sha256 " + sum.substr(1) + " " + size + "\n" + archive) ==
          p + "the header's checksum is not 64 lowercase hexadecimal digits");
    CHECK(error_for("lapse-session 2 sha256 " + sum + " 99999999999999999999999\n" + archive) ==
          p + "the header's archive size is not a byte count");
    CHECK(error_for("lapse-session 2 sha256 " + sum + "\n" + archive) ==
          p + "the header has 4 fields, not 5 (tag, format, checksum algorithm, checksum, size)");
    CHECK(error_for("lapse-session " + std::string(200, '2')) ==
          p + "the header line (which carries the checksum) does not end within 128 bytes");
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
    const std::string text = archive_of(saved_session_text());
    ArchiveFile f(sealed(with_token(text, tok_archive_version, "99")));
    lapse::Error e = f.load_error();
    CHECK(e.status() == LAPSE_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()) == f.prefix() + "not a readable lapse session: unsupported version");
}

TEST_CASE("a session class version newer than this build is refused", "[session][version]")
{
    // Boost 1.74 hands the file's class version to load() and does not
    // refuse a newer one itself: the core's load() must.
    const std::string text = archive_of(saved_session_text());
    ArchiveFile f(sealed(with_token(text, tok_session_version, "7")));
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
        const std::string text = archive_of(saved_session_text());
        // "lapse.sessioN" in base64 (13 bytes, same size).
        const std::string other = with_token(text, tok_magic_size + 1, "bGFwc2Uuc2Vzc2lvTg==");
        ArchiveFile f(sealed(other));
        CHECK(std::string(f.load_error().what()) == f.prefix() + "not a valid lapse session: not a lapse session archive");
    }
}

TEST_CASE("absurd counts and sizes are refused before anything is allocated for them", "[session][bounds]")
{
    const std::string text = archive_of(saved_session_text());
    auto quickly = [](const ArchiveFile& f) {
        auto t0 = std::chrono::steady_clock::now();
        lapse::Error e = f.load_error();
        CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
        return std::string(e.what());
    };
    SECTION("2^60 windows")
    {
        ArchiveFile f(sealed(with_token(text, tok_window_count, "1152921504606846976")));
        CHECK(quickly(f) == f.prefix() + "not a valid lapse session: claims 1152921504606846976 windows, more than the "
                                         "limit of 16777216");
    }
    SECTION("2^64-1 windows")
    {
        ArchiveFile f(sealed(with_token(text, tok_window_count, "18446744073709551615")));
        CHECK(quickly(f) == f.prefix() + "not a valid lapse session: claims 18446744073709551615 windows, more than "
                                         "the limit of 16777216");
    }
    SECTION("the largest count allowed, in a file that holds three windows")
    {
        // Accepted as a count, then the file runs out: memory grows only
        // with what was actually read.
        ArchiveFile f(sealed(with_token(text, tok_window_count, "16777216")));
        CHECK(quickly(f) == f.prefix() + "not a readable lapse session: input stream error");
    }
    SECTION("a 4 GiB window name")
    {
        ArchiveFile f(sealed(with_token(text, tok_first_name_size, "4294967295")));
        CHECK(quickly(f) == f.prefix() + "not a valid lapse session: window name is 4294967295 bytes, more than the "
                                         "limit of 4096");
    }
    SECTION("a string size past 32 bits")
    {
        ArchiveFile f(sealed(with_token(text, tok_first_name_size, "1152921504606846976")));
        CHECK(quickly(f) == f.prefix() + "not a readable lapse session: input stream error");
    }
    SECTION("a session tag that claims 2^32-1 bytes")
    {
        ArchiveFile f(sealed(with_token(text, tok_magic_size, "4294967295")));
        CHECK(quickly(f) == f.prefix() + "not a valid lapse session: session tag is 4294967295 bytes, more than the "
                                         "limit of 4096");
    }
}

TEST_CASE("out-of-range values in a window are refused", "[session][values]")
{
    const std::string text = archive_of(saved_session_text());
    SECTION("an unknown timing method")
    {
        ArchiveFile f(sealed(with_token(text, tok_first_method, "9")));
        CHECK(std::string(f.load_error().what()) ==
              f.prefix() + "not a valid lapse session: window timing method has the unknown value 9");
    }
    SECTION("an unknown state")
    {
        ArchiveFile f(sealed(with_token(text, tok_first_state, "4")));
        CHECK(std::string(f.load_error().what()) ==
              f.prefix() + "not a valid lapse session: window state has the unknown value 4");
    }
    SECTION("a ready window that ends before it starts")
    {
        ArchiveFile f(sealed(with_token(with_token(text, tok_first_start, "200"), tok_first_end, "100")));
        CHECK(std::string(f.load_error().what()) ==
              f.prefix() + "not a valid lapse session: window 'alpha' ends before it starts");
    }
    SECTION("a negative number where an unsigned one belongs")
    {
        ArchiveFile f(sealed(with_token(text, tok_first_method, "-1")));
        CHECK_THAT(f.load_error().what(), Catch::StartsWith(f.prefix() + "not a "));
    }
}
