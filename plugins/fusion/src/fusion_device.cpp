// fusion — the device: see fusion_device.hpp for the contract.
#include "fusion_device.hpp"

#include <lapse/sdk/error.hpp>

#include <cstdio>
#include <string>
#include <utility>

namespace lapse::fusion {

std::unique_ptr<FusionDevice> FusionDevice::open(sdk::Host host, sdk::Config config)
{
    // Read every key first: the host refuses keys a plugin never read.
    auto max_batch = static_cast<uint32_t>(config.integer("max_batch", 64, 1, 65536));
    sdk::InnerBackend inner = sdk::InnerBackend::open(host, config, "fusion", "batches for");
    return std::make_unique<FusionDevice>(host, std::move(inner), max_batch);
}

FusionDevice::FusionDevice(sdk::Host host, sdk::InnerBackend inner, uint32_t max_batch)
    : StackedDevice(host, std::move(inner)), max_batch_(max_batch)
{
    streams_ = std::make_unique<Stream[]>(stream_count_);
    // A stream's first batch comes with its first submit: a device of many
    // streams that uses few of them does not hold a batch for each.
    for (uint32_t i = 0; i < stream_count_; ++i) streams_[i].index = i;
}

FusionDevice::~FusionDevice()
{
    // submit's contract: every accepted op runs exactly once.
    for (uint32_t i = 0; i < stream_count_; ++i) {
        lapse_error error = sdk::make_error();
        if (flush(streams_[i], &error) < 0)
            host_.error(std::string("closing: stream ") + std::to_string(i) + ": " + error.message);
    }
    // The inner backend runs what it holds (our batches recycle into the
    // pools) before it closes.
    inner_.reset();
    uint64_t stranded = 0;
    for (uint32_t i = 0; i < stream_count_; ++i) {
        Stream& s = streams_[i];
        for (Batch* b = s.cut_head; b != nullptr;) {
            Batch* next = b->next;
            stranded += b->ops.size();
            for (const Op& op : b->ops) op.fn(op.user, nullptr);
            delete b;
            b = next;
        }
        for (Batch* b = s.pool; b != nullptr;) {
            Batch* next = b->next;
            delete b;
            b = next;
        }
        delete s.filling;  // empty: flush cut it
    }
    if (stranded > 0)
        host_.error("closing: the inner backend refused " + std::to_string(stranded) +
                    " queued op(s); they ran on the closing thread with no native context");
}

void FusionDevice::describe(lapse_device_info& info)
{
    info.capabilities = describe_layer(info) | LAPSE_CAP_BATCHING;
}

// ---- the queue -------------------------------------------------------------

FusionDevice::Batch* FusionDevice::take_batch_locked(Stream& s)
{
    if (Batch* b = s.pool) {
        s.pool = b->next;
        b->next = nullptr;
        return b;
    }
    auto b = std::make_unique<Batch>();
    b->owner = &s;
    b->ops.reserve(max_batch_);
    return b.release();
}

void FusionDevice::cut_locked(Stream& s) noexcept
{
    Batch* b = s.filling;
    if (b == nullptr || b->ops.empty()) return;
    s.filling = nullptr;
    b->next = nullptr;
    if (s.cut_tail != nullptr)
        s.cut_tail->next = b;
    else
        s.cut_head = b;
    s.cut_tail = b;
}

void FusionDevice::run_batch(void* user, void* native) noexcept
{
    auto* b = static_cast<Batch*>(user);
    // The queue lock is not held here: an op may submit to this stream.
    for (const Op& op : b->ops) op.fn(op.user, native);
    b->ops.clear();
    Stream& s = *b->owner;
    std::lock_guard<std::mutex> lock(s.queue);
    b->next = s.pool;
    s.pool = b;
}

lapse_status FusionDevice::hand_over(Stream& s, lapse_error* error)
{
    std::lock_guard<std::recursive_mutex> order(s.order);
    for (;;) {
        Batch* b;
        {
            std::lock_guard<std::mutex> lock(s.queue);
            b = s.cut_head;
            if (b == nullptr) return LAPSE_OK;
            s.cut_head = b->next;
            if (s.cut_head == nullptr) s.cut_tail = nullptr;
            b->next = nullptr;
        }
        // Read before the submit: an inline inner backend runs (and recycles)
        // the batch inside it.
        const std::size_t ops = b->ops.size();
        lapse_status status = inner_.submit(s.index, &run_batch, b, error);
        if (status >= 0) {
            std::lock_guard<std::mutex> lock(s.queue);
            s.held.store(s.held.load(std::memory_order_relaxed) - ops, std::memory_order_relaxed);
        }
        if (status < 0) {
            // Refused: it stays first in line for the next hand-over.
            std::lock_guard<std::mutex> lock(s.queue);
            b->next = s.cut_head;
            s.cut_head = b;
            if (s.cut_tail == nullptr) s.cut_tail = b;
            return status;
        }
    }
}

lapse_status FusionDevice::flush(Stream& s, lapse_error* error)
{
    std::lock_guard<std::recursive_mutex> order(s.order);
    {
        std::lock_guard<std::mutex> lock(s.queue);
        cut_locked(s);
    }
    return hand_over(s, error);
}

lapse_status FusionDevice::submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error)
{
    if (stream >= stream_count_) return no_such_stream("submit", stream, error);
    Stream& s = streams_[stream];
    bool full;
    {
        std::lock_guard<std::mutex> lock(s.queue);
        if (s.filling == nullptr) s.filling = take_batch_locked(s);  // may throw: fn not accepted
        s.filling->ops.push_back(Op{fn, user});                       // within the reserve
        s.held.store(s.held.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        full = s.filling->ops.size() >= max_batch_;
        if (full) cut_locked(s);
    }
    // The op is accepted from here on: it runs exactly once whatever the
    // inner backend says. A refused batch stays in line; the next sync,
    // window or flush hands it over again and reports the error.
    if (full) {
        lapse_error ignored = sdk::make_error();
        hand_over(s, &ignored);
    }
    return LAPSE_OK;
}

lapse_status FusionDevice::sync(lapse_stream stream, lapse_error* error)
{
    lapse_status first = LAPSE_OK;
    if (stream == LAPSE_ALL_STREAMS) {
        for (uint32_t i = 0; i < stream_count_; ++i) {
            lapse_status status = flush(streams_[i], first == LAPSE_OK ? error : nullptr);
            if (status < 0 && first == LAPSE_OK) first = status;
        }
    } else {
        if (stream >= stream_count_) return no_such_stream("sync", stream, error);
        first = flush(streams_[stream], error);
    }
    // Not under `order`: the inner sync waits for work that may itself
    // submit to this stream.
    lapse_status status = inner_.sync(stream, first == LAPSE_OK ? error : nullptr);
    return first < 0 ? first : status;
}

// ---- windows ---------------------------------------------------------------

lapse_status FusionDevice::profile_start(lapse_stream stream, lapse_token& token, lapse_error* error)
{
    if (stream >= stream_count_) return no_such_stream("profile_start", stream, error);
    Stream& s = streams_[stream];
    // Earlier work stays out: it is handed over before the window opens,
    // and nothing else is handed over in between.
    std::lock_guard<std::recursive_mutex> order(s.order);
    lapse_status status = flush(s, error);
    if (status < 0) return status;
    return inner_.profile_start(stream, token, error);
}

lapse_status FusionDevice::profile_end(lapse_token token, uint32_t flags, lapse_error* error)
{
    lapse_status status;
    if ((flags & LAPSE_END_FLUSH) != 0 && token.opened_on < stream_count_) {
        // The window holds all the work registered in it.
        Stream& s = streams_[token.opened_on];
        std::lock_guard<std::recursive_mutex> order(s.order);
        status = flush(s, error);
        if (status < 0) return status;  // the window stays open: abandon reaches it
        status = inner_.profile_end(token, flags, error);
    } else {
        // Later work stays out: the queue is left alone. (A token naming a
        // stream that does not exist is the inner backend's to refuse.)
        const uint64_t left =
            token.opened_on < stream_count_ ? streams_[token.opened_on].held.load(std::memory_order_relaxed) : 0;
        status = inner_.profile_end(token, flags, error);
        if (status >= 0 && left > 0) mark_queued(token, left);
    }
    return status;
}

void FusionDevice::mark_queued(lapse_token token, uint64_t ops) noexcept
{
    try {
        marks_.mark(token.id, ops);
    } catch (...) {
        // No memory for the mark: the window still closed; say so once
        // per device rather than fail a close that succeeded.
        if (!mark_lost_.exchange(true, std::memory_order_relaxed)) {
            try {
                host_.warn("out of memory marking a window closed with work queued; its duration cannot say so");
            } catch (...) {
            }
        }
    }
}

void FusionDevice::profile_abandon(lapse_token token) noexcept
{
    inner_.abandon(token);
    uint32_t ignored = 0;
    if (!marks_.empty()) marks_.take(token.id, ignored);
}

lapse_status FusionDevice::resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count,
                                   uint64_t timeout_ns, lapse_error* error)
{
    lapse_status status = inner_.resolve(tokens, out, count, timeout_ns, error);
    if (!marks_.empty()) apply_marks(tokens, out, count);
    return status;
}

void FusionDevice::apply_marks(const lapse_token* tokens, lapse_duration* out, uint32_t count) noexcept
{
    // A final duration takes its mark (pending ones keep it for the next
    // resolve); only a READY one says it, the others have no number.
    marks_.take_each(
        count, [&](uint32_t k) { return out[k].state == LAPSE_DURATION_PENDING ? uint64_t{0} : tokens[k].id; },
        [&](uint32_t k, uint32_t ops) {
            if (out[k].state != LAPSE_DURATION_READY) return;
            out[k].flags = static_cast<uint16_t>(out[k].flags | LAPSE_DURATION_WORK_QUEUED);
            out[k].queued_ops = static_cast<uint16_t>(ops > LAPSE_DURATION_QUEUED_OPS_MAX ? LAPSE_DURATION_QUEUED_OPS_MAX : ops);
        });
}

const void* FusionDevice::extension(std::string_view) noexcept
{
    return nullptr;
}

}  // namespace lapse::fusion
