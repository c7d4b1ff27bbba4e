// cpu plugin — lapse.resolve_compact/1: measured windows as 16-byte stamp
// pairs and a state byte, everything else left for resolve.
//
// The same walk as resolve (cpu_device.cpp) with a smaller result: each
// token is looked up, a window whose record is closed, unheld and carries
// two stamps and no failed work is taken with one CAS and answered READY;
// any other window is not taken at all (WindowTable::try_take_ready_if
// reads the payload before the CAS and leaves the record alone when the
// pair cannot say it), so resolve later answers it in full: NOT_MEASURED,
// FAILED, or the token's error with its message.
#include "cpu_device.hpp"

#include <lapse/sdk/resolve_compact.hpp>

#include <algorithm>
#include <chrono>

namespace lapse::cpu {

namespace {

using Conversion = StampClock::Conversion;

// The common case, inline in the walk: a measured window (stamped at both
// ends, no work failed in it), taken and answered READY. False takes
// nothing and writes nothing.
[[gnu::always_inline]] inline bool take_measured(CpuWindowTable& windows, CpuWindowTable::Record* record,
                                                 const lapse_token& token, lapse_stamp_pair& pair, uint8_t& state,
                                                 const Conversion& conversion, CpuWindowTable::FreeBatch& freed) noexcept
{
    int64_t start = 0;
    int64_t end = 0;
    const bool taken = windows.try_take_ready_if(
        record, token.id, token.opened_on,
        [&](const CpuWindow& w) noexcept {
            start = w.start_ns.load(std::memory_order_relaxed);
            end = w.end_ns.load(std::memory_order_relaxed);
            // Not measured or failed: resolve's to say.
            return outcome_of(end, w.failures.load(std::memory_order_relaxed)) == Outcome::measured;
        },
        freed);
    if (taken) sdk::set_compact_ready(pair, state, conversion.to_ns(start), conversion.to_ns(end));
    return taken;
}

// Any window, out of line (the walk keeps its state in registers): READY,
// PENDING, or RESOLVE_FULL for everything resolve must answer (open,
// closed but unmeasured or failed, taken by another resolver first, no
// live window), which it leaves untouched. Returns the state written. Its
// own batch: a rare path, and the walk's batch stays unaliased.
[[gnu::noinline]] uint8_t answer(CpuWindowTable& windows, const lapse_token& token, lapse_stamp_pair& pair,
                                 uint8_t& state, const Conversion& conversion) noexcept
{
    CpuWindowTable::FreeBatch freed;
    const bool taken = take_measured(windows, windows.locate(token.id), token, pair, state, conversion, freed);
    windows.flush(freed);
    if (taken) return LAPSE_COMPACT_READY;
    const uint8_t why = windows.check(token.id, token.opened_on) == sdk::WindowCheck::pending
                            ? uint8_t{LAPSE_COMPACT_PENDING}
                            : uint8_t{LAPSE_COMPACT_RESOLVE_FULL};
    sdk::set_compact_not_ready(pair, state, why);
    return why;
}

}  // namespace

const void* CpuDevice::extension(std::string_view id) const noexcept
{
    // Inline mode opens no windows: nothing to resolve compactly.
    if (settings_.mode == Mode::stream && id == LAPSE_RESOLVE_COMPACT_EXTENSION) return &compact_;
    return nullptr;
}

lapse_status CpuDevice::resolve_compact(const lapse_token* tokens, lapse_stamp_pair* stamps, uint8_t* states,
                                        uint32_t count, uint64_t timeout_ns, lapse_error* /*error: a bad token is
                                        answered RESOLVE_FULL, and resolve names it*/) noexcept
{
    constexpr uint32_t kPrefetchAhead = 4;
    clock_.refine();
    const Conversion conversion = clock_.conversion();
    bool any_full = false;
    uint32_t first_pending = count;  // states[0 .. first_pending) are final
    {
        CpuWindowTable::FreeBatch freed;
        // The records of tokens i .. i+kPrefetchAhead-1, located (and
        // prefetched) kPrefetchAhead tokens before they are taken, so each
        // address is worked out once.
        CpuWindowTable::Record* ahead[kPrefetchAhead] = {};
        for (uint32_t i = 0; i < kPrefetchAhead && i < count; ++i) {
            ahead[i] = windows_.locate(tokens[i].id);
            CpuWindowTable::prefetch(ahead[i]);
        }
        for (uint32_t i = 0; i < count; ++i) {
            CpuWindowTable::Record* const record = ahead[i % kPrefetchAhead];
            if (i + kPrefetchAhead < count) {
                CpuWindowTable::Record* const next = windows_.locate(tokens[i + kPrefetchAhead].id);
                CpuWindowTable::prefetch(next);
                ahead[i % kPrefetchAhead] = next;
            }
            if (take_measured(windows_, record, tokens[i], stamps[i], states[i], conversion, freed)) [[likely]]
                continue;
            const uint8_t state = answer(windows_, tokens[i], stamps[i], states[i], conversion);
            any_full |= state == LAPSE_COMPACT_RESOLVE_FULL;
            if (state == LAPSE_COMPACT_PENDING && first_pending == count) first_pending = i;
        }
        windows_.flush(freed);
    }

    // Waiting: as resolve does, a poll goes on from the first pending window
    // and stops at the next one still pending (a stream stamps in order);
    // when the caller stops waiting, every pending window once more.
    auto settle = [&](uint32_t i) noexcept {
        const uint8_t state = answer(windows_, tokens[i], stamps[i], states[i], conversion);
        any_full |= state == LAPSE_COMPACT_RESOLVE_FULL;
        return state != LAPSE_COMPACT_PENDING;
    };
    auto poll = [&]() noexcept {
        for (; first_pending < count; ++first_pending)
            if (states[first_pending] == LAPSE_COMPACT_PENDING && !settle(first_pending)) break;
        return first_pending == count;
    };
    auto pass = [&]() noexcept {
        uint32_t still = count;
        for (uint32_t i = first_pending; i < count; ++i)
            if (states[i] == LAPSE_COMPACT_PENDING && !settle(i) && still == count) still = i;
        first_pending = still;
        return first_pending == count;
    };
    bool all_final = first_pending == count;
    if (!all_final && timeout_ns != 0) {
        const sdk::Deadline deadline(timeout_ns);
        auto blocked_on = [&]() noexcept { return first_pending < count ? tokens[first_pending].id : 0; };
        // wait() takes a mutex and could, in principle, throw
        // std::system_error; every window taken before that is already
        // answered in states, so stopping there (the rest stays pending)
        // loses nothing.
        try {
            all_final = completions_.wait(poll, blocked_on, deadline);
        } catch (...) {
            all_final = false;
        }
        if (!all_final) all_final = pass();
    }
    return all_final && !any_full ? LAPSE_OK : LAPSE_NOT_READY;
}

}  // namespace lapse::cpu
