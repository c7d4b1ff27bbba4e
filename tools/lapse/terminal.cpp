#include "terminal.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <unistd.h>

namespace lapse::cli {

namespace {

// Length of the valid UTF-8 sequence at `s[i]`, or 0 when the byte there
// does not start one (overlongs, surrogates and code points past U+10FFFF
// are invalid).
std::size_t utf8_sequence(std::string_view s, std::size_t i, uint32_t& code_point)
{
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b0 = byte(i);
    std::size_t length;
    uint32_t cp;
    if (b0 < 0x80) {
        code_point = b0;
        return 1;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
        length = 2;
        cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        length = 3;
        cp = b0 & 0x0F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        length = 4;
        cp = b0 & 0x07;
    } else {
        return 0;
    }
    if (s.size() - i < length) return 0;
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    if ((length == 3 && cp < 0x800) || (length == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    code_point = cp;
    return length;
}

void append_hex(std::string& out, unsigned char b)
{
    static const char hex[] = "0123456789abcdef";
    out += "\\x";
    out += hex[b >> 4];
    out += hex[b & 15];
}

// `text` with each byte that is not part of valid UTF-8 (one at a time) and
// each whole character `unwanted` rejects handed to `substitute` instead.
template <class Unwanted, class Substitute>
std::string substituted(std::string_view text, Unwanted unwanted, Substitute substitute)
{
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        uint32_t cp = 0;
        const std::size_t n = utf8_sequence(text, i, cp);
        const std::string_view bytes = text.substr(i, n == 0 ? 1 : n);
        if (n == 0 || unwanted(cp))
            substitute(out, bytes);
        else
            out.append(bytes);
        i += bytes.size();
    }
    return out;
}

// C0, DEL and C1 (CSI is U+009B).
bool is_control(uint32_t cp) { return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F); }

}  // namespace

std::string terminal_text(std::string_view text)
{
    return substituted(
        text, [](uint32_t cp) { return is_control(cp) && cp != '\t'; },
        [](std::string& out, std::string_view bytes) {
            for (const char b : bytes) append_hex(out, static_cast<unsigned char>(b));
        });
}

std::string printable(std::string_view text)
{
    return substituted(text, is_control, [](std::string& out, std::string_view) { out += '?'; });
}

std::string utf8_text(std::string_view text)
{
    return substituted(
        text, [](uint32_t) { return false; }, [](std::string& out, std::string_view) { out += "\xEF\xBF\xBD"; });
}

Progress::Progress() : enabled_(isatty(STDERR_FILENO) == 1 && std::getenv("LAPSE_NO_PROGRESS") == nullptr) {}

Progress::~Progress() { done(); }

void Progress::update(std::string_view line)
{
    if (!enabled_) return;
    // \r then clear-to-end-of-line: a shorter line leaves no tail behind.
    std::fprintf(stderr, "\r\033[K%.*s", static_cast<int>(line.size()), line.data());
    std::fflush(stderr);
    shown_ = true;
}

void Progress::done()
{
    if (!enabled_ || !shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
}

std::string utc_time(int64_t realtime_ns)
{
    if (realtime_ns < 0) return std::to_string(realtime_ns) + " ns";
    const std::time_t secs = static_cast<std::time_t>(realtime_ns / 1000000000);
    std::tm tm{};
    if (gmtime_r(&secs, &tm) == nullptr) return std::to_string(realtime_ns) + " ns";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%03d UTC", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>((realtime_ns % 1000000000) / 1000000));
    return buf;
}

void print_columns(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                   bool (*left)(std::size_t column, std::size_t row_size))
{
    std::vector<std::size_t> width;
    for (const auto& row : rows) {
        if (width.size() < row.size()) width.resize(row.size(), 0);
        for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    for (const auto& row : rows) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i) {
            const std::string pad(width[i] - row[i].size(), ' ');
            line += left(i, row.size()) ? row[i] + pad : pad + row[i];
            if (i + 1 < row.size()) line += "  ";
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out << line << '\n';
    }
}

std::string human_duration(double ns)
{
    char buf[64];
    const double a = std::fabs(ns);
    if (a < 1e3)
        std::snprintf(buf, sizeof buf, "%.0f ns", ns);
    else if (a < 1e6)
        std::snprintf(buf, sizeof buf, "%.3f us", ns / 1e3);
    else if (a < 1e9)
        std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
    return buf;
}

}  // namespace lapse::cli
