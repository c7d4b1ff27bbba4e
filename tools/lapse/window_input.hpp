// The one seam every reader of recorded windows goes through (report,
// export, and the exporters to come): the windows of one or more captures
// or Session archives, streamed one at a time in constant memory (a
// Session archive, the older format, is loaded whole). The format is told
// by the file's magic, not its name.
//
// Several inputs share one timeline: host-clock stamps are moved onto
// CLOCK_REALTIME by each capture's anchor, and inputs are ordered by their
// anchors. Device-clock stamps stay on their device's own clock.
#pragma once

#include <lapse/core/capture.hpp>
#include <lapse/core/session.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lapse::cli {

struct InputWindow {
    std::string_view name;
    uint32_t input = 0;   // index into WindowInputs::summaries()
    uint32_t source = 0;  // the device within the input
    Stream stream = 0;
    uint64_t thread = 0;
    uint64_t close_thread = 0;
    DurationState state = DurationState::not_measured;
    TimingMethod method = TimingMethod::none;
    ClockDomain domain = ClockDomain::none;
    int64_t start_ns = 0;  // when ready
    int64_t end_ns = 0;
    lapse_status failure = LAPSE_OK;
    std::string_view cause;
    uint64_t flags = 0;  // LAPSE_DURATION_* of a ready window (work left queued, earlier work held)

    // Never negative, never overflowing.
    int64_t ns() const noexcept
    {
        if (end_ns <= start_ns) return 0;
        const uint64_t d = static_cast<uint64_t>(end_ns) - static_cast<uint64_t>(start_ns);
        return d > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(d);
    }
};

struct InputSummary {
    std::string file;
    bool capture = false;          // false: a Session archive
    CaptureHeader header;          // captures only
    std::vector<CaptureSource> sources;
    BackendRecord backend;         // the session's, or the capture's first device
    // Known after a for_each:
    uint64_t windows = 0;
    bool complete = true;          // false: cut short (no end chunk)
    int64_t last_chunk_realtime_ns = 0;
    std::vector<CaptureDrop> dropped;
    uint64_t dropped_total = 0;
    std::vector<CaptureDamage> damage;
};

class WindowInputs {
public:
    // Opens every file (throws lapse::Error naming the one that fails).
    explicit WindowInputs(const std::vector<std::string>& files);
    // One session already in memory.
    explicit WindowInputs(std::shared_ptr<const Session> session);

    // More than one input: host stamps are on CLOCK_REALTIME.
    bool merged() const noexcept { return summaries_.size() > 1; }
    // Every window of every input, in input order; may be called again.
    void for_each(const std::function<void(const InputWindow&)>& visit);
    const std::vector<InputSummary>& summaries() const noexcept { return summaries_; }

private:
    std::vector<InputSummary> summaries_;
    std::shared_ptr<const Session> in_memory_;  // for the second constructor
};

// `text` with control characters and escape sequences (C0, DEL, C1) and
// bytes that are not UTF-8 replaced by '?', safe to print on a terminal.
std::string printable(std::string_view text);

// "2026-12-01 09:40:36.123 UTC" for CLOCK_REALTIME ns.
std::string utc_time(int64_t realtime_ns);

}  // namespace lapse::cli
