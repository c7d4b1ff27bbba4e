#include "cpu_device.hpp"

#include "mpsc_queue.hpp"

#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>

#include <bit>
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <string>
#include <string_view>

namespace lapse::cpu {

namespace {

using sdk::set_duration;

constexpr uint32_t kMaxStreams = CpuDevice::max_streams;
// The first rings of all streams are allocated at open and held while the
// device idles (a ring only grows when it is full): their sum is bounded,
// so an in-range queue_capacity on many streams cannot pin gigabytes.
constexpr uint64_t kMaxIdleQueueBytes = uint64_t{64} << 20;

// A window's record as the resolver reads it, in the payload's own
// encoding (see CpuWindow): end_ns 0 means its end marker never went out,
// kWorkFailed in `failures` that work inside it threw.
struct Stamps {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    uint32_t failures = 0;
};

Stamps read_stamps(const CpuWindow& w) noexcept
{
    return {w.start_ns.load(std::memory_order_relaxed), w.end_ns.load(std::memory_order_relaxed),
            w.failures.load(std::memory_order_relaxed)};
}

// A window taken from the table: its stamps (raw, converted here), or why
// it has none.
[[gnu::always_inline]] inline void set_taken(lapse_duration& out, const Stamps& s,
                                             const StampClock::Conversion& clock) noexcept
{
    switch (outcome_of(s.end_ns, s.failures)) {
    case Outcome::not_measured:
        set_duration(out, LAPSE_DURATION_NOT_MEASURED, LAPSE_OK);
        break;
    case Outcome::work_failed:
        set_duration(out, LAPSE_DURATION_FAILED, LAPSE_ERROR_DEVICE);
        break;
    case Outcome::measured:
        set_duration(out, LAPSE_DURATION_READY, LAPSE_OK, LAPSE_TIMING_DEVICE, LAPSE_CLOCK_HOST_MONOTONIC,
                     clock.to_ns(s.start_ns), clock.to_ns(s.end_ns));
        break;
    }
}

}  // namespace

CpuDevice::Settings CpuDevice::read_settings(const sdk::Config& config)
{
    // Read every key before judging any: the host marks keys as known when
    // they are read, whatever the mode.
    Settings s;
    const std::string mode = config.string("mode", "stream");
    s.streams = static_cast<uint32_t>(config.integer("streams", 2, 1, kMaxStreams));
    s.queue_capacity = static_cast<uint32_t>(config.integer("queue_capacity", 4096, 16, int64_t{1} << 24));
    s.window_capacity = static_cast<uint32_t>(config.integer("window_capacity", 1024, 16, int64_t{1} << 24));
    // Off by default until the capture's named window gets as much cheaper
    // (docs/performance.md); LAPSE_CPU_LANES=1 turns them on for every
    // device whose config does not say (to compare, and for tests).
    const char* lanes_env = std::getenv("LAPSE_CPU_LANES");
    s.lanes = config.boolean("lanes", lanes_env != nullptr && std::string_view(lanes_env) == "1");
    const uint64_t idle_queue_bytes = uint64_t{std::bit_ceil(s.queue_capacity)} * s.streams * MpscQueue::cell_bytes;
    if (idle_queue_bytes > kMaxIdleQueueBytes)
        config.reject("queue_capacity",
                      std::to_string(s.queue_capacity) + " cells on each of " + std::to_string(s.streams) +
                          " streams would hold " + std::to_string(idle_queue_bytes >> 20) +
                          " MiB while idle, more than the limit of " + std::to_string(kMaxIdleQueueBytes >> 20) +
                          " MiB (queues grow when full: start smaller)");
    if (mode == "stream")
        s.mode = Mode::stream;
    else if (mode == "inline")
        s.mode = Mode::inline_;
    else
        config.reject("mode", "must be \"stream\" or \"inline\", got \"" + mode + "\"");
    return s;
}

std::unique_ptr<CpuDevice> CpuDevice::open(sdk::Host host, sdk::Config config)
{
    return std::make_unique<CpuDevice>(host, read_settings(config));
}

CpuDevice::CpuDevice(sdk::Host host, const Settings& settings)
    : host_(host),
      settings_(settings),
      clock_(StampClock::shared()),
      windows_(settings.streams, settings.mode == Mode::stream ? settings.window_capacity : 16, WorkerStream::max_windows)
{
    if (settings_.mode == Mode::stream) {
        streams_.reserve(settings_.streams);
        for (uint32_t i = 0; i < settings_.streams; ++i)
            streams_.push_back(std::make_unique<WorkerStream>(i, settings_.queue_capacity, settings_.lanes, clock_, windows_, completions_, host_));
        for (uint32_t i = 0; i < settings_.streams; ++i) {
            workers_[i] = streams_[i].get();
            free_lists_[i] = &windows_.free_list(i);
        }
        // With lanes, every window leaves the queue's path by its first
        // comparison (refuse_start / refuse_end send it to the lanes').
        const bool lanes = workers_[0]->lanes_enabled();
        queue_path_streams_ = lanes ? 0 : settings_.streams;
        lane_path_streams_ = lanes ? settings_.streams : 0;
    }
}

CpuDevice::~CpuDevice()
{
    // Every stream runs what is still queued (markers included) and joins,
    // so no worker touches the table below.
    streams_.clear();
    const auto census = windows_.abandon_all();
    if (census.open > 0)
        host_.warn("closed with " + std::to_string(census.open) +
                   " window(s) still open; they were abandoned (close or abandon every window you open)");
    if (census.closed + census.abandoned > 0)
        host_.log(LAPSE_LOG_DEBUG, "closed with " + std::to_string(census.closed) +
                                       " closed window(s) never resolved; dropped");
}

void CpuDevice::describe(lapse_device_info& info)
{
    info.stream_count = settings_.streams;
    if (settings_.mode == Mode::stream) {
        info.capabilities = LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING |
                            LAPSE_CAP_SPLIT_THREADS | LAPSE_CAP_HOST_TIMELINE;
        // The stamp source belongs in the name: it sets what a marker costs
        // the worker and which clock every number of the run came from.
        std::snprintf(info.name, sizeof info.name, "cpu (%u worker stream%s, %s stamps)", settings_.streams,
                      settings_.streams == 1 ? "" : "s",
                      clock_.source() == StampClock::Source::tsc ? "TSC" : "CLOCK_MONOTONIC");
    } else {
        // No device clock: it opens no windows, so it claims nothing about them.
        info.capabilities = 0;
        std::snprintf(info.name, sizeof info.name, "cpu (inline, %u stream%s on the caller's thread)",
                      settings_.streams, settings_.streams == 1 ? "" : "s");
    }
}

lapse_status CpuDevice::sync(lapse_stream stream, lapse_error* error)
{
    if (stream != LAPSE_ALL_STREAMS && stream >= settings_.streams)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "sync: stream %u does not exist (the device has %u)",
                          stream, settings_.streams);
    if (settings_.mode == Mode::inline_) return LAPSE_OK;  // work already ran at submit
    const uint32_t first = stream == LAPSE_ALL_STREAMS ? 0 : stream;
    const uint32_t count = stream == LAPSE_ALL_STREAMS ? settings_.streams : 1;
    for (uint32_t i = first; i < first + count; ++i)
        if (streams_[i]->is_current_thread())
            return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                              "sync: called from work running on stream %u, which would wait for itself", i);
    SyncFence fence(count);
    lapse_status status = LAPSE_OK;
    for (uint32_t i = first; i < first + count; ++i) {
        if (!streams_[i]->fence(fence)) {
            fence.cancel_one();
            status = sdk::failf(error, LAPSE_ERROR_OUT_OF_MEMORY, "sync: stream %u: out of memory queueing the fence", i);
        }
    }
    fence.wait();
    return status;
}

