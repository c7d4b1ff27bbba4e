// Broken plugin files, one fixture each. For every one of them, through
// both ways a host loads a plugin (Runtime::load_plugin for tools,
// Runtime::open from a config for everyone else):
//   * the exact message names the file and the cause;
//   * the file is no longer mapped afterwards (/proc/self/maps);
//   * the host keeps working (it opens the CPU plugin and measures).
#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>

namespace fs = std::filesystem;
using hardening::error_of;
using hardening::fixture;
using hardening::mapped;

namespace {

// The path as the core names it: canonical (symlinks resolved).
std::string canonical(const std::string& file) { return fs::canonical(fixture(file)).string(); }

// Loads `file` both ways, checks the status and the exact message both
// times, that nothing stays mapped, and that the host still works.
void require_refused(const std::string& file, lapse_status status, const std::string& message)
{
    const fs::path path = fixture(file);
    REQUIRE(fs::exists(path));
    hardening::CapturedLog log;
    lapse::Runtime runtime({{}, log.logger});

    lapse::Error by_name = error_of([&] { runtime.load_plugin(path.string()); });
    CHECK(by_name.status() == status);
    CHECK(std::string(by_name.what()) == message);
    CHECK_FALSE(mapped(path));

    // The same refusal from a config; a second attempt must not find a
    // half-registered library from the first.
    lapse::Config config = lapse::Config::from_string(
        "[backend]\nplugin = \"" + path.string() + "\"\n", "<broken plugin test>", {});
    for (int attempt = 0; attempt < 2; ++attempt) {
        lapse::Error by_config = error_of([&] { runtime.open(config); });
        CHECK(by_config.status() == status);
        CHECK(std::string(by_config.what()) == message);
        CHECK_FALSE(mapped(path));
    }
    hardening::require_host_still_works(runtime);
}

}  // namespace

TEST_CASE("a text file named like a plugin is refused as not a shared object", "[broken-plugin]")
{
    const std::string p = canonical("lapse_not_elf.so");
    require_refused("lapse_not_elf.so", LAPSE_ERROR_LOAD, p + ": not a loadable shared object: " + p + ": invalid ELF header");
}

TEST_CASE("a shared object without lapse_plugin_entry_v1 is refused", "[broken-plugin]")
{
    require_refused("lapse_no_entry.so", LAPSE_ERROR_LOAD,
                    canonical("lapse_no_entry.so") + ": no symbol lapse_plugin_entry_v1 (not a lapse plugin?)");
}

TEST_CASE("a real ABI 2 plugin (it exports lapse_plugin_entry_v2) is refused without calling it", "[broken-plugin]")
{
    // The major is in the symbol's name: this host cannot find the entry,
    // so it never calls code built against structs it does not know.
    auto exports = lapse::exported_symbols(fixture("lapse_v2_entry.so"));
    REQUIRE(exports.size() == 1);
    CHECK(exports[0].name == "lapse_plugin_entry_v2");
    require_refused("lapse_v2_entry.so", LAPSE_ERROR_LOAD,
                    canonical("lapse_v2_entry.so") + ": no symbol lapse_plugin_entry_v1 (not a lapse plugin?)");
}

TEST_CASE("a v1 entry that answers with an ABI 2 descriptor is refused", "[broken-plugin]")
{
    require_refused("lapse_wrong_major.so", LAPSE_ERROR_LOAD,
                    canonical("lapse_wrong_major.so") + ": built for lapse ABI 2.3, this host speaks 1.0");
}

TEST_CASE("a descriptor that ends before the last ABI 1.0 field is refused", "[broken-plugin]")
{
    require_refused("lapse_short_descriptor.so", LAPSE_ERROR_LOAD,
                    canonical("lapse_short_descriptor.so") + ": descriptor is " +
                        std::to_string(offsetof(lapse_plugin, get_extension)) + " bytes, lapse ABI 1.0 needs at least " +
                        std::to_string(sizeof(lapse_plugin)));
}

TEST_CASE("a descriptor too short to carry its own ABI version is refused", "[broken-plugin]")
{
    require_refused("lapse_tiny_descriptor.so", LAPSE_ERROR_LOAD,
                    canonical("lapse_tiny_descriptor.so") + ": descriptor is 8 bytes, too short to carry an ABI version");
}

TEST_CASE("a descriptor with null required functions is refused, naming each", "[broken-plugin]")
{
    require_refused("lapse_null_functions.so", LAPSE_ERROR_LOAD,
                    canonical("lapse_null_functions.so") + ": descriptor lacks required functions: open, resolve");
}

TEST_CASE("an entry that throws a C++ exception is caught at the boundary and refused", "[broken-plugin]")
{
    require_refused("lapse_entry_throws.so", LAPSE_ERROR_LOAD,
                    canonical("lapse_entry_throws.so") +
                        ": its entry threw a C++ exception: hardening fixture: the entry gave up "
                        "(exceptions must not cross the C ABI)");
}

