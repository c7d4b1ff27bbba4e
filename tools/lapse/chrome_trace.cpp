#include "chrome_trace.hpp"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <map>
#include <ostream>
#include <queue>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace lapse::cli {
namespace {

enum Timeline : int { host_threads = 1, host_streams = 2, device_streams = 3, handoffs = 4 };

constexpr int64_t no_origin = std::numeric_limits<int64_t>::max();

struct TrackKey {
    uint32_t input;
    int timeline;
    uint64_t id;  // thread id or stream index
    auto operator<=>(const TrackKey&) const = default;
};

// One lane per set of windows that are pairwise disjoint or nested: the
// ends of the slices still open on it (innermost last). Windows arrive in
// start order, so a slice is closed for good once a start passes its end:
// `ends` closes them as starts advance, and lanes past the first
// first_fit_lanes are indexed by their innermost open end (`tops`) or as
// empty (`empty`), so a window finds a lane in O(log lanes) however many
// overlap: the tightest lane that contains it, else the lowest empty one.
constexpr std::size_t first_fit_lanes = 8;

struct Track {
    std::vector<std::vector<int64_t>> lanes;
    std::vector<int64_t> tids;
    std::priority_queue<std::pair<int64_t, std::size_t>, std::vector<std::pair<int64_t, std::size_t>>,
                        std::greater<>>
        ends;
    std::set<std::pair<int64_t, std::size_t>> tops;
    std::set<std::size_t> empty;
};

struct Pending {
    int64_t start, end;
    uint32_t name;
    uint32_t input;
    TrackKey track;
    Stream stream;
    uint64_t thread, close_thread;
    TimingMethod method;
    ClockDomain domain;
    uint64_t flags;  // LAPSE_DURATION_* (work left queued, earlier work held)
};

// Parents first: start ascending, then end descending.
struct LaterFirst {
    bool operator()(const Pending& a, const Pending& b) const
    {
        return std::tie(a.start, b.end) > std::tie(b.start, a.end);
    }
};

// A JSON string: escapes what JSON needs, replaces bytes that are not
// UTF-8 with U+FFFD (a name is bytes from the recorded program).
void put_string(std::string& out, std::string_view s)
{
    out += '"';
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    for (std::size_t i = 0; i < s.size();) {
        const unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
            ++i;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
            ++i;
        } else {
            std::size_t len = c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
            bool ok = len > 0 && i + len <= s.size();
            for (std::size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xc0) == 0x80;
            if (ok && len == 3) {
                const uint32_t cp = (c & 0x0fu) << 12 | (p[i + 1] & 0x3fu) << 6 | (p[i + 2] & 0x3fu);
                ok = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
            }
            if (ok && len == 4) {
                const uint32_t cp = (c & 0x07u) << 18 | (p[i + 1] & 0x3fu) << 12 | (p[i + 2] & 0x3fu) << 6 | (p[i + 3] & 0x3fu);
                ok = cp >= 0x10000 && cp <= 0x10ffff;
            }
            if (ok) {
                out.append(s.substr(i, len));
                i += len;
            } else {
                out += "\xef\xbf\xbd";
                ++i;
            }
        }
    }
    out += '"';
}

// `key` then the decimal `value`, with no temporary string (a window's
// line is a handful of these).
template <class Int>
void put_int(std::string& out, std::string_view key, Int value)
{
    char buf[24];
    out += key;
    out.append(buf, std::to_chars(buf, buf + sizeof buf, value).ptr);
}

// Microseconds with ns precision, from a wrapping-safe difference.
void put_us(std::string& out, int64_t ns)
{
    char buf[40];
    const bool negative = ns < 0;
    const uint64_t mag = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
    std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%03" PRIu64, negative ? "-" : "", mag / 1000, mag % 1000);
    out += buf;
}