lapse_status CpuDevice::submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error)
{
    if (stream >= settings_.streams)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "submit: stream %u does not exist (the device has %u)",
                          stream, settings_.streams);
    if (settings_.mode == Mode::inline_) {
        try {
            fn(user, nullptr);
        } catch (const std::exception& e) {
            return sdk::failf(error, LAPSE_ERROR_DEVICE, "submit: the work threw on stream %u: %s", stream, e.what());
        } catch (...) {
            return sdk::failf(error, LAPSE_ERROR_DEVICE, "submit: the work threw on stream %u", stream);
        }
        return LAPSE_OK;
    }
    if (!streams_[stream]->submit(fn, user))
        return sdk::failf(error, LAPSE_ERROR_OUT_OF_MEMORY, "submit: stream %u: out of memory growing the queue", stream);
    return LAPSE_OK;
}

lapse_status CpuDevice::profile_start(lapse_stream stream, lapse_token& token, lapse_error* error) noexcept
{
    // Every uncommon case leaves through a tail call, so the common one
    // saves no register and makes no call.
    if (stream >= queue_path_streams_) [[unlikely]]
        return refuse_start(stream, token, error);
    // One hold: the start marker, released when the worker stamps it (and
    // sets end_ns to "not stamped": a window whose end marker cannot be
    // queued resolves NOT_MEASURED).
    const uint64_t id = windows_.try_open(*free_lists_[stream], stream, 1);
    if (id == 0) [[unlikely]]
        return start_slow(stream, token, error);
    WorkerStream& s = *workers_[stream];
    if (!s.try_queue_start(id)) [[unlikely]]
        return start_queue_slow(stream, id, token, error);
    return started(s, token, lapse_token{id, stream, 0});
}

