// forward — the device: see forward_device.hpp for what it adds and why.
#include "forward_device.hpp"

#include "device_support.hpp"

#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/window_dispatch.hpp>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <utility>

namespace lapse::forward {

using namespace device_support;

std::unique_ptr<ForwardDevice> ForwardDevice::open(sdk::Host host, sdk::Config config)
{
    const bool own_tokens = config.boolean("own_tokens", false);
    sdk::Config inner = config.child("inner");
    if (!inner) config.reject("inner", "forward needs the backend it stacks on: inner = { plugin = \"...\" }");
    // The host's message already names every layer on the way down; it
    // passes through as it is.
    sdk::Backend backend = host.open_backend(inner.node());
    return std::make_unique<ForwardDevice>(host, std::move(backend), own_tokens);
}

ForwardDevice::ForwardDevice(sdk::Host host, sdk::Backend inner, bool own_tokens)
    : host_(host), inner_(std::move(inner)), ip_(&inner_.plugin()), idev_(inner_.device())
{
    lapse_device_info info{};
    info.struct_size = sizeof info;
    lapse_error error = sdk::make_error();
    lapse_status status = ip_->describe(idev_, &info, &error);
    if (status < 0) throw sdk::Error(status, std::string("forward: describing the inner backend: ") + error.message);
    if (info.stream_count > kMaxStreams) {
        info.name[sizeof info.name - 1] = '\0';
        throw sdk::Error(LAPSE_ERROR_UNSUPPORTED,
                         "forward: the inner backend '" + std::string(ip_->name) + "' (" + info.name + ") claims " +
                             std::to_string(info.stream_count) + " streams; forward stacks on at most " +
                             std::to_string(kMaxStreams));
    }
    stream_count_ = info.stream_count;
    inner_caps_ = info.capabilities;
    inner_clock_ = (inner_caps_ & LAPSE_CAP_DEVICE_CLOCK) != 0;
    segmented_ = inner_clock_ && (inner_caps_ & LAPSE_CAP_SINGLE_WINDOW) != 0;
    if (segmented_) streams_ = std::make_unique<SegmentedStream[]>(stream_count_);
    const uint64_t whole = LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS;
    if (!own_tokens && !segmented_ && (inner_caps_ & whole) == whole && every_stream_opens_windows())
        window_ = sdk::window_dispatch_target(ip_, idev_);
    table_.reserve_first_chunk();
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
        if (ip_->profile_start(idev_, s, &probe, &ignored) != LAPSE_OK) return false;
        abandon_inner(probe);
    }
    return true;
}

ForwardDevice::~ForwardDevice()
{
    uint32_t open = 0;
    uint32_t unresolved = 0;
    table_.for_each_live([&](const Window&, Table::State state) {
        if (state == Table::kOpen) ++open;
        if (state == Table::kClosed) ++unresolved;
    });
    if (open > 0 || unresolved > 0)
        host_.warn("closing with " + std::to_string(open) + " window(s) still open and " +
                   std::to_string(unresolved) + " closed but not resolved; they are abandoned");
    // Closing the inner backend runs the work still submitted and abandons
    // its windows (our segments among them).
    inner_.reset();
}

lapse_status ForwardDevice::prefixed(lapse_status status, lapse_error* error) const noexcept
{
    sdk::prefix_error(error, "forward");
    return status;
}

void ForwardDevice::describe(lapse_device_info& info)
{
    lapse_device_info in{};
    in.struct_size = sizeof in;
    lapse_error error = sdk::make_error();
    lapse_status status = ip_->describe(idev_, &in, &error);
    if (status < 0) throw sdk::Error(status, std::string("forward: ") + error.message);
    in.name[sizeof in.name - 1] = '\0';
    uint64_t caps = in.capabilities | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING | LAPSE_CAP_SPLIT_THREADS;
    caps &= ~uint64_t{LAPSE_CAP_SINGLE_WINDOW};
    if ((in.capabilities & LAPSE_CAP_DEVICE_CLOCK) == 0) caps |= LAPSE_CAP_HOST_TIMELINE;
    info.stream_count = in.stream_count;
    info.capabilities = caps;
    std::snprintf(info.name, sizeof info.name, "forward(%.*s)", static_cast<int>(sizeof info.name) - 10, in.name);
}

