// The Chrome trace-event JSON format behind the registry: chrome_trace.cpp
// streams every input of the source (captures and session archives,
// several on one timeline, flows for split pairs).
#include "export_format.hpp"

#include "chrome_trace.hpp"
#include "terminal.hpp"

#include <iostream>

namespace lapse::cli {

void write_chrome_export(RecordSource& source, std::ostream& out, ExportCounts& counts)
{
    ChromeTraceStats stats;
    const std::vector<InputInfo> inputs = write_chrome_trace(source, out, stats);
    counts.written = stats.slices;
    counts.not_measured = stats.not_measured;
    counts.failed = stats.failed;
    counts.overlap_lanes = stats.overlap_lanes;
    counts.flows = stats.flows;
    for (const InputInfo& s : inputs) {
        if (s.cut_short)
            std::cerr << "lapse export: " << printable(s.path) << " was cut short (last chunk written at "
                      << utc_time(s.last_chunk_realtime_ns) << ")\n";
        if (s.dropped > 0)
            std::cerr << "lapse export: " << printable(s.path) << ": " << s.dropped
                      << " windows were dropped while recording (not in the trace)\n";
        for (const CaptureDamage& d : s.damage)
            std::cerr << "lapse export: " << printable(s.path) << ": damaged: " << d.size << " bytes at offset "
                      << d.offset << " skipped (" << printable(d.cause) << ")\n";
    }
}

}  // namespace lapse::cli
