// `lapse bench`: the benchmark suite, in-process (see bench.hpp).
#include "commands.hpp"

#include <suite.hpp>

#include <lapse/core.hpp>

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

namespace lapse::cli {

namespace {

constexpr int kExitUsage = 2;  // as lapse/commands.hpp: bad arguments, unreadable input

struct BenchArgs {
    std::string config;
    std::string json;
    std::string filter;
    bool quick = false;
    int rounds = 0;
    bool verbose = false;
    bool fail_on_miss = false;
};

void run_bench(const BenchArgs& args)
{
    bench::Options options;
    options.quick = args.quick;
    options.rounds = args.rounds;
    options.filter = args.filter;
    options.verbose = args.verbose;
    if (!args.filter.empty()) {
        try {
            std::regex check(args.filter);
        } catch (const std::regex_error& e) {
            std::cerr << "lapse bench: --filter '" << args.filter << "' is not a valid regular expression: " << e.what()
                      << "\n";
            throw CLI::RuntimeError(kExitUsage);
        }
    }
    if (!args.config.empty()) {
        std::ifstream in(args.config);
        if (!in) {
            std::cerr << "lapse bench: cannot read " << args.config << "\n";
            throw CLI::RuntimeError(kExitUsage);
        }
        std::stringstream ss;
        ss << in.rdbuf();
        options.config_text = ss.str();
        options.config_name = args.config;
        options.config_dir = std::filesystem::absolute(args.config).parent_path().string();
    }
    bench::Result result;
    try {
        result = bench::run(options, std::cerr);
    } catch (const std::exception& e) {
        std::cerr << "lapse bench: " << e.what() << "\n";
        throw CLI::RuntimeError(kExitUsage);
    }
    bench::print_table(result, std::cout);
    if (!args.json.empty()) {
        std::ofstream out(args.json);
        out << bench::to_json(result);
        if (!out) {
            std::cerr << "lapse bench: cannot write " << args.json << "\n";
            throw CLI::RuntimeError(kExitUsage);
        }
    }
    if (args.fail_on_miss && bench::any_missed(result)) throw CLI::RuntimeError(1);
}

}  // namespace

void add_bench_command(CLI::App& app)
{
    auto args = std::make_shared<BenchArgs>();
    CLI::App* cmd = app.add_subcommand("bench", "Measure a backend against its floor: ratios to baselines of the same run");
    cmd->footer(
        "Every figure is the median over rounds of a ratio to a baseline measured in the\n"
        "same round (two steady_clock reads, the C ABI, the bare plugin, ...), with its\n"
        "spread (min-max over rounds) and target. The machine's nproc is printed.\n\n"
        "Examples:\n"
        "  lapse bench                              the CPU plugin, every figure\n"
        "  lapse bench --quick                      a short run that proves the suite works\n"
        "  lapse bench --filter 'forward|cpp_api'   some figures only\n"
        "  lapse bench --config my.toml --json out.json\n");
    cmd->add_option("--config", args->config, "TOML config of the backend to measure (default: cpu, 2 streams)")
        ->check(CLI::ExistingFile);
    cmd->add_option("--json", args->json, "Also write a JSON summary keyed by figure (e.g. cpp_api_vs_c_abi)");
    cmd->add_option("--filter", args->filter, "Only the figures whose key matches this regular expression");
    cmd->add_flag("--quick", args->quick, "Short runs and 100k-window figures: proves it runs, not for decisions");
    cmd->add_option("--rounds", args->rounds, "Rounds to take the median over (default 9, 2 with --quick)")
        ->check(CLI::Range(1, 1000));
    cmd->add_flag("--verbose,-v", args->verbose, "Print Google Benchmark's line for every run");
    cmd->add_flag("--fail-on-miss", args->fail_on_miss, "Exit with status 1 when a target is missed");
    cmd->callback([args] { run_bench(*args); });
}

}  // namespace lapse::cli
