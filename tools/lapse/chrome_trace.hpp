// Recorded windows as Chrome trace-event JSON (what Perfetto and
// chrome://tracing open), written as they stream in.
//
// Tracks (a trace "process" per kind and input, a "thread" per track):
//   "host threads"               system-time windows, on the OS thread that
//                                measured them (one track per thread);
//   "<plugin> streams"           device windows whose stamps are on the host
//                                monotonic clock: same timeline as the host;
//   "<plugin> streams (device clock)"
//                                device windows on the device's own clock:
//                                their own timeline, NOT aligned with the
//                                host (the process name says so).
// With one input the three are pids 1, 2, 3; input k (in the source's
// order: by anchor, as `lapse export` opens it) uses 4k + 1 .. 4k + 3, its
// process names prefixed with its program and pid.
// Each window is a complete ("X") event, ts and dur in microseconds from
// the earliest start on its timeline (several inputs share the host
// timeline: their host stamps are moved onto CLOCK_REALTIME by their
// anchors). Windows that nest become
// nested slices; windows that overlap without nesting cannot share a
// Chrome track, so each such window moves to an extra lane ("stream 0
// (overlap 1)") instead of being drawn wrongly. Windows are put in order
// within a window of reorder_window windows, which bounds the memory;
// a capture writes them in about the order they ended, well within that.
// A split pair (closed on another thread than it opened on) is drawn as a
// flow from an "open" mark on the opening thread to a "close" mark on the
// closing one. Windows without a measurement (not measured, failed) have
// no interval: they are left out and counted.
#pragma once

#include "record_source.hpp"

#include <lapse/core/session.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <iosfwd>
#include <vector>

namespace lapse::cli {

struct ChromeTraceStats {
    uint64_t slices = 0;          // windows written
    uint64_t not_measured = 0;    // left out: no interval
    uint64_t failed = 0;          // left out: no interval
    uint64_t overlap_lanes = 0;   // extra lanes opened for overlapping windows
    uint64_t flows = 0;           // split-pair handoffs drawn
    uint64_t lane_probes = 0;     // lanes tried for a window, in all (the cost measure)
};

inline constexpr std::size_t reorder_window = 1u << 16;

// Streams the trace of `source` to `out` (two passes over the inputs: the
// first finds each timeline's origin). Returns each input's description.
std::vector<InputInfo> write_chrome_trace(RecordSource& source, std::ostream& out, ChromeTraceStats& stats);

// The trace of one in-memory session, parsed (for small sessions and tests).
nlohmann::ordered_json chrome_trace(const Session& session, ChromeTraceStats& stats);

}  // namespace lapse::cli
