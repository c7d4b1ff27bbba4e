// Bad configs: each error names the file, line, column, key and cause.
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using test::config;
using test::error_of;
namespace fs = std::filesystem;

namespace {
std::string file_in(const fs::path& dir, const std::string& name = "test.toml") { return (dir / name).string(); }
}  // namespace

TEST_CASE("a config that is not TOML is refused with file, line and column", "[config]")
{
    auto e = error_of([] { config("[backend\nplugin = \"cpu\"\n"); });
    CHECK(e.status() == LAPSE_ERROR_CONFIG);
    CHECK_THAT(e.what(), Catch::StartsWith(file_in(test::fixture_dir()) + ":1:"));
    CHECK_THAT(e.what(), Catch::Contains("not valid TOML"));

    test::TempDir dir;
    test::write_file(dir.path / "broken.toml", "[backend]\nplugin = = 3\n");
    auto f = error_of([&] { lapse::Config::from_file(dir.path / "broken.toml"); });
    CHECK(f.status() == LAPSE_ERROR_CONFIG);
    CHECK_THAT(f.what(), Catch::StartsWith((dir.path / "broken.toml").string() + ":2:"));
}

TEST_CASE("a config file that does not exist is named", "[config]")
{
    auto e = error_of([] { lapse::Config::from_file("/nonexistent/lapse.toml"); });
    CHECK(e.status() == LAPSE_ERROR_CONFIG);
    CHECK(std::string(e.what()) == "/nonexistent/lapse.toml: cannot read the config file");
}

TEST_CASE("a config without [backend] says what is missing", "[config]")
{
    lapse::Runtime runtime;
    auto e = error_of([&] { runtime.open(config("[lapse]\n")); });
    CHECK(e.status() == LAPSE_ERROR_CONFIG);
    CHECK(std::string(e.what()) == file_in(test::fixture_dir()) + ": no [backend] table (which plugin should lapse load?)");
}

TEST_CASE("an unknown plugin names itself and the search path", "[config]")
{
    lapse::Runtime runtime;
    auto e = error_of([&] {
        runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"nosuchplugin\"\n"));
    });
    CHECK(e.status() == LAPSE_ERROR_LOAD);
    CHECK_THAT(e.what(), Catch::StartsWith(file_in(test::fixture_dir()) +
                                           ":4:10: backend.plugin: no plugin 'nosuchplugin' (lapse_nosuchplugin.so) "
                                           "in the search path "));
    CHECK_THAT(e.what(), Catch::Contains(test::fixture_dir().string()));
    CHECK_THAT(e.what(), Catch::Contains(lapse::default_plugin_dir().string()));
}

TEST_CASE("a key the plugin never read is refused and the device closed", "[config]")
{
    lapse::Runtime runtime;
    auto e = error_of([&] {
        runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"noclock\"\nstrems = 2\n"));
    });
    CHECK(e.status() == LAPSE_ERROR_CONFIG);
    CHECK(std::string(e.what()) ==
          file_in(test::fixture_dir()) + ":5:1: unknown key 'strems' in [backend] for plugin 'noclock'");
}

TEST_CASE("a value of the wrong type names file, line, column and key", "[config]")
{
    lapse::Runtime runtime;
    auto e = error_of([&] {
        runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"noclock\"\nstreams = \"two\"\n"));
    });
    CHECK(e.status() == LAPSE_ERROR_CONFIG);
    CHECK(std::string(e.what()) ==
          file_in(test::fixture_dir()) + ":5:11: backend.streams: expected an integer, got a string");
}

TEST_CASE("a value out of range is located by config_error", "[config]")
{
    lapse::Runtime runtime;
    auto e = error_of([&] {
        runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"noclock\"\nstreams = 0\n"));
    });
    CHECK(e.status() == LAPSE_ERROR_CONFIG);
    CHECK(std::string(e.what()) == file_in(test::fixture_dir()) + ":5:11: backend.streams: must be between 1 and 64, got 0");
}

TEST_CASE("a relative search path is resolved against the config file's folder", "[config]")
{
    test::TempDir dir;
    fs::create_directories(dir.path / "conf");
    fs::create_directories(dir.path / "plugins");
    fs::copy_file(test::fixture_dir() / "lapse_noclock.so", dir.path / "plugins" / "lapse_noclock.so");
    test::write_file(dir.path / "conf" / "lapse.toml",
                     "[lapse]\nsearch_paths = [\"../plugins\"]\n[backend]\nplugin = \"noclock\"\n");
    // The working directory must play no part: move it somewhere unrelated.
    fs::path old_cwd = fs::current_path();
    fs::current_path("/");
    lapse::Runtime runtime;
    lapse::Device device = runtime.open(lapse::Config::from_file(dir.path / "conf" / "lapse.toml"));
    fs::current_path(old_cwd);
    CHECK(device.info().plugin == "noclock");
    CHECK(device.info().plugin_file == fs::canonical(dir.path / "plugins" / "lapse_noclock.so").string());
}

