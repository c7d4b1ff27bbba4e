// Helpers shared by the hardening tests: where the fixtures are, what the
// dynamic loader has mapped, a logger whose lines a test can read, and the
// check every hardening test ends with: the host still works.
#pragma once

#include <lapse/core.hpp>
#include <lapse_test/test_support.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

namespace hardening {

// The broken-plugin fixtures (lapse_<kind>.so) and the shipped plugins.
std::filesystem::path fixture(const std::string& file);
std::filesystem::path plugin_dir();

// True when a mapping of `file` (canonical path) is in /proc/self/maps.
bool mapped(const std::filesystem::path& file);

// error_of, TempDir, write_file, read_file: the shared copies (tests/support).
using lapse_test::error_of;
using lapse_test::read_file;
using lapse_test::TempDir;
using lapse_test::write_file;

// A logger that keeps its lines (for checking warnings), at trace level.
struct CapturedLog {
    CapturedLog();
    std::shared_ptr<spdlog::logger> logger;
    std::vector<std::string> lines() const;  // formatted "[level] [who] message"
    bool contains(const std::string& text) const;
    std::string all() const;

private:
    std::shared_ptr<spdlog::sinks::ringbuffer_sink<std::mutex>> sink_;
};

// Proves the process is still healthy after a refusal: opens the CPU
// plugin through `runtime` and measures one window of real work.
void require_host_still_works(lapse::Runtime& runtime);

// The search path joined the way the core prints it ("a:b:c").
std::string joined(const std::vector<std::filesystem::path>& paths);

// Backends the misuse tests run on: "cpu" always, "forward over cpu" when
// the forward plugin is part of the build.
struct BackendCase {
    std::string label;
    std::string toml;  // a complete config (plugin names, no paths)
};
std::vector<BackendCase> backend_cases();

}  // namespace hardening
