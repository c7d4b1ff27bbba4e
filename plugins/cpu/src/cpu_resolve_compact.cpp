// cpu plugin — lapse.resolve_compact/1: measured windows as 16-byte stamp
// pairs and a state byte, everything else left for resolve.
//
// The same walk as resolve (cpu_device.cpp) with a smaller result: each
// token is looked up, a window whose record is closed, unheld and carries
// two stamps and no failed work is taken (no locked operation: the walk
// holds its shard's take lock across a batch) and answered READY;
// any other window is not taken at all (WindowTable::try_take_ready_if
// reads the payload before it frees the record, and leaves the record
// alone when the pair cannot say it), so resolve later answers it in full: NOT_MEASURED,
// FAILED, or the token's error with its message.
#include "cpu_device.hpp"

#include <lapse/sdk/resolve_compact.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <type_traits>

namespace lapse::cpu {

namespace {

using Conversion = StampClock::Conversion;

// Where resolve_compact finds its tokens and writes its pairs: dense
// arrays, every pair written (NO_STAMP when not READY).
struct DenseLayout {
    const lapse_token* tokens;
    lapse_stamp_pair* stamps;
    static constexpr bool marks_not_ready = true;
    lapse_token token(uint32_t i) const noexcept { return tokens[i]; }
    lapse_stamp_pair& pair(uint32_t i) const noexcept { return stamps[i]; }
    // The walk's way through them: one step a window, no multiplication.
    struct Cursor {
        const lapse_token* t;
        lapse_stamp_pair* p;
        lapse_token token() const noexcept { return *t; }
        lapse_stamp_pair& pair() const noexcept { return *p; }
        void next() noexcept { ++t, ++p; }
    };
    Cursor at(uint32_t i) const noexcept { return {tokens + i, stamps + i}; }
};

// resolve_compact_strided's records: a pair written only when READY, for
// it may lie over its own token, which a window left for the full resolve
// still needs. Tokens are read by value, before their pair is written.
struct StridedLayout {
    const unsigned char* tokens;
    std::size_t token_stride;
    unsigned char* stamps;
    std::size_t stamp_stride;
    static constexpr bool marks_not_ready = false;
    lapse_token token(uint32_t i) const noexcept
    {
        lapse_token t;
        std::memcpy(&t, tokens + i * token_stride, sizeof t);
        return t;
    }
    lapse_stamp_pair& pair(uint32_t i) const noexcept
    {
        return *reinterpret_cast<lapse_stamp_pair*>(stamps + i * stamp_stride);
    }
    struct Cursor {
        const unsigned char* t;
        unsigned char* p;
        std::size_t token_stride;
        std::size_t stamp_stride;
        lapse_token token() const noexcept
        {
            lapse_token v;
            std::memcpy(&v, t, sizeof v);
            return v;
        }
        lapse_stamp_pair& pair() const noexcept { return *reinterpret_cast<lapse_stamp_pair*>(p); }
        void next() noexcept { t += token_stride, p += stamp_stride; }
    };
    Cursor at(uint32_t i) const noexcept
    {
        return {tokens + i * token_stride, stamps + i * stamp_stride, token_stride, stamp_stride};
    }
};

// The common case, inline in the walk: a measured window (stamped at both
// ends, no work failed in it), taken and answered READY. False takes
// nothing and writes nothing. `Raw`: the stamps are CLOCK_MONOTONIC ns
// already (conversion.clock is null), known outside the walk's loop.
template <bool Raw = false>
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
    if (!taken) return false;
    if constexpr (Raw)
        sdk::set_compact_ready(pair, state, start, end);
    else
        sdk::set_compact_ready(pair, state, conversion.to_ns(start), conversion.to_ns(end));
    return true;
}

// Any window, out of line (the walk keeps its state in registers): READY,
// PENDING, or RESOLVE_FULL for everything resolve must answer (open,
// closed but unmeasured or failed, taken by another resolver first, no
// live window), which it leaves untouched. Returns the state written. Its
// own batch: a rare path, and the walk's batch stays unaliased.
template <bool marks_not_ready>
[[gnu::noinline]] uint8_t answer(CpuWindowTable& windows, const lapse_token token, lapse_stamp_pair& pair,
                                 uint8_t& state, const Conversion& conversion) noexcept
{
    CpuWindowTable::FreeBatch freed;
    bool taken = take_measured(windows, windows.locate(token.id), token, pair, state, conversion, freed);
    sdk::WindowCheck check = sdk::WindowCheck::ok;
    if (!taken) {
        check = windows.check(token.id, token.opened_on);
        // Closed and unheld now: the worker released its last hold after
        // the take looked. Once more: a closed, unheld window stays so
        // unless a resolver takes it, so a second miss is resolve's to
        // answer (unmeasured, failed, or taken by another resolver).
        if (check == sdk::WindowCheck::closed)
            taken = take_measured(windows, windows.locate(token.id), token, pair, state, conversion, freed);
    }
    windows.flush(freed);
    if (taken) return LAPSE_COMPACT_READY;
    const uint8_t why =
        check == sdk::WindowCheck::pending ? uint8_t{LAPSE_COMPACT_PENDING} : uint8_t{LAPSE_COMPACT_RESOLVE_FULL};
    if constexpr (marks_not_ready)
        sdk::set_compact_not_ready(pair, state, why);
    else
        state = why;
    return why;
}

}  // namespace

