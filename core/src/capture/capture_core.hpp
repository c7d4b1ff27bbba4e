// Internal: the recording side of a capture. Threads closing named
// windows hand their notes to their own channel (admit, note_queue.hpp);
// one collector thread pulls every channel, resolves the pending notes in
// batches, encodes the results into chunks and writes them to the sink,
// and hands each written window to the capture's observers
// (capture_observer.hpp). Requests that need the collector (a device
// closing, flush, close) go through a mutex and condition variable, never
// a window.
#pragma once

#include "capture_observer.hpp"
#include "chunk_writer.hpp"
#include "note_queue.hpp"
#include "thread_recording.hpp"

#include <lapse/core/capture.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lapse::detail {

class DeviceCore;
struct ThreadRecording;
struct WindowNote;

class CaptureCore {
public:
    explicit CaptureCore(CaptureOptions options);
    ~CaptureCore();

    // Any thread.
    uint32_t add_source(CaptureSource source);
    // Queues a shared note (its refs already count the collector's) on the
    // calling thread's channel. False when the policy dropped it: the
    // caller then still owns it alone. (capture/admit.cpp.)
    bool admit(WindowNote* note) noexcept;
    // admit()'s common case, with no call: the thread's channel used last
    // is this capture's, its credit covers the note and its ring has room.
    // False leaves the channel as it was; admit() then decides.
    // (capture/admit.cpp, inlined into DeviceCore::hand_over, its only
    // caller.)
    bool admit_at_once(WindowNote* note) noexcept;
    // Writes every window of `device` queued so far, resolving its pending
    // ones (waiting a bounded time, then giving them up). Blocks.
    void drain_device(DeviceCore* device) noexcept;
    // Writes everything queued, waiting up to `wait` for pending windows
    // (none is given up). Blocks.
    void drain_all(std::chrono::nanoseconds wait) noexcept;
    void close() noexcept;
    CaptureStats stats() const noexcept;
    const CaptureOptions& options() const noexcept { return options_; }
    uint16_t metrics_port() const noexcept { return metrics_port_; }

private:
    // A round that pulled fewer notes than kBusyRound naps kGatherNap (or
    // until a request) before the next one: run().
    static constexpr std::size_t kBusyRound = 1024;
    static constexpr std::chrono::microseconds kGatherNap{200};

    struct Request {
        enum Kind { drain_device, drain_all, close } kind;
        DeviceCore* device = nullptr;
        std::chrono::nanoseconds wait{0};
        bool done = false;
    };

    void count_drop(const WindowNote& note) noexcept;
    // The calling thread's channel to this capture, made on first use;
    // null when it cannot be made (out of memory, thread exiting). The
    // channel used last is found inline.
    NoteChannel* channel_for_this_thread(ThreadRecording& thread) noexcept;
    NoteChannel* new_channel_for_this_thread(ThreadRecording& thread) noexcept;
    // Makes room for `cost` more bytes in the channel's share of the
    // budget: from its credit, or (reserve_slow, once per credit spent)
    // by looking at what the collector freed, giving a slice back or
    // taking one more from the capture's.
    bool reserve(NoteChannel& channel, uint64_t cost) noexcept
    {
        if (cost <= channel.credit) [[likely]] {
            channel.credit -= cost;
            return true;
        }
        return reserve_slow(channel, cost);
    }
    bool reserve_slow(NoteChannel& channel, uint64_t cost) noexcept;
    // Lowers the grant of every channel whose thread is gone (or moved on)
    // to what it still holds, giving the rest back to the budget now
    // rather than when the collector retires the channel: threads that
    // exit right after their windows must not starve the next ones. The
    // bytes given back. Any thread; takes channels_mutex_.
    uint64_t release_orphaned_grants() noexcept;
    // The collector lets go of a note it has written (or dropped).
    void let_go(WindowNote* note) noexcept;
    // Collector: picks up channels made since the last round.
    void refresh_channels() noexcept;
    // Collector: frees the channels whose threads are gone and that hold nothing.
    void retire_channels() noexcept;
    void run() noexcept;
    void submit(Request& request) noexcept;
    // Collector: takes every note the producers queued; returns how many.
    std::size_t pull() noexcept;
    // Encodes the final notes among the first `count` pending ones and
    // resolves the rest of those (of `only`, or all) once; the notes after
    // them keep their place.
    bool process(std::chrono::nanoseconds timeout, DeviceCore* only, std::size_t count = SIZE_MAX) noexcept;
    // Repeats process until every note (of `only`, or all) is final or
    // `wait` has passed; then, if `give_up`, gives up the rest.
    void settle(DeviceCore* only, std::chrono::nanoseconds wait, bool give_up) noexcept;
    void encode(WindowNote* note) noexcept;
    void release_held() noexcept;
    void write_chunks(bool force) noexcept;
    void handle(Request& request) noexcept;

