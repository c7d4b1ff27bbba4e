// A session as Chrome trace-event JSON (what Perfetto and chrome://tracing
// open).
//
// Tracks (a trace "process" per kind, a "thread" per track):
//   pid 1 "host threads"         system-time windows, on the OS thread that
//                                measured them (one track per thread);
//   pid 2 "<plugin> streams"     device windows whose stamps are on the host
//                                monotonic clock: same timeline as pid 1;
//   pid 3 "<plugin> streams (device clock)"
//                                device windows on the device's own clock:
//                                their own timeline, NOT aligned with the
//                                host (the process name says so).
// Each window is a complete ("X") event, ts and dur in microseconds from
// the earliest start on its timeline. Windows that nest become nested
// slices; windows that overlap without nesting cannot share a Chrome track,
// so each such window moves to an extra lane ("stream 0 (overlap 1)")
// instead of being drawn wrongly. Windows without a measurement (not
// measured, failed) have no interval: they are left out and counted.
#pragma once

#include <lapse/core/session.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>

namespace lapse::cli {

struct ChromeTraceStats {
    uint64_t slices = 0;          // windows written
    uint64_t not_measured = 0;    // left out: no interval
    uint64_t failed = 0;          // left out: no interval
    uint64_t overlap_lanes = 0;   // extra lanes opened for overlapping windows
};

nlohmann::ordered_json chrome_trace(const Session& session, ChromeTraceStats& stats);

}  // namespace lapse::cli