TEST_CASE("a relative plugin path is resolved against the config file's folder", "[config]")
{
    lapse::Runtime runtime;
    lapse::Device device = runtime.open(config("[backend]\nplugin = \"./lapse_noclock.so\"\n"));
    CHECK(device.info().plugin == "noclock");
}

TEST_CASE("a search path that does not exist is refused with its location", "[config]")
{
    lapse::Runtime runtime;
    auto e = error_of([&] { runtime.open(config("[lapse]\nsearch_paths = [\"nowhere\"]\n[backend]\nplugin = \"cpu\"\n")); });
    CHECK(e.status() == LAPSE_ERROR_CONFIG);
    CHECK(std::string(e.what()) == file_in(test::fixture_dir()) + ":2:17: lapse.search_paths[0]: search path '" +
                                       (test::fixture_dir() / "nowhere").string() + "' is not an existing folder");
}

TEST_CASE("an unknown key in [lapse] is refused", "[config]")
{
    lapse::Runtime runtime;
    auto e = error_of([&] { runtime.open(config("[lapse]\nserch_paths = []\n[backend]\nplugin = \"cpu\"\n")); });
    CHECK(e.status() == LAPSE_ERROR_CONFIG);
    CHECK(std::string(e.what()) == file_in(test::fixture_dir()) +
                                       ":2:1: unknown key 'serch_paths' in [lapse] (known: search_paths, allow_insecure)");
}

TEST_CASE("a pinned sha256 that does not match is refused before loading", "[config]")
{
    lapse::Runtime runtime;
    std::string zeros(64, '0');
    auto e = error_of([&] {
        runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"noclock\"\nsha256 = \"" + zeros + "\"\n"));
    });
    fs::path file = test::fixture_dir() / "lapse_noclock.so";
    CHECK(e.status() == LAPSE_ERROR_LOAD);
    CHECK(std::string(e.what()) == file_in(test::fixture_dir()) + ":5:10: backend.sha256: " + file.string() +
                                       " has SHA-256 " + lapse::sha256_file(file) + ", the config pins " + zeros +
                                       "; refusing to load it");

    SECTION("the right hash opens, in either case")
    {
        std::string hash = lapse::sha256_file(file);
        for (auto& c : hash) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        lapse::Device device = runtime.open(
            config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"noclock\"\nsha256 = \"" + hash + "\"\n"));
        CHECK(device.info().plugin == "noclock");
    }
    SECTION("a pin that is not a hash is a config error")
    {
        auto bad = error_of([&] {
            runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"noclock\"\nsha256 = \"abc\"\n"));
        });
        CHECK(bad.status() == LAPSE_ERROR_CONFIG);
        CHECK(std::string(bad.what()) ==
              file_in(test::fixture_dir()) + ":5:10: backend.sha256: expected 64 hex digits, got 'abc'");
    }
}

TEST_CASE("sha256_file matches a known digest", "[config]")
{
    test::TempDir dir;
    test::write_file(dir.path / "abc", "abc");
    CHECK(lapse::sha256_file(dir.path / "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("a stack that refers back to itself is refused with the path of the cycle", "[config][stack]")
{
    // backend.inner (line 5) opens its own table again: that table closes
    // the cycle, and the message starts at it.
    lapse::Runtime runtime;
    auto e = error_of([&] {
        runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"stack\"\n[backend.inner]\n"
                            "plugin = \"stack\"\nself_loop = true\n"));
    });
    CHECK(e.status() == LAPSE_ERROR_CONFIG);
    CHECK(std::string(e.what()) ==
          file_in(test::fixture_dir()) +
              ":5:1: cycle in the backend stack: stack (backend) -> stack (backend.inner) -> stack (backend.inner)");

    SECTION("the top table opening itself")
    {
        auto top = error_of([&] {
            runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"stack\"\nself_loop = true\n"));
        });
        CHECK(top.status() == LAPSE_ERROR_CONFIG);
        CHECK(std::string(top.what()) ==
              file_in(test::fixture_dir()) + ":3:1: cycle in the backend stack: stack (backend) -> stack (backend)");
    }
    SECTION("an inline table closing the cycle")
    {
        auto in = error_of([&] {
            runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"stack\"\n"
                                "inner = { plugin = \"stack\", self_loop = true }\n"));
        });
        CHECK(in.status() == LAPSE_ERROR_CONFIG);
        CHECK(std::string(in.what()) ==
              file_in(test::fixture_dir()) +
                  ":5:9: cycle in the backend stack: stack (backend) -> stack (backend.inner) -> stack (backend.inner)");
    }
}

