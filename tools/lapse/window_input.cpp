#include "window_input.hpp"

#include <lapse/core/error.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace lapse::cli {

namespace {

int64_t wrap_add(int64_t a, int64_t b) noexcept
{
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

}  // namespace

WindowInputs::WindowInputs(const std::vector<std::string>& files)
{
    for (const std::string& file : files) {
        InputSummary s;
        s.file = file;
        s.capture = is_capture_file(file);
        if (s.capture) {
            CaptureReader reader(file);  // the header (and first sources) now
            s.header = reader.header();
            s.sources = reader.sources();
            if (!s.sources.empty()) {
                const CaptureSource& d = s.sources.front();
                s.backend = {d.plugin, d.plugin_version, d.device_name, d.stream_count, d.capabilities};
            }
        } else {
            s.backend = Session::load(file).backend();
        }
        summaries_.push_back(std::move(s));
    }
    // On one timeline: the earliest anchor first (sessions, with none, last).
    std::stable_sort(summaries_.begin(), summaries_.end(), [](const InputSummary& a, const InputSummary& b) {
        if (a.capture != b.capture) return a.capture;
        return a.capture && a.header.anchor_realtime_ns < b.header.anchor_realtime_ns;
    });
}

WindowInputs::WindowInputs(std::shared_ptr<const Session> session) : in_memory_(std::move(session))
{
    InputSummary s;
    s.file = "<session>";
    s.backend = in_memory_->backend();
    summaries_.push_back(std::move(s));
}

void WindowInputs::for_each(const std::function<void(const InputWindow&)>& visit)
{
    const bool realtime = merged();
    for (uint32_t index = 0; index < summaries_.size(); ++index) {
        InputSummary& s = summaries_[index];
        InputWindow out;
        out.input = index;
        s.windows = 0;
        if (s.capture) {
            CaptureReader reader(s.file);
            const int64_t shift = s.header.anchor_realtime_ns - s.header.anchor_monotonic_ns;
            CapturedWindow w;
            while (reader.next(w)) {
                out.name = w.name;
                out.source = w.source;
                out.stream = w.stream;
                out.thread = w.thread;
                out.close_thread = w.close_thread;
                out.state = w.state;
                out.method = w.method;
                out.domain = w.domain;
                out.start_ns = w.start_ns;
                out.end_ns = w.end_ns;
                if (realtime && w.domain == ClockDomain::host_monotonic) {
                    out.start_ns = wrap_add(w.start_ns, shift);
                    out.end_ns = wrap_add(w.end_ns, shift);
                }
                out.failure = w.failure;
                out.cause = w.cause;
                out.flags = w.flags;
                ++s.windows;
                visit(out);
            }
            s.sources = reader.sources();
            s.complete = reader.complete();
            s.last_chunk_realtime_ns = s.header.to_realtime(reader.last_chunk_monotonic_ns());
            s.dropped = reader.dropped();
            s.dropped_total = reader.dropped_total();
            s.damage = reader.damage();
        } else {
            const std::vector<WindowRecord> windows = in_memory_ ? in_memory_->windows() : Session::load(s.file).windows();
            for (const WindowRecord& w : windows) {
                out.name = w.name;
                out.stream = w.stream;
                out.thread = out.close_thread = w.thread;
                out.state = w.state;
                out.method = w.method;
                out.domain = w.domain;
                out.start_ns = w.start_ns;
                out.end_ns = w.end_ns;
                out.failure = w.failure;
                out.cause = {};
                out.flags = w.flags;
                ++s.windows;
                visit(out);
            }
        }
    }
}

std::string printable(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    for (std::size_t i = 0; i < n;) {
        const unsigned char c = p[i];
        if (c < 0x80) {
            out += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
            ++i;
            continue;
        }
        // A well-formed UTF-8 sequence (no overlongs, no surrogates) passes
        // unless it encodes a C1 control (U+0080..U+009F).
        std::size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        if (c > 0xf4) len = 0;
        bool ok = len > 0 && i + len <= n;
        uint32_t cp = len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
        for (std::size_t k = 1; ok && k < len; ++k) {
            if ((p[i + k] & 0xc0) != 0x80) ok = false;
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        if (ok && ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff))))
            ok = false;
        if (!ok) {
            out += '?';
            ++i;
            continue;
        }
        if (cp >= 0x80 && cp <= 0x9f) {  // a C1 control (CSI is U+009B): one '?' for the whole character
            out += '?';
            i += len;
            continue;
        }
        out.append(text.substr(i, len));
        i += len;
    }
    return out;
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

}  // namespace lapse::cli
