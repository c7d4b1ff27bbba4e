// What the CUDA plugin keeps per window: the payload of a record in the
// SDK's WindowTable (lapse/sdk/window_table.hpp), used with claims.
//
// Why this shape:
//  - The hot path (start, end, abandon) must not allocate, lock globally or
//    create driver objects. A record owns its two timing events for its
//    whole life: they are created with the first chunk at open (later
//    chunks: at a record's first use, which only a growing pool pays) and
//    destroyed when the device closes, so "taking two events from the pool"
//    is one lock-free pop.
//  - Every call that touches a window claims its record (one CAS), asks the
//    driver, and publishes or frees the record by the answer; two threads
//    racing on one token cannot both win, and a stale token names a
//    generation the record has left.
//  - An abandoned (or failed) window's events may still be pending on the
//    device, and no one will say when they complete: its record is parked,
//    and reused only once a later open finds both events complete
//    (WindowTable::reclaim_parked). Re-recording a pending event would
//    change what an earlier wait on it means.
#pragma once

#include <cuda.h>

#include <lapse/lapse.h>
#include <lapse/sdk/window_table.hpp>

#include <cstdint>

namespace lapse::cuda {

struct CudaWindow {
    CUevent start = nullptr;  // created once per record, kept until the device closes
    CUevent end = nullptr;
    uint64_t error_epoch = 0;         // the device's error epoch when the window opened
    uint64_t anchor_seq = 0;          // the host-clock anchor current when it opened
    lapse_status failure = LAPSE_OK;  // set when closing it failed on the device
};

using WindowTable = sdk::WindowTable<CudaWindow>;

// The records allocated when the device opens (with their events), and the
// bounds of the `max_windows` key.
inline constexpr uint32_t kFirstWindows = 256;
inline constexpr int64_t kMaxWindows = int64_t{1} << 20;

}  // namespace lapse::cuda
