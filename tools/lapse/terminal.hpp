// Terminal helpers: progress that shows on a terminal and stays quiet when
// stderr is a file or a pipe (CI logs), recorded text made safe to print,
// and human-readable durations and times.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace lapse::cli {

// One status line on stderr, rewritten in place, only when stderr is a
// terminal (and LAPSE_NO_PROGRESS is unset). Cleared by done() or the
// destructor.
class Progress {
public:
    Progress();
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    bool enabled() const noexcept { return enabled_; }
    void update(std::string_view line);
    void done();

private:
    bool enabled_;
    bool shown_ = false;
};

// Text that came from a file (a plugin's name or description, a window's
// name, a message a plugin wrote) made safe to print: valid UTF-8 without
// control characters passes as is; every control character (C0 but tab,
// DEL, C1) and every byte that is not part of valid UTF-8 is written as
// \xNN, so no escape sequence from a file ever reaches the terminal and the
// bytes stay recognisable. Newlines are escaped too: one value, one line.
std::string terminal_text(std::string_view text);

// The same text for the report's table and warnings: each control
// character (C0, DEL, C1) and each byte that is not part of valid UTF-8
// becomes one '?'.
std::string printable(std::string_view text);

// Text made valid UTF-8 for a JSON or XML document: each byte that is not
// part of valid UTF-8 becomes U+FFFD. (nlohmann::json otherwise throws
// type_error 316 when dumping it.)
std::string utf8_text(std::string_view text);

// Dumps JSON whatever bytes its strings hold (invalid UTF-8 -> U+FFFD).
// Every JSON output of the tools goes through this.
template <class Json>
std::string json_text(const Json& j, int indent = 2)
{
    return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// "2026-12-01 09:40:36.123 UTC" for CLOCK_REALTIME ns.
std::string utc_time(int64_t realtime_ns);

// Rows of cells as aligned columns two spaces apart, trailing spaces cut, a
// line each: the columns `left(column, row_size)` names left-aligned (the
// names), the others right-aligned (the numbers).
void print_columns(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                   bool (*left)(std::size_t column, std::size_t row_size));

// "812 ns", "12.345 us", "3.210 ms", "1.500 s": three decimals, unit chosen
// by magnitude.
std::string human_duration(double ns);

}  // namespace lapse::cli
