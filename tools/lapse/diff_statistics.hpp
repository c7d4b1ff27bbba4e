// The statistics of `lapse diff`: the shift between two samples of window
// durations, by Hodges-Lehmann with the Mann-Whitney (Wilcoxon rank-sum)
// test (docs/diff.md says why this over a bootstrap).
//
//   shift     the Hodges-Lehmann estimate: the median of all pairwise
//             differences after - before. Robust to outliers (a few
//             preempted windows move it little) and exact, not resampled.
//   interval  the distribution-free confidence interval that goes with it:
//             the k-th smallest and k-th largest pairwise difference, k
//             from the Mann-Whitney U distribution (normal approximation,
//             variance corrected for ties).
//   p_value   the two-sided Mann-Whitney test of "no shift".
// Pairwise differences are never materialized: the k-th smallest of the
// n*m differences is found by bisection on its value, counting with one
// merge pass over the two sorted samples (O((n + m) log range)).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace lapse::cli {

struct ShiftEstimate {
    double shift_ns = 0;
    double low_ns = 0;   // the confidence interval of the shift
    double high_ns = 0;
    double p_value = 1;
};

// Both spans sorted ascending and non-empty; `confidence` in (0, 1).
ShiftEstimate hodges_lehmann_shift(std::span<const int64_t> before_sorted, std::span<const int64_t> after_sorted,
                                   double confidence);

// The k-th smallest (1-based, k <= n*m) of after[j] - before[i] over all
// pairs; both sorted ascending.
int64_t kth_pairwise_difference(std::span<const int64_t> before_sorted, std::span<const int64_t> after_sorted,
                                uint64_t k);

// A uniform sample of at most `capacity` values of a stream (Algorithm R),
// so memory per window name is bounded however long the input; exact (all
// values) up to the capacity. Seeded: the same input gives the same sample.
class Reservoir {
public:
    explicit Reservoir(std::size_t capacity = 1'000'000, uint64_t seed = 0x1a95e) : capacity_(capacity), rng_(seed) {}
    void add(int64_t value);
    uint64_t seen() const { return seen_; }
    bool sampled() const { return seen_ > values_.size(); }  // whether values() is a sample, not all
    std::vector<int64_t>& values() { return values_; }

private:
    std::size_t capacity_;
    uint64_t seen_ = 0;
    std::mt19937_64 rng_;
    std::vector<int64_t> values_;
};

}  // namespace lapse::cli
