// The conformance suite of `lapse validate`: named checks of a plugin at the
// C ABI level. Each check runs in a child process (child_runner.hpp), so a
// check may crash or hang; it reports by returning (pass), or by throwing
// CheckFailed / CheckSkipped.
//
// Check names are stable ("window.nested"): scripts select them with
// --only and CI reports key on them. Append new checks; never rename.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace lapse::cli {

struct CheckContext {
    std::string plugin_file;   // absolute path of the plugin under test
    std::string config_text;   // TOML that opens it (bare, under a wrapper, or the user's)
    std::string config_name;   // names the config in messages
    std::string config_dir;    // base for relative paths in the config
    uint64_t seed = 0;         // for checks that choose at random
};

struct CheckFailed : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct CheckSkipped : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Check {
    const char* name;
    const char* description;
    void (*run)(const CheckContext&, std::string& note);  // `note`: detail shown on pass
};

// Every check, in the order they run: file and negotiation checks first
// (no device), then the device checks.
const std::vector<Check>& all_checks();

// Parts of the list, defined in their own files.
void append_negotiation_checks(std::vector<Check>& out);
void append_device_checks(std::vector<Check>& out);
void append_window_checks(std::vector<Check>& out);  // window_checks.cpp: windows, tokens, resolve
void append_lifetime_checks(std::vector<Check>& out);  // lifetime_checks.cpp
void append_growth_checks(std::vector<Check>& out);    // growth_checks.cpp
void append_compact_checks(std::vector<Check>& out);   // compact_checks.cpp: lapse.resolve_compact/1

// Helpers for check bodies.
[[noreturn]] void fail(const std::string& message);
[[noreturn]] void skip(const std::string& reason);
inline void require(bool condition, const std::string& message)
{
    if (!condition) fail(message);
}

}  // namespace lapse::cli
