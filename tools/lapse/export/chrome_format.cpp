// The Chrome trace-event JSON format behind the registry: chrome_trace.cpp
// does the work on a whole session (it sorts each track to assign lanes),
// so this gathers the one input into a Session first.
#include "export_format.hpp"

#include "chrome_trace.hpp"

#include <stdexcept>

namespace lapse::cli {

void write_chrome_export(RecordSource& source, std::ostream& out, ExportCounts& counts)
{
    if (source.input_count() != 1)
        throw std::runtime_error("the chrome format holds one input; use --format perfetto for several");
    Session session;
    if (source.next_input()) {
        session.set_backend(source.info().backend);
        WindowRecord record;
        while (source.next_record(record)) session.add(std::move(record));
    }
    ChromeTraceStats stats;
    out << chrome_trace(session, stats).dump(1) << '\n';
    counts.written = stats.slices;
    counts.not_measured = stats.not_measured;
    counts.failed = stats.failed;
    counts.overlap_lanes = stats.overlap_lanes;
}

}  // namespace lapse::cli