int64_t wrap_add(int64_t a, int64_t b) noexcept
{
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

int64_t since(int64_t t, int64_t origin)
{
    const __int128 d = static_cast<__int128>(t) - origin;
    return d > INT64_MAX ? INT64_MAX : d < INT64_MIN ? INT64_MIN : static_cast<int64_t>(d);
}

class TraceWriter {
public:
    TraceWriter(RecordSource& source, std::ostream& out, ChromeTraceStats& stats)
        : source_(source), merged_(source.input_count() > 1), out_(out), stats_(stats)
    {
    }

    std::vector<InputInfo> run()
    {
        find_origins();
        out_ << "{\"traceEvents\":[\n";
        for_each_window(source_, [&](const RecordedWindow& w) { take(w); });
        while (!heap_.empty()) emit_next();
        finish();
        return std::move(inputs_);
    }

private:
    int timeline_of(const RecordedWindow& w) const
    {
        if (w.method == TimingMethod::system) return host_threads;
        return w.domain == ClockDomain::host_monotonic ? host_streams : device_streams;
    }
    // Host timelines share one origin over every input (they share a
    // clock); each input's device clock has its own.
    int64_t& origin_of(uint32_t input, int timeline)
    {
        if (timeline != device_streams) return host_origin_;
        if (device_origin_.size() <= input) device_origin_.resize(input + 1, no_origin);
        return device_origin_[input];
    }
    int pid_of(uint32_t input, int timeline) const
    {
        return static_cast<int>(input) * 4 + (timeline == handoffs ? host_threads : timeline);
    }

    // Several inputs share one timeline: host stamps on CLOCK_REALTIME.
    int64_t shift_of(const RecordedWindow& w) const
    {
        if (!merged_ || w.domain != ClockDomain::host_monotonic || w.input >= shifts_.size()) return 0;
        return shifts_[w.input];
    }

    // The first pass: each timeline's origin, and every input's description.
    void find_origins()
    {
        source_.rewind();
        RecordedWindow w;
        while (source_.next_input()) {
            const InputInfo& info = source_.info();
            shifts_.push_back(info.realtime_minus_monotonic_ns.value_or(0));
            while (source_.next_record(w)) {
                if (w.state != DurationState::ready) continue;
                int64_t& o = origin_of(w.input, timeline_of(w));
                o = std::min(o, wrap_add(w.start_ns, shift_of(w)));
            }
            inputs_.push_back(info);
        }
    }

    uint32_t intern(std::string_view name)
    {
        auto it = name_ids_.find(std::string(name));
        if (it != name_ids_.end()) return it->second;
        const auto id = static_cast<uint32_t>(names_.size());
        names_.emplace_back(name);
        name_ids_.emplace(names_.back(), id);
        return id;
    }

    void take(const RecordedWindow& w)
    {
        if (w.state == DurationState::failed) {
            ++stats_.failed;
            return;
        }
        if (w.state != DurationState::ready) {
            ++stats_.not_measured;
            return;
        }
        const int timeline = timeline_of(w);
        const int64_t shift = shift_of(w), start = wrap_add(w.start_ns, shift), end = wrap_add(w.end_ns, shift);
        Pending p{start, std::max(end, start), intern(w.name), w.input,
                  TrackKey{w.input, timeline, timeline == host_threads ? w.thread : w.stream}, w.stream, w.thread,
                  w.close_thread, w.method, w.domain, w.flags};
        heap_.push(p);
        if (heap_.size() > reorder_window) emit_next();
    }

    void meta(const char* what, int pid, int64_t tid, const std::string& key, const std::string& text, int64_t number)
    {
        std::string& o = line_;
        o.clear();
        o += "{\"name\":\"";
        o += what;
        o += "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid);
        if (tid >= 0) o += ",\"tid\":" + std::to_string(tid);
        o += ",\"args\":{\"" + key + "\":";
        if (key == "name")
            put_string(o, text);
        else
            o += std::to_string(number);
        o += "}}";
        write_line();
    }

    void name_process(uint32_t input, int timeline)
    {
        const int pid = pid_of(input, timeline);
        if (!named_processes_.insert(pid).second) return;
        const InputInfo& s = inputs_[input];
        std::string plugin = s.backend.plugin.empty() ? std::string("device") : s.backend.plugin;
        std::string name = timeline == device_streams ? plugin + " streams (device clock: own timeline, not aligned with host)"
                           : timeline == host_streams ? plugin + " streams (host clock)"
                                                      : "host threads";
        if (merged_)
            name = (s.capture ? s.header.program + " (pid " + std::to_string(s.header.pid) + ")" : s.path) + ": " + name;
        meta("process_name", pid, -1, "name", name, 0);
        meta("process_sort_index", pid, -1, "sort_index", "", pid);
    }

    int64_t lane_tid(const TrackKey& key, Track& track, std::size_t lane)
    {
        while (track.tids.size() <= lane) {
            const int64_t tid = next_tid_++;
            const std::size_t l = track.tids.size();
            track.tids.push_back(tid);
            std::string base = key.timeline == host_threads ? "thread " + std::to_string(key.id)
                               : key.timeline == handoffs   ? "thread " + std::to_string(key.id) + " (handoffs)"
                                                            : "stream " + std::to_string(key.id);
            if (l > 0) base += " (overlap " + std::to_string(l) + ")";
            const int pid = pid_of(key.input, key.timeline);
            meta("thread_name", pid, tid, "name", base, 0);
            meta("thread_sort_index", pid, tid, "sort_index", "", tid);
        }
        return track.tids[lane];
    }

    // The lane of a window arriving in start order (see LaterFirst).
    int64_t place(const TrackKey& key, int64_t start, int64_t end)
    {
        Track& track = tracks_[key];
        while (!track.ends.empty() && track.ends.top().first <= start) {
            const std::size_t l = track.ends.top().second;
            track.ends.pop();
            auto& stack = track.lanes[l];
            if (l >= first_fit_lanes) track.tops.erase({stack.back(), l});
            stack.pop_back();
            if (l >= first_fit_lanes) {
                if (stack.empty())
                    track.empty.insert(l);
                else
                    track.tops.insert({stack.back(), l});
            }
        }
        std::size_t chosen = track.lanes.size();
        for (std::size_t l = 0; l < std::min(track.lanes.size(), first_fit_lanes); ++l) {
            ++stats_.lane_probes;
            const auto& stack = track.lanes[l];
            if (stack.empty() || stack.back() >= end) {
                chosen = l;
                break;
            }
        }
        if (chosen == track.lanes.size() && track.lanes.size() > first_fit_lanes) {
            ++stats_.lane_probes;
            if (auto it = track.tops.lower_bound({end, 0}); it != track.tops.end())
                chosen = it->second;
            else if (!track.empty.empty())
                chosen = *track.empty.begin();
        }
        if (chosen == track.lanes.size()) {
            track.lanes.emplace_back();
            if (chosen > 0) ++stats_.overlap_lanes;
        }
        auto& stack = track.lanes[chosen];
        if (chosen >= first_fit_lanes) {
            if (stack.empty())
                track.empty.erase(chosen);
            else
                track.tops.erase({stack.back(), chosen});
            track.tops.insert({end, chosen});
        }
        stack.push_back(end);
        track.ends.push({end, chosen});
        return lane_tid(key, track, chosen);
    }

    void slice(const std::string& name, int pid, int64_t tid, int64_t ts, int64_t dur, const Pending* args)
    {
        std::string& o = line_;
        o.clear();
        o += "{\"name\":";
        put_string(o, name);
        o += ",\"cat\":\"";
        o += args != nullptr ? "window" : "handoff";
        put_int(o, "\",\"ph\":\"X\",\"pid\":", pid);
        put_int(o, ",\"tid\":", tid);
        o += ",\"ts\":";
        put_us(o, ts);
        o += ",\"dur\":";
        put_us(o, dur);
        if (args != nullptr) {
            put_int(o, ",\"args\":{\"stream\":", args->stream);
            put_int(o, ",\"thread\":", args->thread);
            if (args->close_thread != args->thread) put_int(o, ",\"close_thread\":", args->close_thread);
            o += ",\"method\":\"";
            o += to_string(args->method);
            o += "\",\"clock\":\"";
            o += to_string(args->domain);
            put_int(o, "\",\"duration_ns\":", dur);
            // Only when set: a window that holds less or more than its own work.
            if ((args->flags & LAPSE_DURATION_WORK_QUEUED) != 0) o += ",\"work_left_queued\":true";
            if ((args->flags & LAPSE_DURATION_HOLDS_EARLIER_WORK) != 0) o += ",\"holds_earlier_work\":true";
            o += "}";
        }
        o += "}";
        write_line();
    }

    void flow(char phase, uint64_t id, int pid, int64_t tid, int64_t ts)
    {
        std::string& o = line_;
        o.clear();
        o += "{\"name\":\"handoff\",\"cat\":\"handoff\",\"ph\":\"";
        o += phase;
        put_int(o, "\",\"id\":", id);
        put_int(o, ",\"pid\":", pid);
        put_int(o, ",\"tid\":", tid);
        if (phase == 'f') o += ",\"bp\":\"e\"";
        o += ",\"ts\":";
        put_us(o, ts);
        o += "}";
        write_line();
    }

    void emit_next()
    {
        const Pending p = heap_.top();
        heap_.pop();
        const int timeline = p.track.timeline;
        name_process(p.input, timeline);
        const int64_t origin = origin_of(p.input, timeline);
        const int64_t tid = place(p.track, p.start, p.end);
        const int64_t dur = since(p.end, p.start);
        slice(names_[p.name], pid_of(p.input, timeline), tid, since(p.start, origin), dur, &p);
        ++stats_.slices;
        if (p.close_thread != p.thread && p.domain == ClockDomain::host_monotonic) {
            // A split pair: a mark where each thread took part, and the flow between them.
            name_process(p.input, handoffs);
            const int pid = pid_of(p.input, handoffs);
            const TrackKey opener{p.input, handoffs, p.thread}, closer{p.input, handoffs, p.close_thread};
            const int64_t open_tid = lane_tid(opener, tracks_[opener], 0);
            const int64_t close_tid = lane_tid(closer, tracks_[closer], 0);
            const int64_t t0 = since(p.start, origin), t1 = since(p.end, origin);
            const uint64_t id = ++stats_.flows;
            slice("open " + names_[p.name], pid, open_tid, t0, 0, nullptr);
            slice("close " + names_[p.name], pid, close_tid, t1, 0, nullptr);
            flow('s', id, pid, open_tid, t0);
            flow('f', id, pid, close_tid, t1);
        }
    }

    void write_line()
    {
        if (!first_) out_ << ",\n";
        first_ = false;
        out_ << line_;
    }

    void finish()
    {
        std::string o = "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"lapse export\"";
        const InputInfo& s = inputs_.front();
        o += ",\"plugin\":";
        put_string(o, s.backend.plugin);
        o += ",\"plugin_version\":";
        put_string(o, s.backend.plugin_version);
        o += ",\"device\":";
        put_string(o, s.backend.device_name);
        o += ",\"windows_not_measured\":" + std::to_string(stats_.not_measured);
        o += ",\"windows_failed\":" + std::to_string(stats_.failed);
        if (host_origin_ != no_origin) o += ",\"host_origin_ns\":" + std::to_string(host_origin_);
        if (merged_) o += ",\"host_clock\":\"CLOCK_REALTIME (inputs merged by their anchors)\"";
        if (!device_origin_.empty() && device_origin_[0] != no_origin)
            o += ",\"device_origin_ns\":" + std::to_string(device_origin_[0]);
        uint64_t dropped = 0;
        bool cut = false;
        for (const InputInfo& in : inputs_) {
            dropped += in.dropped;
            cut = cut || in.cut_short;
        }
        o += ",\"windows_dropped\":" + std::to_string(dropped);
        o += std::string(",\"cut_short\":") + (cut ? "true" : "false");
        o += "}}\n";
        out_ << o;
    }

    RecordSource& source_;
    const bool merged_;
    std::vector<InputInfo> inputs_;  // from the first pass
    std::vector<int64_t> shifts_;    // per input: its host monotonic -> CLOCK_REALTIME
    std::ostream& out_;
    ChromeTraceStats& stats_;
    int64_t host_origin_ = no_origin;
    std::vector<int64_t> device_origin_;
    std::priority_queue<Pending, std::vector<Pending>, LaterFirst> heap_;
    std::map<TrackKey, Track> tracks_;
    std::vector<std::string> names_;
    std::unordered_map<std::string, uint32_t> name_ids_;
    struct IntSet {
        std::vector<int> v;
        std::pair<int, bool> insert(int x)
        {
            if (std::find(v.begin(), v.end(), x) != v.end()) return {x, false};
            v.push_back(x);
            return {x, true};
        }
    } named_processes_;
    int64_t next_tid_ = 1;
    bool first_ = true;
    std::string line_;
};

}  // namespace

std::vector<InputInfo> write_chrome_trace(RecordSource& source, std::ostream& out, ChromeTraceStats& stats)
{
    stats = {};
    return TraceWriter(source, out, stats).run();
}

nlohmann::ordered_json chrome_trace(const Session& session, ChromeTraceStats& stats)
{
    auto source = open_record_source(session);
    std::ostringstream text;
    write_chrome_trace(*source, text, stats);
    return nlohmann::ordered_json::parse(text.str());
}

}  // namespace lapse::cli
