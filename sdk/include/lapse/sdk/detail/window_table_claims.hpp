// lapse SDK (C++) — WindowTable's claims (lapse/sdk/window_table.hpp, "claims",
// says what they are for and declares them): their definitions, apart from
// the table's window path. Included by window_table.hpp, after the class;
// not a header to include on its own.
#pragma once

namespace lapse::sdk {

template <class Payload>
WindowCheck WindowTable<Payload>::claim(Id id, uint32_t tag, unsigned states, Live& was) noexcept
{
    uint64_t from = 0;  // the state the claim took the record from
    const WindowCheck c = change_live(id, tag, std::memory_order_acquire, [&](uint64_t w, uint64_t& next) noexcept {
        const uint64_t state = state_of(w);
        if (state != kOpen && state != kClosed) return not_open(w);
        if ((states & (1u << state)) == 0) return state == kOpen ? WindowCheck::still_open : WindowCheck::closed;
        from = state;
        next = (w & ~kStateMask) | kBusy;
        return WindowCheck::ok;
    });
    if (c == WindowCheck::ok) was = from == kOpen ? Live::open : Live::closed;
    return c;
}

template <class Payload>
void WindowTable<Payload>::publish(Id id, Live state) noexcept
{
    Record* r = pool_.record(index_of(id));
    uint64_t w = r->word.load(std::memory_order_relaxed);
    while (!r->word.compare_exchange_weak(w, (w & ~kStateMask) | static_cast<uint64_t>(state),
                                          std::memory_order_release, std::memory_order_relaxed)) {
    }
}

template <class Payload>
void WindowTable<Payload>::free_claimed(Id id, bool resolved, FreeBatch* batch) noexcept
{
    Record* r = pool_.record(index_of(id));
    uint64_t w = r->word.load(std::memory_order_relaxed);
    while (!try_free(*r, index_of(id), w, resolved ? kFateResolved : kFateForgotten, batch)) {
    }
}

template <class Payload>
void WindowTable<Payload>::park(Id id) noexcept
{
    const uint32_t index = index_of(id);
    Record* r = pool_.record(index);
    uint64_t w = r->word.load(std::memory_order_relaxed);
    while (!r->word.compare_exchange_weak(w, (w & ~kStateMask) | kAbandoned, std::memory_order_release,
                                          std::memory_order_relaxed)) {
    }
    pool_.push_parked(index);
}

template <class Payload>
template <class Done>
bool WindowTable<Payload>::reclaim_parked(Done&& done, uint32_t tries) noexcept
{
    constexpr uint32_t kMaxTries = 8;
    uint32_t still[kMaxTries];
    uint32_t n_still = 0;
    bool freed = false;
    tries = std::min(tries, kMaxTries);
    for (uint32_t t = 0; t < tries && !freed; ++t) {
        uint32_t index;
        Record* r;
        if (!pool_.pop_parked(index, r)) break;
        if (!done(static_cast<const Payload&>(r->payload))) {
            still[n_still++] = index;
            continue;
        }
        uint64_t w = r->word.load(std::memory_order_acquire);
        const bool retires = gen_of(w) == UINT32_MAX;
        while (!try_free(*r, index, w, kFateForgotten)) {
        }
        freed = !retires;
    }
    for (uint32_t k = 0; k < n_still; ++k) pool_.push_parked(still[k]);
    return freed;
}

}  // namespace lapse::sdk
