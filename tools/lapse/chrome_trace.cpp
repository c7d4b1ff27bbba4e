#include "chrome_trace.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace lapse::cli {
namespace {

enum Timeline : int { host_threads = 1, host_streams = 2, device_streams = 3 };

struct TrackKey {
    Timeline timeline;
    uint64_t id;  // thread id or stream index
    auto operator<=>(const TrackKey&) const = default;
};

// Splits one track's windows into lanes in which every pair of windows is
// either disjoint or nested, so each lane renders correctly as a stack.
// `order` is sorted by start ascending, end descending (parents first).
std::vector<uint32_t> assign_lanes(const std::vector<const WindowRecord*>& order)
{
    std::vector<std::vector<int64_t>> lanes;  // per lane, the ends of the open slices
    std::vector<uint32_t> lane_of(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        const WindowRecord& w = *order[i];
        uint32_t chosen = static_cast<uint32_t>(lanes.size());
        for (uint32_t l = 0; l < lanes.size(); ++l) {
            auto& stack = lanes[l];
            while (!stack.empty() && stack.back() <= w.start_ns) stack.pop_back();
            if (stack.empty() || stack.back() >= w.end_ns) {
                chosen = l;
                break;
            }
        }
        if (chosen == lanes.size()) lanes.emplace_back();
        lanes[chosen].push_back(w.end_ns);
        lane_of[i] = chosen;
    }
    return lane_of;
}

}  // namespace

nlohmann::ordered_json chrome_trace(const Session& session, ChromeTraceStats& stats)
{
    stats = {};
    const std::vector<WindowRecord> windows = session.windows();
    const BackendRecord backend = session.backend();
    const std::string plugin = backend.plugin.empty() ? std::string("device") : backend.plugin;

    std::map<TrackKey, std::vector<const WindowRecord*>> tracks;
    int64_t origin[4] = {0, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max(),
                         std::numeric_limits<int64_t>::max()};
    for (const WindowRecord& w : windows) {
        if (w.state == DurationState::failed) {
            ++stats.failed;
            continue;
        }
        if (w.state != DurationState::ready) {
            ++stats.not_measured;
            continue;
        }
        TrackKey key{};
        if (w.method == TimingMethod::system)
            key = {host_threads, w.thread};
        else if (w.domain == ClockDomain::host_monotonic)
            key = {host_streams, w.stream};
        else
            key = {device_streams, w.stream};
        tracks[key].push_back(&w);
    }
    // pid 1 and 2 share the host timeline, so they share an origin.
    for (auto& [key, list] : tracks)
        for (const WindowRecord* w : list) {
            const int t = key.timeline == device_streams ? device_streams : host_threads;
            origin[t] = std::min(origin[t], w->start_ns);
        }
    origin[host_streams] = origin[host_threads];

    nlohmann::ordered_json events = nlohmann::ordered_json::array();
    auto meta = [&](const char* what, int pid, int64_t tid, nlohmann::ordered_json args) {
        nlohmann::ordered_json e{{"name", what}, {"ph", "M"}, {"pid", pid}};
        if (tid >= 0) e["tid"] = tid;
        e["args"] = std::move(args);
        events.push_back(std::move(e));
    };
    bool process_named[4] = {false, false, false, false};
    const char* process_names[4] = {"", "host threads", "", ""};
    const std::string stream_names[2] = {plugin + " streams (host clock)",
                                         plugin + " streams (device clock: own timeline, not aligned with host)"};

    int64_t next_tid = 1;
    for (auto& [key, list] : tracks) {
        const int pid = key.timeline;
        if (!process_named[pid]) {
            process_named[pid] = true;
            const std::string name = pid == host_threads ? process_names[pid] : stream_names[pid - 2];
            meta("process_name", pid, -1, {{"name", name}});
            meta("process_sort_index", pid, -1, {{"sort_index", pid}});
        }
        std::stable_sort(list.begin(), list.end(), [](const WindowRecord* a, const WindowRecord* b) {
            return std::tie(a->start_ns, b->end_ns) < std::tie(b->start_ns, a->end_ns);
        });
        const std::vector<uint32_t> lane_of = assign_lanes(list);
        const uint32_t lanes = lane_of.empty() ? 0 : *std::max_element(lane_of.begin(), lane_of.end()) + 1;
        stats.overlap_lanes += lanes > 0 ? lanes - 1 : 0;
        const std::string base = pid == host_threads ? "thread " + std::to_string(key.id)
                                                     : "stream " + std::to_string(key.id);
        std::vector<int64_t> tid_of(lanes);
        for (uint32_t l = 0; l < lanes; ++l) {
            tid_of[l] = next_tid++;
            meta("thread_name", pid, tid_of[l], {{"name", l == 0 ? base : base + " (overlap " + std::to_string(l) + ")"}});
            meta("thread_sort_index", pid, tid_of[l], {{"sort_index", tid_of[l]}});
        }
        for (std::size_t i = 0; i < list.size(); ++i) {
            const WindowRecord& w = *list[i];
            nlohmann::ordered_json e;
            e["name"] = w.name;
            e["cat"] = "window";
            e["ph"] = "X";
            e["pid"] = pid;
            e["tid"] = tid_of[lane_of[i]];
            e["ts"] = static_cast<double>(w.start_ns - origin[pid]) / 1e3;
            e["dur"] = static_cast<double>(w.ns()) / 1e3;
            e["args"] = {{"stream", w.stream},
                         {"thread", w.thread},
                         {"method", to_string(w.method)},
                         {"clock", to_string(w.domain)},
                         {"duration_ns", w.ns()}};
            events.push_back(std::move(e));
            ++stats.slices;
        }
    }

    nlohmann::ordered_json trace;
    trace["traceEvents"] = std::move(events);
    trace["displayTimeUnit"] = "ns";
    nlohmann::ordered_json other{{"generator", "lapse export"},
                                 {"plugin", backend.plugin},
                                 {"plugin_version", backend.plugin_version},
                                 {"device", backend.device_name},
                                 {"windows_not_measured", stats.not_measured},
                                 {"windows_failed", stats.failed}};
    if (origin[host_threads] != std::numeric_limits<int64_t>::max())
        other["host_origin_ns"] = origin[host_threads];
    if (origin[device_streams] != std::numeric_limits<int64_t>::max())
        other["device_origin_ns"] = origin[device_streams];
    trace["otherData"] = std::move(other);
    return trace;
}

}  // namespace lapse::cli