lapse_status ForwardDevice::sync(lapse_stream stream, lapse_error* error)
{
    lapse_status status = ip_->sync(idev_, stream, error);
    return status < 0 ? prefixed(status, error) : status;
}

lapse_status ForwardDevice::submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error)
{
    lapse_status status;
    if (segmented_ && stream < stream_count_) {
        // Under the stream's lock, so the work lands inside a segment and
        // never between the close of one and the open of the next.
        std::lock_guard<std::mutex> lock(streams_[stream].lock);
        status = ip_->submit(idev_, stream, fn, user, error);
    } else {
        status = ip_->submit(idev_, stream, fn, user, error);
    }
    return status < 0 ? prefixed(status, error) : status;
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
    if (stream >= stream_count_)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "forward: profile_start: stream %u does not exist (the device has %u)", stream,
                          stream_count_);
    if (segmented_) return start_segmented(stream, token, error);
    if (!inner_clock_) return start_system(stream, token, error);

    uint64_t id = 0;
    Table::Slot* slot = table_.acquire(id);
    if (slot == nullptr)
        return table_full(error);
    lapse_token inner{};
    lapse_status status = ip_->profile_start(idev_, stream, &inner, error);
    if (status == LAPSE_OK) {
        Window& w = slot->record;
        w.kind = Kind::kInner;
        w.stream = stream;
        w.inner = inner;
        Table::publish(slot, Table::kOpen);
        token = lapse_token{id, stream, 0};
        return LAPSE_OK;
    }
    table_.release(slot, id);
    if (status < 0) return prefixed(status, error);
    // LAPSE_NO_WINDOW: this stream has no clock; forward times it itself.
    return start_system(stream, token, error);
}

lapse_status ForwardDevice::start_system(lapse_stream stream, lapse_token& token, lapse_error* error)
{
    uint64_t id = 0;
    Table::Slot* slot = table_.acquire(id);
    if (slot == nullptr)
        return table_full(error);
    // Sync first, so work submitted before the window stays out of it.
    lapse_status status = ip_->sync(idev_, stream, error);
    if (status < 0) {
        table_.release(slot, id);
        return prefixed(status, error);
    }
    Window& w = slot->record;
    w.kind = Kind::kSystem;
    w.stream = stream;
    w.a = static_cast<uint64_t>(sdk::monotonic_ns());
    Table::publish(slot, Table::kOpen);
    token = lapse_token{id, stream, 0};
    return LAPSE_OK;
}

// ---- end -----------------------------------------------------------------

