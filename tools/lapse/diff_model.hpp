// The comparison behind `lapse diff` and the HTML report's diff view: the
// windows of a base and a new input grouped by (name, stream, method) --
// device and system times measure different things and are never mixed --
// each group summarized on both sides and its shift judged.
//
// Only measured windows enter the statistics; failed and not-measured ones
// are counted apart per group, and an input's dropped and unflushed
// windows, where it records them, are reported per input.
#pragma once

#include "diff_statistics.hpp"
#include "record_source.hpp"

#include <optional>
#include <string>
#include <vector>

namespace lapse::cli {

struct DiffSide {
    uint64_t count = 0;          // measured windows (all of them, also past the reservoir)
    uint64_t failed = 0;
    uint64_t not_measured = 0;
    bool sampled = false;        // statistics from a reservoir sample of the windows
    double median_ns = 0;
    int64_t p90_ns = 0;
    int64_t p99_ns = 0;
};

enum class Verdict { slower, faster, no_change, too_few, only_in_base, only_in_new };
const char* to_string(Verdict v);

struct DiffRow {
    std::string name;
    Stream stream = 0;
    TimingMethod method = TimingMethod::none;
    DiffSide base, next;
    std::optional<ShiftEstimate> shift;  // when both sides have enough windows
    double change = 0;                   // shift / base median (0.06 = 6 % slower)
    double change_low = 0, change_high = 0;
    Verdict verdict = Verdict::too_few;
};

struct DiffOptions {
    double threshold = 0.02;     // a relative change smaller than this is "no change"
    double confidence = 0.99;    // of the interval, and 1 - the test's level
    std::size_t min_count = 5;   // windows per side below which no verdict is given
    std::size_t reservoir = 1'000'000;  // per group and side
};

struct DiffResult {
    std::vector<DiffRow> rows;  // slower first, then by name, stream, method
    InputInfo base_info, new_info;
    bool any_slower() const;
};

// Reads the two inputs of `source` (input 0 the base, 1 the new one).
// Throws InputError for a bad input.
DiffResult compute_diff(RecordSource& source, const DiffOptions& options);

}  // namespace lapse::cli

#include <nlohmann/json_fwd.hpp>

namespace lapse::cli {

// The result as `lapse diff --json` prints it (diff.cpp).
nlohmann::ordered_json diff_json(const DiffResult& result, const DiffOptions& options);

}  // namespace lapse::cli
