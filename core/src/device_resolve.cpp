// Resolving: a batch of Durations through one plugin call (DeviceCore),
// the windows a capture shares with the caller claimed first, and every
// answer checked before it becomes a number (Device::resolve).
//
// Device::resolve over a span of this device's windows takes the direct
// route (resolve_span), chunk by chunk: one pass gathers the tokens, one
// plugin call, one pass writes each answer into its Duration's words. On
// a device that offers lapse.resolve_compact/1 the call is the compact one
// (a 16-byte pair per measured window instead of a 40-byte answer), and
// the full resolve answers only what it leaves.
// What that pass cannot take as it goes (a window of another device, one
// shared with a capture, a closed device) sends the rest of the span, from
// the chunk that holds it and with nothing there changed yet, the general
// way.
#include "device_core.hpp"

#include "plugin_text.hpp"

#include <lapse/sdk/deadline.hpp>
#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/resolve_compact.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace lapse {

namespace detail {

namespace {

// A state no plugin writes: tells "left untouched" from "pending".
constexpr uint32_t unset_state = 0xFFFFFFFFu;

uint64_t to_timeout_ns(std::chrono::nanoseconds timeout) noexcept
{
    if (timeout == wait_forever) return LAPSE_WAIT_FOREVER;
    if (timeout.count() <= 0) return 0;
    return static_cast<uint64_t>(timeout.count());
}

// A timeout spread over several plugin calls is one sdk::Deadline: each
// call gets what is left of it, waiting forever and polling as they are.
std::chrono::nanoseconds left(const sdk::Deadline& deadline) noexcept
{
    const uint64_t ns = deadline.timeout_ns();
    return ns == LAPSE_WAIT_FOREVER ? wait_forever : std::chrono::nanoseconds(static_cast<int64_t>(ns));
}

// Device::resolve asks the plugin about a span in chunks of this many
// windows: a chunk's tokens, answers and Duration words stay in the L1
// cache from the gather through the plugin's writes to the write-back,
// where one batch of a thousand windows streams them all through L2 three
// times (docs/performance.md, cpp_resolve_vs_c_resolve).
constexpr std::size_t span_chunk = 128;

// Buffers for resolving batches too big for the stack, kept per thread so
// a loop resolving a frame's windows every frame allocates once, not every
// time. Buffers grown past kept_capacity are freed after the call (one
// allocation per very large batch, and a thread that once resolved a
// million windows does not hold 70 MB forever). A resolve nested in another
// on the same thread (a log or session sink calling back) gets its own.
constexpr std::size_t kept_capacity = 4096;

template <class T>
void trim(std::vector<T>& v) noexcept
{
    if (v.capacity() > kept_capacity) std::vector<T>().swap(v);
}

// Grows `v` to at least `count` elements; never shrinks it, so a buffer
// resolved into again and again is not written over just to be resized.
template <class T>
T* at_least(std::vector<T>& v, std::size_t count)
{
    if (v.size() < count) v.resize(count);
    return v.data();
}

struct BatchBuffers {  // what goes through the C ABI, and where each answer goes
    std::vector<lapse_token> tokens;
    std::vector<lapse_duration> out;
    std::vector<Duration*> where;
    bool busy = false;
    void trim() noexcept { detail::trim(tokens), detail::trim(out), detail::trim(where); }
};

struct ItemBuffers {  // Device::resolve's general way: the durations of this device
    std::vector<Duration*> items;
    bool busy = false;
    void trim() noexcept { detail::trim(items); }
};

template <class Buffers>
class Lease {
public:
    Lease() noexcept : buffers_(kept().busy ? &own_ : &kept()) { buffers_->busy = true; }
    ~Lease()
    {
        buffers_->busy = false;
        buffers_->trim();
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Buffers* operator->() const noexcept { return buffers_; }

private:
    static Buffers& kept() noexcept
    {
        thread_local Buffers buffers;
        return buffers;
    }
    Buffers own_;  // used only when the thread's buffers are busy
    Buffers* buffers_;
};

// The out slot for one token: struct_size set, the state one no plugin
// writes, every other field zero (a plugin of an older minor leaves the
// fields it does not know untouched).
constexpr lapse_duration blank_answer{sizeof(lapse_duration), unset_state, 0, 0, 0, 0, 0, 0, 0};
void blank_out(lapse_duration& out) noexcept { out = blank_answer; }

// The flags a Duration keeps; unknown ones are dropped, as a reader of an
// older minor version would.
constexpr uint32_t known_duration_flags = detail::tag_flags_kept;

std::string impossible_message(const char* plugin, const char* why, const lapse_duration& r)
{
    return "resolve: plugin '" + std::string(plugin) + "' returned an impossible duration, " + why + " (state " +
           std::to_string(r.state) + ", start " + std::to_string(r.start_ns) + ", end " + std::to_string(r.end_ns) +
           ", method " + std::to_string(r.method) + ", clock " + std::to_string(r.clock_domain) + ")";
}

}  // namespace

// What the plugin said about the batch as a whole: the first error and its
// message, which the windows it failed (or left unset) carry.
struct DeviceCore::BatchStatus {
    lapse_status status = LAPSE_OK;
    std::string first_message;
};

DeviceCore::BatchStatus DeviceCore::call_resolve(const lapse_token* tokens, lapse_duration* out, std::size_t count,
                                                 std::chrono::nanoseconds timeout)
{
    BatchStatus batch;
    CallError error;
    // The ABI counts in uint32_t; a larger batch goes in slices.
    for (std::size_t at = 0; at < count;) {
        uint32_t n = static_cast<uint32_t>(std::min<std::size_t>(count - at, std::numeric_limits<uint32_t>::max()));
        lapse_status s;
        try {
            s = plugin->resolve(device, tokens + at, out + at, n, to_timeout_ns(timeout), &error.e);
        } catch (...) {
            s = plugin_threw(plugin, "resolve", error.e);  // what it did not answer is given up in settle
        }
        if (s < 0 && batch.status >= 0) {
            batch.status = s;
            batch.first_message = error.describe("resolve", s);
        }
        at += n;
    }
    return batch;
}

void DeviceCore::set_answer(Duration& d, const lapse_duration& r) noexcept
{
    const uint32_t flags = r.flags & known_duration_flags;
    const uint32_t queued = (flags & LAPSE_DURATION_WORK_QUEUED) != 0 ? r.queued_ops : 0u;
    d.device_ = nullptr;  // the plugin released the window
    d.set_ready(static_cast<TimingMethod>(r.method), static_cast<ClockDomain>(r.clock_domain), r.start_ns, r.end_ns,
                flags, queued);
}

bool DeviceCore::settle(Duration* const* where, const lapse_duration* out, std::size_t count, const BatchStatus& batch)
{
    bool pending = false;
    for (std::size_t i = 0; i < count; ++i) {
        Duration& d = *where[i];
        const lapse_duration& r = out[i];
        // The common case in a few predicted branches (impossible_duration
        // inlined, the state known READY there).
        if (r.state == LAPSE_DURATION_READY && sdk::impossible_duration(r) == nullptr) [[likely]]
            set_answer(d, r);  // straight into the Duration's words
        else
            pending |= !settle_other(d, r, batch);
        // A named window is recorded (and a shared one published); an
        // unnamed one has nothing more to do.
        if (d.note_ != nullptr) [[unlikely]]
            finish_resolved(d);
    }
    return pending;
}

bool DeviceCore::settle_other(Duration& d, const lapse_duration& r, const BatchStatus& batch)
{
    const char* who = plugin->name;
    switch (r.state) {
    case LAPSE_DURATION_PENDING: return false;  // still on the device; may be resolved again
    case LAPSE_DURATION_READY:
        if (const char* why = sdk::impossible_duration(r)) {
            // A number we cannot trust is worse than none.
            d.device_ = nullptr;  // the plugin released the window
            fail(d, LAPSE_ERROR_INTERNAL, impossible_message(who, why, r));
        } else {
            set_answer(d, r);
        }
        return true;
    case LAPSE_DURATION_NOT_MEASURED:
        d.device_ = nullptr;
        d.set_state(DurationState::not_measured);
        return true;
    case LAPSE_DURATION_FAILED: {
        d.device_ = nullptr;
        const lapse_status status = batch.status;
        lapse_status why = r.failure < 0 ? r.failure : (status < 0 ? status : LAPSE_ERROR_DEVICE);
        std::string message = why == status && !batch.first_message.empty()
                                  ? batch.first_message
                                  : "resolve: the window on stream " + std::to_string(d.stream()) + " failed (" +
                                        lapse_status_name(why) + ")";
        fail(d, why, std::move(message));
        return true;
    }
    case unset_state:
    default:
        // The plugin did not answer for this window: give it up (unknown
        // tokens are ignored) rather than leave it open.
        abandon_token(this, d.token_words());
        d.device_ = nullptr;
        if (batch.status < 0)
            fail(d, batch.status, batch.first_message);
        else
            fail(d, LAPSE_ERROR_INTERNAL,
                 r.state == unset_state ? "resolve: plugin '" + std::string(who) + "' left a duration unset"
                                        : impossible_message(who, "a state outside lapse_duration_state", r));
        return true;
    }
}

void DeviceCore::resolve(Duration* const* items, std::size_t count, std::chrono::nanoseconds timeout, bool collector)
{
    if (count == 0) return;
    // Windows shared with a capture are claimed first (or read from what
    // the collector published); the claim is released in finish_resolved.
    std::vector<Duration*> claimed;
    bool any_shared = collector;
    for (std::size_t i = 0; i < count && !any_shared; ++i)
        any_shared = items[i]->note_ != nullptr && items[i]->note_->claim.load(std::memory_order_relaxed) != note_unshared;
    if (any_shared) {
        claimed.resize(count);
        count = claim_shared(items, count, claimed.data(), collector);
        items = claimed.data();
        if (count == 0) return;
    }
    // A closed device's windows went into its capture when it closed (their
    // results were taken above); the others can no longer be read.
    if (closed) {
        for (std::size_t i = 0; i < count; ++i) {
            items[i]->device_ = nullptr;  // the plugin let every window go when it closed
            fail(*items[i], LAPSE_ERROR_CLOSED, "resolve: the device was closed before this window resolved");
        }
        return;
    }
    // Small batches (one Duration::resolve, a handful of windows) stay on the
    // stack: resolving in a loop should not allocate.
    constexpr std::size_t inline_capacity = 16;
    lapse_token inline_tokens[inline_capacity];
    lapse_duration inline_out[inline_capacity];
    Lease<BatchBuffers> scratch;
    lapse_token* tokens = inline_tokens;
    lapse_duration* out = inline_out;
    if (count > inline_capacity) {
        tokens = at_least(scratch->tokens, count);
        out = at_least(scratch->out, count);
    }
    for (std::size_t i = 0; i < count; ++i) {
        tokens[i] = items[i]->token_words();
        blank_out(out[i]);
    }
    const BatchStatus batch = call_resolve(tokens, out, count, timeout);
    settle(items, out, count, batch);
}

// What every READY pair of the compact extension shares: its tags, packed
// once, and the test that it can be a duration.
struct DeviceCore::ReadyPairs {
    explicit ReadyPairs(const lapse_resolve_compact& c) noexcept
        : tags(pack_duration_tags(0, DurationState::ready, static_cast<TimingMethod>(c.method),
                                  static_cast<ClockDomain>(c.clock_domain))),
          host_clock(c.clock_domain == LAPSE_CLOCK_HOST_MONOTONIC), compact(c)
    {
    }
    // On the host clock a pair is sound when it starts at or after the
    // clock's origin and ends at or after its start (its span then fits);
    // any other clock takes impossible_pair whole.
    [[gnu::always_inline]] bool sound(int64_t start_ns, int64_t end_ns) const noexcept
    {
        return host_clock ? start_ns >= 0 && end_ns >= start_ns
                          : sdk::impossible_pair(compact, lapse_stamp_pair{start_ns, end_ns}) == nullptr;
    }
    const uint64_t tags;
    const bool host_clock;
    const lapse_resolve_compact& compact;
};

void DeviceCore::fail_impossible_pair(Duration& d, lapse_stamp_pair pair)
{
    fail(d, LAPSE_ERROR_INTERNAL,
         "resolve: plugin '" + std::string(plugin->name) + "' returned an impossible stamp pair, " +
             sdk::impossible_pair(*compact, pair) + " (start " + std::to_string(pair.start_ns) + ", end " +
             std::to_string(pair.end_ns) + ")");
}

bool DeviceCore::resolve_full_after_compact(const lapse_token* tokens, Duration* const* where, std::size_t count,
                                            lapse_duration* out, std::chrono::nanoseconds timeout)
{
    if (count == 0) return false;
    std::fill(out, out + count, blank_answer);
    const BatchStatus batch = call_resolve(tokens, out, count, timeout);
    return settle(where, out, count, batch);
}

bool DeviceCore::resolve_chunk_compact(const lapse_token* tokens, Duration* const* where, std::size_t count,
                                       lapse_duration* out, std::chrono::nanoseconds timeout)
{
    lapse_stamp_pair pairs[span_chunk];
    uint8_t states[span_chunk];
    CallError error;
    lapse_status status;
    try {
        status = compact->resolve_compact(device, tokens, pairs, states, static_cast<uint32_t>(count),
                                          to_timeout_ns(timeout), &error.e);
    } catch (...) {
        status = plugin_threw(plugin, "resolve_compact", error.e);
    }
    // Refused (or thrown): what it answered cannot be trusted, and what it
    // took answers "resolved already" to the full resolve, never a number.
    const bool answered = status == LAPSE_OK || status == LAPSE_NOT_READY;
    if (!answered) std::fill(states, states + count, uint8_t{LAPSE_COMPACT_RESOLVE_FULL});
    // What the compact answer leaves goes through the full resolve, in
    // place: tokens and Durations packed to the front of these.
    lapse_token full_tokens[span_chunk];
    Duration* full_where[span_chunk];
    std::size_t full = 0;
    bool pending = false;
    const ReadyPairs ready(*compact);
    for (std::size_t i = 0; i < count; ++i) {
        Duration& d = *where[i];
        const uint8_t state = states[i];
        if (state == LAPSE_COMPACT_READY) [[likely]] {
            d.device_ = nullptr;  // the plugin released the window
            const lapse_stamp_pair& pair = pairs[i];
            if (ready.sound(pair.start_ns, pair.end_ns)) [[likely]]
                d.set_ready_packed(ready.tags, pair.start_ns, pair.end_ns);
            else
                fail_impossible_pair(d, pair);
        } else if (state == LAPSE_COMPACT_PENDING) {
            pending = true;
        } else {
            // RESOLVE_FULL, or a state the extension does not define: the
            // window is untouched, and resolve answers it in full.
            full_tokens[full] = tokens[i];
            full_where[full] = &d;
            ++full;
            continue;
        }
        if (d.note_ != nullptr) [[unlikely]]
            finish_resolved(d);
    }
    // Final windows (or bad tokens) answer at once; after a refused call,
    // every window is asked again in full, with the time it had.
    return resolve_full_after_compact(full_tokens, full_where, full, out,
                                      answered ? std::chrono::nanoseconds(0) : timeout) ||
           pending;
}

// A Duration holds a pending window's token where a resolved one holds its
// stamps, in the layouts of lapse_token and lapse_stamp_pair: the strided
// compact resolve reads the one and writes the other in place.
static_assert(offsetof(DurationFields, second_) == offsetof(DurationFields, first_) + 8 &&
                  sizeof(lapse_token) == 16 && sizeof(lapse_stamp_pair) == 16 &&
                  offsetof(DurationFields, first_) % 8 == 0 && sizeof(Duration) % 8 == 0,
              "a Duration's two words must be a lapse_token and a lapse_stamp_pair");

bool DeviceCore::resolve_run_in_place(Duration* run, std::size_t count, bool named, lapse_duration* out,
                                      std::chrono::nanoseconds timeout)
{
    uint8_t states[span_chunk];
    auto* words = reinterpret_cast<unsigned char*>(run) + offsetof(DurationFields, first_);
    CallError error;
    lapse_status status;
    bool threw = false;
    try {
        status = compact_strided(device, reinterpret_cast<const lapse_token*>(words), sizeof(Duration),
                                 reinterpret_cast<lapse_stamp_pair*>(words), sizeof(Duration), states,
                                 static_cast<uint32_t>(count), to_timeout_ns(timeout), &error.e);
    } catch (...) {
        status = plugin_threw(plugin, "resolve_compact_strided", error.e);
        threw = true;
    }
    if (threw) [[unlikely]] {
        // Stopped halfway: a window it took may hold stamps where its token
        // was, so no word of the run can be read as a token again. Every
        // window fails with the cause (the plugin keeps what it did not
        // take: a plugin that throws across the ABI leaks its windows).
        const std::string message = error.describe("resolve_compact_strided", status);
        for (std::size_t i = 0; i < count; ++i) {
            run[i].device_ = nullptr;
            fail(run[i], status, message);
            if (run[i].note_ != nullptr) finish_resolved(run[i]);
        }
        return false;
    }
    // Refused: nothing was written or taken, every token is as it was, and
    // every window is asked again in full, with the time it had.
    const bool answered = status == LAPSE_OK || status == LAPSE_NOT_READY;
    if (!answered) std::fill(states, states + count, uint8_t{LAPSE_COMPACT_RESOLVE_FULL});
    const ReadyPairs ready(*compact);
    // The common case first, in few registers: every window READY, sound
    // on the host clock, unnamed. Each one it takes no longer points at
    // this device, which is how the pass below tells it from the rest.
    bool rest = !answered || !ready.host_clock;
    if (!rest) {
        // Every tag above the stream, stored as one 32-bit word: the stream
        // (the low half) stays as it is, and nothing is read back.
        static_assert(std::endian::native == std::endian::little, "the tags' upper half lies 4 bytes in");
        const auto above_stream = static_cast<uint32_t>(ready.tags >> 32);
        for (std::size_t i = 0; i < count; ++i) {
            Duration& d = run[i];
            const auto start = static_cast<int64_t>(d.first_);
            const auto end = static_cast<int64_t>(d.second_);
            if (states[i] == LAPSE_COMPACT_READY && start >= 0 && end >= start) [[likely]] {
                d.device_ = nullptr;  // the plugin released the window
                // READY: the stamps are in its words already.
                std::memcpy(reinterpret_cast<unsigned char*>(&d.tags_) + 4, &above_stream, sizeof above_stream);
            } else {
                rest = true;
            }
        }
        if (!rest && !named) return false;
    }
    lapse_token full_tokens[span_chunk];
    Duration* full_where[span_chunk];
    std::size_t full = 0;
    bool pending = false;
    for (std::size_t i = 0; i < count; ++i) {
        Duration& d = run[i];
        const uint8_t state = states[i];
        if (state == LAPSE_COMPACT_READY) [[likely]] {
            if (d.device_ != nullptr) {  // not taken by the pass above
                d.device_ = nullptr;
                const auto start = static_cast<int64_t>(d.first_);
                const auto end = static_cast<int64_t>(d.second_);
                if (ready.sound(start, end))
                    d.mark_ready_packed(ready.tags);
                else
                    fail_impossible_pair(d, lapse_stamp_pair{start, end});
            }
        } else if (state == LAPSE_COMPACT_PENDING) {
            pending = true;
        } else {
            full_tokens[full] = d.token_words();  // untouched: still the token
            full_where[full] = &d;
            ++full;
            continue;
        }
        if (d.note_ != nullptr) [[unlikely]]
            finish_resolved(d);
    }
    return resolve_full_after_compact(full_tokens, full_where, full, out,
                                      answered ? std::chrono::nanoseconds(0) : timeout) ||
           pending;
}

DeviceCore::Reach DeviceCore::reach(const Duration& d) const noexcept
{
    if (d.device_ != this) return d.device_ == nullptr ? Reach::final_already : Reach::elsewhere;
    // Shared with a capture: claimed first, the general way.
    if (d.note_ != nullptr && d.note_->claim.load(std::memory_order_relaxed) != note_unshared) [[unlikely]]
        return Reach::elsewhere;
    return Reach::here;
}

DeviceCore::SpanResolve DeviceCore::resolve_span(std::span<Duration> durations, std::chrono::nanoseconds timeout)
{
    SpanResolve result;
    result.rest = durations.data();
    if (closed) return result;  // the general way fails them, naming the cause
    const sdk::Deadline deadline(to_timeout_ns(timeout));
    Lease<BatchBuffers> scratch;
    lapse_token* tokens = at_least(scratch->tokens, span_chunk);
    lapse_duration* out = at_least(scratch->out, span_chunk);
    Duration** where = at_least(scratch->where, span_chunk);
    Duration* next = durations.data();
    Duration* const end = next + durations.size();
    while (next != end) {
        if (compact_strided != nullptr) {
            // A run of this device's windows, resolved where they lie: no
            // token gathered, no pair written back.
            const Reach first = reach(*next);
            if (first == Reach::final_already) {
                ++next;
                continue;
            }
            if (first == Reach::elsewhere) {
                result.rest = next;
                return result;
            }
            Duration* const run = next;
            Duration* const limit = static_cast<std::size_t>(end - run) > span_chunk ? run + span_chunk : end;
            // This device's Durations, their notes or'ed: a run with none
            // (the common case) needs no look at any claim, here or after
            // the plugin's walk.
            uintptr_t notes = reinterpret_cast<uintptr_t>(run->note_);
            while (++next != limit && next->device_ == this) notes |= reinterpret_cast<uintptr_t>(next->note_);
            if (notes != 0) {
                // Some are named: the run ends before the first one shared
                // with a capture (claimed the general way).
                Duration* const scanned = next;
                next = run + 1;
                while (next != scanned && reach(*next) == Reach::here) ++next;
            }
            result.some_pending |= resolve_run_in_place(run, static_cast<std::size_t>(next - run), notes != 0, out,
                                                        left(deadline));
            continue;
        }
        // One pass over the chunk: each window of this device gives its
        // token; a final one is left as it is.
        Duration* const chunk = next;
        lapse_token* token = tokens;
        Duration** at = where;
        for (; next != end && at != where + span_chunk; ++next) {
            const Reach r = reach(*next);
            if (r == Reach::final_already) continue;
            if (r == Reach::elsewhere) [[unlikely]] {
                result.rest = chunk;  // nothing in this chunk changed yet
                return result;
            }
            *token++ = next->token_words();
            *at++ = next;
        }
        const std::size_t count = static_cast<std::size_t>(at - where);
        if (count == 0) break;
        if (compact != nullptr) {
            result.some_pending |= resolve_chunk_compact(tokens, where, count, out, left(deadline));
            continue;
        }
        std::fill(out, out + count, blank_answer);
        const BatchStatus batch = call_resolve(tokens, out, count, left(deadline));
        result.some_pending |= settle(where, out, count, batch);
    }
    result.rest = nullptr;
    return result;
}

}  // namespace detail

bool Device::resolve(std::span<Duration> durations, std::chrono::nanoseconds timeout)
{
    if (core_ == nullptr) return resolve_general(durations, timeout);
    const sdk::Deadline deadline(detail::to_timeout_ns(timeout));
    const detail::DeviceCore::SpanResolve direct = core_->resolve_span(durations, timeout);
    if (direct.rest == nullptr) return !direct.some_pending;
    // What the direct route did not reach (from the chunk that held a
    // window it cannot take), the general way, in the time that is left.
    const std::size_t done = static_cast<std::size_t>(direct.rest - durations.data());
    const bool rest_final = resolve_general(durations.subspan(done), detail::left(deadline));
    return rest_final && !direct.some_pending;
}

bool Device::resolve_general(std::span<Duration> durations, std::chrono::nanoseconds timeout)
{
    // This device's windows in one batch (shared ones claimed, a closed
    // device's failed), every other device's on its own.
    detail::Lease<detail::ItemBuffers> scratch;
    std::vector<Duration*>& mine = scratch->items;
    mine.clear();
    for (Duration& d : durations) {
        if (d.device_ == nullptr) continue;
        if (d.device_ == core_.get())
            mine.push_back(&d);
        else
            d.resolve(timeout);  // another device's: resolved on its own
    }
    if (!mine.empty()) core_->resolve(mine.data(), mine.size(), timeout);
    for (const Duration& d : durations)
        if (d.pending()) return false;
    return true;
}

}  // namespace lapse
