// forward — the device: see forward_device.hpp for what it adds and why.
#include "forward_device.hpp"

#include "device_support.hpp"

#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/window_dispatch.hpp>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>

namespace lapse::forward {

using namespace device_support;

std::unique_ptr<ForwardDevice> ForwardDevice::open(sdk::Host host, sdk::Config config)
{
    const bool own_tokens = config.boolean("own_tokens", false);
    sdk::InnerBackend inner = sdk::InnerBackend::open(host, config, "forward");
    return std::make_unique<ForwardDevice>(host, std::move(inner), own_tokens);
}

ForwardDevice::ForwardDevice(sdk::Host host, sdk::InnerBackend inner, bool own_tokens)
    : StackedDevice(host, std::move(inner))
{
    inner_clock_ = (inner_caps_ & LAPSE_CAP_DEVICE_CLOCK) != 0;
    segmented_ = inner_clock_ && (inner_caps_ & LAPSE_CAP_SINGLE_WINDOW) != 0;
    if (segmented_) streams_ = std::make_unique<SegmentedStream[]>(stream_count_);
    const uint64_t whole = LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS;
    if (!own_tokens && !segmented_ && (inner_caps_ & whole) == whole && every_stream_opens_windows())
        window_ = sdk::window_dispatch_target(inner_.plugin(), inner_.device());
    // A free list per stream (the table's tag is the stream), up to its
    // limit of shards; the first 1024 records allocated now.
    table_ = std::make_unique<Table>(stream_count_, 1024);
}

bool ForwardDevice::every_stream_opens_windows() noexcept
{
    // A probe window per stream, abandoned at once. A stream that answers
    // "no window" (or fails) needs forward's own, system-time, tokens; and
    // then every stream gets forward's tokens, so that no forward id can be
    // mistaken for an inner one.
    for (lapse_stream s = 0; s < stream_count_; ++s) {
        lapse_token probe{};
        lapse_error ignored = sdk::make_error();
        if (inner_.plugin()->profile_start(inner_.device(), s, &probe, &ignored) != LAPSE_OK) return false;
        inner_.abandon(probe);
    }
    return true;
}

ForwardDevice::~ForwardDevice()
{
    const Table::Census left = table_->abandon_all();
    if (left.open > 0 || left.closed > 0)
        host_.warn("closing with " + std::to_string(left.open) + " window(s) still open and " +
                   std::to_string(left.closed) + " closed but not resolved; they are abandoned");
    // Closing the inner backend runs the work still submitted and abandons
    // its windows (our segments among them).
    inner_.reset();
}

lapse_status ForwardDevice::prefixed(lapse_status status, lapse_error* error) const noexcept
{
    return inner_.prefixed(status, error);
}

// ---- the token table -------------------------------------------------------

lapse_status ForwardDevice::table_full(lapse_error* error) const noexcept
{
    return sdk::failf(error, LAPSE_ERROR_CAPACITY,
                      "forward: profile_start: no room for another window (%zu records, every one live or out of "
                      "memory); resolve or abandon some",
                      table_->capacity());
}

sdk::WindowCheck ForwardDevice::claim(const lapse_token& token, unsigned states, Live& was) noexcept
{
    for (;;) {
        const sdk::WindowCheck c = table_->claim(token.id, token.opened_on, states, was);
        if (c != sdk::WindowCheck::busy) return c;
        std::this_thread::yield();  // another call is at the inner backend with it, briefly
    }
}

lapse_status ForwardDevice::refuse(const lapse_token& token, sdk::WindowCheck check, const char* call,
                                   lapse_error* error) const noexcept
{
    if (check == sdk::WindowCheck::wrong_tag) {
        const uint32_t opened = table_->tag_of_live(token.id);
        return sdk::failf(error, LAPSE_ERROR_WRONG_STREAM, "forward: %s: token %" PRIu64 " was opened on stream %u, not %u",
                          call, token.id, opened, token.opened_on);
    }
    return sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN, "forward: %s: token %" PRIu64 " %s", call, token.id,
                      sdk::describe(check));
}

void ForwardDevice::describe(lapse_device_info& info)
{
    const uint64_t in = describe_layer(info);
    uint64_t caps = in | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS;
    caps &= ~uint64_t{LAPSE_CAP_SINGLE_WINDOW};
    if ((in & LAPSE_CAP_DEVICE_CLOCK) == 0) caps |= LAPSE_CAP_HOST_TIMELINE;
    info.capabilities = caps;
}

lapse_status ForwardDevice::sync(lapse_stream stream, lapse_error* error)
{
    return inner_.sync(stream, error);
}

lapse_status ForwardDevice::submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error)
{
    if (segmented_ && stream < stream_count_) {
        // Under the stream's lock, so the work lands inside a segment and
        // never between the close of one and the open of the next.
        std::lock_guard<std::mutex> lock(streams_[stream].lock);
        return inner_.submit(stream, fn, user, error);
    }
    return inner_.submit(stream, fn, user, error);
}