const void* CpuDevice::extension(std::string_view id) const noexcept
{
    // Inline mode opens no windows: nothing to resolve compactly.
    if (settings_.mode == Mode::stream && id == LAPSE_RESOLVE_COMPACT_EXTENSION) return &compact_;
    return nullptr;
}

// A bad token is not an error here (the error argument goes unused): it
// is answered RESOLVE_FULL, and resolve names it.
lapse_status CpuDevice::resolve_compact(const lapse_token* tokens, lapse_stamp_pair* stamps, uint8_t* states,
                                        uint32_t count, uint64_t timeout_ns, lapse_error* /*error*/) noexcept
{
    return resolve_compact_walk(DenseLayout{tokens, stamps}, states, count, timeout_ns);
}

lapse_status CpuDevice::resolve_compact_strided(const lapse_token* tokens, std::size_t token_stride,
                                                lapse_stamp_pair* stamps, std::size_t stamp_stride, uint8_t* states,
                                                uint32_t count, uint64_t timeout_ns, lapse_error* /*error*/) noexcept
{
    const StridedLayout layout{reinterpret_cast<const unsigned char*>(tokens), token_stride,
                               reinterpret_cast<unsigned char*>(stamps), stamp_stride};
    return resolve_compact_walk(layout, states, count, timeout_ns);
}

template <class Layout>
lapse_status CpuDevice::resolve_compact_walk(Layout layout, uint8_t* states, uint32_t count,
                                             uint64_t timeout_ns) noexcept
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
            ahead[i] = windows_.locate(layout.token(i).id);
            CpuWindowTable::prefetch(ahead[i]);
        }
        // One loop for raw CLOCK_MONOTONIC stamps, one for stamps to convert:
        // the question is asked once, not twice a window.
        auto walk = [&](auto raw) noexcept {
            typename Layout::Cursor here = layout.at(0);
            typename Layout::Cursor later = layout.at(std::min(kPrefetchAhead, count));
            for (uint32_t i = 0; i < count; ++i, here.next()) {
                CpuWindowTable::Record* const record = ahead[i % kPrefetchAhead];
                if (i + kPrefetchAhead < count) {
                    CpuWindowTable::Record* const next = windows_.locate(later.token().id);
                    CpuWindowTable::prefetch(next);
                    ahead[i % kPrefetchAhead] = next;
                    later.next();
                }
                const lapse_token token = here.token();
                if (take_measured<decltype(raw)::value>(windows_, record, token, here.pair(), states[i], conversion,
                                                        freed)) [[likely]]
                    continue;
                windows_.flush(freed);  // answer() takes into a batch of its own
                const uint8_t state =
                    answer<Layout::marks_not_ready>(windows_, token, here.pair(), states[i], conversion);
                any_full |= state == LAPSE_COMPACT_RESOLVE_FULL;
                if (state == LAPSE_COMPACT_PENDING && first_pending == count) first_pending = i;
            }
        };
        if (conversion.clock == nullptr)
            walk(std::true_type{});
        else
            walk(std::false_type{});
        windows_.flush(freed);
    }

    // Waiting: as resolve does, a poll goes on from the first pending window
    // and stops at the next one still pending (a stream stamps in order);
    // when the caller stops waiting, every pending window once more.
    auto settle = [&](uint32_t i) noexcept {
        const uint8_t state =
            answer<Layout::marks_not_ready>(windows_, layout.token(i), layout.pair(i), states[i], conversion);
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
        auto blocked_on = [&]() noexcept { return first_pending < count ? layout.token(first_pending).id : 0; };
        // wait() takes a mutex and could, in principle, throw
        // std::system_error; every window taken before that is already
        // answered in states, so stopping there (the rest stays pending)
        // loses nothing.
        try {
            all_final = completions_.wait(poll, blocked_on, [this]() noexcept { hurry_workers(); }, deadline);
        } catch (...) {
            all_final = false;
        }
        if (!all_final) all_final = pass();
    }
    return all_final && !any_full ? LAPSE_OK : LAPSE_NOT_READY;
}

}  // namespace lapse::cpu
