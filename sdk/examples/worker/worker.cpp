// worker — a worked asynchronous lapse backend: the template's companion.
//
// The template (sdk/template/wallclock.cpp) runs work inside submit, so its
// windows are final the moment they close. Real devices are asynchronous:
// work and window markers queue up on a stream and something else — a GPU,
// a worker thread — reaches them later. This plugin is the smallest honest
// model of that: each stream is one worker thread draining a FIFO of items,
// and a window is a start and an end marker in that FIFO, stamped with
// CLOCK_MONOTONIC when the worker reaches them.
//
// What it shows a plugin author:
//   * the window table's *holds*: a marker in flight is a reference the
//     device still has on the window. profile_start opens the record with
//     one hold (the start marker), profile_end adds one (the end marker),
//     and the worker releases each hold once it has stamped. resolve can
//     take a window only when no hold is left, and an abandoned window's
//     record is freed by whoever drops its last hold — so a worker never
//     stamps into a record that was reused meanwhile;
//   * resolve's timeout with lapse::sdk::Deadline (LAPSE_WAIT_FOREVER
//     must block, 0 must poll, anything else must not overflow);
//   * close: every accepted work item runs exactly once, then the windows
//     still open are abandoned and counted.
//
// It is written for clarity, not speed: one mutex and condition variable
// per stream. The shipped cpu plugin (plugins/cpu) is the same model with a
// lock-free queue, spin-then-futex idling and batched resolves.
#include <lapse/lapse.h>
#include <lapse/sdk/deadline.hpp>
#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/plugin.hpp>
#include <lapse/sdk/window_table.hpp>

#include <atomic>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using lapse::sdk::WindowCheck;

// Written by the worker while it holds a hold, read by the resolver inside
// take(): relaxed atomics, because a reader racing a reuse may read a stale
// copy (take() then discards it).
struct Stamps {
    std::atomic<int64_t> start_ns{0};
    std::atomic<int64_t> end_ns{0};
};
using Table = lapse::sdk::WindowTable<Stamps>;

// One thing in a stream's FIFO: work to run, or a marker to stamp.
struct Item {
    enum class Kind { work, start_marker, end_marker } kind;
    lapse_work_fn fn = nullptr;
    void* user = nullptr;
    Table::Id window = 0;
};

class Stream {
public:
    explicit Stream(Table& windows) : windows_(windows), thread_([this] { run(); }) {}
    ~Stream()
    {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        queued_.notify_one();
        thread_.join();  // the worker drains the FIFO before it leaves
    }

    void push(Item item)
    {
        {
            std::lock_guard lock(mutex_);
            fifo_.push_back(item);
            ++pushed_;
        }
        queued_.notify_one();
    }

    // Waits until every item pushed before the call has been handled.
    bool wait_drained(const lapse::sdk::Deadline& deadline)
    {
        std::unique_lock lock(mutex_);
        const uint64_t target = pushed_;
        return deadline.wait(progress_, lock, [&] { return handled_ >= target; });
    }

    // Waits until the worker has handled more than `seen` items, or the
    // deadline passes (resolve's wait for markers). `seen` must be read
    // before the caller looked at its windows, or a marker stamped in
    // between would be waited for again.
    bool wait_progress(const lapse::sdk::Deadline& deadline, uint64_t seen)
    {
        std::unique_lock lock(mutex_);
        return deadline.wait(progress_, lock, [&] { return handled_ != seen; });
    }
    uint64_t handled() const
    {
        std::lock_guard lock(mutex_);
        return handled_;
    }
    bool on_worker() const noexcept { return std::this_thread::get_id() == thread_.get_id(); }

private:
    void run()
    {
        std::unique_lock lock(mutex_);
        for (;;) {
            queued_.wait(lock, [&] { return stopping_ || !fifo_.empty(); });
            if (fifo_.empty()) return;  // stopping, and nothing left to run
            const Item item = fifo_.front();
            fifo_.pop_front();
            lock.unlock();  // never hold a lock while the host's work runs
            handle(item);
            lock.lock();
            ++handled_;
            progress_.notify_all();
        }
    }

