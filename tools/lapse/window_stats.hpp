// Statistics per window name, from a session's records: what `lapse run`
// prints (and what `lapse report` can build on).
#pragma once

#include <lapse/core/session.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace lapse::cli {

struct WindowStats {
    std::string name;
    std::size_t count = 0;         // windows measured (ready)
    std::size_t failed = 0;        // FAILED: never counted as fast
    std::size_t not_measured = 0;  // nothing ran / stamps lost: not zero either
    int64_t total_ns = 0, min_ns = 0, median_ns = 0, max_ns = 0;
    std::string methods;  // "device", "system", or "device+system"
};

// One entry per name, in the order names first appear.
std::vector<WindowStats> summarize(const std::vector<WindowRecord>& records);

// A fixed-width table: name, count, total, min, median, max, method.
void print_table(std::ostream& out, const std::vector<WindowStats>& stats);

}  // namespace lapse::cli
