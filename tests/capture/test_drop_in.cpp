// Drop-in recording: environment variables and the [capture] table, with
// no change to the host's code.
#include "capture_test_support.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

using namespace capture_test;

namespace {

// Sets an environment variable for the scope of the object.
struct EnvVar {
    std::string name;
    EnvVar(std::string n, const std::string& value) : name(std::move(n)) { ::setenv(name.c_str(), value.c_str(), 1); }
    ~EnvVar() { ::unsetenv(name.c_str()); }
};

}  // namespace

TEST_CASE("LAPSE_CAPTURE records every named window of every device the runtime opens", "[capture][env]")
{
    TempDir dir;
    const auto file = dir.path / "env.lapse-capture";
    {
        EnvVar capture("LAPSE_CAPTURE", file.string());
        lapse::Runtime runtime;
        lapse::Device a = runtime.open_default();
        lapse::Device b = runtime.open(cpu_config(1));
        for (int i = 0; i < 10; ++i) {
            a.profile(0, [] {}, {.name = "a"});
            b.profile(0, [] {}, {.name = "b"});
        }
    }
    {
        // A second runtime of the same process records into the same file
        // (it does not start it again).
        EnvVar capture("LAPSE_CAPTURE", file.string());
        lapse::Runtime runtime;
        runtime.open_default().profile(0, [] {}, {.name = "c"});
    }
    const ReadBack r = read_all(file);
    CHECK(r.count_by_name() == std::map<std::string, uint64_t>{{"a", 10}, {"b", 10}, {"c", 1}});
    CHECK(r.sources.size() == 3);
    CHECK_FALSE(r.complete);  // closed (its end chunk written) when the process exits
}

TEST_CASE("LAPSE_CAPTURE_BUDGET, _POLICY and _FLUSH_MS set the budget, policy and flush interval of LAPSE_CAPTURE's capture", "[capture][env]")
{
    TempDir dir;
    const auto file = dir.path / "env-settings.lapse-capture";
    EnvVar capture("LAPSE_CAPTURE", file.string());
    EnvVar budget("LAPSE_CAPTURE_BUDGET", "8MiB");
    EnvVar policy("LAPSE_CAPTURE_POLICY", "block");
    EnvVar flush("LAPSE_CAPTURE_FLUSH_MS", "20");
    lapse::Runtime runtime;
    const std::shared_ptr<lapse::Capture> c = runtime.capture();
    REQUIRE(c);
    CHECK(c->options().budget_bytes == 8u << 20);
    CHECK(c->options().policy == lapse::CapturePolicy::block);
    CHECK(c->options().flush_interval == std::chrono::milliseconds(20));
    CHECK(c->stats().budget_bytes == 8u << 20);
}

