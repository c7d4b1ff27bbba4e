// Summary statistics of window durations, for `lapse report`.
//
// Only measured durations go in: a window that was not measured or that
// failed has no duration, and averaging it in as zero would make a broken
// run look fast. Callers count those separately.
//
// Definitions (stated, because profilers disagree):
//   median  the middle value; for an even count the mean of the two middle
//           values.
//   p99     nearest rank: the smallest value with at least 99 % of the
//           samples at or below it (sorted[ceil(0.99 n) - 1]). It is always
//           a value that was measured; with fewer than 100 samples it is the
//           maximum.
//   stddev  the sample standard deviation (divisor n - 1), 0 for n = 1.
//
// SummaryBuilder takes durations one at a time in bounded memory: exact
// up to exact_limit samples per name, then median and p99 come from a
// log-linear histogram (64 buckets per power of two: within 0.8 % of the
// true value, always inside [min, max]) and the summary says so.
// Totals are summed in 128 bits and saturate: they never overflow or go
// negative.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace lapse::cli {

struct Summary {
    uint64_t count = 0;
    int64_t total_ns = 0;
    int64_t min_ns = 0;
    double median_ns = 0;
    int64_t p99_ns = 0;
    int64_t max_ns = 0;
    double mean_ns = 0;
    double stddev_ns = 0;
    bool approximate = false;  // median and p99 from the histogram
};

class SummaryBuilder {
public:
    static constexpr std::size_t exact_limit = 1u << 16;

    void add(int64_t ns);
    uint64_t count() const noexcept { return count_; }
    // nullopt when nothing was added.
    std::optional<Summary> summary() const;

private:
    static std::size_t bucket_of(uint64_t v) noexcept;
    static uint64_t bucket_low(std::size_t b) noexcept;
    static uint64_t bucket_width(std::size_t b) noexcept;

    uint64_t count_ = 0;
    __int128 total_ = 0;
    int64_t min_ = 0, max_ = 0;
    long double mean_ = 0, m2_ = 0;
    std::vector<int64_t> exact_;      // until exact_limit samples
    std::vector<uint64_t> histogram_; // after
};

// The summary of `durations_ns` (any order), or nullopt when it is empty.
// Sorts a copy; the input is not changed.
std::optional<Summary> summarize(std::span<const int64_t> durations_ns);

// Nearest-rank percentile of sorted, non-empty data; `p` in (0, 100].
int64_t nearest_rank(std::span<const int64_t> sorted_ns, double p);

}  // namespace lapse::cli
