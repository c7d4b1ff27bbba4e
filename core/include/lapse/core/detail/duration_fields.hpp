// lapse core, internal (installed, included by lapse/core/duration.hpp
// after the enums it packs): a Duration's five words and how its tags word
// is laid out.
#pragma once

#include <lapse/window.h>

#include <cstdint>

namespace lapse::detail {

class DeviceCore;
struct WindowNote;

// Stream, state, method, clock domain, flags and queued operations in one
// word: stream in the low 32 bits; the state in a whole byte (a hot loop
// tests failed() on every window: a byte compare, no mask); three bits each
// for method and domain (the core checks both against their enums before
// it stores them); the two LAPSE_DURATION_* flags; the 16-bit queued_ops
// on top. See DurationFields.
inline constexpr int tag_state_shift = 32;
inline constexpr int tag_method_shift = 40;
inline constexpr int tag_domain_shift = 43;
inline constexpr int tag_flags_shift = 46;
inline constexpr int tag_queued_shift = 48;
inline constexpr uint32_t tag_flags_kept = LAPSE_DURATION_WORK_QUEUED | LAPSE_DURATION_HOLDS_EARLIER_WORK;
static_assert(tag_flags_kept == 0x3, "two flag bits in the tags word");
constexpr uint64_t pack_duration_tags(Stream stream, DurationState state, TimingMethod method = TimingMethod::none,
                                      ClockDomain domain = ClockDomain::none, uint32_t flags = 0,
                                      uint32_t queued_ops = 0) noexcept
{
    return uint64_t{stream} | uint64_t(state) << tag_state_shift | uint64_t(uint32_t(method) & 0x7) << tag_method_shift |
           uint64_t(uint32_t(domain) & 0x7) << tag_domain_shift | uint64_t(flags & tag_flags_kept) << tag_flags_shift |
           uint64_t(queued_ops & 0xFFFF) << tag_queued_shift;
}
static_assert(LAPSE_DURATION_QUEUED_OPS_MAX == 0xFFFF, "queued_ops has 16 bits in the tags word");

// Duration's data: five 8-byte words, trivially copyable so that a move is
// one block copy. Words rather than a field per value so that where
// Device::profile_end's inline and out-of-line results meet, the compiler
// keeps the whole value in registers (docs/performance.md). What one state
// does not use holds what another does:
//   first_, second_   pending: the token's two words (TokenWords);
//                     ready: start_ns, end_ns; failed: the status in first_.
//   tags_             pack_duration_tags(stream, state, method, domain, flags, queued_ops).
struct DurationFields {
    DeviceCore* device_ = nullptr;  // set while pending on a device
    WindowNote* note_ = nullptr;    // name and error message, when any
    uint64_t first_ = 0;
    uint64_t second_ = 0;
    uint64_t tags_ = pack_duration_tags(0, DurationState::not_measured);
};

}  // namespace lapse::detail
