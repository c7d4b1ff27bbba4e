// Helpers shared by the core tests.
#pragma once

#include <lapse/core.hpp>

#include <filesystem>
#include <functional>
#include <string>

namespace test {

// Where the test-double plugins are built.
std::filesystem::path fixture_dir();

// A config parsed from `text` as if it were the file <dir>/<name>.
lapse::Config config(const std::string& text, const std::filesystem::path& dir = fixture_dir(),
                     const std::string& name = "test.toml");

// Runs `fn`, expects it to throw lapse::Error, returns it (fails the test otherwise).
lapse::Error error_of(const std::function<void()>& fn);

// A fresh folder under the system temp dir, removed on destruction.
struct TempDir {
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::filesystem::path path;
};

// Writes `text` to `file`.
void write_file(const std::filesystem::path& file, const std::string& text);

// Keeps the CPU busy for about `ns` nanoseconds (host monotonic clock).
void spin_for_ns(int64_t ns);
int64_t now_ns();

}  // namespace test
