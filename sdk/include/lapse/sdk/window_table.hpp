// lapse SDK (C++) — a concurrent table of window records for plugin authors.
//
// Every backend keeps one record per window from profile_start until the
// window is resolved or abandoned, keyed by the token id it handed out. This
// header is that bookkeeping, written once so each backend gets the hard
// parts right. The shipped cpu, cuda and forward plugins, the template and
// the worked example use it; vulkan keeps its windows in a per-stream FIFO
// ring of timestamp queries instead (a window is two query slots read back
// in submission order, not a record looked up by id), so it has no table.
//
// Two ways to say what the device still does with a window, one per backend:
//   * holds (open/close/release/take): the device side drops a reference
//     when it is done with the window (a CPU worker stamped a marker);
//   * claims (claim/publish/free_claimed/park): the caller asks the device
//     and decides the record's next state from the answer (forward calls the
//     backend it stacks on; CUDA records and queries events). A record whose
//     device resources may still be in use when its window ends is parked
//     and freed by reclaim_parked() once they are not (CUDA's events).
//
// The machinery both share:
//
//   * Ids are generation-tagged: id = (generation << 32) | (index + 1). An id
//     is never 0, and a record's generation grows every time it is freed, so
//     a stale token (closed twice, closed after abandon, resolved twice) is
//     recognised and named, never mistaken for the window that reuses its
//     record. A record whose generation would wrap is retired, so ids are
//     never reused by a table.
//   * Records live in chunks that never move, and free ones sit on per-shard
//     lock-free stacks (a backend passes its stream as the tag, so threads
//     on different streams do not share a free-list cache line). Growing is
//     the only allocation. That storage is detail::RecordPool
//     (lapse/sdk/detail/record_pool.hpp); this header is what a record's
//     state means.
//   * A resolver frees records into a FreeBatch and hands the batch back
//     with one CAS (take(..., batch), then flush).
//   * A record's whole state is one 64-bit word changed by CAS: its
//     generation, tag, holds, the fate of its previous life and its state
//     (FREE, OPEN, CLOSED, ABANDONED, RETIRED, BUSY; detail/record_word.hpp
//     lays it out). So end racing abandon, or two threads resolving one token, cannot both
//     win, and the record is freed by whoever drops the last claim.
//   * Two exceptions, for resolve's and the device side's sake: a closed
//     record is taken and abandoned only under its shard's take lock, so
//     a take frees it, and a device side holding the lock (a ReleaseRun)
//     drops its holds, with a plain store, not a CAS
//     (detail/take_lock.hpp says why and what it saves).
//
// Life of a record: detail/record_word.hpp draws it.
//
// The payload (the backend's stamps, events or query slots) is written only
// by whoever has a right to it: the opener before it publishes the id, the
// device side while it holds a hold, the taker inside take(). Payload fields
// that one thread writes while another may read a stale copy of the record
// (a reader racing a reuse) should be std::atomic with relaxed order; take()
// throws away what it read when it loses the record.
//
// Thread safety: every member is [thread-safe] except the constructor,
// destructor, abandon_all() and for_each_payload() (no other call may run
// concurrently).
// open/close/release take no lock, allocate nothing and never block, except
// open() growing the table (one mutex, rare); take and abandon of a closed
// window hold its shard's take lock for a moment (a resolver's batch holds
// it across its takes, at most flush_every of them; a release run across
// its releases, and only when it found it free).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <lapse/sdk/detail/free_batch.hpp>
#include <lapse/sdk/detail/record_pool.hpp>
#include <lapse/sdk/detail/record_word.hpp>
#include <lapse/sdk/detail/take_lock.hpp>
#include <lapse/sdk/window_check.hpp>

namespace lapse::sdk {

template <class Payload>
class WindowTable : private detail::RecordWord {
public:
    using Id = uint64_t;
    using detail::RecordWord::max_holds;
    using detail::RecordWord::max_tag;