// ---- start ---------------------------------------------------------------

lapse_status ForwardDevice::passthrough_start_refused(lapse_stream stream, lapse_status status, lapse_error* error)
{
    if (status < 0) return prefixed(status, error);
    // Its tokens are the inner ones here, so it has none of its own to
    // time this window with; saying so beats a window that lies.
    return sdk::failf(error, LAPSE_ERROR_DEVICE,
                      "forward: profile_start: stream %u opened windows when the device opened and now "
                      "answers \"no window\"; set own_tokens = true to time such streams in system time",
                      stream);
}

lapse_status ForwardDevice::start_mapped(lapse_stream stream, lapse_token& token, lapse_error* error)
{
    if (stream >= stream_count_) return no_such_stream("profile_start", stream, error);
    if (segmented_) return start_segmented(stream, token, error);
    if (!inner_clock_) return start_system(stream, token, error);

    const Table::Id id = table_->open(stream, 0);
    if (id == 0) return table_full(error);
    lapse_token inner{};
    lapse_status status = inner_.plugin()->profile_start(inner_.device(), stream, &inner, error);
    if (status == LAPSE_OK) {
        // Nobody has the id yet: the payload is the opener's to write.
        Window& w = table_->payload(id);
        w = Window{};
        w.kind = Kind::kInner;
        w.inner = inner;
        token = lapse_token{id, stream, 0};
        return LAPSE_OK;
    }
    table_->abandon(id, stream);  // frees it: nothing holds it
    if (status < 0) return prefixed(status, error);
    // LAPSE_NO_WINDOW: this stream has no clock; forward times it itself.
    return start_system(stream, token, error);
}

lapse_status ForwardDevice::start_system(lapse_stream stream, lapse_token& token, lapse_error* error)
{
    const Table::Id id = table_->open(stream, 0);
    if (id == 0) return table_full(error);
    // Sync first, so work submitted before the window stays out of it.
    const lapse_status status = inner_.sync(stream, error);
    if (status < 0) {
        table_->abandon(id, stream);
        return status;
    }
    Window& w = table_->payload(id);
    w = Window{};
    w.kind = Kind::kSystem;
    w.start_ns = static_cast<uint64_t>(sdk::monotonic_ns());
    token = lapse_token{id, stream, 0};
    return LAPSE_OK;
}

// ---- end -----------------------------------------------------------------

lapse_status ForwardDevice::end_mapped(lapse_token token, uint32_t flags, lapse_error* error)
{
    Live was{};
    if (const sdk::WindowCheck c = claim(token, Table::mask(Live::open), was); c != sdk::WindowCheck::ok)
        return refuse(token, c, "profile_end", error);
    const Table::Id id = token.id;
    Window& w = table_->payload(id);
    switch (w.kind) {
    case Kind::kInner: {
        const lapse_status status = inner_.profile_end(w.inner, flags, error);
        if (status < 0) {
            // The inner window's fate is the inner backend's: leave ours open
            // so an abandon reaches it.
            table_->publish(id, Live::open);
            return status;
        }
        table_->publish(id, Live::closed);
        return LAPSE_OK;
    }
    case Kind::kSystem: {
        // Sync is the flush here: it runs what a batching inner backend holds.
        const lapse_status status = inner_.sync(token.opened_on, error);
        w.end_ns = static_cast<uint64_t>(sdk::monotonic_ns());
        if (status < 0) w.failure = status;  // the device failed inside the window
        table_->publish(id, Live::closed);
        return status < 0 ? status : LAPSE_OK;
    }
    case Kind::kSegmented: {
        lapse_status status = end_boundary(token.opened_on, w, flags, error);
        if (status == LAPSE_ERROR_OUT_OF_MEMORY) {
            table_->publish(id, Live::open);  // no boundary was taken
            return prefixed(status, error);
        }
        // Closed either way: the boundary is taken. A failed close poisoned
        // the last segment, so the duration reads FAILED rather than short.
        table_->publish(id, Live::closed);
        return status < 0 ? prefixed(status, error) : LAPSE_OK;
    }
    case Kind::kNone:
        break;
    }
    table_->publish(id, Live::open);
    return sdk::fail(error, LAPSE_ERROR_INTERNAL, "forward: profile_end: a window of no kind");
}

// ---- abandon -------------------------------------------------------------

