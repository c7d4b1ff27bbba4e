// The heap use of a test program, counted by replacing the global operator
// new and delete (alloc_counter.cpp, linked in through the
// lapse_test_alloc_counter object library). A program that also exports its
// symbols (ENABLE_EXPORTS) counts the allocations of the core library and of
// the dlopen'ed plugins too, which resolve operator new to its definition.
// Memory taken with malloc directly is not counted.
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <cstdint>

namespace lapse_test {

struct AllocStats {
    int64_t live_bytes;
    int64_t live_blocks;
    int64_t total_allocations;  // calls of any operator new so far
    int64_t peak_live_bytes;    // since the last reset_peak()
};

AllocStats alloc_stats() noexcept;
// Calls of any operator new so far, from any thread.
inline uint64_t allocations() noexcept { return static_cast<uint64_t>(alloc_stats().total_allocations); }
// Starts a new peak measurement at the current live bytes.
void reset_peak() noexcept;
// Whether this program's operator new is the counting one (a linker that
// kept libstdc++'s would leave every count at zero and every check passing).
bool counting_allocations() noexcept;

}  // namespace lapse_test