    // A record: the state word, the backend's payload, the link the free
    // lists and a FreeBatch chain records through.
    // The link may sit in the payload's tail padding (a payload of 8-byte
    // fields and one 4-byte field makes a 32-byte record, not 40).
    struct Record {
        std::atomic<uint64_t> word{0};
        [[no_unique_address]] Payload payload{};
        std::atomic<uint32_t> next_free{0};  // index + 1 of the next free record, 0 = end
    };

private:
    using Pool = detail::RecordPool<Record>;  // where records live, how a free one is found

public:
    static constexpr uint32_t max_chunks = Pool::max_chunks;
    static constexpr uint32_t max_shards = Pool::max_shards;

    // Records a resolver freed, not yet back on a free list: take() into
    // one, then flush() it (lapse/sdk/detail/free_batch.hpp says when).
    using FreeBatch = detail::FreeBatch;

    // `shards`: free lists (one per stream is right), rounded up to a power
    // of two. `first_chunk`: records allocated up front, a power of two >=
    // 16; the table doubles from there. `max_records`: windows live at once
    // at most (0: as many as 32-bit indices allow), for a backend whose
    // records own device resources and whose user sets a bound (CUDA's
    // max_windows); open() answers 0 past it.
    explicit WindowTable(uint32_t shards = 1, uint32_t first_chunk = 1024, uint32_t max_records = 0)
        : pool_(shards, first_chunk, max_records), take_locks_(new detail::TakeLock[pool_.shard_count()])
    {
    }

    WindowTable(const WindowTable&) = delete;
    WindowTable& operator=(const WindowTable&) = delete;

    static uint32_t index_of(Id id) noexcept { return static_cast<uint32_t>(id) - 1; }
    static uint32_t generation_of(Id id) noexcept { return static_cast<uint32_t>(id >> 32); }

    // Takes a free record, marks it OPEN with `tag` and `holds` device
    // references, and returns its id; 0 when memory (or the 2^32 ids of the
    // table) ran out. Write the payload before handing the id to anyone.
    Id open(uint32_t tag, uint32_t holds) noexcept
    {
        uint32_t index;
        Record* r;
        if (!pool_.pop(tag, index, r)) [[unlikely]] {
            if (!pool_.pop_anywhere(tag, index, r)) return 0;
        }
        return open_record(*r, index, tag, holds);
    }

    // open() from the tag's own free list only: 0 when that list is empty
    // (then call open(), which looks further). For a hot path that wants
    // no call and no saved register in its common case.
    Id try_open(uint32_t tag, uint32_t holds) noexcept { return try_open_from(tag, tag, holds); }

    // `tag`'s own free list, found once (it lives as long as the table):
    // try_open(list, ...) is try_open(tag, ...) without working out which
    // list is the tag's, for a hot path that opens on one tag per call.
    using FreeList = typename Pool::Shard;
    FreeList& free_list(uint32_t tag) noexcept { return pool_.shard(tag); }
    [[gnu::always_inline]] Id try_open(FreeList& list, uint32_t tag, uint32_t holds) noexcept
    {
        return try_open_from(list, tag, holds);
    }

    // A thread's own free records (detail::RecordCache: keep one per
    // thread and tag, for the thread's life). open() from it, refilled
    // from the tag's own list when empty (one CAS for up to cache_refill
    // records), then from wherever open() looks; try_open() from it alone
    // (0 when empty): plain loads and stores, no call.
    using RecordCache = detail::RecordCache;
    static constexpr uint32_t cache_refill = Pool::cache_refill;
    Id open(RecordCache& cache, uint32_t tag, uint32_t holds) noexcept
    {
        uint32_t index;
        Record* r;
        if (pool_.pop(cache, index, r) || (pool_.refill(cache, tag) && pool_.pop(cache, index, r)))
            return open_record(*r, index, tag, holds);
        return open(tag, holds);
    }
    [[gnu::always_inline]] Id try_open(RecordCache& cache, uint32_t tag, uint32_t holds) noexcept
    {
        return try_open_from(cache, tag, holds);
    }

    // The payload of a record the caller has a right to (see above). The id
    // must have come from open().
    Payload& payload(Id id) noexcept { return pool_.record(index_of(id))->payload; }

    // OPEN -> CLOSED, adding `add_holds` device references (the end marker,
    // event or query the caller is about to queue).
    WindowCheck close(Id id, uint32_t tag, uint32_t add_holds) noexcept
    {
        if (try_close(id, tag, add_holds)) [[likely]]
            return WindowCheck::ok;
        return change_live(id, tag, std::memory_order_acq_rel, [&](uint64_t w, uint64_t& next) noexcept {
            if (state_of(w) != kOpen) return not_open(w);
            next = pack(gen_of(w), tag, holds_of(w) + add_holds, kClosed);
            return WindowCheck::ok;
        });
    }

