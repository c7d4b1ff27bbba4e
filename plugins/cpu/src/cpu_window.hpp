// cpu plugin — what the device keeps per window.
//
// The generic bookkeeping (ids, generations, open/closed/abandoned, who frees)
// is the SDK's WindowTable; this is the CPU payload in each record: the two
// stamps the worker takes when it reaches the window's markers. Atomics with
// relaxed order, because a resolver racing a reuse of the record may read a
// stale copy that it then throws away (WindowTable::take explains).
//
// 20 bytes of data, so the table's free-list link fits in its tail padding
// and a record is 32 bytes: half a cache line, never straddling two, which
// is what resolving a million windows walks through.
#pragma once

#include <lapse/sdk/window_table.hpp>

#include <atomic>
#include <cstdint>

namespace lapse::cpu {

struct CpuWindow {
    std::atomic<int64_t> start_ns{0};  // the raw StampClock reading when the worker reached the start marker
    // ... and the end marker; 0 until then. The worker sets it to 0 at the
    // start marker (before releasing its hold, so before any take), so a
    // window whose end marker could not be queued (out of memory) resolves
    // with end_ns == 0: NOT_MEASURED.
    std::atomic<int64_t> end_ns{0};
    // Written by the worker only: at the start marker, its count of failed
    // work items (mod 2^31); at the end marker, kWorkFailed is added when the
    // count moved (work inside the window threw: it resolves FAILED).
    std::atomic<uint32_t> failures{0};
};

inline constexpr uint32_t kWorkFailed = 1u << 31;
inline constexpr uint32_t kFailureCount = kWorkFailed - 1;

// What a closed, unheld window reads as: never stamped at its end (its end
// marker could not be queued), failed (work inside it threw), or measured.
// resolve and resolve_compact both answer by this.
enum class Outcome { not_measured, work_failed, measured };
inline Outcome outcome_of(int64_t end_ns, uint32_t failures) noexcept
{
    if (end_ns == 0) return Outcome::not_measured;
    if ((failures & kWorkFailed) != 0) return Outcome::work_failed;
    return Outcome::measured;
}

// A window holds one reference per marker in flight (start, then end).
using CpuWindowTable = sdk::WindowTable<CpuWindow>;
// A closed window with both still held has not had its start marker stamped.
inline constexpr uint32_t kStartAndEndHeld = 2;

// Issue 8: at most 64 bytes per pending window. The record is the only
// per-window memory once the worker has consumed the start marker.
static_assert(sizeof(CpuWindowTable::Record) == 32, "a CPU window record is no longer 32 bytes");

}  // namespace lapse::cpu
