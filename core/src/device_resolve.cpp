// Resolving: a batch of Durations through one plugin call (DeviceCore),
// the windows a capture shares with the caller claimed first, and every
// answer checked before it becomes a number (Device::resolve).
#include "device_core.hpp"

#include "plugin_text.hpp"

#include <lapse/sdk/duration.hpp>

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

struct BatchBuffers {  // DeviceCore::resolve: what goes through the C ABI
    std::vector<lapse_token> tokens;
    std::vector<lapse_duration> out;
    bool busy = false;
    void trim() noexcept { detail::trim(tokens), detail::trim(out); }
};

struct ItemBuffers {  // Device::resolve: the durations of this device
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
        scratch->tokens.resize(count);
        scratch->out.resize(count);
        tokens = scratch->tokens.data();
        out = scratch->out.data();
    }
    for (std::size_t i = 0; i < count; ++i) {
        tokens[i] = items[i]->token_words();
        out[i] = lapse_duration{};
        out[i].struct_size = sizeof(lapse_duration);
        out[i].state = unset_state;
    }
    CallError error;
    // The ABI counts in uint32_t; a larger batch goes in slices.
    lapse_status status = LAPSE_OK;
    std::string first_message;
    for (std::size_t at = 0; at < count;) {
        uint32_t n = static_cast<uint32_t>(std::min<std::size_t>(count - at, std::numeric_limits<uint32_t>::max()));
        lapse_status s;
        try {
            s = plugin->resolve(device, tokens + at, out + at, n, to_timeout_ns(timeout), &error.e);
        } catch (...) {
            s = plugin_threw(plugin, "resolve", error.e);  // what it did not answer is given up below
        }
        if (s < 0 && status >= 0) {
            status = s;
            first_message = error.describe("resolve", s);
        }
        at += n;
    }

    const char* who = plugin->name;
    for (std::size_t i = 0; i < count; ++i) {
        Duration& d = *items[i];
        const lapse_duration& r = out[i];
        switch (r.state) {
        case LAPSE_DURATION_PENDING:  // still on the device; may be resolved again
            finish_resolved(d);
            continue;
        case LAPSE_DURATION_READY: {
            d.device_ = nullptr;  // the plugin released the window
            if (const char* why = sdk::impossible_duration(r)) {
                // A number we cannot trust is worse than none.
                fail(d, LAPSE_ERROR_INTERNAL, impossible_message(who, why, r));
                break;
            }
            const uint32_t flags = r.flags & known_duration_flags;
            d.set_ready(static_cast<TimingMethod>(r.method), static_cast<ClockDomain>(r.clock_domain), r.start_ns,
                        r.end_ns, flags, (flags & LAPSE_DURATION_WORK_QUEUED) != 0 ? r.queued_ops : 0u);
            break;
        }
        case LAPSE_DURATION_NOT_MEASURED:
            d.device_ = nullptr;
            d.set_state(DurationState::not_measured);
            break;
        case LAPSE_DURATION_FAILED: {
            d.device_ = nullptr;
            lapse_status why = r.failure < 0 ? r.failure : (status < 0 ? status : LAPSE_ERROR_DEVICE);
            std::string message = why == status && !first_message.empty()
                                      ? first_message
                                      : "resolve: the window on stream " + std::to_string(d.stream()) + " failed (" +
                                            lapse_status_name(why) + ")";
            fail(d, why, std::move(message));
            break;
        }
        case unset_state:
        default: {
            // The plugin did not answer for this window: give it up (unknown
            // tokens are ignored) rather than leave it open.
            abandon_token(this, d.token_words());
            d.device_ = nullptr;
            if (status < 0)
                fail(d, status, first_message);
            else
                fail(d, LAPSE_ERROR_INTERNAL,
                     r.state == unset_state
                         ? "resolve: plugin '" + std::string(who) + "' left a duration unset"
                         : impossible_message(who, "a state outside lapse_duration_state", r));
            break;
        }
        }
        finish_resolved(d);
    }
}

}  // namespace detail

bool Device::resolve(std::span<Duration> durations, std::chrono::nanoseconds timeout)
{
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