lapse_status CpuDevice::start_in_lane(lapse_stream stream, lapse_token& token, lapse_error* error) noexcept
{
    // The record from the thread's own cache and the marker into its own
    // lane: no locked operation (MarkerLane). A thread's first window on
    // the stream goes the slow way, which gives it its lane.
    WorkerStream& s = *workers_[stream];
    MarkerLane* lane = s.lane();
    if (lane == nullptr || !lane->enter()) [[unlikely]]
        return start_slow(stream, token, error);
    const uint64_t id = windows_.try_open(lane->records, stream, 1);  // one hold, as above
    if (id == 0) [[unlikely]] {
        lane->leave();
        return start_slow(stream, token, error);
    }
    const bool marked = s.try_mark_start(*lane, id);
    lane->leave();
    if (!marked) [[unlikely]]
        return start_queue_slow(stream, id, token, error);
    return started(s, token, lapse_token{id, stream, 0});
}

lapse_status CpuDevice::refuse_start(lapse_stream stream, lapse_token& token, lapse_error* error) noexcept
{
    if (stream < lane_path_streams_) [[likely]]
        return start_in_lane(stream, token, error);
    if (stream >= settings_.streams)
        return sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                          "profile_start: stream %u does not exist (the device has %u)", stream, settings_.streams);
    token = lapse_token{0, stream, 0};
    return LAPSE_NO_WINDOW;  // inline mode
}

lapse_status CpuDevice::start_slow(lapse_stream stream, lapse_token& token, lapse_error* error) noexcept
{
    // No lane yet (its first window on this stream: mark_start() makes
    // one) or none at all (lanes are off), or the thread's cache and the
    // stream's free list are empty: the table looks further, or grows.
    // A signal handler that interrupted this thread inside its lane
    // (MarkerLane::enter) takes from the stream's free list.
    MarkerLane* lane = streams_[stream]->lane();
    uint64_t id = 0;
    if (lane != nullptr && lane->enter()) {
        id = windows_.open(lane->records, stream, 1);
        lane->leave();
    } else {
        id = windows_.open(stream, 1);
    }
    if (id == 0)
        return sdk::failf(error, LAPSE_ERROR_OUT_OF_MEMORY, "profile_start: stream %u: out of memory for window records (or %u windows already live, the most a queue marker can name)",
                          stream, WorkerStream::max_windows);
    return start_queue_slow(stream, id, token, error);
}

lapse_status CpuDevice::start_queue_slow(lapse_stream stream, uint64_t id, lapse_token& token,
                                         lapse_error* error) noexcept
{
    if (!streams_[stream]->mark_start(id)) {  // may grow the queue; wakes the worker if it must
        windows_.abandon(id, stream);
        windows_.release(id);  // the marker that never went out
        return sdk::failf(error, LAPSE_ERROR_OUT_OF_MEMORY,
                          "profile_start: stream %u: out of memory growing the queue", stream);
    }
    token = lapse_token{id, stream, 0};
    return LAPSE_OK;
}

void CpuDevice::hurry_workers() noexcept
{
    for (const auto& s : streams_) s->hurry();
}

lapse_status CpuDevice::wake_then_ok(WorkerStream& stream) noexcept
{
    stream.wake();
    return LAPSE_OK;
}

lapse_status CpuDevice::token_error(const char* call, lapse_token token, sdk::WindowCheck check,
                                    lapse_error* error) const noexcept
{
    if (check == sdk::WindowCheck::wrong_tag) {
        const uint32_t actual = windows_.tag_of_live(token.id);
        if (actual <= CpuWindowTable::max_tag)
            return sdk::failf(error, LAPSE_ERROR_WRONG_STREAM,
                              "%s: token %" PRIu64 " says stream %u, but its window was opened on stream %u", call,
                              token.id, token.opened_on, actual);
        return sdk::failf(error, LAPSE_ERROR_WRONG_STREAM, "%s: token %" PRIu64 " says stream %u, which is not where its window was opened",
                          call, token.id, token.opened_on);
    }
    return sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN, "%s: token %" PRIu64 " (stream %u) %s", call, token.id,
                      token.opened_on, sdk::describe(check));
}