    void handle(const Item& item)
    {
        switch (item.kind) {
        case Item::Kind::work: item.fn(item.user, nullptr); return;
        case Item::Kind::start_marker:
            windows_.payload(item.window).start_ns.store(lapse::sdk::monotonic_ns(), std::memory_order_relaxed);
            windows_.release(item.window);  // the start marker's hold
            return;
        case Item::Kind::end_marker:
            windows_.payload(item.window).end_ns.store(lapse::sdk::monotonic_ns(), std::memory_order_relaxed);
            windows_.release(item.window);  // the end marker's hold
            return;
        }
    }

    Table& windows_;
    mutable std::mutex mutex_;
    std::condition_variable queued_;    // worker waits for items
    std::condition_variable progress_;  // sync and resolve wait for the worker
    std::deque<Item> fifo_;
    uint64_t pushed_ = 0;
    uint64_t handled_ = 0;
    bool stopping_ = false;
    std::thread thread_;  // last: it starts running in the constructor
};

class WorkerDevice {
public:
    static std::unique_ptr<WorkerDevice> open(lapse::sdk::Host host, lapse::sdk::Config config)
    {
        // Read every key you accept: the host refuses keys nobody read.
        const auto streams = static_cast<uint32_t>(config.integer("streams", 1, 1, 16));
        return std::make_unique<WorkerDevice>(host, streams);
    }
    WorkerDevice(lapse::sdk::Host host, uint32_t streams) : host_(host), windows_(streams, 256)
    {
        for (uint32_t i = 0; i < streams; ++i) streams_.push_back(std::make_unique<Stream>(windows_));
    }
    // = close: the workers run what is queued (every accepted item exactly
    // once), then the windows nobody resolved are abandoned and counted.
    ~WorkerDevice()
    {
        streams_.clear();
        const auto census = windows_.abandon_all();
        if (census.open + census.closed > 0)
            host_.warn("closed with " + std::to_string(census.open) + " window(s) still open and " +
                       std::to_string(census.closed) + " closed but never resolved");
    }

    void describe(lapse_device_info& info)
    {
        info.stream_count = stream_count();
        info.capabilities = capabilities;
        std::snprintf(info.name, sizeof info.name, "worker (%u thread%s)", stream_count(),
                      stream_count() == 1 ? "" : "s");
    }

