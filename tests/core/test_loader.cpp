// Loading plugin files: broken files are refused with the file and the
// cause, good ones are counted per use and unloaded after the last.
#include "test_support.hpp"

#include <catch2/catch.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <dlfcn.h>

#include <sstream>

using test::error_of;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& file) { return (test::fixture_dir() / file).string(); }

std::string load_error(const std::string& file)
{
    lapse::Runtime runtime;
    auto e = error_of([&] { runtime.load_plugin(fixture(file)); });
    CHECK(e.status() == LAPSE_ERROR_LOAD);
    return e.what();
}

// Whether the dynamic loader still has `file` mapped (without loading it).
bool still_loaded(const fs::path& file)
{
    void* handle = dlopen(fs::canonical(file).c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) return false;
    dlclose(handle);
    return true;
}

}  // namespace

TEST_CASE("a file that is not a shared object is refused", "[loader]")
{
    CHECK_THAT(load_error("lapse_notelf.so"),
               Catch::StartsWith(fixture("lapse_notelf.so") + ": not a loadable shared object: "));
}

TEST_CASE("a shared object without the entry symbol is refused", "[loader]")
{
    CHECK(load_error("lapse_broken_no_entry.so") ==
          fixture("lapse_broken_no_entry.so") + ": no symbol lapse_plugin_entry_v1 (not a lapse plugin?)");
}

TEST_CASE("a descriptor shorter than ABI 1.0 is refused", "[loader]")
{
    CHECK(load_error("lapse_broken_short_descriptor.so") ==
          fixture("lapse_broken_short_descriptor.so") + ": descriptor is 40 bytes, lapse ABI 1.0 needs at least " +
              std::to_string(sizeof(lapse_plugin)));
}

TEST_CASE("a plugin built for another ABI major is refused", "[loader]")
{
    CHECK(load_error("lapse_broken_wrong_major.so") ==
          fixture("lapse_broken_wrong_major.so") + ": built for lapse ABI 2.0, this host speaks 1.0");
}

TEST_CASE("a descriptor with null required functions is refused", "[loader]")
{
    CHECK(load_error("lapse_broken_null_functions.so") ==
          fixture("lapse_broken_null_functions.so") +
              ": descriptor lacks required functions: open, close, describe, sync, submit, profile_start, "
              "profile_end, profile_abandon, resolve");
}

TEST_CASE("an entry that throws is caught and reported", "[loader]")
{
    CHECK(load_error("lapse_broken_entry_throws.so") ==
          fixture("lapse_broken_entry_throws.so") +
              ": its entry threw a C++ exception: entry exploded (test double) (exceptions must not cross the C ABI)");
}

TEST_CASE("an entry that returns no descriptor is reported with what it logged", "[loader][log]")
{
    std::ostringstream log;
    auto logger = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
    lapse::Runtime runtime(lapse::RuntimeOptions{{}, logger});
    auto e = error_of([&] { runtime.load_plugin(fixture("lapse_broken_entry_null.so")); });
    CHECK(std::string(e.what()) == fixture("lapse_broken_entry_null.so") +
                                       ": lapse_plugin_entry_v1 returned no descriptor (it said: refusing: test "
                                       "double says no)");
    // Plugin logs reach the host's logger, prefixed with the plugin's name.
    CHECK_THAT(log.str(), Catch::Contains("[broken_entry_null] refusing: test double says no"));
}

TEST_CASE("a refused file does not stay loaded", "[loader]")
{
    load_error("lapse_broken_wrong_major.so");
    CHECK_FALSE(still_loaded(fixture("lapse_broken_wrong_major.so")));
}

TEST_CASE("a good plugin loads without opening a device, and exports only its entry", "[loader]")
{
    lapse::Runtime runtime(lapse::RuntimeOptions{{test::fixture_dir()}, nullptr});
    lapse::PluginLibrary lib = runtime.load_plugin("noclock");
    REQUIRE(lib);
    CHECK(lib.descriptor().name == std::string("noclock"));
    CHECK(lib.descriptor().abi_major == LAPSE_ABI_MAJOR);
    CHECK(lib.path() == fs::canonical(fixture("lapse_noclock.so")));
    auto symbols = lapse::exported_symbols(lib.path());
    REQUIRE(symbols.size() == 1);
    CHECK(symbols[0].name == "lapse_plugin_entry_v1");
    CHECK(symbols[0].function);
}

TEST_CASE("exported_symbols lists what a non-plugin exports and refuses non-ELF files", "[loader]")
{
    auto symbols = lapse::exported_symbols(fixture("lapse_broken_no_entry.so"));
    bool found = false;
    for (const auto& s : symbols) found = found || s.name == "not_a_lapse_plugin";
    CHECK(found);
    auto e = error_of([] { lapse::exported_symbols(fixture("lapse_notelf.so")); });
    CHECK(std::string(e.what()) == fixture("lapse_notelf.so") + ": not an ELF file");
}

TEST_CASE("a library stays loaded until its last device and handle are gone", "[loader]")
{
    fs::path file = fixture("lapse_noclock.so");
    lapse::Runtime runtime(lapse::RuntimeOptions{{test::fixture_dir()}, nullptr});
    {
        lapse::PluginLibrary a = runtime.load_plugin("noclock");
        lapse::PluginLibrary b = runtime.load_plugin(file.string());
        // One load per file: both handles see the same descriptor.
        CHECK(&a.descriptor() == &b.descriptor());
        lapse::Device device = runtime.open(test::config("[backend]\nplugin = \"noclock\"\n"));
        a = lapse::PluginLibrary();
        b = lapse::PluginLibrary();
        CHECK(still_loaded(file));  // the device still needs it
        lapse::Device moved = std::move(device);
        CHECK(still_loaded(file));
    }
    CHECK_FALSE(still_loaded(file));
}

TEST_CASE("a stacked plugin is counted once per use", "[loader][stack]")
{
    fs::path file = fixture("lapse_noclock.so");
    lapse::Runtime runtime;
    {
        lapse::Device stacked = runtime.open(test::config(
            "[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"stack\"\n[backend.inner]\nplugin = \"noclock\"\n"));
        {
            lapse::Device direct = runtime.open(test::config("[backend]\nplugin = \"lapse_noclock.so\"\n"));
            CHECK(still_loaded(file));
        }
        CHECK(still_loaded(file));  // the stack's inner device still uses it
    }
    CHECK_FALSE(still_loaded(file));
}

TEST_CASE("the default plugin folder is lapse/ beside the core library", "[loader]")
{
    fs::path dir = lapse::default_plugin_dir();
    CHECK(dir.filename() == "lapse");
    CHECK(fs::exists(dir.parent_path() / "liblapse_core.so"));
}

TEST_CASE("LAPSE_PLUGIN_PATH prepends absolute folders to the search path", "[loader]")
{
    std::string value = "relative/ignored:" + test::fixture_dir().string();
    ::setenv("LAPSE_PLUGIN_PATH", value.c_str(), 1);
    lapse::Runtime runtime;
    auto paths = runtime.search_paths();
    ::unsetenv("LAPSE_PLUGIN_PATH");
    REQUIRE(paths.size() == 2);
    CHECK(paths[0] == test::fixture_dir());
    CHECK(paths[1] == lapse::default_plugin_dir());
    ::setenv("LAPSE_PLUGIN_PATH", test::fixture_dir().c_str(), 1);
    lapse::PluginLibrary lib = runtime.load_plugin("clock");
    ::unsetenv("LAPSE_PLUGIN_PATH");
    CHECK(lib.descriptor().name == std::string("clock"));
}
