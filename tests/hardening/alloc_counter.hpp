// Live heap bytes and allocations of this program, counted by replacing the
// global operator new/delete (alloc_counter.cpp). The plugins resolve
// operator new to the program's definition, so their allocations count too.
// Memory from malloc directly (not through new) is not counted.
#pragma once

#include <cstdint>

namespace hardening {

struct AllocStats {
    int64_t live_bytes;
    int64_t live_blocks;
    int64_t total_allocations;
    int64_t peak_live_bytes;  // since the last reset_peak()
};

AllocStats alloc_stats() noexcept;
// Starts a new peak measurement at the current live bytes.
void reset_peak() noexcept;

}  // namespace hardening