lapse_status ForwardDevice::end_mapped(lapse_token token, uint32_t flags, lapse_error* error)
{
    Table::Slot* slot = nullptr;
    Table::State was{};
    if (table_.claim(token.id, Table::bit(Table::kOpen), true, slot, was) != Table::Claim::kOk)
        return sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN,
                          "forward: profile_end: token %" PRIu64 " is not an open window (unknown, already "
                          "closed or abandoned)",
                          token.id);
    Window& w = slot->record;
    if (w.stream != token.opened_on) {
        lapse_stream opened = w.stream;
        Table::publish(slot, Table::kOpen);
        return sdk::failf(error, LAPSE_ERROR_WRONG_STREAM,
                          "forward: profile_end: token %" PRIu64 " was opened on stream %u, not %u", token.id,
                          opened, token.opened_on);
    }
    switch (w.kind) {
    case Kind::kInner: {
        lapse_end_options options{sizeof(lapse_end_options), flags};
        lapse_status status = ip_->profile_end(idev_, w.inner, &options, error);
        if (status < 0) {
            // The inner window's fate is the inner backend's: leave ours open
            // so an abandon reaches it.
            Table::publish(slot, Table::kOpen);
            return prefixed(status, error);
        }
        Table::publish(slot, Table::kClosed);
        return LAPSE_OK;
    }
    case Kind::kSystem: {
        // Sync is the flush here: it runs what a batching inner backend holds.
        lapse_status status = ip_->sync(idev_, w.stream, error);
        w.b = static_cast<uint64_t>(sdk::monotonic_ns());
        if (status < 0) w.failure = status;  // the device failed inside the window
        Table::publish(slot, Table::kClosed);
        return status < 0 ? prefixed(status, error) : LAPSE_OK;
    }
    case Kind::kSegmented: {
        lapse_status status = end_boundary(w, flags, error);
        if (status == LAPSE_ERROR_OUT_OF_MEMORY) {
            Table::publish(slot, Table::kOpen);  // no boundary was taken
            return prefixed(status, error);
        }
        // Closed either way: the boundary is taken. A failed close poisoned
        // the last segment, so the duration reads FAILED rather than short.
        Table::publish(slot, Table::kClosed);
        return status < 0 ? prefixed(status, error) : LAPSE_OK;
    }
    case Kind::kNone:
        break;
    }
    Table::publish(slot, Table::kOpen);
    return sdk::fail(error, LAPSE_ERROR_INTERNAL, "forward: profile_end: a window of no kind");
}

// ---- abandon -------------------------------------------------------------

void ForwardDevice::abandon_inner(lapse_token inner) noexcept
{
    try {
        ip_->profile_abandon(idev_, inner);
    } catch (...) {
        // Abandon cannot fail; an inner plugin built without the SDK may
        // throw from it anyway, and this runs where a throw terminates.
    }
}

void ForwardDevice::profile_abandon(lapse_token token) noexcept
{
    if (passthrough()) {
        try {
            window_.plugin->profile_abandon(window_.device, token);
        } catch (...) {
            // As abandon_inner.
        }
        return;
    }
    Table::Slot* slot = nullptr;
    Table::State was{};
    if (table_.claim(token.id, Table::bit(Table::kOpen) | Table::bit(Table::kClosed), true, slot, was) !=
        Table::Claim::kOk)
        return;  // unknown tokens are ignored
    Window& w = slot->record;
    if (w.stream != token.opened_on) {
        // Abandon cannot fail, and acting on a stream the caller did not
        // name would be a guess: the window stays as it was.
        Table::publish(slot, was);
        return;
    }
    switch (w.kind) {
    case Kind::kInner:
        abandon_inner(w.inner);
        break;
    case Kind::kSegmented: {
        SegmentedStream& s = streams_[w.stream];
        if (was == Table::kOpen) {
            lapse_error ignored = sdk::make_error();
            if (end_boundary(w, 0, &ignored) == LAPSE_ERROR_OUT_OF_MEMORY) {
                // Could not take the boundary; leave the window open rather
                // than corrupt the others' segments.
                Table::publish(slot, was);
                return;
            }
        }
        std::lock_guard<std::mutex> lock(s.lock);
        release_segments(s, w.a, w.b);
        break;
    }
    case Kind::kSystem:
    case Kind::kNone:
        break;
    }
    table_.release(slot, token.id);
}

// ---- resolve -------------------------------------------------------------

lapse_status ForwardDevice::resolve_inner_batch(const lapse_token* inner, lapse_duration* scratch, uint32_t n,
                                                uint64_t deadline_ns, lapse_error* error)
{
    for (uint32_t i = 0; i < n; ++i) {
        scratch[i] = lapse_duration{};
        scratch[i].struct_size = sizeof(lapse_duration);
    }
    lapse_status status = ip_->resolve(idev_, inner, scratch, n, remaining(deadline_ns), error);
    return status < 0 ? prefixed(status, error) : status;
}

