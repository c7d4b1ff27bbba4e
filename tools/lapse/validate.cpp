// lapse validate PLUGIN: the conformance suite, each check in a child
// process (see checks.hpp for the checks, child_runner.hpp for the runner).
//
// Exit status: 0 when no check failed (skipped checks are printed as SKIP
// with their reason and do not fail the run), 1 when any check failed, 2 for
// bad arguments or a plugin that cannot be found, 3 with --require-device
// when checks were skipped because the device is unavailable (CUDA without
// a GPU): a CI job that must exercise the hardware says so.
#include "checks.hpp"
#include "child_runner.hpp"
#include "plugin_arg.hpp"
#include "terminal.hpp"
#include "validate_output.hpp"

#include "commands.hpp"
#include <lapse/core.hpp>

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <regex>
#include <sstream>

namespace lapse::cli {
namespace {

// --timeout bounds: below 10 ms no check can open a device; past a day the
// value is a typo (1e10 s overflows the milliseconds and times out at once).
constexpr double min_timeout_s = 0.01;
constexpr double max_timeout_s = 86400;

std::string toml_string(const std::string& s)
{
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

struct Options {
    std::string plugin;
    std::string under;
    std::string inner;
    std::string config;
    std::string only;
    uint64_t seed = 0;
    bool json = false;
    std::string junit;
    double timeout_s = 60;
    bool list = false;
    bool verbose = false;
    bool require_device = false;
};

int run_validate(const Options& opt, bool seed_given)
{
    if (opt.list) {
        for (const Check& c : all_checks()) std::cout << c.name << "  " << c.description << '\n';
        return 0;
    }
    std::regex only;
    try {
        only = std::regex(opt.only.empty() ? std::string(".*") : opt.only);
    } catch (const std::regex_error& e) {
        std::cerr << "lapse validate: --only: not a regular expression: " << e.what() << '\n';
        return exit_usage;
    }

    if (opt.plugin.empty() && opt.config.empty()) {
        std::cerr << "lapse validate: name the PLUGIN to check, or a --config FILE whose [backend] names it\n";
        return exit_usage;
    }
    CheckContext ctx;
    ValidateRun run;
    run.plugin_arg = opt.plugin.empty() ? Config::from_file(opt.config).backend_plugin() : opt.plugin;
    run.under = opt.under;
    // Only paths are resolved here; loading happens in the children, so a
    // plugin that crashes while loading is a reported check, not a crash
    // of this process.
    try {
        Runtime runtime;
        std::optional<Config> config;
        if (!opt.config.empty()) config = Config::from_file(opt.config);
        ctx.plugin_file = std::filesystem::absolute(
                              runtime.find_plugin(plugin_argument(run.plugin_arg), config ? &*config : nullptr))
                              .string();
        if (config) {
            // The file checks look at PLUGIN and the device checks open the
            // config's [backend]: they must be one file, or the run would
            // report on one plugin after opening another.
            const std::string named = config->backend_plugin();
            if (named.empty()) {
                std::cerr << "lapse validate: --config " << opt.config << ": [backend] names no plugin\n";
                return exit_usage;
            }
            std::error_code ec;
            const std::filesystem::path opened = runtime.find_plugin(named, &*config);
            if (!std::filesystem::equivalent(opened, ctx.plugin_file, ec)) {
                std::cerr << "lapse validate: --config " << opt.config << " opens " << opened.string()
                          << " ([backend] plugin = \"" << named << "\"), not PLUGIN " << ctx.plugin_file
                          << ": name the same plugin, or leave PLUGIN out and the config's is checked\n";
                return exit_usage;
            }
            std::ifstream in(opt.config);
            std::stringstream text;
            text << in.rdbuf();
            ctx.config_text = text.str();
            ctx.config_name = opt.config;
            ctx.config_dir = std::filesystem::absolute(opt.config).parent_path().string();
        } else {
            // [backend] is the wrapper when there is one; the plugin under
            // test goes one level down, and the backend it stacks on (for a
            // stacking plugin) one level further.
            std::string table = "backend";
            std::string text;
            if (!opt.under.empty()) {
                text += "[" + table + "]\nplugin = " + toml_string(opt.under) + "\n";
                table += ".inner";
            }
            text += "[" + table + "]\nplugin = " + toml_string(ctx.plugin_file) + "\n";
            if (!opt.inner.empty()) text += "[" + table + ".inner]\nplugin = " + toml_string(opt.inner) + "\n";
            ctx.config_text = text;
            ctx.config_name = "(validate: " + (opt.under.empty() ? std::string("bare") : "under " + opt.under) +
                              (opt.inner.empty() ? "" : ", on " + opt.inner) + ")";
            ctx.config_dir = std::filesystem::current_path().string();
        }
    } catch (const std::exception& e) {
        std::cerr << "lapse validate: " << e.what() << '\n';
        return exit_usage;
    }
    ctx.seed = seed_given ? opt.seed : std::random_device{}();
    run.plugin_file = ctx.plugin_file;
    run.config_name = ctx.config_name;
    run.seed = ctx.seed;

    std::vector<const Check*> selected;
    for (const Check& c : all_checks())
        if (std::regex_search(c.name, only)) selected.push_back(&c);
    if (selected.empty()) {
        std::cerr << "lapse validate: --only " << opt.only << " selects no check (see --list)\n";
        return exit_usage;
    }

    const bool text = !opt.json;
    Progress progress;
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(opt.timeout_s * 1000));
    for (std::size_t i = 0; i < selected.size(); ++i) {
        const Check& check = *selected[i];
        progress.update("[" + std::to_string(i + 1) + "/" + std::to_string(selected.size()) + "] " + check.name);
        ChildResult r = run_in_child(
            [&]() -> std::pair<Outcome, std::string> {
                std::string note;
                try {
                    check.run(ctx, note);
                } catch (const CheckSkipped& e) {
                    return {Outcome::skip, e.what()};
                } catch (const CheckFailed& e) {
                    return {Outcome::fail, e.what()};
                }
                return {Outcome::pass, note};
            },
            timeout);
        run.checks.push_back({check.name, check.description, std::move(r)});
        if (text) {
            progress.done();
            print_text_line(std::cout, run.checks.back(), opt.verbose);
            std::cout.flush();
        }
    }
    progress.done();

    if (opt.json) print_json(std::cout, run);
    else print_text_summary(std::cout, run);
    if (!opt.junit.empty()) {
        std::ofstream out(opt.junit, std::ios::trunc);
        write_junit(out, run);
        out.flush();
        if (!out) {
            std::cerr << "lapse validate: cannot write " << opt.junit << '\n';
            return exit_usage;
        }
    }
    if (run.count(Outcome::fail) > 0) return exit_failure;
    if (opt.require_device)
        for (const auto& c : run.checks)
            if (c.result.outcome == Outcome::skip && c.result.message.rfind("device unavailable", 0) == 0) {
                std::cerr << "lapse validate: the device is unavailable (" << c.result.message
                          << "); --require-device makes that exit " << exit_unavailable << '\n';
                return exit_unavailable;
            }
    return 0;
}

}  // namespace

void add_validate_command(CLI::App& app)
{
    auto opt = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("validate", "Run the conformance suite on a plugin, each check in a child process");
    cmd->footer(R"HELP(Checks the plugin at the C ABI: exports, load time, descriptor, negotiation
with newer/older/shorter/other-major hosts, open/close, the window rules
(nest, overlap, split across threads, opened_on, abandon, flush, empty
windows), token misuse, resolve timeouts, concurrent use and close with
windows open. Each check runs in a forked child with a timeout: a crash is
reported as "crashed: SIGSEGV", a hang as "timed out", and the next check
runs. A device the host reports unavailable (no driver, no GPU) makes the
device checks SKIP with the reason.

Exit status: 0 no check failed (SKIP lines do not fail the run); 1 a check
failed; 2 bad arguments (a --timeout outside 0.01..86400 s, a --config whose
[backend] names another plugin) or plugin not found; 3 with
--require-device when checks skipped because the device is unavailable.
Killing validate kills the check it is running (its child dies with it).

Examples:
  lapse validate cpu
  lapse validate ./lapse_mine.so --under forward
  lapse validate fusion --inner cpu --under forward
  lapse validate cuda --only '^window\.' --seed 42
  lapse validate vulkan --config vulkan.toml --junit validate.xml
  lapse validate --config vulkan.toml
  lapse validate --list cpu)HELP");
    cmd->add_option("PLUGIN", opt->plugin,
                    "Plugin name or path (may be left out with --config: its [backend] plugin is checked)");
    auto* under = cmd->add_option("--under", opt->under,
                                  "Open the plugin under a stacking plugin (e.g. forward): [backend] plugin=NAME, "
                                  "[backend.inner] plugin=PLUGIN");
    auto* inner = cmd->add_option("--inner", opt->inner,
                                  "For a stacking plugin (forward, fusion): the backend it stacks on, as "
                                  "[inner] plugin=NAME");
    cmd->add_option("--config", opt->config,
                    "Open the device with this config file's [backend], which must name PLUGIN (or replaces it)")
        ->check(CLI::ExistingFile)
        ->excludes(under)
        ->excludes(inner);
    cmd->add_option("--only", opt->only, "Run the checks whose name matches this regular expression");
    auto* seed = cmd->add_option("--seed", opt->seed, "Seed for the randomised checks (printed when not given)");
    auto* json = cmd->add_flag("--json", opt->json, "Print the results as JSON");
    cmd->add_option("--junit", opt->junit, "Also write JUnit XML to FILE")->excludes(json);
    cmd->add_option("--timeout", opt->timeout_s, "Seconds each check may take before it is killed")
        ->check(CLI::Range(min_timeout_s, max_timeout_s))
        ->capture_default_str();
    cmd->add_flag("--list", opt->list, "List the checks and exit");
    cmd->add_flag("--verbose,-v", opt->verbose, "Show each check's stderr, also when it passes");
    cmd->add_flag("--require-device", opt->require_device,
                  "Exit 3 when checks skipped because the device is unavailable");
    cmd->callback([opt, seed] {
        const int code = run_validate(*opt, seed->count() > 0);
        if (code != 0) throw CLI::RuntimeError(code);
    });
}

}  // namespace lapse::cli