    // close()'s common case alone: the live, open record of `id` on `tag`
    // closed with one CAS. False changes nothing and says nothing (call
    // close() for the answer): for a hot path that wants no call in its
    // common case.
    bool try_close(Id id, uint32_t tag, uint32_t add_holds) noexcept
    {
        Record* r = find(id);
        if (r == nullptr) return false;
        uint64_t w = r->word.load(std::memory_order_acquire);
        // One comparison: the live record of `id`, open on `tag`, whatever
        // it holds (fate bits are 0 while a record lives).
        constexpr uint64_t kHoldsMask = holds_field(max_holds);
        return (w & ~kHoldsMask) == pack(generation_of(id), tag, 0, kOpen) && tag <= max_tag &&
               holds_of(w) + add_holds <= max_holds &&
               r->word.compare_exchange_strong(w, (w + holds_field(add_holds)) - kOpen + kClosed,
                                               std::memory_order_acq_rel, std::memory_order_acquire);
    }

    // Drops `count` device references (markers were stamped, an event
    // completed) with one atomic operation. Frees the record when it was
    // abandoned and these were the last. Only for a caller that holds that
    // many holds: it cannot fail.
    void release(Id id, uint32_t count = 1) noexcept
    {
        Record* r = pool_.record(index_of(id));
        const uint64_t dropped = holds_field(count);
        uint64_t old = r->word.fetch_sub(dropped, std::memory_order_seq_cst);
        if (holds_of(old) == count && state_of(old) == kAbandoned) free_record(*r, index_of(id), old - dropped, kFateForgotten);
    }

    // [the device side] How many holds the record of `id` has now, for a
    // device side that holds one of them: one whose holds may come back out
    // of order (a CPU worker handed a window's end marker before its start
    // marker) tells from this which of its holds are still out.
    uint32_t holds(Id id) const noexcept { return holds_of(pool_.record(index_of(id))->word.load(std::memory_order_relaxed)); }

    // Holds dropped in a row by one device-side thread (a CPU worker
    // stamping a run of markers). begin_releases() tries the take lock of
    // a tag's shard; while the run holds it, nothing but the run changes a
    // CLOSED record there (close needs OPEN, take and abandon the lock), so
    // release(id, count, run) drops its holds with a plain store. Anything
    // else, or a run that found the lock held, goes through release().
    // end_releases() fences (seq_cst, as each release() is: a resolver that
    // saw a record held before it sleeps is woken by the device side's look
    // after it) and lets the lock go. No take or abandon in between. A run
    // not begun (a default ReleaseRun) holds no lock: every release in it
    // is release()'s, which is what a single one should be (the lock's
    // try, fence and unlock cost more than one locked operation).
    class ReleaseRun {
        friend class WindowTable;
        uint32_t shard_ = 0;
        bool locked_ = false;
    };
    void begin_releases(ReleaseRun& run, uint32_t tag) noexcept
    {
        run.shard_ = pool_.shard_of(tag);
        run.locked_ = take_locks_[run.shard_].try_lock();
    }
    void release(Id id, uint32_t count, ReleaseRun& run) noexcept
    {
        Record* r = pool_.record(index_of(id));
        const uint64_t w = r->word.load(std::memory_order_relaxed);
        if (run.locked_ && state_of(w) == kClosed && pool_.shard_of(tag_of(w)) == run.shard_) [[likely]]
            r->word.store(w - holds_field(count), std::memory_order_release);
        else
            release_outside_run(id, count);
    }
    void end_releases(ReleaseRun& run) noexcept
    {
        if (!run.locked_) return;  // each release was a seq_cst operation of its own
        std::atomic_thread_fence(std::memory_order_seq_cst);
        take_locks_[run.shard_].unlock();
        run.locked_ = false;
    }

