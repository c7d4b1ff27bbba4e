// How `lapse validate` reports: a line per check on stdout, JSON, or a
// JUnit XML file for CI dashboards.
#pragma once

#include "child_runner.hpp"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace lapse::cli {

struct CheckRecord {
    std::string name;
    std::string description;
    ChildResult result;
};

struct ValidateRun {
    std::string plugin_arg;   // as given
    std::string plugin_file;  // resolved
    std::string under;        // wrapper plugin, "" when bare
    std::string config_name;
    uint64_t seed = 0;
    std::vector<CheckRecord> checks;

    std::size_t count(Outcome o) const;
};

void print_text_line(std::ostream& out, const CheckRecord& check, bool verbose);
void print_text_summary(std::ostream& out, const ValidateRun& run);
void print_json(std::ostream& out, const ValidateRun& run);
void write_junit(std::ostream& out, const ValidateRun& run);

}  // namespace lapse::cli
