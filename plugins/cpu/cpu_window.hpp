// cpu plugin — what the device keeps per window.
//
// The generic bookkeeping (ids, generations, open/closed/abandoned, who frees)
// is the SDK's WindowTable; this is the CPU payload in each record: the two
// stamps the worker takes when it reaches the window's markers. Atomics with
// relaxed order, because a resolver racing a reuse of the record may read a
// stale copy that it then throws away (WindowTable::take explains).
#pragma once

#include <lapse/sdk/window_table.hpp>

#include <atomic>
#include <cstdint>

namespace lapse::cpu {

struct CpuWindow {
    std::atomic<int64_t> start_ns{0};  // CLOCK_MONOTONIC when the worker reached the start marker
    std::atomic<int64_t> end_ns{0};    // ... and the end marker
    // The worker's count of failed work items when it stamped the start: a
    // different count at the end means work inside the window failed.
    std::atomic<uint32_t> failures_at_start{0};
    std::atomic<uint32_t> flags{0};    // kWindowFailed | kWindowLost
};

// Work inside the window failed (threw): the window resolves FAILED, never
// as a fast duration.
inline constexpr uint32_t kWindowFailed = 1u << 0;
// The end marker could not be queued (out of memory): NOT_MEASURED.
inline constexpr uint32_t kWindowLost = 1u << 1;

// A window holds one reference per marker in flight (start, then end).
using CpuWindowTable = sdk::WindowTable<CpuWindow>;

// Issue 8: at most 64 bytes per pending window. The record is the only
// per-window memory once the worker has consumed the start marker.
static_assert(sizeof(CpuWindowTable::Record) <= 40, "a CPU window record grew past 40 bytes");

}  // namespace lapse::cpu
