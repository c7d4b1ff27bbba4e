// A stream of window records from one or more recorded inputs, read one
// input after the other, one record at a time: the seam every consumer of
// recorded data (export formats, diff, the HTML report) reads through, so
// a new input format plugs in by implementing RecordSource alone.
//
// What an input says about itself (InputInfo) is known when the input is
// entered; its tail (dropped windows, cut short) is final once its last
// record has been read (InputInfo is updated in place then). Fields an
// input format does not record stay empty/zero, and consumers must say
// "not recorded", never "none".
//
// Thread safety: one thread at a time per RecordSource.
#pragma once

#include <lapse/core/session.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace lapse::cli {

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
    BackendRecord backend;
    // Host monotonic -> wall clock (ns since the epoch), when recorded.
    std::optional<int64_t> realtime_minus_monotonic_ns;
    // Per stream, the anchor of its device clock (streams timed on the
    // host clock need none).
    std::map<Stream, ClockAnchor> device_clock_anchors;
    // The tail, final after the input's last record.
    uint64_t dropped = 0;     // windows the recorder could not keep
    uint64_t unflushed = 0;   // windows still pending when recording stopped
    bool counts_recorded = false;  // whether dropped/unflushed are known
    // Whether records say if work was left queued (work_left_queued()).
    bool records_work_left_queued = false;
    bool cut_short = false;        // the input ended before its end marker
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
    // The files, in order (for a format that reads them itself).
    virtual const std::vector<std::string>& paths() const = 0;
    // Enters the next input and returns its index, or nullopt after the
    // last one. Throws InputError for an input that cannot be read.
    virtual std::optional<std::size_t> next_input() = 0;
    // The current input's description (valid after next_input()).
    virtual const InputInfo& info() const = 0;
    // The next record of the current input; false at its end.
    virtual bool next_record(WindowRecord& out) = 0;
};

// Opens `paths` in order: captures (streamed through lapse::CaptureReader,
// in constant memory) and session archives (loaded one at a time), told
// apart by their magic.
std::unique_ptr<RecordSource> open_record_source(std::vector<std::string> paths);

// Whether the window closed with work still queued on its stream. Captures
// record it; session archives do not (nullopt: "not recorded").
std::optional<bool> work_left_queued(const WindowRecord& window);

// A record is measured (it has an interval) only when its state is ready.
inline bool measured(const WindowRecord& w) { return w.state == DurationState::ready; }

}  // namespace lapse::cli
