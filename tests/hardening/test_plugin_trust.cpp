// The search path is code execution: a plugin file that anyone on the
// machine could replace (world-writable, or in a world-writable folder) is
// refused unless the config says allow_insecure = true.
#include "support.hpp"

#include <catch2/catch.hpp>

namespace fs = std::filesystem;
using hardening::error_of;

namespace {

const std::string advice =
    " (anyone on this machine could replace the code lapse would run); fix the permissions or set allow_insecure = true";

}  // namespace

TEST_CASE("a world-writable plugin file is refused unless allow_insecure", "[trust]")
{
    hardening::TempDir tmp;
    const fs::path plugin = tmp.path / "lapse_open.so";
    fs::copy_file(hardening::fixture("lapse_good.so"), plugin);
    fs::permissions(plugin, fs::perms::others_write, fs::perm_options::add);

    const fs::path config_file = tmp.path / "lapse.toml";
    hardening::write_file(config_file, "[backend]\nplugin = \"lapse_open.so\"\n");
    lapse::Runtime runtime;
    lapse::Error e = error_of([&] { runtime.open(lapse::Config::from_file(config_file)); });
    CHECK(e.status() == LAPSE_ERROR_LOAD);
    CHECK(std::string(e.what()) == config_file.string() + ":2:10: backend.plugin: refusing " + plugin.string() +
                                       ": the file is world-writable" + advice);
    CHECK_FALSE(hardening::mapped(plugin));

    // load_plugin (lapse info) applies the same rule.
    lapse::Error by_name = error_of([&] { runtime.load_plugin(plugin.string()); });
    CHECK(std::string(by_name.what()) == plugin.string() + ": refusing " + plugin.string() +
                                             ": the file is world-writable" + advice);

    SECTION("allow_insecure in the backend table")
    {
        hardening::write_file(config_file, "[backend]\nplugin = \"lapse_open.so\"\nallow_insecure = true\n");
        lapse::Device d = runtime.open(lapse::Config::from_file(config_file));
        CHECK(d.info().plugin == "good");
    }
    SECTION("allow_insecure in the [lapse] table")
    {
        hardening::write_file(config_file, "[lapse]\nallow_insecure = true\n[backend]\nplugin = \"lapse_open.so\"\n");
        lapse::Device d = runtime.open(lapse::Config::from_file(config_file));
        CHECK(d.info().plugin == "good");
    }
    SECTION("allow_insecure = false is still a refusal")
    {
        hardening::write_file(config_file, "[backend]\nplugin = \"lapse_open.so\"\nallow_insecure = false\n");
        CHECK(error_of([&] { runtime.open(lapse::Config::from_file(config_file)); }).status() == LAPSE_ERROR_LOAD);
    }
}

TEST_CASE("a plugin in a world-writable folder is refused unless allow_insecure", "[trust]")
{
    hardening::TempDir tmp;
    const fs::path folder = tmp.path / "shared";
    fs::create_directory(folder);
    const fs::path plugin = folder / "lapse_shared.so";
    fs::copy_file(hardening::fixture("lapse_good.so"), plugin);
    fs::permissions(folder, fs::perms::all);  // 0777, like /tmp without the sticky bit

    const fs::path config_file = tmp.path / "lapse.toml";
    hardening::write_file(config_file, "[lapse]\nsearch_paths = [\"shared\"]\n[backend]\nplugin = \"shared\"\n");
    lapse::Runtime runtime;
    lapse::Error e = error_of([&] { runtime.open(lapse::Config::from_file(config_file)); });
    CHECK(e.status() == LAPSE_ERROR_LOAD);
    CHECK(std::string(e.what()) == config_file.string() + ":4:10: backend.plugin: refusing " + plugin.string() +
                                       ": its folder is world-writable" + advice);
    CHECK_FALSE(hardening::mapped(plugin));

    hardening::write_file(config_file,
                          "[lapse]\nsearch_paths = [\"shared\"]\nallow_insecure = true\n[backend]\nplugin = \"shared\"\n");
    lapse::Device d = runtime.open(lapse::Config::from_file(config_file));
    CHECK(d.info().plugin == "good");
}
