#include "diff_statistics.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lapse::cli {
namespace {

// How many pairs have after[j] - before[i] <= d.
uint64_t pairs_at_most(std::span<const int64_t> before, std::span<const int64_t> after, int64_t d)
{
    uint64_t count = 0;
    std::size_t i = 0;  // first before[i] >= after[j] - d; moves forward as j does
    for (const int64_t a : after) {
        const int64_t threshold = a - d;
        while (i < before.size() && before[i] < threshold) ++i;
        count += before.size() - i;
    }
    return count;
}

// The normal quantile for a two-sided `confidence` (Acklam's rational
// approximation, relative error below 1.2e-9).
double normal_quantile(double p)
{
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                               1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                               6.680131188771972e+01, -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                               -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    if (p < 0.02425) {
        const double q = std::sqrt(-2 * std::log(p));
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    if (p > 1 - 0.02425) return -normal_quantile(1 - p);
    const double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

}  // namespace

int64_t kth_pairwise_difference(std::span<const int64_t> before, std::span<const int64_t> after, uint64_t k)
{
    if (before.empty() || after.empty()) throw std::invalid_argument("kth_pairwise_difference: empty sample");
    // The answer lies in [after.min - before.max, after.max - before.min].
    int64_t lo = after.front() - before.back(), hi = after.back() - before.front();
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;  // hi - lo >= 0: rounds down
        if (pairs_at_most(before, after, mid) >= k)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

ShiftEstimate hodges_lehmann_shift(std::span<const int64_t> before, std::span<const int64_t> after, double confidence)
{
    const uint64_t n = before.size(), m = after.size();
    const uint64_t pairs = n * m;
    ShiftEstimate est;
    // The median of the pairwise differences.
    const uint64_t mid = (pairs + 1) / 2;
    est.shift_ns = static_cast<double>(kth_pairwise_difference(before, after, mid));
    if (pairs % 2 == 0)
        est.shift_ns = (est.shift_ns + static_cast<double>(kth_pairwise_difference(before, after, mid + 1))) / 2;

    // Mann-Whitney U (after over before, ties count half) and its
    // tie-corrected standard deviation, from one merge of the samples.
    double u = 0, tie_term = 0;
    {
        std::size_t i = 0, j = 0;
        uint64_t before_below = 0;  // before values smaller than the current value
        while (i < n || j < m) {
            const int64_t v = (j >= m || (i < n && before[i] <= after[j])) ? before[i] : after[j];
            uint64_t bi = 0, aj = 0;
            while (i < n && before[i] == v) ++i, ++bi;
            while (j < m && after[j] == v) ++j, ++aj;
            u += static_cast<double>(aj) * (static_cast<double>(before_below) + static_cast<double>(bi) / 2.0);
            before_below += bi;
            const double t = static_cast<double>(bi + aj);
            tie_term += t * t * t - t;
        }
    }
    const double nn = static_cast<double>(n), mm = static_cast<double>(m), total = nn + mm;
    const double variance =
        nn * mm / 12.0 * ((total + 1) - (total > 1 ? tie_term / (total * (total - 1)) : 0.0));
    const double sigma = std::sqrt(std::max(variance, 0.0));
    const double z_crit = normal_quantile(1 - (1 - confidence) / 2);
    if (sigma > 0) {
        const double z = (u - nn * mm / 2.0) / sigma;
        est.p_value = std::erfc(std::fabs(z) / std::sqrt(2.0));
    } else {
        est.p_value = 1;  // every value tied: no evidence of a shift
    }
    // k-th smallest and k-th largest difference bound the interval.
    const double c = std::floor(nn * mm / 2.0 - z_crit * sigma);
    const uint64_t k = static_cast<uint64_t>(std::max(1.0, c));
    if (k > pairs / 2) {  // too few samples for this confidence: the whole range
        est.low_ns = static_cast<double>(after.front() - before.back());
        est.high_ns = static_cast<double>(after.back() - before.front());
    } else {
        est.low_ns = static_cast<double>(kth_pairwise_difference(before, after, k));
        est.high_ns = static_cast<double>(kth_pairwise_difference(before, after, pairs - k + 1));
    }
    return est;
}

void Reservoir::add(int64_t value)
{
    ++seen_;
    if (values_.size() < capacity_) {
        values_.push_back(value);
        return;
    }
    const uint64_t slot = std::uniform_int_distribution<uint64_t>(0, seen_ - 1)(rng_);
    if (slot < capacity_) values_[slot] = value;
}

}  // namespace lapse::cli