    // Forgets a window, open or closed and not yet taken. `ok` when it did;
    // anything else (unknown, another tag, already gone) changes nothing.
    WindowCheck abandon(Id id, uint32_t tag) noexcept
    {
        Record* r = find(id);
        if (r == nullptr) return WindowCheck::unknown;
        detail::TakeLock* held = nullptr;
        WindowCheck result = WindowCheck::ok;
        uint64_t w = r->word.load(std::memory_order_acquire);
        for (;;) {
            result = classify(id, w, tag);
            if (result == WindowCheck::ok && state_of(w) == kAbandoned) result = WindowCheck::abandoned;
            if (result == WindowCheck::ok && state_of(w) == kBusy) result = WindowCheck::busy;  // the claimer decides
            if (result != WindowCheck::ok) break;
            if (state_of(w) == kClosed && held == nullptr) {
                // Closed: only under its take lock (a take frees such a
                // record with a plain store, a ReleaseRun drops its holds
                // with one). Then look again.
                held = &take_locks_[pool_.shard_of(tag)];
                held->lock();
                w = r->word.load(std::memory_order_acquire);
                continue;
            }
            if (holds_of(w) == 0) {
                if (try_free(*r, index_of(id), w, kFateForgotten)) break;
            } else {
                uint64_t next = pack(gen_of(w), tag_of(w), holds_of(w), kAbandoned);
                if (r->word.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire))
                    break;
            }
        }
        if (held != nullptr) held->unlock();
        return result;
    }

    // Reads and frees a closed window the device no longer holds: calls
    // read(const Payload&), then frees the record. `ok` means read saw the
    // final payload; any other answer read nothing (it is pending, another
    // thread took or abandoned it, or it is not this table's).
    template <class Read>
    WindowCheck take(Id id, uint32_t tag, Read&& read) noexcept
    {
        FreeBatch batch;
        const WindowCheck c = take_into(id, tag, read, batch);
        flush(batch);
        return c;
    }

    // take(), freeing the record into `batch` instead of onto a free list:
    // for a resolver taking many windows in one call. The batch hands its
    // records back every flush_every records, so a long resolve never hides
    // many free records from the threads opening windows meanwhile.
    static constexpr uint32_t flush_every = 256;
    template <class Read>
    WindowCheck take(Id id, uint32_t tag, Read&& read, FreeBatch& batch) noexcept
    {
        return take_into(id, tag, read, batch);
    }

    // The common case of take(id, tag, read, batch) in one comparison: the
    // live record of `id`, closed on `tag`, every hold released. True when
    // it took the window (read saw the final payload). False changes
    // nothing and says nothing: call take() for the answer and its reason.
    template <class Read>
    bool try_take_ready(Id id, uint32_t tag, Read&& read, FreeBatch& batch) noexcept
    {
        return try_take_ready_if(
            find(id), id, tag,
            [&](const Payload& p) noexcept {
                read(p);
                return true;
            },
            batch);
    }

    // try_take_ready() for a resolver that answers only some measured
    // windows itself (lapse.resolve_compact/1 answers bare stamps, and
    // leaves a failed or unmeasured window to the full resolve):
    // read(const Payload&) returns false to leave the window exactly as it
    // was, closed and unheld, for take() later. The word is loaded seq_cst
    // (free on x86, as take() does), so a resolver that finds the window
    // held and then sleeps on its device's signal pairs with the device
    // side's seq_cst release().
    template <class Read>
    bool try_take_ready_if(Id id, uint32_t tag, Read&& read, FreeBatch& batch) noexcept
    {
        return try_take_ready_if(locate(id), id, tag, read, batch);
    }

    // The same, on the record locate(id) found: a resolver that prefetches
    // each record a few tokens ahead works its address out once.
    template <class Read>
    bool try_take_ready_if(Record* r, Id id, uint32_t tag, Read&& read, FreeBatch& batch) noexcept
    {
        if (r == nullptr || tag > max_tag) return false;
        hold_take_lock(batch, tag);
        const uint64_t w = pack(generation_of(id), tag, 0, kClosed);
        if (r->word.load(std::memory_order_seq_cst) != w) return false;
        if (!read(static_cast<const Payload&>(r->payload))) return false;
        free_taken(*r, index_of(id), w, batch);
        return true;
    }

    // Where the record of `id` lives, or nullptr when no chunk holds it.
    // Reading it changes nothing; only the calls above act on it.
    Record* locate(Id id) const noexcept { return find(id); }

