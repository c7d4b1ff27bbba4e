// lapse core — captures: every named window of a run, streamed to a file.
//
// Recording:
//   auto capture = lapse::Capture::open({.path = "run.lapse-capture"});
//   device.record_into(capture);          // or runtime.record_into(capture), or LAPSE_CAPTURE=path
//   device.profile(0, work, {.name = "frame"});   // recorded, kept or not
//
// While a device records into a capture, every named window it closes is
// recorded exactly once, whether the caller keeps, resolves or drops its
// Duration: the window is handed to a collector thread (through the
// closing thread's own ring: no lock and no shared atomic counter per
// window) that resolves what the caller did not, in batches,
// and appends the results to the file in checksummed chunks, flushed at
// least every flush_interval. A caller who resolves gets the same number
// that goes into the file. Windows that failed or were not measured are
// recorded with their state and cause. Abandoned windows (a closure or
// scope left by an exception, profile_abandon) are not recorded.
//
// Memory is bounded by budget_bytes (queued and unresolved windows). When
// the collector cannot keep up, the policy applies: `drop` (the default)
// drops windows and counts them per name, and the counts go into the
// file; `block` makes the closing thread wait for room instead.
//
// Live metrics: with CaptureOptions::metrics the collector also serves the
// recorded windows over HTTP for Prometheus to scrape (docs/metrics.md),
// with or without a file.
//
// Reading: CaptureReader streams a file in constant memory, one window at
// a time; damaged chunks are found by their checksums, reported with their
// offsets and skipped. The format is docs/capture-format.md.
#pragma once

#include <lapse/core/duration.hpp>
#include <lapse/core/export.hpp>
#include <lapse/status.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lapse {

namespace detail {
class CaptureCore;
}

enum class CapturePolicy : uint32_t {
    drop,   // past the budget, drop windows and count them per name
    block,  // past the budget, the thread closing a window waits for room
};

LAPSE_CORE_API const char* to_string(CapturePolicy policy) noexcept;  // "drop", "block"

// Where a capture's bytes go: a file by default. Called from the collector
// thread only; write() throws Error when the bytes cannot be written (the
// capture then stops writing and counts what it could not write as dropped).
class LAPSE_CORE_API CaptureSink {
public:
    virtual ~CaptureSink();
    virtual void write(std::span<const std::byte> bytes) = 0;
};

// Live metrics of the recorded windows, served over HTTP for Prometheus
// to scrape (docs/metrics.md). Off while `listen` is empty.
struct MetricsOptions {
    std::string listen;         // "127.0.0.1:9464", "[::1]:9464"; port 0 picks a free one
    bool allow_remote = false;  // an address that is not loopback is refused unless set
    uint32_t max_series = 1000;  // label sets (window, stream, backend, method) at most; past it counted apart
};

struct CaptureOptions {
    // Created (or truncated) unless `sink` is set. May be empty when
    // `metrics` listens: the windows are then recorded for the metrics only.
    std::filesystem::path path;
    std::shared_ptr<CaptureSink> sink;  // instead of a file (tests, pipes)
    uint64_t budget_bytes = 4u << 20;   // windows queued or still unresolved, at most
    CapturePolicy policy = CapturePolicy::drop;
    std::chrono::milliseconds flush_interval{100};
    MetricsOptions metrics;
};

// Counters since the capture opened (any thread may read them).
struct CaptureStats {
    uint64_t recorded = 0;         // windows written into chunks
    uint64_t dropped = 0;          // windows dropped by the policy
    uint64_t queued = 0;           // handed to the collector, not yet written
    uint64_t bytes_written = 0;    // file bytes, chunk headers included
    uint64_t chunks = 0;
    uint64_t held_bytes = 0;       // memory held for queued windows now
    uint64_t peak_held_bytes = 0;  // the most ever reserved by the threads, which bounds what was held (at most budget_bytes)
    uint64_t budget_bytes = 0;
};

class LAPSE_CORE_API Capture {
public:
    // Opens the file (or sink) and the metrics listener, writes the header
    // and starts the collector. Throws Error naming the file when it cannot
    // be created, or the address and the cause when metrics cannot listen.
    static std::shared_ptr<Capture> open(CaptureOptions options);

    // Drains every queued window (resolving what is pending), writes the
    // end chunk and stops the collector. Idempotent. Devices that still
    // record into a closed capture drop their windows (counted).
    void close() noexcept;
    // Writes what is queued and resolved now, as one chunk; waits for it.
    void flush();
    CaptureStats stats() const noexcept;
    const std::filesystem::path& path() const noexcept;
    const CaptureOptions& options() const noexcept;
    // The port the metrics are served on (the bound one when asked for 0);
    // 0 when the capture serves none.
    uint16_t metrics_port() const noexcept;

