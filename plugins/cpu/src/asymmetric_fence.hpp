// cpu plugin — a store-load fence paid by one side only.
//
// A producer that pushes a marker into its lane and then reads whether the
// worker sleeps, and a worker that announces it sleeps and then looks at
// the lanes, must not both miss the other's write (a lost wake-up: the
// marker waits until something else wakes the worker). On x86 that takes a
// full fence between the store and the load on each side, a locked
// operation the window path exists to avoid. membarrier(2) moves the whole
// cost to the side that rarely runs: the worker, about to sleep, makes
// every running thread of the process execute a full fence before the call
// returns, and the producer needs only to keep the compiler from swapping
// its store and load (light()).
//
// Linux 4.14 and later; where the call is refused (an old kernel, a
// seccomp filter) available() is false and the caller keeps the path whose
// locked operation is its own fence.
#pragma once

#include <atomic>

namespace lapse::cpu::asymmetric_fence {

// [any thread] Whether heavy() works in this process (registered once, on
// the first call).
bool available() noexcept;

// [the side that runs often] Orders an earlier store before a later load
// against heavy(): costs no instruction.
inline void light() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

// [the side that runs rarely] A full fence here and on every thread of the
// process that runs now, after available() said true. False when the
// kernel refused it (then only this thread fenced): the caller must not
// rely on the other side's light() this time.
bool heavy() noexcept;

}  // namespace lapse::cpu::asymmetric_fence
