#include "statistics.hpp"

#include <algorithm>
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
    int64_t total = 0;
    uint64_t k = 0;
    for (int64_t v : sorted) {
        total += v;  // 2^63 ns is 292 years of windows: no overflow in practice
        ++k;
        const long double x = static_cast<long double>(v);
        const long double delta = x - mean;
        mean += delta / static_cast<long double>(k);
        m2 += delta * (x - mean);
    }
    s.total_ns = total;
    s.mean_ns = static_cast<double>(mean);
    s.stddev_ns = k > 1 ? static_cast<double>(std::sqrt(m2 / static_cast<long double>(k - 1))) : 0.0;
    return s;
}

}  // namespace lapse::cli