TEST_CASE("a bad LAPSE_CAPTURE_* value is refused with the variable, its value and the cause", "[capture][env]")
{
    auto error = [](const char* name, const char* value) {
        EnvVar v(name, value);
        try {
            lapse::Runtime runtime;
        } catch (const lapse::Error& e) {
            CHECK(e.status() == LAPSE_ERROR_CONFIG);
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(error("LAPSE_CAPTURE_BUDGET", "8 parsecs") ==
          "LAPSE_CAPTURE_BUDGET='8 parsecs': unknown unit 'parsecs' (B, KiB, MiB or GiB)");
    CHECK(error("LAPSE_CAPTURE_BUDGET", "lots") == "LAPSE_CAPTURE_BUDGET='lots': not a size (say 8MiB, \"512 KiB\" or 4194304)");
    CHECK(error("LAPSE_CAPTURE_BUDGET", "1KiB") == "LAPSE_CAPTURE_BUDGET='1KiB': out of range (64 KiB to 1 TiB)");
    CHECK(error("LAPSE_CAPTURE_BUDGET", "99999999999999999999") ==
          "LAPSE_CAPTURE_BUDGET='99999999999999999999': out of range (64 KiB to 1 TiB)");
    CHECK(error("LAPSE_CAPTURE_POLICY", "maybe") == "LAPSE_CAPTURE_POLICY='maybe': unknown policy (drop or block)");
    CHECK(error("LAPSE_CAPTURE_FLUSH_MS", "soon") ==
          "LAPSE_CAPTURE_FLUSH_MS='soon': not a whole number of milliseconds");
    CHECK(error("LAPSE_CAPTURE_FLUSH_MS", "1000") == "LAPSE_CAPTURE_FLUSH_MS='1000': out of range (1 to 100)");
}

TEST_CASE("LAPSE_CAPTURE_BUDGET reads the units a person writes", "[capture][env]")
{
    TempDir dir;
    int n = 0;
    // One capture per path for the whole process: a fresh path each time.
    auto budget = [&](const char* text) {
        EnvVar capture("LAPSE_CAPTURE", (dir.path / ("units-" + std::to_string(n++) + ".lapse-capture")).string());
        EnvVar b("LAPSE_CAPTURE_BUDGET", text);
        return lapse::Runtime().capture()->options().budget_bytes;
    };
    CHECK(budget("65536") == 65536);
    CHECK(budget("8MiB") == 8u << 20);
    CHECK(budget("512 KiB") == 512u << 10);
    CHECK(budget("1 GiB") == 1u << 30);
    CHECK(budget("100000 B") == 100000);
}

TEST_CASE("LAPSE_CONFIG chooses the config of a host that asks for the default", "[capture][env]")
{
    TempDir dir;
    std::ofstream(dir.path / "three.toml") << "[backend]\nplugin = \"cpu\"\nstreams = 3\n";
    EnvVar config("LAPSE_CONFIG", (dir.path / "three.toml").string());
    lapse::Runtime runtime;
    CHECK(runtime.open_default().info().stream_count == 3);
}

TEST_CASE("LAPSE_DISABLE makes every window a no-op and opens nothing", "[capture][env]")
{
    TempDir dir;
    EnvVar disable("LAPSE_DISABLE", "1");
    EnvVar capture("LAPSE_CAPTURE", (dir.path / "never.lapse-capture").string());
    lapse::Runtime runtime;
    CHECK(runtime.disabled());
    // Not even a plugin that does not exist is looked for.
    lapse::Device device = runtime.open(lapse::Config::from_string("[backend]\nplugin = \"no_such_plugin\"\n", "<t>", {}));
    CHECK(device.info().plugin == "disabled");
    int ran = 0;
    lapse::Duration named = device.profile(0, [&] { device.submit(0, [&] { ++ran; }); }, {.name = "named"});
    lapse::Duration unnamed = device.profile(1, [&] { ++ran; });
    CHECK(ran == 2);  // the host's work still runs
    CHECK_FALSE(named.resolve());
    CHECK(named.state() == lapse::DurationState::not_measured);
    CHECK_FALSE(unnamed.resolve());
    CHECK(unnamed.state() == lapse::DurationState::not_measured);
    CHECK_FALSE(std::filesystem::exists(dir.path / "never.lapse-capture"));
}

TEST_CASE("a [capture] table records the devices of its config", "[capture][config]")
{
    TempDir dir;
    std::ofstream(dir.path / "c.toml") << "[backend]\nplugin = \"cpu\"\n[capture]\npath = \"out.lapse-capture\"\n"
                                          "budget = \"8 MiB\"\npolicy = \"block\"\nflush_ms = 50\n";
    {
        lapse::Runtime runtime;
        lapse::Device device = runtime.open(lapse::Config::from_file(dir.path / "c.toml"));
        device.profile(0, [] {}, {.name = "from config"});
    }
    CHECK(read_all(dir.path / "out.lapse-capture").count_by_name() == std::map<std::string, uint64_t>{{"from config", 1}});
}

TEST_CASE("a [capture] table with an unknown key or a bad value is refused with its location", "[capture][config]")
{
    auto error = [](const std::string& table) {
        try {
            lapse::Runtime().open(lapse::Config::from_string("[backend]\nplugin = \"cpu\"\n[capture]\n" + table, "bad.toml", "/tmp"));
        } catch (const lapse::Error& e) {
            CHECK(e.status() == LAPSE_ERROR_CONFIG);
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(error("path = \"x\"\ncolour = 1\n") == "bad.toml:5:1: unknown key 'colour' in [capture] (known: path, budget, policy, flush_ms)");
    CHECK(error("path = \"x\"\npolicy = \"maybe\"\n") == "bad.toml:5:10: capture.policy: unknown policy 'maybe' (drop or block)");
    CHECK(error("path = \"x\"\nbudget = \"4 parsecs\"\n").find("capture.budget: unknown unit 'parsecs'") != std::string::npos);
    CHECK(error("path = \"x\"\nbudget = 10\n").find("out of range") != std::string::npos);
    CHECK(error("budget = 100000\n").find("[capture] names no path") != std::string::npos);
}

TEST_CASE("Session::save replaces the old file only when the new one is complete", "[capture][session]")
{
    TempDir dir;
    const auto file = dir.path / "run.session";
    lapse::Session one;
    one.add({"first", 1, 0, lapse::TimingMethod::device, lapse::DurationState::ready, 1, 2, lapse::ClockDomain::host_monotonic, LAPSE_OK});
    one.save(file);
    // A save that cannot complete (its folder is gone) leaves nothing behind
    // and the previous file whole.
    lapse::Session two;
    CHECK_THROWS_AS(two.save(dir.path / "missing" / "run.session"), lapse::Error);
    CHECK(lapse::Session::load(file).windows() == one.windows());
    two.save(file);
    CHECK(lapse::Session::load(file).size() == 0);
    for (const auto& entry : std::filesystem::directory_iterator(dir.path))
        CHECK(entry.path().filename() == "run.session");  // no temporary left
}
