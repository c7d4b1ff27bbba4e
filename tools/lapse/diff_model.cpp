#include "diff_model.hpp"

#include "statistics.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace lapse::cli {
namespace {

struct Group {
    Reservoir samples[2];
    uint64_t failed[2] = {0, 0};
    uint64_t not_measured[2] = {0, 0};
    explicit Group(std::size_t capacity) : samples{Reservoir(capacity), Reservoir(capacity)} {}
};

using GroupKey = std::tuple<std::string, Stream, TimingMethod>;

DiffSide summarize_side(Group& g, int side)
{
    DiffSide s;
    Reservoir& r = g.samples[side];
    std::vector<int64_t>& v = r.values();
    std::sort(v.begin(), v.end());
    s.count = r.seen();
    s.failed = g.failed[side];
    s.not_measured = g.not_measured[side];
    s.sampled = r.sampled();
    if (!v.empty()) {
        const std::size_t mid = v.size() / 2;
        s.median_ns = v.size() % 2 ? static_cast<double>(v[mid])
                                   : (static_cast<double>(v[mid - 1]) + static_cast<double>(v[mid])) / 2;
        s.p90_ns = nearest_rank(v, 90.0);
        s.p99_ns = nearest_rank(v, 99.0);
    }
    return s;
}

int verdict_rank(Verdict v) { return v == Verdict::slower ? 0 : v == Verdict::faster ? 1 : 2; }

}  // namespace

const char* to_string(Verdict v)
{
    switch (v) {
    case Verdict::slower: return "slower";
    case Verdict::faster: return "faster";
    case Verdict::no_change: return "no change";
    case Verdict::too_few: return "too few windows";
    case Verdict::only_in_base: return "only in base";
    case Verdict::only_in_new: return "only in new";
    }
    return "?";
}

bool DiffResult::any_slower() const
{
    return std::any_of(rows.begin(), rows.end(), [](const DiffRow& r) { return r.verdict == Verdict::slower; });
}

DiffResult compute_diff(RecordSource& source, const DiffOptions& options)
{
    DiffResult result;
    std::map<GroupKey, Group> groups;
    RecordedWindow w;
    GroupKey key;
    while (const auto input = source.next_input()) {
        const int side = *input == 0 ? 0 : 1;
        while (source.next_record(w)) {
            std::get<0>(key).assign(w.name);  // in place: no allocation per window
            std::get<1>(key) = w.stream;
            std::get<2>(key) = w.method;
            auto it = groups.find(key);
            if (it == groups.end()) it = groups.try_emplace(key, options.reservoir).first;
            Group& g = it->second;
            if (measured(w))
                g.samples[side].add(w.ns());
            else if (w.state == DurationState::failed)
                ++g.failed[side];
            else
                ++g.not_measured[side];
        }
        (side == 0 ? result.base_info : result.new_info) = source.info();
    }

    for (auto& [key, g] : groups) {
        DiffRow row;
        std::tie(row.name, row.stream, row.method) = key;
        row.base = summarize_side(g, 0);
        row.next = summarize_side(g, 1);
        const auto& before = g.samples[0].values();
        const auto& after = g.samples[1].values();
        if (before.empty() && after.empty())
            row.verdict = Verdict::too_few;  // nothing measured on either side
        else if (after.empty())
            row.verdict = Verdict::only_in_base;
        else if (before.empty())
            row.verdict = Verdict::only_in_new;
        else if (before.size() < options.min_count || after.size() < options.min_count)
            row.verdict = Verdict::too_few;
        else {
            row.shift = hodges_lehmann_shift(before, after, options.confidence);
            const double base = row.base.median_ns > 0 ? row.base.median_ns : 1.0;
            row.change = row.shift->shift_ns / base;
            row.change_low = row.shift->low_ns / base;
            row.change_high = row.shift->high_ns / base;
            // Significant (the interval excludes no shift) and beyond the threshold.
            const bool significant = row.shift->low_ns > 0 || row.shift->high_ns < 0;
            if (significant && row.change > options.threshold)
                row.verdict = Verdict::slower;
            else if (significant && row.change < -options.threshold)
                row.verdict = Verdict::faster;
            else
                row.verdict = Verdict::no_change;
        }
        result.rows.push_back(std::move(row));
    }
    std::stable_sort(result.rows.begin(), result.rows.end(), [](const DiffRow& a, const DiffRow& b) {
        return verdict_rank(a.verdict) < verdict_rank(b.verdict);
    });
    return result;
}

}  // namespace lapse::cli
