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
};

// The summary of `durations_ns` (any order), or nullopt when it is empty.
// Sorts a copy; the input is not changed.
std::optional<Summary> summarize(std::span<const int64_t> durations_ns);

// Nearest-rank percentile of sorted, non-empty data; `p` in (0, 100].
int64_t nearest_rank(std::span<const int64_t> sorted_ns, double p);

}  // namespace lapse::cli
