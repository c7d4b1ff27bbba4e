#include "window_stats.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>

namespace lapse::cli {

std::vector<WindowStats> summarize(const std::vector<WindowRecord>& records)
{
    std::vector<std::string> order;
    std::map<std::string, std::vector<const WindowRecord*>> by_name;
    for (const auto& r : records) {
        auto& list = by_name[r.name];
        if (list.empty()) order.push_back(r.name);
        list.push_back(&r);
    }
    std::vector<WindowStats> out;
    for (const auto& name : order) {
        WindowStats s;
        s.name = name;
        std::vector<int64_t> ns;
        bool device = false, system = false;
        for (const WindowRecord* r : by_name[name]) {
            switch (r->state) {
            case DurationState::ready:
                ns.push_back(r->ns());
                device = device || r->method == TimingMethod::device;
                system = system || r->method == TimingMethod::system;
                if ((r->flags & LAPSE_DURATION_WORK_QUEUED) != 0) {
                    ++s.work_queued;
                    s.queued_ops += r->queued_ops;
                }
                if ((r->flags & LAPSE_DURATION_HOLDS_EARLIER_WORK) != 0) ++s.held_earlier;
                break;
            case DurationState::failed: ++s.failed; break;
            case DurationState::not_measured: ++s.not_measured; break;
            case DurationState::pending: break;  // sessions hold final windows only
            }
        }
        s.count = ns.size();
        if (!ns.empty()) {
            std::sort(ns.begin(), ns.end());
            for (int64_t v : ns) s.total_ns += v;
            s.min_ns = ns.front();
            s.max_ns = ns.back();
            // The lower median for even counts: a value that was measured.
            s.median_ns = ns[(ns.size() - 1) / 2];
        }
        s.methods = device && system ? "device+system" : device ? "device" : system ? "system" : "-";
        out.push_back(std::move(s));
    }
    return out;
}

namespace {
std::string ms(int64_t ns)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.3f", static_cast<double>(ns) / 1e6);
    return buffer;
}
}  // namespace

void print_table(std::ostream& out, const std::vector<WindowStats>& stats)
{
    std::size_t width = 6;
    for (const auto& s : stats) width = std::max(width, s.name.size());
    char line[512];
    std::snprintf(line, sizeof line, "%-*s %6s %12s %11s %11s %11s  %s\n", static_cast<int>(width), "window", "count",
                  "total ms", "min ms", "median ms", "max ms", "method");
    out << line;
    for (const auto& s : stats) {
        if (s.count == 0) {
            std::snprintf(line, sizeof line, "%-*s %6zu %12s %11s %11s %11s  %s", static_cast<int>(width),
                          s.name.c_str(), s.count, "-", "-", "-", "-", s.methods.c_str());
        } else {
            std::snprintf(line, sizeof line, "%-*s %6zu %12s %11s %11s %11s  %s", static_cast<int>(width),
                          s.name.c_str(), s.count, ms(s.total_ns).c_str(), ms(s.min_ns).c_str(),
                          ms(s.median_ns).c_str(), ms(s.max_ns).c_str(), s.methods.c_str());
        }
        out << line;
        if (s.failed > 0) out << "  (" << s.failed << " failed)";
        if (s.not_measured > 0) out << "  (" << s.not_measured << " not measured)";
        if (s.work_queued > 0)
            out << "  (" << s.work_queued << " closed unflushed with " << s.queued_ops << " op"
                << (s.queued_ops == 1 ? "" : "s") << " still queued *)";
        if (s.held_earlier > 0) out << "  (" << s.held_earlier << " held earlier work *)";
        out << '\n';
    }
}

std::vector<FailureCause> failure_causes(std::span<const Duration> durations)
{
    std::vector<FailureCause> causes;
    for (const Duration& d : durations) {
        if (!d.failed()) continue;
        std::string name(d.name());
        std::string message(d.error_message());
        auto same = [&](const FailureCause& c) {
            return c.name == name && c.status == d.error_status() && c.message == message;
        };
        auto it = std::find_if(causes.begin(), causes.end(), same);
        if (it == causes.end())
            causes.push_back(FailureCause{std::move(name), d.error_status(), std::move(message), 1});
        else
            ++it->count;
    }
    return causes;
}

void print_failure_causes(std::ostream& out, const std::vector<FailureCause>& causes)
{
    if (causes.empty()) return;
    out << "\nwhy windows failed:\n";
    for (const FailureCause& c : causes) {
        out << "  " << (c.name.empty() ? std::string("(unnamed)") : c.name) << ": " << c.count << "x "
            << lapse_status_name(c.status);
        if (!c.message.empty()) out << ": " << c.message;
        out << '\n';
    }
}

void print_partial_note(std::ostream& out, const std::vector<WindowStats>& stats)
{
    bool any = std::any_of(stats.begin(), stats.end(),
                           [](const WindowStats& s) { return s.work_queued > 0 || s.held_earlier > 0; });
    if (!any) return;
    out << "\n* partial: a window closed without flush over a batching backend covers only the work\n"
           "  that ran before it closed (the rest ran later, outside it); one that held earlier work\n"
           "  covers more than its own. Neither is the cost of the window's work alone.\n";
}

}  // namespace lapse::cli