lapse_status CpuDevice::profile_end(lapse_token token, uint32_t /*flags: nothing is batched here*/,
                                    lapse_error* error) noexcept
{
    if (token.opened_on >= queue_path_streams_) [[unlikely]]
        return refuse_end(token, error);
    // So a stream is a valid tag: try_close() need not test it.
    static_assert(max_streams <= CpuWindowTable::max_tag + 1);
    if (token.opened_on >= max_streams) __builtin_unreachable();
    // One more hold: the end marker, released when the worker stamps it.
    if (!windows_.try_close(token.id, token.opened_on, 1)) [[unlikely]]
        return end_slow(token, error);
    WorkerStream& s = *workers_[token.opened_on];
    if (!s.try_queue_end(token.id)) [[unlikely]]
        return end_queue_slow(token, error);
    if (s.needs_wake()) [[unlikely]]
        return wake_then_ok(s);
    return LAPSE_OK;
}

lapse_status CpuDevice::end_in_lane(lapse_token token, lapse_error* error) noexcept
{
    if (token.opened_on >= max_streams) __builtin_unreachable();  // checked by refuse_end
    if (!windows_.try_close(token.id, token.opened_on, 1)) [[unlikely]]
        return end_slow(token, error);
    // A thread closing a window it did not open may have no lane: the
    // queue takes its marker (the worker stamps it after the start).
    WorkerStream& s = *workers_[token.opened_on];
    MarkerLane* lane = s.lane();
    bool marked;
    if (lane != nullptr && lane->enter()) [[likely]] {
        marked = s.try_mark_end(*lane, token.id);
        lane->leave();
    } else {
        marked = s.try_queue_end(token.id);
    }
    if (!marked) [[unlikely]]
        return end_queue_slow(token, error);
    if (s.needs_wake()) [[unlikely]]
        return wake_then_ok(s);
    return LAPSE_OK;
}

lapse_status CpuDevice::end_slow(lapse_token token, lapse_error* error) noexcept
{
    // Not the common case: close() says why (or closes after a race).
    const sdk::WindowCheck check = windows_.close(token.id, token.opened_on, 1);
    if (check != sdk::WindowCheck::ok) return token_error("profile_end", token, check, error);
    return end_queue_slow(token, error);
}

lapse_status CpuDevice::end_queue_slow(lapse_token token, lapse_error* error) noexcept
{
    if (!streams_[token.opened_on]->mark_end(token.id)) return end_out_of_memory(token, error);
    return LAPSE_OK;
}

lapse_status CpuDevice::refuse_end(lapse_token token, lapse_error* error) noexcept
{
    if (token.opened_on < lane_path_streams_) [[likely]]
        return end_in_lane(token, error);
    if (settings_.mode == Mode::inline_)
        return sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN,
                          "profile_end: token %" PRIu64 ": this device runs inline and opens no windows", token.id);
    return sdk::failf(error, LAPSE_ERROR_WRONG_STREAM,
                      "profile_end: token %" PRIu64 " says stream %u, which does not exist (the device has %u): "
                      "not a token of this device",
                      token.id, token.opened_on, settings_.streams);
}

lapse_status CpuDevice::end_out_of_memory(lapse_token token, lapse_error* error) noexcept
{
    windows_.release(token.id);  // end_ns stays 0 (the worker set it at the start marker): NOT_MEASURED
    return sdk::failf(error, LAPSE_ERROR_OUT_OF_MEMORY,
                      "profile_end: token %" PRIu64 ": out of memory queueing the end marker; the window is "
                      "closed and will resolve as not measured",
                      token.id);
}

void CpuDevice::profile_abandon(lapse_token token) noexcept
{
    if (settings_.mode == Mode::inline_ || token.opened_on >= settings_.streams) return;
    // A token of another stream is not this window's: ignored like an unknown one.
    windows_.abandon(token.id, token.opened_on);
}

