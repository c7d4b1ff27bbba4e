// `lapse bench [--config FILE] [--json FILE] [--filter REGEX] [--quick]`:
// runs the benchmark suite (tests/bench/suite) in-process against a backend
// (the built-in CPU stream config, or --config) and prints one table:
// figure, median ratio against a baseline measured in the same run, spread
// over rounds, target, met/missed. Built as its own static library,
// lapse_bench_command (tools/commands/bench/CMakeLists.txt), when Google
// Benchmark is available and LAPSE_BUILD_BENCHMARKS is on.
#pragma once

namespace CLI {
class App;
}

namespace lapse::cli {

// lapse bench [--config FILE] [--json FILE] [--filter REGEX] [--quick] [--rounds N] [--verbose]
void add_bench_command(CLI::App& app);

}  // namespace lapse::cli