    // Starts loading a record locate() found (nullptr is ignored).
    static void prefetch(const Record* r) noexcept
    {
        if (r != nullptr) __builtin_prefetch(r, 1);
    }

    // Puts the records of `batch` back on the calling thread's free list
    // (one CAS) and lets go of its take lock. Call it before the batch goes
    // out of scope.
    void flush(FreeBatch& batch) noexcept
    {
        if (batch.count_ != 0) {
            pool_.push(batch.tag_, batch.first_ - 1, batch.last_ - 1);
            batch.first_ = batch.last_ = batch.count_ = 0;
        }
        if (batch.locked_ != 0) {
            take_locks_[pool_.shard_of(batch.locked_ - 1)].unlock();
            batch.locked_ = 0;
        }
    }

    // Starts loading the record of `id` into the cache (a resolver walking
    // many tokens calls it a few tokens ahead, so the store that frees each
    // record does not wait on memory). Changes nothing.
    void prefetch(Id id) const noexcept
    {
        if (const Record* r = find(id)) __builtin_prefetch(r, 1);
    }

    // What the table holds for `id` now, changing nothing: ok (open), closed,
    // pending (closed, held), or why it is not live.
    WindowCheck check(Id id, uint32_t tag) const noexcept
    {
        const Record* r = find(id);
        if (r == nullptr) return WindowCheck::unknown;
        uint64_t w = r->word.load(std::memory_order_acquire);
        WindowCheck c = classify(id, w, tag);
        if (c != WindowCheck::ok) return c;
        if (state_of(w) == kAbandoned) return WindowCheck::abandoned;
        if (state_of(w) == kBusy) return WindowCheck::busy;
        if (state_of(w) == kClosed) return holds_of(w) != 0 ? WindowCheck::pending : WindowCheck::closed;
        return WindowCheck::ok;
    }

    // The tag a live record carries (for error messages), or max_tag + 1.
    uint32_t tag_of_live(Id id) const noexcept
    {
        const Record* r = find(id);
        if (r == nullptr) return max_tag + 1;
        uint64_t w = r->word.load(std::memory_order_acquire);
        if (gen_of(w) != generation_of(id) || state_of(w) == kFree || state_of(w) == kRetired) return max_tag + 1;
        return tag_of(w);
    }

    // --- claims ---------------------------------------------------------------
    //
    // For a backend whose window calls ask its device first and choose the
    // record's next state from the answer (forward calling the backend it
    // stacks on; CUDA recording an event, which may fail): claim() moves a
    // live record to BUSY with one CAS, the claimer alone reads and writes
    // its payload, and publish(), free_claimed() or park() ends the claim.
    // Any other call meeting a BUSY record answers `busy` and changes
    // nothing (the caller waits, or answers pending). A claim is held only
    // across a device call, never across user code. Claimed records carry no
    // holds: a backend uses claims or holds, not both. Defined apart, in
    // lapse/sdk/detail/window_table_claims.hpp.

    // The states a claim starts from (a mask of them) and publish() ends in.
    enum class Live : uint8_t { open = 1, closed = 2 };
    static constexpr unsigned mask(Live state) noexcept { return 1u << static_cast<unsigned>(state); }

    // Claims the live record of `id` on `tag` if it is in one of `states`;
    // `was` receives the state it had. Not `ok`: why not (busy, another tag,
    // abandoned, still_open / closed when not in `states`, gone).
    WindowCheck claim(Id id, uint32_t tag, unsigned states, Live& was) noexcept;
    // Ends a claim: the record is live again, in `state`, with what the
    // claimer wrote to its payload.
    void publish(Id id, Live state) noexcept;
    // Ends a claim by freeing the record: its window is over, `resolved`
    // (taken) or forgotten (abandoned), as a later token of it is told.
    // Into `batch` when one is given.
    void free_claimed(Id id, bool resolved, FreeBatch* batch = nullptr) noexcept;
    // Ends a claim by parking the record: its window is over for the host (a
    // token of it reads `abandoned`), but the device may still use what the
    // payload names (events a GPU has not reached yet) and nobody will tell
    // the table when it stops. The record waits on the parked list until
    // reclaim_parked() finds it done.
    void park(Id id) noexcept;
    // Looks at up to `tries` (at most 8) parked records and frees each one
    // that done(const Payload&) says the device is finished with; the others
    // go back on the list. True when one became free (onto its tag's free
    // list): for an open that found the free lists empty, before it grows
    // the table. Only parked records are read, and nobody else writes them.
    template <class Done>
    bool reclaim_parked(Done&& done, uint32_t tries) noexcept;