    CaptureOptions options_;
    // Opened before the file: a metrics address that is refused or taken
    // fails the open before the file is created.
    uint16_t metrics_port_ = 0;
    std::vector<std::shared_ptr<CaptureObserver>> observers_;  // the collector's, after the writer
    ChunkWriter writer_;
    const uint64_t id_;            // unique in the process: threads find their channel by it
    const std::size_t ring_size_;  // notes per channel ring
    const uint64_t slice_;         // budget bytes a channel reserves at a time

    // Why the capture takes no more windows: it closed, or its sink failed
    // (windows are dropped from then on). One word, so that a window's
    // hand-over tests both with one load.
    enum : uint8_t { refuse_closed = 1, refuse_broken = 2 };
    std::atomic<uint8_t> refusing_{0};
    bool broken() const noexcept { return (refusing_.load(std::memory_order_relaxed) & refuse_broken) != 0; }
    void mark_broken() noexcept { refusing_.fetch_or(refuse_broken, std::memory_order_relaxed); }
    // Budget bytes reserved by the channels (at most budget_bytes), and the
    // most ever reserved: touched once per slice, not per window.
    alignas(64) std::atomic<uint64_t> granted_{0};
    std::atomic<uint64_t> peak_{0};
    alignas(64) std::atomic<uint64_t> recorded_{0}, dropped_{0};
    std::atomic<uint64_t> unwritten_{0};  // admitted, then dropped because the sink failed
    std::atomic<uint64_t> bytes_written_{0}, chunks_{0};

    mutable std::mutex channels_mutex_;  // a thread's first window, stats, the collector's refresh
    std::vector<std::shared_ptr<NoteChannel>> channels_;
    uint64_t retired_pushed_ = 0;  // notes admitted by channels since retired
    std::atomic<uint64_t> channels_version_{0};

    std::mutex drops_mutex_;  // the drop path only
    std::map<std::string, uint64_t, std::less<>> drops_;
    bool drops_changed_ = false;

    std::mutex mutex_;  // requests and sources
    std::condition_variable wake_, done_;
    std::deque<Request*> requests_;
    std::vector<CaptureSource> new_sources_;
    uint32_t next_source_ = 0;
    std::atomic<bool> has_requests_{false};

    // Collector thread only.
    std::vector<std::shared_ptr<NoteChannel>> active_;
    uint64_t active_version_ = 0;
    std::vector<WindowNote*> pending_;
    int64_t round_ns_ = 0;  // read once per round (pull): the time a chunk that fills is stamped with
    int64_t last_write_ns_ = 0;
    std::thread collector_;
};

inline NoteChannel* CaptureCore::channel_for_this_thread(ThreadRecording& t) noexcept
{
    ThreadRecording::Entry& last = t.channels[t.last_channel];
    if (last.capture == id_) [[likely]]
        return last.channel.get();
    return new_channel_for_this_thread(t);
}

int64_t realtime_now_ns() noexcept;

}  // namespace lapse::detail