    lapse_status sync(lapse_stream stream, lapse_error* error)
    {
        if (stream != LAPSE_ALL_STREAMS && stream >= stream_count()) return bad_stream("sync", stream, error);
        for (uint32_t s = 0; s < stream_count(); ++s) {
            if (stream != LAPSE_ALL_STREAMS && s != stream) continue;
            // Work that syncs its own stream would wait for itself.
            if (streams_[s]->on_worker())
                return lapse::sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT,
                                         "sync: called from work running on stream %u, which would wait for itself", s);
            streams_[s]->wait_drained(lapse::sdk::Deadline(LAPSE_WAIT_FOREVER));
        }
        return LAPSE_OK;
    }

    lapse_status submit(lapse_stream stream, lapse_work_fn fn, void* user, lapse_error* error)
    {
        if (stream >= stream_count()) return bad_stream("submit", stream, error);
        streams_[stream]->push(Item{Item::Kind::work, fn, user, 0});
        return LAPSE_OK;
    }

    lapse_status profile_start(lapse_stream stream, lapse_token& token, lapse_error* error)
    {
        if (stream >= stream_count()) return bad_stream("profile_start", stream, error);
        // One hold: the start marker about to be queued.
        const Table::Id id = windows_.open(stream, 1);
        if (id == 0) return lapse::sdk::fail(error, LAPSE_ERROR_OUT_OF_MEMORY, "profile_start: no window records left");
        windows_.payload(id).start_ns.store(0, std::memory_order_relaxed);
        windows_.payload(id).end_ns.store(0, std::memory_order_relaxed);
        streams_[stream]->push(Item{Item::Kind::start_marker, nullptr, nullptr, id});
        token = lapse_token{id, stream, 0};
        return LAPSE_OK;
    }

    lapse_status profile_end(lapse_token token, uint32_t /*flags: nothing is batched*/, lapse_error* error)
    {
        if (token.opened_on >= stream_count()) return bad_stream("profile_end", token.opened_on, error);
        // Closing adds the end marker's hold before the marker is queued, so
        // the worker's release always has a hold to drop.
        const WindowCheck check = windows_.close(token.id, token.opened_on, 1);
        if (check != WindowCheck::ok) return token_error("profile_end", token, check, error);
        streams_[token.opened_on]->push(Item{Item::Kind::end_marker, nullptr, nullptr, token.id});
        return LAPSE_OK;
    }

    // Cannot fail. A marker still queued keeps its hold; the record is freed
    // when the worker drops the last one.
    void profile_abandon(lapse_token token) noexcept { windows_.abandon(token.id, token.opened_on); }

    lapse_status resolve(const lapse_token* tokens, lapse_duration* out, uint32_t count, uint64_t timeout_ns,
                         lapse_error* error)
    {
        const lapse::sdk::Deadline deadline(timeout_ns);
        std::vector<bool> done(count, false);
        lapse_status first_error = LAPSE_OK;
        std::vector<uint64_t> seen(stream_count());
        for (;;) {
            for (uint32_t s = 0; s < stream_count(); ++s) seen[s] = streams_[s]->handled();
            uint32_t pending = 0;
            lapse_stream waiting_on = 0;
            for (uint32_t i = 0; i < count; ++i) {
                if (done[i]) continue;
                const lapse_token t = tokens[i];
                int64_t start = 0, end = 0;
                const WindowCheck check = windows_.take(t.id, t.opened_on, [&](const Stamps& s) {
                    start = s.start_ns.load(std::memory_order_relaxed);
                    end = s.end_ns.load(std::memory_order_relaxed);
                });
                if (check == WindowCheck::ok) {
                    lapse::sdk::set_duration(out[i], LAPSE_DURATION_READY, LAPSE_OK, LAPSE_TIMING_DEVICE,
                                             LAPSE_CLOCK_HOST_MONOTONIC, start, end);
                    done[i] = true;
                } else if (check == WindowCheck::pending) {
                    // A marker is still queued: PENDING unless we may wait.
                    lapse::sdk::set_duration(out[i], LAPSE_DURATION_PENDING);
                    waiting_on = t.opened_on;
                    ++pending;
                } else {
                    // Misuse of this one token; the others are still resolved.
                    const lapse_status s = token_error("resolve", t, check, first_error == LAPSE_OK ? error : nullptr);
                    lapse::sdk::set_duration(out[i], LAPSE_DURATION_FAILED, s);
                    if (first_error == LAPSE_OK) first_error = s;
                    done[i] = true;
                }
            }
            // A misused token does not stop the others: they are still
            // resolved (waited for), and the first error is the answer.
            if (pending == 0) return first_error;
            Stream& stream = *streams_[waiting_on];
            // Waiting from the worker itself would wait for ourselves.
            if (deadline.expired() || stream.on_worker()) return first_error != LAPSE_OK ? first_error : LAPSE_NOT_READY;
            stream.wait_progress(deadline, seen[waiting_on]);
        }
    }

    static constexpr uint64_t capabilities = LAPSE_CAP_DEVICE_CLOCK | LAPSE_CAP_NESTED | LAPSE_CAP_OVERLAPPING |
                                             LAPSE_CAP_SPLIT_THREADS | LAPSE_CAP_HOST_TIMELINE;

private:
    uint32_t stream_count() const noexcept { return static_cast<uint32_t>(streams_.size()); }

    static lapse_status bad_stream(const char* call, lapse_stream stream, lapse_error* error)
    {
        return lapse::sdk::failf(error, LAPSE_ERROR_INVALID_ARGUMENT, "%s: stream %u does not exist", call, stream);
    }
    static lapse_status token_error(const char* call, lapse_token t, WindowCheck c, lapse_error* error)
    {
        const lapse_status s = c == WindowCheck::wrong_tag ? LAPSE_ERROR_WRONG_STREAM : LAPSE_ERROR_INVALID_TOKEN;
        return lapse::sdk::failf(error, s, "%s: token %" PRIu64 " (stream %u) %s", call, t.id, t.opened_on,
                                 c == WindowCheck::wrong_tag ? "was opened on another stream" : lapse::sdk::describe(c));
    }

    lapse::sdk::Host host_;
    Table windows_;
    std::vector<std::unique_ptr<Stream>> streams_;  // after windows_: workers stop before the table goes
};

}  // namespace

LAPSE_PLUGIN_ENTRY
{
    if (!lapse::sdk::host_is_compatible(host, "worker")) return nullptr;
    static const lapse_plugin plugin = lapse::sdk::make_plugin<WorkerDevice>(
        "worker", "1.0.0", "one worker thread per stream; windows are markers the worker stamps when it reaches them",
        WorkerDevice::capabilities);
    return &plugin;
}
