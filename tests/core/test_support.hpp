// Helpers shared by the core tests.
#pragma once

#include <lapse/core.hpp>
#include <lapse_test/test_support.hpp>

#include <filesystem>
#include <functional>
#include <string>

namespace test {

// Where the test-double plugins are built.
std::filesystem::path fixture_dir();

// A config parsed from `text` as if it were the file <dir>/<name>.
lapse::Config config(const std::string& text, const std::filesystem::path& dir = fixture_dir(),
                     const std::string& name = "test.toml");

// A runtime that finds the test-double plugins (one per test binary), and a
// device opened on it from a [backend] table's body.
lapse::Runtime& fixture_runtime();
lapse::Device open_backend(const std::string& backend_table);

// error_of, TempDir, write_file: the shared copies (tests/support).
using lapse_test::error_of;
using lapse_test::TempDir;
using lapse_test::write_file;

// Keeps the CPU busy for about `ns` nanoseconds (host monotonic clock).
void spin_for_ns(int64_t ns);
int64_t now_ns();

}  // namespace test
