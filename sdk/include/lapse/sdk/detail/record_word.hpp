// lapse SDK (C++) — how a WindowTable record's state word is laid out, and
// what a word says about a token (lapse/sdk/window_table.hpp changes the
// word; this only reads and builds it). Not an interface of its own
// (machinery, like record_pool.hpp).
//
// One 64-bit word per record:
//   bits 63..32 generation, 31..16 tag (the stream it was opened on),
//   15..8 holds (references the device still has in flight: markers,
//   events, queries), 7..4 fate of the previous life, 3..0 state.
//
// Life of a record:
//
//     FREE --open(tag, holds)--> OPEN --close(+holds)--> CLOSED
//                                  |                       | take(): holds == 0
//                                  |                       v
//                                  +--abandon--+         FREE (fate resolved)
//                                              v
//                    ABANDONED while holds > 0, FREE (fate forgotten) at 0
//
// With claims, OPEN and CLOSED also go to BUSY (claim) and back (publish),
// or to FREE (free_claimed), or to ABANDONED with no holds, parked
// (park), and from there to FREE (reclaim_parked).
#pragma once

#include <lapse/sdk/window_check.hpp>

#include <cstdint>

namespace lapse::sdk::detail {

struct RecordWord {
    static constexpr uint32_t max_tag = 0xFFFF;
    static constexpr uint32_t max_holds = 0xFF;
    // Holds sit in bits 8..15: `holds` of them as a word's field, so that
    // adding or dropping some is one add or subtract on the word.
    static constexpr unsigned kHoldsShift = 8;
    static constexpr uint64_t holds_field(uint32_t holds) noexcept { return static_cast<uint64_t>(holds) << kHoldsShift; }

    // BUSY: claimed (WindowTable::claim). An ABANDONED record with no holds
    // is a parked one. RETIRED: its generation would wrap; never reused.
    static constexpr uint64_t kFree = 0, kOpen = 1, kClosed = 2, kAbandoned = 3, kRetired = 4, kBusy = 5;
    static constexpr uint64_t kStateMask = 0xF;
    // Why the previous life ended, kept in a FREE word so a late token gets
    // an exact message.
    static constexpr uint64_t kFateNone = 0, kFateResolved = 1, kFateForgotten = 2;
    static constexpr uint64_t kFateMask = 0xF;

    static uint64_t pack(uint32_t gen, uint32_t tag, uint32_t holds, uint64_t state, uint64_t fate = 0) noexcept
    {
        return (static_cast<uint64_t>(gen) << 32) | (static_cast<uint64_t>(tag & max_tag) << 16) |
               holds_field(holds & max_holds) | (fate << 4) | state;
    }
    static uint32_t gen_of(uint64_t w) noexcept { return static_cast<uint32_t>(w >> 32); }
    static uint32_t tag_of(uint64_t w) noexcept { return static_cast<uint32_t>(w >> 16) & max_tag; }
    static uint32_t holds_of(uint64_t w) noexcept { return static_cast<uint32_t>(w >> kHoldsShift) & max_holds; }
    static uint64_t state_of(uint64_t w) noexcept { return w & kStateMask; }
    static uint64_t fate_of(uint64_t w) noexcept { return (w >> 4) & kFateMask; }

    // Why a live record that is not OPEN cannot be closed or claimed.
    static WindowCheck not_open(uint64_t w) noexcept
    {
        switch (state_of(w)) {
        case kClosed: return WindowCheck::closed;
        case kBusy: return WindowCheck::busy;
        default: return WindowCheck::abandoned;
        }
    }

    // Whether `w` is the live record of token id `id` with `tag`; if not,
    // why not.
    static WindowCheck classify(uint64_t id, uint64_t w, uint32_t tag) noexcept
    {
        const uint32_t gen = static_cast<uint32_t>(id >> 32);
        const uint32_t now = gen_of(w);
        const uint64_t state = state_of(w);
        if (now == gen) {
            if (state == kRetired) return fate_of(w) == kFateResolved ? WindowCheck::resolved : WindowCheck::forgotten;
            if (state == kFree) return WindowCheck::unknown;  // generation not handed out yet
            return tag_of(w) == (tag & max_tag) && tag <= max_tag ? WindowCheck::ok : WindowCheck::wrong_tag;
        }
        if (now == gen + 1 && gen != UINT32_MAX && state == kFree)
            return fate_of(w) == kFateResolved ? WindowCheck::resolved
                   : fate_of(w) == kFateForgotten ? WindowCheck::forgotten
                                                  : WindowCheck::expired;
        if (now > gen) return WindowCheck::expired;
        return WindowCheck::unknown;  // a generation this record never had
    }
};

}  // namespace lapse::sdk::detail