TEST_CASE("an entry that returns null is refused with the reason it logged", "[broken-plugin]")
{
    require_refused("lapse_entry_null.so", LAPSE_ERROR_LOAD,
                    canonical("lapse_entry_null.so") +
                        ": lapse_plugin_entry_v1 returned no descriptor (it said: needs a licence file that is not there)");
    // And the reason also reached the host's log, under the file's name.
    hardening::CapturedLog log;
    lapse::Runtime runtime({{}, log.logger});
    error_of([&] { runtime.load_plugin(fixture("lapse_entry_null.so").string()); });
    CHECK(log.contains("[error] [entry_null] needs a licence file that is not there"));
}

TEST_CASE("a plugin built for another ELF class is refused, naming the class", "[broken-plugin][arch]")
{
    const std::string p = canonical("lapse_arch_class32.so");
    require_refused("lapse_arch_class32.so", LAPSE_ERROR_LOAD,
                    p + ": not a loadable shared object: " + p + ": wrong ELF class: ELFCLASS32");
}

TEST_CASE("a plugin built for another machine (aarch64) is refused and not mapped", "[broken-plugin][arch]")
{
    // glibc refuses a foreign e_machine but says only "No such file or
    // directory"; the core reads e_machine itself and names the cause.
    const std::string p = canonical("lapse_arch_aarch64.so");
    require_refused("lapse_arch_aarch64.so", LAPSE_ERROR_LOAD,
                    p + ": not a loadable shared object: built for aarch64, and this host is x86-64");
}

TEST_CASE("the aarch64 refusal names the machine, not 'No such file'", "[broken-plugin][arch]")
{
    lapse::Runtime runtime;
    lapse::Error e = error_of([&] { runtime.load_plugin(fixture("lapse_arch_aarch64.so").string()); });
    // The file's own name contains "aarch64": look at the cause only.
    std::string cause = e.what();
    const std::string path = canonical("lapse_arch_aarch64.so");
    for (auto at = cause.find(path); at != std::string::npos; at = cause.find(path)) cause.erase(at, path.size());
    CHECK_THAT(cause, Catch::Contains("aarch64", Catch::CaseSensitive::No) || Catch::Contains("machine"));
}

TEST_CASE("a plugin that exports more than its entry loads, with a warning naming the extras", "[broken-plugin]")
{
    const fs::path path = fixture("lapse_extra_exports.so");
    std::vector<std::string> extras;
    for (const auto& s : lapse::exported_symbols(path))
        if (s.name != LAPSE_ENTRY_SYMBOL) extras.push_back(s.name);
    std::sort(extras.begin(), extras.end());
    REQUIRE(std::find(extras.begin(), extras.end(), "lapse_fixture_leaked_counter") != extras.end());
    REQUIRE(std::find(extras.begin(), extras.end(), "lapse_fixture_leaked_helper") != extras.end());

    hardening::CapturedLog log;
    lapse::Runtime runtime({{}, log.logger});
    {
        lapse::PluginLibrary lib = runtime.load_plugin(path.string());
        REQUIRE(lib);
        CHECK(std::string(lib.descriptor().name) == "extra_exports");
        CHECK(mapped(path));
        bool warned = false;
        for (const auto& line : log.lines()) {
            const std::string prefix =
                "[warning] [extra_exports] " + fs::canonical(path).string() + " exports more than lapse_plugin_entry_v1: ";
            if (line.rfind(prefix, 0) != 0) continue;
            warned = true;
            for (const auto& name : extras) CHECK_THAT(line, Catch::Contains(name));
        }
        CHECK(warned);
        INFO(log.all());
    }
    // The last handle is gone: the file is unloaded.
    CHECK_FALSE(mapped(path));
    hardening::require_host_still_works(runtime);
}

TEST_CASE("a good plugin built like the shipped ones exports only its entry and loads silently", "[broken-plugin]")
{
    // Positive control for the checks above: same stub, no flaw.
    const fs::path path = fixture("lapse_good.so");
    auto exports = lapse::exported_symbols(path);
    REQUIRE(exports.size() == 1);
    CHECK(exports[0].name == LAPSE_ENTRY_SYMBOL);
    CHECK(exports[0].function);
    hardening::CapturedLog log;
    lapse::Runtime runtime({{}, log.logger});
    {
        lapse::Device device = runtime.open(
            lapse::Config::from_string("[backend]\nplugin = \"" + path.string() + "\"\n", "<good>", {}));
        CHECK(device.info().plugin == "good");
        CHECK(mapped(path));
    }
    CHECK_FALSE(mapped(path));
    for (const auto& line : log.lines()) CHECK_THAT(line, !Catch::StartsWith("[warning]"));
}
