// The one reader of recorded windows: every consumer of recorded data
// (report, export formats, diff, the HTML report) reads one or more inputs
// through a RecordSource, one input after the other, one record at a time,
// so a new input format plugs in by implementing RecordSource alone.
// Captures stream in constant memory (lapse::CaptureReader, one chunk at a
// time); a Session archive, the older format, is loaded whole. The format
// is told by the file's magic, not its name.
//
// The pull shape (next_input / next_record) serves the formats that keep
// per-input state; for_each_window puts the push shape on top, for the
// consumers that only tally.
//
// What an input says about itself (InputInfo) is known when the input is
// entered; its tail (windows, dropped, cut short, damage) is final once its
// last record has been read (InputInfo is updated in place then). Fields an
// input format does not record stay empty/zero, and consumers must say
// "not recorded", never "none".
//
// Stamps are as recorded: host-clock stamps on that host's monotonic
// clock, device-clock stamps on their device's own clock. A consumer that
// puts several inputs on one timeline moves host stamps by each input's
// realtime_minus_monotonic_ns.
//
// Thread safety: one thread at a time per RecordSource.
#pragma once

#include <lapse/core/capture.hpp>
#include <lapse/core/session.hpp>
#include <lapse/window.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lapse::cli {

// One recorded window: a capture's window (lapse::CapturedWindow: a
// session's record has the same fields, but for `source` and `cause`, left
// empty) and the input it came from. The strings it views are valid until
// the next next_record() or next_input() of the source that filled it;
// close_thread is the opener's where the input does not record it.
struct RecordedWindow : CapturedWindow {
    uint32_t input = 0;  // the input's index (what next_input() returned)

    // Never negative, never overflowing.
    int64_t ns() const noexcept
    {
        if (end_ns <= start_ns) return 0;
        const uint64_t d = static_cast<uint64_t>(end_ns) - static_cast<uint64_t>(start_ns);
        return d > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(d);
    }
};

// A session's record as a RecordedWindow of input `input` (viewing its
// name): for sources that hold WindowRecords.
RecordedWindow recorded(const WindowRecord& w, uint32_t input);

// How a stream's clock domain relates to the host's monotonic clock: one
// instant read on both clocks. Absent for a device clock means the
// relation was not recorded and device stamps cannot be put on the host
// timeline.
struct ClockAnchor {
    int64_t host_ns = 0;
    int64_t domain_ns = 0;
};

struct InputInfo {
    std::string path;
    bool capture = false;  // a capture (header and sources below); false: a session archive
    CaptureHeader header;  // captures: who recorded it, where, and its clock anchor
    std::vector<CaptureSource> sources;  // captures: the devices (final after the last record)
    BackendRecord backend;  // the session's, or the capture's first device
    // Host monotonic -> wall clock (ns since the epoch), when recorded.
    std::optional<int64_t> realtime_minus_monotonic_ns;
    // Per stream, the anchor of its device clock (streams timed on the
    // host clock need none).
    std::map<Stream, ClockAnchor> device_clock_anchors;
    // Whether records say if work was left queued (work_left_queued()).
    bool records_work_left_queued = false;
    // The tail, final after the input's last record.
    uint64_t windows = 0;     // records read
    uint64_t dropped = 0;     // windows the recorder could not keep
    std::vector<CaptureDrop> dropped_by_name;
    uint64_t unflushed = 0;   // windows still pending when recording stopped
    bool counts_recorded = false;  // whether dropped/unflushed are known
    bool cut_short = false;        // the input ended before its end marker
    int64_t last_chunk_realtime_ns = 0;  // captures: when its last complete chunk was written
    std::vector<CaptureDamage> damage;   // captures: ranges that could not be read
};

// A bad input: the message names the file and the cause.
class InputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class RecordSource {
public:
    virtual ~RecordSource() = default;
    virtual std::size_t input_count() const = 0;
    // Enters the next input and returns its index, or nullopt after the
    // last one. Throws InputError for an input that cannot be read.
    virtual std::optional<std::size_t> next_input() = 0;
    // The current input's description (valid after next_input()).
    virtual const InputInfo& info() const = 0;
    // The next record of the current input; false at its end.
    virtual bool next_record(RecordedWindow& out) = 0;
    // Back before the first input, for another pass over every input.
    virtual void rewind() = 0;
};

enum class InputOrder {
    as_given,   // the order of the paths (diff: base, then new)
    by_anchor,  // captures by their clock anchor, earliest first, then session archives
};

// Opens `paths`: captures and session archives, told apart by their magic.
// With by_anchor every capture's header is read now (InputError naming the
// file that fails).
std::unique_ptr<RecordSource> open_record_source(std::vector<std::string> paths,
                                                 InputOrder order = InputOrder::as_given);
// One session in memory, borrowed (it must outlive the source): input
// "<session>".
std::unique_ptr<RecordSource> open_record_source(const Session& session);

// The push shape: every record of every input of `source`, from the first
// (it rewinds, so it may be called again), to `visit`; returns each input's
// description, final.
template <class Visit>
std::vector<InputInfo> for_each_window(RecordSource& source, Visit&& visit)
{
    source.rewind();
    std::vector<InputInfo> inputs;
    RecordedWindow w;
    while (source.next_input()) {
        while (source.next_record(w)) visit(static_cast<const RecordedWindow&>(w));
        inputs.push_back(source.info());
    }
    return inputs;
}

// Whether the window closed with work still queued on its stream. Captures
// record it; session archives do not (nullopt: "not recorded").
inline std::optional<bool> work_left_queued(const InputInfo& info, const RecordedWindow& window)
{
    if (!info.records_work_left_queued) return std::nullopt;
    return (window.flags & LAPSE_DURATION_WORK_QUEUED) != 0;
}

// A record is measured (it has an interval) only when its state is ready.
inline bool measured(const RecordedWindow& w) { return w.state == DurationState::ready; }

}  // namespace lapse::cli