    // Calls f(Payload&) for every record allocated, live or free. Only while
    // no other call runs (a device's close): for payloads that own
    // resources for the record's whole life, such as CUDA's events.
    template <class F>
    void for_each_payload(F&& f) noexcept
    {
        pool_.for_each_record([&](Record& r, uint32_t) { f(r.payload); });
    }

    struct Census {
        std::size_t open = 0;       // opened, never closed
        std::size_t closed = 0;     // closed, never resolved
        std::size_t abandoned = 0;  // abandoned while the device still held them
    };

    // Counts and frees every live record. For a device's close, once nothing
    // else touches the table. Payload read by nobody afterwards.
    Census abandon_all() noexcept
    {
        Census census;
        pool_.for_each_record([&](Record& r, uint32_t index) {
            uint64_t w = r.word.load(std::memory_order_acquire);
            switch (state_of(w)) {
            case kOpen: ++census.open; break;
            case kClosed: ++census.closed; break;
            case kAbandoned: ++census.abandoned; break;
            default: return;
            }
            try_free(r, index, w, kFateForgotten);
        });
        return census;
    }

    // Records allocated (live or free).
    std::size_t capacity() const noexcept { return pool_.capacity(); }
    // Bytes the table holds.
    std::size_t memory_bytes() const noexcept { return capacity() * sizeof(Record) + sizeof(*this); }

private:
    static_assert(static_cast<uint64_t>(Live::open) == kOpen && static_cast<uint64_t>(Live::closed) == kClosed);

    // A run's release that cannot be a plain store: out of line, so the
    // run's common case inlines into the device side's loop.
    [[gnu::noinline]] void release_outside_run(Id id, uint32_t count) noexcept { release(id, count); }

    template <class Read>
    WindowCheck take_into(Id id, uint32_t tag, Read& read, FreeBatch& batch) noexcept
    {
        Record* r = find(id);
        if (r == nullptr) return WindowCheck::unknown;
        hold_take_lock(batch, tag & max_tag);  // a tag past it is refused below, changing nothing
        const uint64_t w = r->word.load(std::memory_order_seq_cst);
        const WindowCheck c = classify(id, w, tag);
        if (c != WindowCheck::ok) return c;
        switch (state_of(w)) {
        case kOpen: return WindowCheck::still_open;
        case kAbandoned: return WindowCheck::abandoned;
        case kBusy: return WindowCheck::busy;
        default: break;
        }
        if (holds_of(w) != 0) return WindowCheck::pending;
        read(static_cast<const Payload&>(r->payload));
        free_taken(*r, index_of(id), w, batch);
        return WindowCheck::ok;
    }

    // Makes `batch` the holder of the take lock of `tag` (<= max_tag)'s
    // shard, flushing it first if it holds another shard's.
    void hold_take_lock(FreeBatch& batch, uint32_t tag) noexcept
    {
        if (batch.locked_ != tag + 1) [[unlikely]]
            lock_for(batch, tag);
    }
    [[gnu::noinline]] void lock_for(FreeBatch& batch, uint32_t tag) noexcept
    {
        const uint32_t shard = pool_.shard_of(tag);
        if (batch.locked_ == 0 || pool_.shard_of(batch.locked_ - 1) != shard) {
            flush(batch);
            take_locks_[shard].lock();
        }
        batch.locked_ = tag + 1;
    }

    // Frees the closed, unheld record `w` a take read under its shard's
    // lock: nobody else may change that word, so a plain store does.
    void free_taken(Record& r, uint32_t index, uint64_t w, FreeBatch& batch) noexcept
    {
        // The next generation, every other field 0: 0 after the last one.
        const uint64_t next_generation = (w | 0xFFFFFFFFu) + 1;
        if (next_generation == 0) [[unlikely]] {  // never hand out a wrapped id
            r.word.store(pack(gen_of(w), 0, 0, kRetired, kFateResolved), std::memory_order_release);
            return;
        }
        r.word.store(next_generation | pack(0, 0, 0, kFree, kFateResolved), std::memory_order_release);
        add_to(batch, r, index, tag_of(w));
    }

