// cpu plugin — the device: N worker streams, or inline execution.
//
// Stream mode: a window is a start marker and an end marker queued on its
// stream (with `lanes`, through the calling thread's lane: WorkerStream,
// MarkerLane); its record lives in the SDK's WindowTable
// (generation-tagged ids, one CAS per transition, no lock on the hot path).
// Inline mode: work runs on the caller's thread at submit, and there is no
// device clock, so profile_start answers LAPSE_NO_WINDOW and the host
// measures in system time.
//
// Config (every key read in both modes, so none is reported as unknown):
//   mode           "stream" (default) | "inline"
//   streams        1..64, default 2
//   queue_capacity first ring size per stream in 4-byte cells (a window
//                  marker takes one, work or a fence five), 16..2^24,
//                  default 4096; the first rings of all streams together
//                  hold at most 64 MiB
//   window_capacity records allocated up front, 16..2^24, default 1024
//   lanes          true: each thread's markers go through its own lane
//                  (MarkerLane), one locked operation a window instead of
//                  four; default false, or LAPSE_CPU_LANES=1's true
#pragma once

#include "completion_signal.hpp"
#include "cpu_window.hpp"
#include "stamp_clock.hpp"
#include "worker_stream.hpp"

#include <lapse/lapse.h>
#include <lapse/sdk/host.hpp>
#include <lapse/sdk/resolve_compact.hpp>

#include <memory>
#include <string_view>
#include <vector>

namespace lapse::cpu {

class CpuDevice {
public:
    enum class Mode { stream, inline_ };
    static constexpr uint32_t max_streams = 64;

    struct Settings {
        Mode mode = Mode::stream;
        uint32_t streams = 2;
        uint32_t queue_capacity = 4096;
        uint32_t window_capacity = 1024;
        bool lanes = false;
    };

    static Settings read_settings(const sdk::Config& config);
    static std::unique_ptr<CpuDevice> open(sdk::Host host, sdk::Config config);

    CpuDevice(sdk::Host host, const Settings& settings);
    ~CpuDevice();  // = close: drains, abandons what is open, joins

    void describe(lapse_device_info& info);
    lapse_status sync(lapse_stream stream, lapse_error* error);
    lapse_status submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error);
    lapse_status profile_start(lapse_stream stream, lapse_token& token, lapse_error* error) noexcept;
    lapse_status profile_end(lapse_token token, uint32_t flags, lapse_error* error) noexcept;
    void profile_abandon(lapse_token token) noexcept;
    lapse_status resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t timeout_ns,
                         lapse_error* error);
    // lapse.resolve_compact/1 (lapse/resolve_compact.h), offered in stream
    // mode: measured windows as bare stamp pairs, every other one left for
    // resolve. In cpu_resolve_compact.cpp.
    lapse_status resolve_compact(const lapse_token* tokens, lapse_stamp_pair* stamps, uint8_t* states, uint32_t count,
                                 uint64_t timeout_ns, lapse_error* error) noexcept;
    // The same over strided records (a pair in its own token's bytes).
    lapse_status resolve_compact_strided(const lapse_token* tokens, std::size_t token_stride, lapse_stamp_pair* stamps,
                                         std::size_t stamp_stride, uint8_t* states, uint32_t count,
                                         uint64_t timeout_ns, lapse_error* error) noexcept;
    const void* extension(std::string_view id) const noexcept;

private:
    // Both compact resolves: `Layout` says where token i is and pair i goes.
    template <class Layout>
    lapse_status resolve_compact_walk(Layout layout, uint8_t* states, uint32_t count,
                                      uint64_t timeout_ns) noexcept;
    // One token: fills `out` with a final state (or PENDING); returns the
    // error status for an invalid token, LAPSE_OK otherwise.
    lapse_status resolve_one(const lapse_token& token, lapse_duration& out, CpuWindowTable::FreeBatch& freed,
                             const StampClock::Conversion& conversion, lapse_error* error) noexcept;
    // The cold halves of profile_start / profile_end, out of line (and
    // reached by tail calls) so that the hot halves save no registers.
    // Not cold: with lanes on, every window passes through refuse_start /
    // refuse_end on its way to the lane path.
    [[gnu::noinline]] lapse_status refuse_start(lapse_stream stream, lapse_token& token,
                                                           lapse_error* error) noexcept;
    [[gnu::noinline]] lapse_status start_slow(lapse_stream stream, lapse_token& token, lapse_error* error) noexcept;
    [[gnu::noinline]] lapse_status start_queue_slow(lapse_stream stream, uint64_t id, lapse_token& token,
                                                    lapse_error* error) noexcept;
    [[gnu::noinline]] static lapse_status wake_then_ok(WorkerStream& stream) noexcept;
    // Both start paths' end: the token out, and the worker woken if it sleeps.
    [[gnu::always_inline]] static lapse_status started(WorkerStream& stream, lapse_token& token, lapse_token opened) noexcept
    {
        token = opened;
        if (stream.needs_wake()) [[unlikely]]
            return wake_then_ok(stream);
        return LAPSE_OK;
    }
    // A resolver is about to wait: ends every worker's doze (WorkerStream::hurry).
    void hurry_workers() noexcept;
    // The window path with lanes on (Settings::lanes, where the process
    // allows them), reached from refuse_start / refuse_end by tail calls:
    // the queue's path, the default, pays nothing for it.
    [[gnu::noinline]] lapse_status start_in_lane(lapse_stream stream, lapse_token& token, lapse_error* error) noexcept;
    [[gnu::noinline]] lapse_status end_in_lane(lapse_token token, lapse_error* error) noexcept;
    [[gnu::noinline]] lapse_status refuse_end(lapse_token token, lapse_error* error) noexcept;
    [[gnu::noinline]] lapse_status end_slow(lapse_token token, lapse_error* error) noexcept;
    [[gnu::noinline]] lapse_status end_queue_slow(lapse_token token, lapse_error* error) noexcept;
    [[gnu::noinline, gnu::cold]] lapse_status end_out_of_memory(lapse_token token, lapse_error* error) noexcept;
    [[gnu::noinline, gnu::cold]] lapse_status token_error(const char* call, lapse_token token, sdk::WindowCheck check,
                                                          lapse_error* error) const noexcept;

    sdk::Host host_;
    Settings settings_;
    StampClock& clock_;  // what the workers stamp with (the process's one); resolve converts
    CpuWindowTable windows_;
    CompletionSignal completions_;
    std::vector<std::unique_ptr<WorkerStream>> streams_;  // empty in inline mode
    // What the window path reads, next to each other in the device: the
    // streams whose windows take the queue's path inline (0 in inline mode
    // and with lanes, so one comparison sends a bad stream, inline mode and
    // lanes out of line), and each one's worker and free list of records
    // (one load each, no vector or shard arithmetic in between).
    uint32_t queue_path_streams_ = 0;
    // The streams whose windows take the lane path (all of them with lanes
    // on, else 0): refuse_start / refuse_end send them on with one
    // comparison.
    uint32_t lane_path_streams_ = 0;
    WorkerStream* workers_[max_streams] = {};
    CpuWindowTable::FreeList* free_lists_[max_streams] = {};
    // Stamps are converted to CLOCK_MONOTONIC at resolve, as resolve does.
    const lapse_resolve_compact compact_ =
        sdk::make_resolve_compact<CpuDevice>(LAPSE_TIMING_DEVICE, LAPSE_CLOCK_HOST_MONOTONIC);
};

}  // namespace lapse::cpu
