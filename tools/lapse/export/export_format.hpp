// The export formats of `lapse export`: a registry, one file per format
// (export/<name>_format.cpp) and one table (export/formats.cpp). A new
// format implements ExportFormat::write and adds one row to the table.
#pragma once

#include "record_source.hpp"

#include <cstdint>
#include <ostream>
#include <span>
#include <string_view>

namespace lapse::cli {

// What a writer reports back, for the command's message on stderr.
struct ExportCounts {
    uint64_t written = 0;        // windows written
    uint64_t not_measured = 0;   // left out: no interval
    uint64_t failed = 0;         // left out: no interval
    uint64_t overlap_lanes = 0;  // extra tracks opened for overlapping windows
    uint64_t flows = 0;          // split pairs drawn as a flow from the opening to the closing thread
};

struct ExportFormat {
    std::string_view name;     // --format NAME
    std::string_view summary;  // one line for --help
    bool several_inputs;       // whether it puts several inputs into one output
    InputOrder order;          // the order it reads several inputs in
    // Reads every input of `source` and writes the output to `out`. Throws
    // InputError for a bad input, std::runtime_error for data the format
    // cannot hold (the message says what).
    void (*write)(RecordSource& source, std::ostream& out, ExportCounts& counts);
};

std::span<const ExportFormat> export_formats();
const ExportFormat* find_export_format(std::string_view name);  // nullptr if unknown

// The formats in the table (export/<name>_format.cpp).
void write_chrome_export(RecordSource& source, std::ostream& out, ExportCounts& counts);
void write_perfetto_export(RecordSource& source, std::ostream& out, ExportCounts& counts);

}  // namespace lapse::cli
