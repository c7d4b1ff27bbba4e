// Helpers every test folder that drives lapse::core shares (tests/core,
// tests/hardening, tests/capture): one copy of each. Catch2 assertions
// report a failure in the test that called them. Never installed.
#pragma once

#include <lapse/core/error.hpp>

#include <filesystem>
#include <functional>
#include <string>

namespace lapse_test {

// Runs `fn`, requires it to throw lapse::Error, returns it (fails the test otherwise).
lapse::Error error_of(const std::function<void()>& fn);

// A private folder (0700: not world-writable, so the core's trust checks
// accept plugins in it) under the temp dir, removed on destruction.
struct TempDir {
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::filesystem::path path;  // canonical
};

// Writes `text` to `file` (replacing it); requires the write to succeed.
void write_file(const std::filesystem::path& file, const std::string& text);
// The whole file ("" when it cannot be read).
std::string read_file(const std::filesystem::path& file);

}  // namespace lapse_test