void ForwardDevice::profile_abandon(lapse_token token) noexcept
{
    if (passthrough()) {
        try {
            window_.plugin->profile_abandon(window_.device, token);
        } catch (...) {
            // Abandon cannot fail: what an inner plugin throws stays here.
        }
        return;
    }
    // Unknown tokens, and tokens whose stream is not their window's, are
    // ignored: abandon cannot fail, and acting on a stream the caller did
    // not name would be a guess.
    Live was{};
    if (claim(token, Table::mask(Live::open) | Table::mask(Live::closed), was) != sdk::WindowCheck::ok) return;
    Window& w = table_->payload(token.id);
    switch (w.kind) {
    case Kind::kInner:
        inner_.abandon(w.inner);
        break;
    case Kind::kSegmented: {
        SegmentedStream& s = streams_[token.opened_on];
        if (was == Live::open) {
            lapse_error ignored = sdk::make_error();
            if (end_boundary(token.opened_on, w, 0, &ignored) == LAPSE_ERROR_OUT_OF_MEMORY) {
                // Could not take the boundary; leave the window open rather
                // than corrupt the others' segments.
                table_->publish(token.id, was);
                return;
            }
        }
        std::lock_guard<std::mutex> lock(s.lock);
        release_segments(s, w.first_segment, w.last_segment);
        break;
    }
    case Kind::kSystem:
    case Kind::kNone:
        break;
    }
    table_->free_claimed(token.id, false);
}

// ---- resolve -------------------------------------------------------------

lapse_status ForwardDevice::resolve_inner_batch(const lapse_token* inner, lapse_duration* scratch, uint32_t n,
                                                const Deadline& deadline, lapse_error* error)
{
    for (uint32_t i = 0; i < n; ++i) {
        scratch[i] = lapse_duration{};
        scratch[i].struct_size = sizeof(lapse_duration);
    }
    return inner_.resolve(inner, scratch, n, deadline.timeout_ns(), error);
}

lapse_status ForwardDevice::resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count,
                                    uint64_t timeout_ns, lapse_error* error)
{
    if (passthrough()) return inner_.resolve(tokens, out, count, timeout_ns, error);
    const Deadline deadline(timeout_ns);
    lapse_status first_error = LAPSE_OK;
    bool pending = false;
    // The caller's error struct receives the first error only.
    auto error_slot = [&]() { return first_error == LAPSE_OK ? error : nullptr; };
    auto note = [&](lapse_status status) {
        if (status < 0 && first_error == LAPSE_OK) first_error = status;
    };

    lapse_token batch[kBatch];
    lapse_duration scratch[kBatch];
    uint32_t where[kBatch];
    uint32_t n = 0;
    Table::FreeBatch freed;
    auto run_batch = [&]() {
        if (n == 0) return;
        note(resolve_inner_batch(batch, scratch, n, deadline, error_slot()));
        for (uint32_t k = 0; k < n; ++k) {
            copy_duration(out[where[k]], scratch[k]);
            if (scratch[k].state == LAPSE_DURATION_PENDING) {
                pending = true;
                table_->publish(tokens[where[k]].id, Live::closed);
            } else {
                table_->free_claimed(tokens[where[k]].id, true, &freed);
            }
        }
        n = 0;
    };

    for (uint32_t i = 0; i < count; ++i) {
        const lapse_token& token = tokens[i];
        Live was{};
        // Busy means another call holds this window right now (its end is in
        // flight, or the same token appears twice here): not ready yet.
        const sdk::WindowCheck c = table_->claim(token.id, token.opened_on, Table::mask(Live::closed), was);
        if (c == sdk::WindowCheck::busy) {
            sdk::set_duration(out[i], LAPSE_DURATION_PENDING);
            pending = true;
            continue;
        }
        if (c != sdk::WindowCheck::ok) {
            const lapse_status why = refuse(token, c, "resolve", first_error == LAPSE_OK ? error : nullptr);
            set_failed(out[i], why);
            note(why);
            continue;
        }
        Window& w = table_->payload(token.id);
        switch (w.kind) {
        case Kind::kInner:
            batch[n] = w.inner;
            where[n] = i;
            if (++n == kBatch) run_batch();
            break;
        case Kind::kSystem:
            if (w.failure != LAPSE_OK)
                set_failed(out[i], w.failure);
            else
                sdk::set_duration(out[i], LAPSE_DURATION_READY, LAPSE_OK, LAPSE_TIMING_SYSTEM, LAPSE_CLOCK_HOST_MONOTONIC,
                                  static_cast<int64_t>(w.start_ns), static_cast<int64_t>(w.end_ns));
            table_->free_claimed(token.id, true, &freed);
            break;
        case Kind::kSegmented: {
            lapse_status status = LAPSE_OK;
            bool final = resolve_segmented(token.opened_on, w, out[i], deadline, status, error_slot());
            note(status);
            if (final) {
                table_->free_claimed(token.id, true, &freed);
            } else {
                pending = true;
                table_->publish(token.id, Live::closed);
            }
            break;
        }
        case Kind::kNone:
            set_failed(out[i], LAPSE_ERROR_INTERNAL);
            table_->publish(token.id, Live::closed);
            break;
        }
    }
    run_batch();
    table_->flush(freed);
    if (first_error != LAPSE_OK) return first_error;
    return pending ? LAPSE_NOT_READY : LAPSE_OK;
}

const void* ForwardDevice::extension(std::string_view id) noexcept
{
    if (passthrough() && id == LAPSE_WINDOW_DISPATCH_EXTENSION) return &window_;
    return nullptr;
}

}  // namespace lapse::forward
