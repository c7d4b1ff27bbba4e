// The search path is code execution: a plugin file that anyone on the
// machine could replace is refused unless the config says allow_insecure =
// true: world-writable itself, a world-writable folder anywhere on its path
// or on the path of any link of its symlink chain, or a world-writable
// folder its RUNPATH sends the loader to for its dependencies.
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
                                       ": the file " + plugin.string() + " is world-writable" + advice);
    CHECK_FALSE(hardening::mapped(plugin));

    // load_plugin (lapse info) applies the same rule.
    lapse::Error by_name = error_of([&] { runtime.load_plugin(plugin.string()); });
    CHECK(std::string(by_name.what()) == plugin.string() + ": refusing " + plugin.string() +
                                             ": the file " + plugin.string() + " is world-writable" + advice);

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
                                       ": the folder " + folder.string() + " is world-writable" + advice);
    CHECK_FALSE(hardening::mapped(plugin));

    hardening::write_file(config_file,
                          "[lapse]\nsearch_paths = [\"shared\"]\nallow_insecure = true\n[backend]\nplugin = \"shared\"\n");
    lapse::Device d = runtime.open(lapse::Config::from_file(config_file));
    CHECK(d.info().plugin == "good");
}

TEST_CASE("a world-writable folder anywhere above the plugin is refused, not only its own", "[trust]")
{
    hardening::TempDir tmp;
    const fs::path open_folder = tmp.path / "open";
    const fs::path plugin_folder = open_folder / "private" / "plugins";
    fs::create_directories(plugin_folder);
    const fs::path plugin = plugin_folder / "lapse_deep.so";
    fs::copy_file(hardening::fixture("lapse_good.so"), plugin);
    fs::permissions(open_folder, fs::perms::all);  // the grandparent's grandparent: anyone may rename private/
    fs::permissions(open_folder / "private", fs::perms::owner_all);
    fs::permissions(plugin_folder, fs::perms::owner_all);

    lapse::Runtime runtime;
    lapse::Error e = error_of([&] { runtime.load_plugin(plugin.string()); });
    CHECK(e.status() == LAPSE_ERROR_LOAD);
    CHECK(std::string(e.what()) == plugin.string() + ": refusing " + plugin.string() + ": the folder " +
                                       open_folder.string() + " is world-writable" + advice);
    CHECK_FALSE(hardening::mapped(plugin));

    SECTION("a sticky world-writable folder (like /tmp) is fine when the entry in it is ours")
    {
        fs::permissions(open_folder, fs::perms::all | fs::perms::sticky_bit);
        CHECK(runtime.load_plugin(plugin.string()).name() == "good");
    }
}

TEST_CASE("every link of a symlink chain is checked: a link through a world-writable folder is refused",
          "[trust]")
{
    hardening::TempDir tmp;
    const fs::path safe = tmp.path / "safe";
    const fs::path open_folder = tmp.path / "open";
    fs::create_directory(safe);
    fs::create_directory(open_folder);
    const fs::path real = safe / "lapse_real.so";
    fs::copy_file(hardening::fixture("lapse_good.so"), real);
    // plugins/lapse_linked.so -> ../open/hop.so -> ../safe/lapse_real.so: the
    // file and both ends look fine, the middle link anyone could replace.
    const fs::path plugins = tmp.path / "plugins";
    fs::create_directory(plugins);
    fs::create_symlink("../safe/lapse_real.so", open_folder / "hop.so");
    fs::create_symlink("../open/hop.so", plugins / "lapse_linked.so");
    fs::permissions(open_folder, fs::perms::all);

    lapse::Runtime runtime;
    const fs::path plugin = plugins / "lapse_linked.so";
    lapse::Error e = error_of([&] { runtime.load_plugin(plugin.string()); });
    CHECK(e.status() == LAPSE_ERROR_LOAD);
    CHECK(std::string(e.what()) == plugin.string() + ": refusing " + plugin.string() + ": the folder " +
                                       open_folder.string() + " is world-writable (through the symlink " +
                                       plugin.string() + ")" + advice);
    CHECK_FALSE(hardening::mapped(real));

    SECTION("the same chain through folders nobody else may write to loads")
    {
        fs::permissions(open_folder, fs::perms::owner_all);
        CHECK(runtime.load_plugin(plugin.string()).name() == "good");
    }
}

TEST_CASE("a RUNPATH that sends the loader to a world-writable folder is refused, $ORIGIN expanded", "[trust]")
{
    hardening::TempDir tmp;
    const fs::path plugin = tmp.path / "lapse_runpath.so";
    fs::copy_file(hardening::fixture("lapse_runpath.so"), plugin);  // RUNPATH $ORIGIN/deps
    const fs::path deps = tmp.path / "deps";
    fs::create_directory(deps);
    fs::permissions(deps, fs::perms::all);  // anyone may drop a libc.so.6 there

    lapse::Runtime runtime;
    lapse::Error e = error_of([&] { runtime.load_plugin(plugin.string()); });
    CHECK(e.status() == LAPSE_ERROR_LOAD);
    CHECK(std::string(e.what()) == plugin.string() + ": refusing " + plugin.string() +
                                       ": its dependencies are searched in " + deps.string() +
                                       " (RUNPATH $ORIGIN/deps), and the folder " + deps.string() +
                                       " is world-writable" + advice);
    CHECK_FALSE(hardening::mapped(plugin));

    SECTION("a RUNPATH folder that does not exist, under folders nobody else may write to, is fine")
    {
        fs::remove(deps);
        CHECK(runtime.load_plugin(plugin.string()).name() == "good");
    }
    SECTION("allow_insecure still loads it")
    {
        const fs::path config_file = tmp.path / "lapse.toml";
        hardening::write_file(config_file, "[backend]\nplugin = \"lapse_runpath.so\"\nallow_insecure = true\n");
        lapse::Device d = runtime.open(lapse::Config::from_file(config_file));
        CHECK(d.info().plugin == "good");
    }
}
