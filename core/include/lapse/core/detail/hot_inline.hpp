// lapse core, internal (installed, included by the public headers):
// LAPSE_DETAIL_HOT_INLINE, the attribute of the window hot path.
#pragma once

// Forces inlining of the window hot path (Device::profile_start and
// profile_end, the Window and Duration destructors). It must be inlined
// whole for the compiler to keep the caller's Window in registers (see
// Device::profile_start): the size heuristics would keep profile_end out
// of line for its cold branches, and a destructor that is called out of
// line on the exception path alone already forces its object into memory.
#if defined(__GNUC__) || defined(__clang__)
#define LAPSE_DETAIL_HOT_INLINE [[gnu::always_inline]]
#else
#define LAPSE_DETAIL_HOT_INLINE
#endif
