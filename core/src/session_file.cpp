// The session file: a header line carrying the archive's SHA-256 and size,
// then the archive (format 2, session_archive.hpp). The checksum is checked
// before the archive is parsed, so a damaged file is refused as damaged
// instead of being read as other windows; the parser's own bounds still
// hold for a file crafted with a right checksum.
#include "session_archive.hpp"
#include "sha256.hpp"

#include <lapse/core/error.hpp>

#include <charconv>
#include <istream>
#include <ostream>
#include <sstream>
#include <string_view>
#include <vector>

namespace lapse::detail {

namespace {

constexpr std::string_view header_tag = "lapse-session";
constexpr unsigned current_format = 2;
constexpr std::string_view checksum_algorithm = "sha256";
// Long enough for the tag, a version, the algorithm, 64 hex digits and a
// 20-digit size; a header line longer than this is not one.
constexpr std::size_t header_max = 128;

[[noreturn]] void refuse(const std::string& source, const std::string& why)
{
    throw Error(LAPSE_ERROR_INVALID_ARGUMENT, source + ": not a valid lapse session: " + why);
}

// The whole stream, read in chunks: memory grows with what the file holds,
// never with a number written in it.
std::string read_all(std::istream& in, const std::string& source)
{
    std::string out;
    std::vector<char> chunk(1 << 16);
    for (;;) {
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        const std::streamsize n = in.gcount();
        if (n > 0) out.append(chunk.data(), static_cast<std::size_t>(n));
        if (!in) break;
    }
    if (in.bad()) throw Error(LAPSE_ERROR_INVALID_ARGUMENT, source + ": read failed while loading the session");
    return out;
}

std::vector<std::string_view> fields_of(std::string_view line)
{
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && line[i] == ' ') ++i;
        std::size_t j = i;
        while (j < line.size() && line[j] != ' ') ++j;
        if (j > i) out.push_back(line.substr(i, j - i));
        i = j;
    }
    return out;
}

bool is_lower_hex(std::string_view s)
{
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

// A decimal number written by save (digits only, no sign, no overflow).
bool parse_decimal(std::string_view s, uint64_t& out)
{
    if (s.empty() || s.size() > 20) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size();
}

// The archive inside a format-2 file, checked against its header.
std::string_view verified_archive(std::string_view file, const std::string& source)
{
    const std::size_t eol = file.find('\n');
    if (eol == std::string_view::npos || eol > header_max)
        refuse(source, "the header line (which carries the checksum) does not end within " +
                           std::to_string(header_max) + " bytes");
    const std::vector<std::string_view> f = fields_of(file.substr(0, eol));
    uint64_t format = 0;
    if (f.size() < 2 || !parse_decimal(f[1], format))
        refuse(source, "the header has no format version");
    if (format > current_format)
        refuse(source, "session format " + std::to_string(format) + " is newer than this build reads (" +
                           std::to_string(current_format) + ")");
    if (format != current_format)
        refuse(source, "a header naming session format " + std::to_string(format) + ", which never had one");
    if (f.size() != 5)
        refuse(source, "the header has " + std::to_string(f.size()) +
                           " fields, not 5 (tag, format, checksum algorithm, checksum, size)");
    if (f[2] != checksum_algorithm)
        refuse(source, "unknown checksum algorithm '" + std::string(f[2]) + "' (this build checks sha256)");
    if (f[3].size() != 64 || !is_lower_hex(f[3]))
        refuse(source, "the header's checksum is not 64 lowercase hexadecimal digits");
    uint64_t size = 0;
    if (!parse_decimal(f[4], size)) refuse(source, "the header's archive size is not a byte count");
    const std::string_view archive = file.substr(eol + 1);
    if (archive.size() != size)
        refuse(source, "the header says the archive is " + std::to_string(size) + " bytes, the file holds " +
                           std::to_string(archive.size()) + " after it (truncated or damaged, checksum not checked)");
    const std::string actual = sha256_of_bytes(archive);
    if (actual != f[3])
        refuse(source, "checksum mismatch, the file is damaged: the archive's SHA-256 is " + actual +
                           ", its header records " + std::string(f[3]));
    return archive;
}

}  // namespace

void save_session(const SessionData& data, std::ostream& out)
{
    std::ostringstream archive;
    write_archive(data, archive);
    const std::string bytes = std::move(archive).str();
    out << header_tag << ' ' << current_format << ' ' << checksum_algorithm << ' ' << sha256_of_bytes(bytes) << ' '
        << bytes.size() << '\n';
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

LoadedSession load_session(std::istream& in, const std::string& source_name)
{
    const std::string file = read_all(in, source_name);
    LoadedSession out;
    const std::string_view text(file);
    if (text.substr(0, header_tag.size() + 1) == std::string(header_tag) + ' ') {
        std::istringstream archive{std::string(verified_archive(text, source_name))};
        out.data = read_archive(archive, source_name);
        out.verified = true;
    } else {
        // Format 1: the bare archive of lapse 0.1. Loaded (the parser is
        // bounded either way) but unverified.
        std::istringstream archive(file);
        out.data = read_archive(archive, source_name);
    }
    return out;
}

}  // namespace lapse::detail