TEST_CASE("a stack deeper than the host allows is refused at the first table past the limit", "[config][stack]")
{
    // 40 layers of `stack` over noclock; table i starts at line 3 + 2 i, so
    // the 33rd (i = 32, one past the limit of 32) is at line 67.
    std::string text = "[lapse]\nsearch_paths = [\".\"]\n", table = "backend", chain;
    for (int i = 0; i < 40; ++i) {
        text += "[" + table + "]\nplugin = \"stack\"\n";
        if (i < 32) chain += (i > 0 ? " -> " : "") + std::string("stack (") + table + ")";
        table += ".inner";
    }
    text += "[" + table + "]\nplugin = \"noclock\"\n";
    std::string past = "backend";
    for (int i = 0; i < 32; ++i) past += ".inner";

    lapse::Runtime runtime;
    auto e = error_of([&] { runtime.open(config(text)); });
    CHECK(e.status() == LAPSE_ERROR_CONFIG);
    CHECK(std::string(e.what()) == file_in(test::fixture_dir()) +
                                       ":67:1: backend stack deeper than 32 layers (a cycle?): " + chain + " -> " +
                                       past);
}

TEST_CASE("a failure deep in a stack names every layer on the way", "[config][stack]")
{
    lapse::Runtime runtime;
    auto e = error_of([&] {
        runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n"
                            "[backend]\nplugin = \"stack\"\n"
                            "[backend.inner]\nplugin = \"stack\"\n"
                            "[backend.inner.inner]\nplugin = \"failopen\"\n"));
    });
    CHECK(e.status() == LAPSE_ERROR_UNAVAILABLE);
    CHECK(std::string(e.what()) == "stack (backend) -> stack (backend.inner) -> failopen (backend.inner.inner): "
                                   "failopen: no such device (test double)");

    SECTION("a missing plugin below")
    {
        auto m = error_of([&] {
            runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"stack\"\n"
                                "[backend.inner]\nplugin = \"nosuch\"\n"));
        });
        CHECK(m.status() == LAPSE_ERROR_LOAD);
        CHECK_THAT(m.what(), Catch::StartsWith("stack (backend) -> nosuch (backend.inner): " +
                                               file_in(test::fixture_dir()) + ":6:10: backend.inner.plugin: no plugin 'nosuch'"));
    }
    SECTION("a bad key below")
    {
        auto k = error_of([&] {
            runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"stack\"\n"
                                "[backend.inner]\nplugin = \"noclock\"\nstreams = \"x\"\n"));
        });
        CHECK(k.status() == LAPSE_ERROR_CONFIG);
        CHECK(std::string(k.what()) == "stack (backend) -> noclock (backend.inner): " + file_in(test::fixture_dir()) +
                                           ":7:11: backend.inner.streams: expected an integer, got a string");
    }
    SECTION("a stack that opens works, and counts its layers' files once per use")
    {
        lapse::Device device = runtime.open(config("[lapse]\nsearch_paths = [\".\"]\n[backend]\nplugin = \"stack\"\n"
                                                   "[backend.inner]\nplugin = \"stack\"\n"
                                                   "[backend.inner.inner]\nplugin = \"noclock\"\nstreams = 3\n"));
        CHECK(device.info().plugin == "stack");
        CHECK(device.info().stream_count == 3);
        CHECK(device.info().name == "no-clock test double");
    }
}

TEST_CASE("plugin files others can write to are refused unless allow_insecure", "[config][security]")
{
    test::TempDir dir;
    fs::create_directories(dir.path / "open");
    fs::copy_file(test::fixture_dir() / "lapse_noclock.so", dir.path / "open" / "lapse_noclock.so");
    fs::permissions(dir.path / "open", fs::perms::all);  // 0777
    lapse::Runtime runtime;
    std::string text = "[lapse]\nsearch_paths = [\"open\"]\n[backend]\nplugin = \"noclock\"\n";
    auto e = error_of([&] { runtime.open(config(text, dir.path)); });
    CHECK(e.status() == LAPSE_ERROR_LOAD);
    CHECK_THAT(e.what(), Catch::Contains("refusing " + (dir.path / "open" / "lapse_noclock.so").string() +
                                         ": the folder " + (dir.path / "open").string() + " is world-writable"));
    CHECK_THAT(e.what(), Catch::Contains("allow_insecure = true"));

    lapse::Device device = runtime.open(config("[lapse]\nallow_insecure = true\nsearch_paths = [\"open\"]\n"
                                               "[backend]\nplugin = \"noclock\"\n",
                                               dir.path));
    CHECK(device.info().plugin == "noclock");

    SECTION("a world-writable file in a safe folder")
    {
        fs::create_directories(dir.path / "safe");
        fs::copy_file(test::fixture_dir() / "lapse_noclock.so", dir.path / "safe" / "lapse_noclock.so");
        fs::permissions(dir.path / "safe" / "lapse_noclock.so", fs::perms::others_write, fs::perm_options::add);
        auto w = error_of([&] {
            runtime.open(config("[lapse]\nsearch_paths = [\"safe\"]\n[backend]\nplugin = \"noclock\"\n", dir.path));
        });
        CHECK_THAT(w.what(), Catch::Contains("the file " + (dir.path / "safe" / "lapse_noclock.so").string() +
                                             " is world-writable"));
    }
}

TEST_CASE("the builtin config names the CPU plugin", "[config]")
{
    lapse::Config c = lapse::Config::builtin();
    CHECK(c.backend_plugin() == "cpu");
    CHECK_THAT(std::string(lapse::Config::builtin_text()), Catch::Contains("streams = 2"));
}
