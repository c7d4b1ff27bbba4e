// Statistics per window name, from a session's records: what `lapse run`
// prints (and what `lapse report` can build on).
#pragma once

#include <lapse/core/duration.hpp>
#include <lapse/core/session.hpp>

#include <cstdint>
#include <iosfwd>
#include <span>
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
    // Measured windows that are partial: closed without flush with work
    // still queued (and how many operations, summed), or holding earlier work.
    std::size_t work_queued = 0;
    uint64_t queued_ops = 0;
    std::size_t held_earlier = 0;
};

// Why windows of one name failed: one entry per (name, status, message).
struct FailureCause {
    std::string name;
    lapse_status status = LAPSE_OK;
    std::string message;
    std::size_t count = 0;
};

// One entry per name, in the order names first appear.
std::vector<WindowStats> summarize(const std::vector<WindowRecord>& records);

// A fixed-width table: name, count, total, min, median, max, method, and
// after a row what its count leaves out (failed, not measured) or what its
// numbers do not cover (work left queued, earlier work held).
void print_table(std::ostream& out, const std::vector<WindowStats>& stats);

// The causes of the failed durations among `durations`, in the order they
// first appear (an unnamed window's name is "").
std::vector<FailureCause> failure_causes(std::span<const Duration> durations);

// "why windows failed:" and a line per cause; nothing when there is none.
void print_failure_causes(std::ostream& out, const std::vector<FailureCause>& causes);

// The footnote on partial windows; nothing when no row has one.
void print_partial_note(std::ostream& out, const std::vector<WindowStats>& stats);

}  // namespace lapse::cli