lapse_status CpuDevice::resolve_one(const lapse_token& token, lapse_duration& out, CpuWindowTable::FreeBatch& freed,
                                    const StampClock::Conversion& conversion, lapse_error* error) noexcept
{
    if (settings_.mode == Mode::inline_) {
        set_duration(out, LAPSE_DURATION_FAILED, LAPSE_ERROR_INVALID_TOKEN);
        return sdk::failf(error, LAPSE_ERROR_INVALID_TOKEN,
                          "resolve: token %" PRIu64 ": this device runs inline and opens no windows", token.id);
    }
    if (token.opened_on >= settings_.streams) {
        set_duration(out, LAPSE_DURATION_FAILED, LAPSE_ERROR_WRONG_STREAM);
        return sdk::failf(error, LAPSE_ERROR_WRONG_STREAM,
                          "resolve: token %" PRIu64 " says stream %u, which does not exist (the device has %u)",
                          token.id, token.opened_on, settings_.streams);
    }
    Stamps stamps;
    const sdk::WindowCheck check =
        windows_.take(token.id, token.opened_on, [&](const CpuWindow& w) { stamps = read_stamps(w); }, freed);
    if (check == sdk::WindowCheck::pending) {
        set_duration(out, LAPSE_DURATION_PENDING, LAPSE_OK);
        return LAPSE_OK;
    }
    if (check != sdk::WindowCheck::ok) {
        const lapse_status status = token_error("resolve", token, check, error);
        set_duration(out, LAPSE_DURATION_FAILED, status);
        return status;
    }
    set_taken(out, stamps, conversion);
    return LAPSE_OK;
}

lapse_status CpuDevice::resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t timeout_ns,
                                lapse_error* error)
{
    // One pass writes every out[i] once: final, or PENDING. Later passes
    // (while waiting) visit only what is still pending, so a token is taken
    // (and its record freed) exactly once. A window already measured takes
    // the table's one-comparison path; anything else (pending, failed, a
    // bad token) the full one that explains itself. Records are prefetched
    // a few tokens ahead and go back to the table in batches: resolving a
    // million windows is a walk over memory, with a locked operation per
    // batch of them, not per window (lapse/sdk/window_table.hpp).
    constexpr uint32_t kPrefetchAhead = 4;
    CpuWindowTable::FreeBatch freed;
    lapse_status first_error = LAPSE_OK;
    uint32_t first_pending = count;  // out[0 .. first_pending) are final
    const bool streams = settings_.mode == Mode::stream;
    if (streams) clock_.refine();
    const StampClock::Conversion conversion = streams ? clock_.conversion() : StampClock::Conversion{};
    // The full path for out[i]: keeps the first error (its message goes
    // to `error`) and notes in `pending_from` the first duration still
    // pending.
    auto resolve_at = [&](uint32_t i, uint32_t& pending_from) noexcept {
        const lapse_status s = resolve_one(tokens[i], out[i], freed, conversion, first_error == LAPSE_OK ? error : nullptr);
        if (s < 0 && first_error == LAPSE_OK) first_error = s;
        if (out[i].state == LAPSE_DURATION_PENDING && pending_from == count) pending_from = i;
    };
    for (uint32_t i = 0; i < count; ++i) {
        if (i + kPrefetchAhead < count) windows_.prefetch(tokens[i + kPrefetchAhead].id);
        const lapse_token& token = tokens[i];
        Stamps stamps;
        if (streams && windows_.try_take_ready(token.id, token.opened_on,
                                               [&](const CpuWindow& w) { stamps = read_stamps(w); }, freed))
            [[likely]] {
            set_taken(out[i], stamps, conversion);
            continue;
        }
        resolve_at(i, first_pending);
    }
    windows_.flush(freed);
    // Every pending window, once more: what a caller that gives up waiting
    // gets, so a window stamped by then is never left PENDING.
    auto pass = [&]() noexcept {
        uint32_t still = count;
        for (uint32_t i = first_pending; i < count; ++i) {
            if (out[i].state == LAPSE_DURATION_PENDING) resolve_at(i, still);
        }
        windows_.flush(freed);
        first_pending = still;
        return first_pending == count;
    };
    // While waiting, a poll goes on from the first pending window and stops
    // at the next one still pending: a stream stamps its markers in order,
    // so windows after a pending one are most likely pending too, and a
    // poll (one per wake-up) costs one record check, not a walk over every
    // pending window. Each window is taken once overall.
    auto poll = [&]() noexcept {
        for (; first_pending < count; ++first_pending) {
            if (out[first_pending].state != LAPSE_DURATION_PENDING) continue;
            uint32_t still = count;
            resolve_at(first_pending, still);
            if (still != count) break;
        }
        windows_.flush(freed);
        return first_pending == count;
    };
    bool all_final = first_pending == count;
    if (!all_final && timeout_ns != 0) {
        const sdk::Deadline deadline(timeout_ns);
        auto blocked_on = [&]() noexcept { return first_pending < count ? tokens[first_pending].id : 0; };
        all_final = completions_.wait(poll, blocked_on, [this]() noexcept { hurry_workers(); }, deadline);
        if (!all_final) all_final = pass();
    }
    if (first_error != LAPSE_OK) return first_error;
    return all_final ? LAPSE_OK : LAPSE_NOT_READY;
}

}  // namespace lapse::cpu