    ~Capture();
    Capture(const Capture&) = delete;
    Capture& operator=(const Capture&) = delete;

    detail::CaptureCore& core() noexcept { return *core_; }  // internal

private:
    explicit Capture(std::unique_ptr<detail::CaptureCore> core) noexcept;
    std::unique_ptr<detail::CaptureCore> core_;
};

// ---- reading -------------------------------------------------------------

struct CaptureHeader {
    uint32_t version = 0;
    std::string host;
    std::string program;
    uint64_t pid = 0;
    // One instant read on both clocks: maps host-monotonic stamps onto wall
    // time, so captures of several processes and machines share a timeline.
    int64_t anchor_monotonic_ns = 0;
    int64_t anchor_realtime_ns = 0;

    // A host-monotonic time of this capture as CLOCK_REALTIME ns.
    int64_t to_realtime(int64_t monotonic_ns) const noexcept
    {
        return monotonic_ns - anchor_monotonic_ns + anchor_realtime_ns;
    }
};

// A device that recorded into the capture.
struct CaptureSource {
    uint32_t id = 0;
    std::string plugin;          // top plugin
    std::string plugin_version;
    std::string plugin_file;
    std::string device_name;
    std::string stack;           // "forward (backend) -> cpu (backend.inner)"
    uint32_t stream_count = 0;
    uint64_t capabilities = 0;
    std::vector<ClockDomain> stream_domains;  // the clock each stream's windows are stamped on
};

// One recorded window. The string views stay valid until the next call to
// CaptureReader::next.
struct CapturedWindow {
    std::string_view name;
    uint32_t source = 0;          // CaptureSource::id
    Stream stream = 0;
    uint64_t thread = 0;          // OS thread that opened the window
    uint64_t close_thread = 0;    // OS thread that closed it (a split pair may differ)
    DurationState state = DurationState::not_measured;
    TimingMethod method = TimingMethod::none;
    ClockDomain domain = ClockDomain::none;
    int64_t start_ns = 0;         // when state == ready
    int64_t end_ns = 0;
    lapse_status failure = LAPSE_OK;  // when state == failed
    std::string_view cause;       // why it failed or was not measured, when known
    uint64_t flags = 0;           // LAPSE_DURATION_* of a ready window (work left queued, earlier work held)

    int64_t ns() const noexcept { return end_ns - start_ns; }
};

// A range of the file that could not be read.
struct CaptureDamage {
    uint64_t offset = 0;  // of the first unreadable byte
    uint64_t size = 0;    // bytes skipped
    std::string cause;
};

struct CaptureDrop {
    std::string name;
    uint64_t count = 0;
};

// Streams a capture: constant memory (one chunk, at most 1 MiB, at a
// time). Damage never stops it: a chunk whose checksum fails is reported
// with its offset and skipped, and reading resumes at the next good chunk.
// Thread safety: one thread per reader.
class LAPSE_CORE_API CaptureReader {
public:
    // Throws Error (LAPSE_ERROR_INVALID_ARGUMENT) naming the file when it
    // cannot be opened or is not a capture (no magic, no readable header).
    explicit CaptureReader(const std::filesystem::path& file);
    CaptureReader(std::unique_ptr<std::istream> in, std::string source_name);
    ~CaptureReader();
    CaptureReader(CaptureReader&&) noexcept;
    CaptureReader& operator=(CaptureReader&&) noexcept;

    const std::string& source_name() const noexcept;
    const CaptureHeader& header() const noexcept;
    // The devices seen so far (source chunks come before their windows).
    const std::vector<CaptureSource>& sources() const noexcept;

    // The next window, false at the end of the file.
    bool next(CapturedWindow& out);
    // Calls `visit` for every remaining window.
    void for_each(const std::function<void(const CapturedWindow&)>& visit);

    // Known once next() returned false:
    bool complete() const noexcept;             // the end chunk was read: closed, not cut short
    int64_t last_chunk_monotonic_ns() const noexcept;  // when the last readable chunk was written
    const std::vector<CaptureDrop>& dropped() const noexcept;  // per name, largest first
    uint64_t dropped_total() const noexcept;
    const std::vector<CaptureDamage>& damage() const noexcept;
    uint64_t windows_read() const noexcept;
    uint64_t chunks_read() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// True when `file` starts with the capture magic (a Session archive does not).
LAPSE_CORE_API bool is_capture_file(const std::filesystem::path& file);

}  // namespace lapse