lapse_status ForwardDevice::resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count,
                                    uint64_t timeout_ns, lapse_error* error)
{
    if (passthrough()) {
        lapse_status status = ip_->resolve(idev_, tokens, out, count, timeout_ns, error);
        return status < 0 ? prefixed(status, error) : status;
    }
    const uint64_t deadline = deadline_after(timeout_ns);
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
    Table::Slot* slots[kBatch];
    uint32_t n = 0;
    auto run_batch = [&]() {
        if (n == 0) return;
        note(resolve_inner_batch(batch, scratch, n, deadline, error_slot()));
        for (uint32_t k = 0; k < n; ++k) {
            copy_duration(out[where[k]], scratch[k]);
            if (scratch[k].state == LAPSE_DURATION_PENDING) {
                pending = true;
                Table::publish(slots[k], Table::kClosed);
            } else {
                table_.release(slots[k], tokens[where[k]].id);
            }
        }
        n = 0;
    };

    for (uint32_t i = 0; i < count; ++i) {
        const lapse_token& token = tokens[i];
        Table::Slot* slot = nullptr;
        Table::State was{};
        // Busy means another call holds this window right now (its end is in
        // flight, or the same token appears twice here): not ready yet.
        Table::Claim claim = table_.claim(token.id, Table::bit(Table::kClosed), false, slot, was);
        if (claim == Table::Claim::kBusy) {
            sdk::set_duration(out[i], LAPSE_DURATION_PENDING);
            pending = true;
            continue;
        }
        if (claim == Table::Claim::kInvalid) {
            set_failed(out[i], LAPSE_ERROR_INVALID_TOKEN);
            if (first_error == LAPSE_OK)
                sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN,
                           "forward: resolve: token %" PRIu64 " is not a closed window (unknown, still open, "
                           "abandoned or already resolved)",
                           token.id);
            note(LAPSE_ERROR_INVALID_TOKEN);
            continue;
        }
        Window& w = slot->record;
        if (w.stream != token.opened_on) {
            lapse_stream opened = w.stream;
            Table::publish(slot, Table::kClosed);
            set_failed(out[i], LAPSE_ERROR_WRONG_STREAM);
            if (first_error == LAPSE_OK)
                sdk::failf(error, LAPSE_ERROR_WRONG_STREAM,
                           "forward: resolve: token %" PRIu64 " was opened on stream %u, not %u", token.id, opened,
                           token.opened_on);
            note(LAPSE_ERROR_WRONG_STREAM);
            continue;
        }
        switch (w.kind) {
        case Kind::kInner:
            batch[n] = w.inner;
            where[n] = i;
            slots[n] = slot;
            if (++n == kBatch) run_batch();
            break;
        case Kind::kSystem:
            if (w.failure != LAPSE_OK)
                set_failed(out[i], w.failure);
            else
                sdk::set_duration(out[i], LAPSE_DURATION_READY, LAPSE_OK, LAPSE_TIMING_SYSTEM, LAPSE_CLOCK_HOST_MONOTONIC,
                                  static_cast<int64_t>(w.a), static_cast<int64_t>(w.b));
            table_.release(slot, token.id);
            break;
        case Kind::kSegmented: {
            lapse_status status = LAPSE_OK;
            bool final = resolve_segmented(w, out[i], deadline, status, error_slot());
            note(status);
            if (final) {
                table_.release(slot, token.id);
            } else {
                pending = true;
                Table::publish(slot, Table::kClosed);
            }
            break;
        }
        case Kind::kNone:
            set_failed(out[i], LAPSE_ERROR_INTERNAL);
            Table::publish(slot, Table::kClosed);
            break;
        }
    }
    run_batch();
    if (first_error != LAPSE_OK) return first_error;
    return pending ? LAPSE_NOT_READY : LAPSE_OK;
}

const void* ForwardDevice::extension(std::string_view id) noexcept
{
    if (passthrough() && id == LAPSE_WINDOW_DISPATCH_EXTENSION) return &window_;
    return nullptr;
}

}  // namespace lapse::forward