    // Frees the record if its word is still `w`. The new word keeps why the
    // previous life ended, so a late token gets an exact message.
    // A record freed into `batch` is FREE (its next generation not handed
    // out) but on no list until the batch flushes: nobody else touches it.
    bool try_free(Record& r, uint32_t index, uint64_t& w, uint64_t fate, FreeBatch* batch = nullptr) noexcept
    {
        const uint32_t gen = gen_of(w);
        const bool retire = gen == UINT32_MAX;  // never hand out a wrapped id
        uint64_t next = retire ? pack(gen, 0, 0, kRetired, fate) : pack(gen + 1, 0, 0, kFree, fate);
        if (!r.word.compare_exchange_strong(w, next, std::memory_order_acq_rel, std::memory_order_acquire))
            return false;
        if (retire) return true;
        if (batch == nullptr) {
            pool_.push(tag_of(w), index, index);
            return true;
        }
        add_to(*batch, r, index, tag_of(w));
        return true;
    }

    void add_to(FreeBatch& batch, Record& r, uint32_t index, uint32_t tag) noexcept
    {
        r.next_free.store(batch.first_, std::memory_order_relaxed);
        batch.first_ = index + 1;
        if (batch.last_ == 0) {
            batch.last_ = index + 1;
            batch.tag_ = tag;
        }
        if (++batch.count_ == flush_every) flush(batch);
    }

    // The last hold of an abandoned record was dropped: nobody else may
    // change its word any more (abandon and take refuse ABANDONED).
    void free_record(Record& r, uint32_t index, uint64_t w, uint64_t fate) noexcept
    {
        while (!try_free(r, index, w, fate)) {
        }
    }

    // close()'s and claim()'s CAS loop: the live record of `id` on `tag`
    // (classify) goes from its word w to the word change(w, next) sets,
    // retried until the CAS holds; an answer of change() other than `ok`
    // returns at once, changing nothing.
    template <class Change>
    WindowCheck change_live(Id id, uint32_t tag, std::memory_order success, Change&& change) noexcept
    {
        Record* r = find(id);
        if (r == nullptr) return WindowCheck::unknown;
        uint64_t w = r->word.load(std::memory_order_acquire);
        for (;;) {
            WindowCheck c = classify(id, w, tag);
            if (c != WindowCheck::ok) return c;
            uint64_t next = 0;
            c = change(w, next);
            if (c != WindowCheck::ok) return c;
            if (r->word.compare_exchange_weak(w, next, success, std::memory_order_acquire)) return WindowCheck::ok;
        }
    }

    // Every try_open()'s body: `from` names the list (a tag, a free list
    // found once, a thread's cache; RecordPool::pop takes each).
    template <class From>
    [[gnu::always_inline]] Id try_open_from(From& from, uint32_t tag, uint32_t holds) noexcept
    {
        uint32_t index;
        Record* r;
        if (!pool_.pop(from, index, r)) [[unlikely]]
            return 0;
        return open_record(*r, index, tag, holds);
    }

    // A record just popped from a free list: OPEN, its id.
    Id open_record(Record& r, uint32_t index, uint32_t tag, uint32_t holds) noexcept
    {
        const uint32_t gen = gen_of(r.word.load(std::memory_order_relaxed));
        r.word.store(pack(gen, tag, holds, kOpen), std::memory_order_release);
        return (static_cast<uint64_t>(gen) << 32) | (static_cast<uint64_t>(index) + 1);
    }

    // Id 0 (never handed out) needs no test of its own: its index,
    // UINT32_MAX, is in no chunk (RecordPool::record).
    Record* find(Id id) const noexcept { return pool_.record(index_of(id)); }

    Pool pool_;
    std::unique_ptr<detail::TakeLock[]> take_locks_;  // one per shard (lapse/sdk/detail/take_lock.hpp)
};

}  // namespace lapse::sdk

// The claims' definitions (declared above).
#include <lapse/sdk/detail/window_table_claims.hpp>
