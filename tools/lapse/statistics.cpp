#include "statistics.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

namespace lapse::cli {

int64_t nearest_rank(std::span<const int64_t> sorted_ns, double p)
{
    if (sorted_ns.empty()) throw std::invalid_argument("nearest_rank: no data");
    if (!(p > 0.0 && p <= 100.0)) throw std::invalid_argument("nearest_rank: p must be in (0, 100]");
    const double n = static_cast<double>(sorted_ns.size());
    // ceil(p/100 * n) computed so that 99 % of 100 is exactly rank 99 (no
    // floating-point drift to 100).
    auto rank = static_cast<std::size_t>(std::ceil(p * n / 100.0 - 1e-9));
    rank = std::clamp<std::size_t>(rank, 1, sorted_ns.size());
    return sorted_ns[rank - 1];
}

std::optional<Summary> summarize(std::span<const int64_t> durations_ns)
{
    if (durations_ns.empty()) return std::nullopt;
    std::vector<int64_t> sorted(durations_ns.begin(), durations_ns.end());
    std::sort(sorted.begin(), sorted.end());

    Summary s;
    s.count = sorted.size();
    s.min_ns = sorted.front();
    s.max_ns = sorted.back();
    const std::size_t mid = sorted.size() / 2;
    s.median_ns = sorted.size() % 2 == 1 ? static_cast<double>(sorted[mid])
                                         : (static_cast<double>(sorted[mid - 1]) + static_cast<double>(sorted[mid])) / 2.0;
    s.p99_ns = nearest_rank(sorted, 99.0);

    // Welford's update in long double: stable for millions of samples of
    // similar size, where the naive sum of squares cancels catastrophically.
    long double mean = 0, m2 = 0;
    __int128 total = 0;  // never overflows; clamped below
    uint64_t k = 0;
    for (int64_t v : sorted) {
        total += v;
        ++k;
        const long double x = static_cast<long double>(v);
        const long double delta = x - mean;
        mean += delta / static_cast<long double>(k);
        m2 += delta * (x - mean);
    }
    s.total_ns = total > INT64_MAX ? INT64_MAX : total < 0 ? 0 : static_cast<int64_t>(total);
    s.mean_ns = static_cast<double>(mean);
    s.stddev_ns = k > 1 ? static_cast<double>(std::sqrt(m2 / static_cast<long double>(k - 1))) : 0.0;
    return s;
}

std::size_t SummaryBuilder::bucket_of(uint64_t v) noexcept
{
    if (v < 64) return static_cast<std::size_t>(v);
    const int e = 63 - __builtin_clzll(v);  // >= 6
    return 64 + static_cast<std::size_t>(e - 6) * 64 + static_cast<std::size_t>((v >> (e - 6)) & 63);
}

uint64_t SummaryBuilder::bucket_low(std::size_t b) noexcept
{
    if (b < 64) return b;
    const std::size_t e = (b - 64) / 64 + 6, sub = (b - 64) % 64;
    return (uint64_t{64} + sub) << (e - 6);
}

uint64_t SummaryBuilder::bucket_width(std::size_t b) noexcept
{
    return b < 64 ? 1 : uint64_t{1} << ((b - 64) / 64);
}

void SummaryBuilder::add(int64_t ns)
{
    if (ns < 0) ns = 0;  // a duration is never negative (inputs are checked; this is the last guard)
    if (count_ == 0) min_ = max_ = ns;
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
    ++count_;
    total_ += ns;
    const long double x = static_cast<long double>(ns);
    const long double delta = x - mean_;
    mean_ += delta / static_cast<long double>(count_);
    m2_ += delta * (x - mean_);
    if (histogram_.empty()) {
        if (exact_.size() < exact_limit) {
            exact_.push_back(ns);
            return;
        }
        histogram_.assign(64 + 58 * 64, 0);
        for (int64_t v : exact_) ++histogram_[bucket_of(static_cast<uint64_t>(v))];
        std::vector<int64_t>().swap(exact_);
    }
    ++histogram_[bucket_of(static_cast<uint64_t>(ns))];
}

std::optional<Summary> SummaryBuilder::summary() const
{
    if (count_ == 0) return std::nullopt;
    if (histogram_.empty()) return summarize(exact_);
    Summary s;
    s.count = count_;
    s.min_ns = min_;
    s.max_ns = max_;
    s.total_ns = total_ > INT64_MAX ? INT64_MAX : static_cast<int64_t>(total_);
    s.mean_ns = static_cast<double>(mean_);
    s.stddev_ns = count_ > 1 ? static_cast<double>(std::sqrt(m2_ / static_cast<long double>(count_ - 1))) : 0.0;
    s.approximate = true;
    auto value_at_rank = [&](uint64_t rank) {  // 1-based
        uint64_t seen = 0;
        for (std::size_t b = 0; b < histogram_.size(); ++b) {
            seen += histogram_[b];
            if (seen >= rank) {
                const uint64_t mid = bucket_low(b) + bucket_width(b) / 2;
                return std::clamp<int64_t>(static_cast<int64_t>(std::min<uint64_t>(mid, INT64_MAX)), min_, max_);
            }
        }
        return max_;
    };
    s.median_ns = static_cast<double>(value_at_rank((count_ + 1) / 2));
    s.p99_ns = value_at_rank(std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(0.99 * static_cast<double>(count_) - 1e-9))));
    return s;
}

}  // namespace lapse::cli
