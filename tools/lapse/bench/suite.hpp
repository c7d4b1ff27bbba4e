// lapse benchmark suite — measures lapse against its floor, as ratios.
//
// Every figure is a ratio against a baseline measured in the same run (or a
// plain quantity where there is no baseline: bytes per pending window,
// milliseconds to load and open a device, accuracy in percent). The suite
// runs in ROUNDS: each round runs every selected Google Benchmark once, in a
// fixed order that puts each figure's benchmark right next to its baseline,
// so the two see the same machine load; a figure's value is computed per
// round (subject / baseline of that round) and the table shows the median
// over rounds and its spread (min-max). These machines are shared and noisy:
// a single run proves nothing, a median of paired ratios does.
//
// The same code runs from the bench_* programs (one per concern) and from
// `lapse bench` (every concern, in-process).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace lapse::bench {

struct Options {
    // TOML text of the backend to measure ("subject"), and where its relative
    // paths resolve. Empty: the CPU plugin in stream mode with 2 streams.
    std::string config_text;
    std::string config_name = "<builtin bench config>";
    std::string config_dir;
    // Fewer rounds, shorter runs, 100k windows instead of 1M: proves the
    // suite runs (ctest), not for decisions.
    bool quick = false;
    // Rounds (0: 9, or 2 with quick).
    int rounds = 0;
    // Only the figures whose key matches this ECMAScript regex (empty: all).
    std::string filter;
    // Concerns to run (empty: all). See concern_names().
    std::vector<std::string> concerns;
    // Print Google Benchmark's own line for every run.
    bool verbose = false;
};

enum class Target { at_most, at_least, report };

// One line of the table.
struct Figure {
    std::string key;       // stable JSON key, e.g. "cpu_window_vs_two_clock_reads"
    std::string title;     // what is measured
    std::string baseline;  // what it is divided by ("" for a plain quantity)
    std::string unit;      // "x", "B", "%", "ms"
    Target target = Target::report;
    double limit = 0;      // the target's bound (at_most / at_least)
    std::string aim;       // an extra, softer aim, e.g. "aim <= 1.0x"

    // Results.
    bool measured = false;
    double median = 0, min = 0, max = 0;
    double subject_ns = 0, baseline_ns = 0;  // medians of the raw times, where they are times
    int samples = 0;
    std::string note;  // why it is missing, or a detail worth reading
    bool met() const;
    std::string verdict() const;  // "met", "MISSED", "reported", "n/a"
};

struct Result {
    std::vector<Figure> figures;
    int nproc = 0;
    int rounds = 0;
    bool quick = false;
    std::string subject;  // the measured backend, e.g. "cpu (2 worker streams)"
    std::vector<std::string> extra_notes;
};

// The concerns, in the order they run.
const std::vector<std::string>& concern_names();

// Runs the suite; progress and errors go to `log`. Throws lapse::Error when
// the subject backend cannot be opened at all.
Result run(const Options& options, std::ostream& log);

// The table: figure, baseline, median, spread, target, met/missed.
void print_table(const Result& result, std::ostream& out);
// {"cpu_window_vs_two_clock_reads": 0.93, ..., "nproc": 2, "details": {...}}
std::string to_json(const Result& result);

// Any figure with a target that was measured and missed.
bool any_missed(const Result& result);

// main() of a bench_* program: runs `concerns` with the program's flags
// (--rounds N, --quick, --filter REGEX, --config FILE, --json FILE, -v, and
// any --benchmark_* flag Google Benchmark knows).
int program_main(int argc, char** argv, const std::vector<std::string>& concerns);

}  // namespace lapse::bench
