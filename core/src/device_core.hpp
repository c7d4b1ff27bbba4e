// Internal: the state behind a lapse::Device. Windows and Durations point
// at it (it never moves), so a Device can be moved freely.
//
// Closing does not free it: retire() closes the plugin's device, drops the
// file, the session and the strings, and keeps the rest as a closed shell
// for the life of the process, so a Duration or Window still pointing here
// after close reads `closed` (and resolves FAILED, LAPSE_ERROR_CLOSED)
// instead of freed memory. Counting those pointers instead would cost an
// atomic operation per window on the hot path.
#pragma once

#include "plugin_text.hpp"

#include "backend_open.hpp"
#include "interned_name.hpp"

#include <lapse/core/capture.hpp>
#include <lapse/core/device.hpp>
#include <lapse/core/duration.hpp>
#include <lapse/dispatch.h>
#include <lapse/resolve_compact.h>

#include <atomic>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace lapse::detail {

// A caller-owned error struct for one plugin call (the hot path's
// CallErrorBuffer), and the message it names: the plugin's own text, or the
// call and its status when the plugin wrote none.
struct CallError : CallErrorBuffer {
    std::string describe(const char* call, lapse_status status) const
    {
        if (!error_text(e).empty()) return std::string(error_text(e));
        return std::string(call) + ": " + lapse_status_name(status);
    }
};

struct RuntimeState;

class CaptureCore;
struct NoteChannel;

// A note handed to a capture is shared by the caller's Duration and the
// collector. Whoever resolves the window first claims it (pending -> busy),
// resolves it, and publishes the result (busy -> final); the other side
// then reads the result instead of asking the backend again. So a window
// is resolved once and both sides see the same number.
enum NoteClaim : uint32_t { note_unshared = 0, note_pending = 1, note_busy = 2, note_final = 3 };

// What a window carries besides its token: only allocated for a named
// window (for the session and capture) or one that failed (for its message).
// Three cache lines, aligned to them: a named window's caller writes it
// after another core did (the collector, or the thread that dropped its
// Duration), so each line it writes is one that moves between cores. What
// the caller writes at every named window sits in the first two (kHotBytes,
// the lines take_note fetches ahead); the result the resolver publishes and
// the long name's string sit in the third, which a named window's caller
// does not touch.
struct alignas(64) WindowNote {
    // --- Line 0: the name, and what closing a window writes.
    // A name copied into the note (make_name_note, in
    // capture/thread_recording.cpp): one of up to
    // kShortName bytes, most names, sits in short_name (no heap, and copied
    // with a few moves rather than a call); a longer one in long_name.
    // name_size is its length either way, 0 when `interned` names the
    // window or nothing does.
    static constexpr std::size_t kShortName = 24;
    char short_name[kShortName];
    uint32_t name_size = 0;
    Stream stream = 0;
    TokenWords token{};
    // Recording (see NoteClaim); unused while unshared.
    std::atomic<uint32_t> refs{1};
    std::atomic<uint32_t> claim{note_unshared};
    uint32_t cost = 0;    // bytes counted against the capture's budget
    uint32_t source = 0;  // the device's id in the capture

    // --- Line 1: who, where to, and the rest of the result.
    uint64_t thread = 0;
    uint64_t close_thread = 0;
    DeviceCore* device = nullptr;
    NoteChannel* channel = nullptr;  // the closing thread's link to the capture
    const InternedName* interned = nullptr;  // a lapse::Name's entry, or null
    // Why the window failed or was not measured (set_message); null for
    // nearly every window, so it takes a word of the note, not a string.
    std::unique_ptr<std::string> message;
    // The final result, written by the claimant before it publishes (here
    // and in line 2).
    lapse_status failure = LAPSE_OK;
    uint32_t flags = 0;       // LAPSE_DURATION_* of a ready window
    uint32_t queued_ops = 0;  // with LAPSE_DURATION_WORK_QUEUED
    DurationState state = DurationState::not_measured;

    // --- Line 2: the long name's string and the stamps.
    std::string long_name;
    int64_t start_ns = 0, end_ns = 0;
    TimingMethod method = TimingMethod::none;
    ClockDomain domain = ClockDomain::none;

    // The bytes a named window's caller writes (lines 0 and 1).
    static constexpr std::size_t kHotBytes = 128;
};
static_assert(sizeof(WindowNote) == 192 && alignof(WindowNote) == 64, "a note is three cache lines, aligned to them");
static_assert(offsetof(WindowNote, long_name) == WindowNote::kHotBytes,
              "what a named window's caller writes ends where line 2 starts");

inline std::string_view message_of(const WindowNote& n) noexcept
{
    return n.message != nullptr ? std::string_view(*n.message) : std::string_view{};
}
// Throws std::bad_alloc when the note has no message yet and one cannot be made.
inline void set_message(WindowNote& n, std::string text)
{
    if (n.message != nullptr)
        *n.message = std::move(text);
    else
        n.message = std::make_unique<std::string>(std::move(text));
}

// A note's name, whether copied or interned.
inline std::string_view name_of(const WindowNote& n) noexcept
{
    if (n.interned != nullptr) return n.interned->text;
    return n.name_size <= WindowNote::kShortName ? std::string_view(n.short_name, n.name_size)
                                                 : std::string_view(n.long_name);
}
inline bool has_name(const WindowNote& n) noexcept { return n.interned != nullptr || n.name_size != 0; }


class DeviceCore {
public:
    DeviceCore(OpenedBackend opened, DeviceInfo info, std::shared_ptr<RuntimeState> runtime) noexcept;
    ~DeviceCore();

    // Resolves `count` durations of this device with one plugin call (or
    // fails them all with LAPSE_ERROR_CLOSED once the device is closed).
    // `collector`: called by a capture's collector, which never waits for
    // a window another thread is resolving (see claim_shared).
    void resolve(Duration* const* items, std::size_t count, std::chrono::nanoseconds timeout, bool collector = false);
    // Device::resolve's direct route, over `durations` in order: the
    // windows of this device (pending, none shared with a capture) go to
    // the plugin in chunks, gathered and written back in one pass each; a
    // final one is passed over. It stops before the chunk that holds a
    // window it cannot take (another device's, a shared one), or at once
    // when the device is closed, and says where in `rest` (null when it
    // went through): from there on nothing was changed, for the general way.
    struct SpanResolve {
        Duration* rest = nullptr;
        bool some_pending = false;  // among the windows it resolved
    };
    SpanResolve resolve_span(std::span<Duration> durations, std::chrono::nanoseconds timeout);

    // Closes the plugin's device and keeps this object as a closed shell
    // (see the top of this file). [once, after every other call on the device]
    static void retire(std::unique_ptr<DeviceCore> core) noexcept;
    // What Device::info() answers: the device as the backend describes it
    // now. Until something that can change the device was handed out
    // (info_may_change) that is the answer open saw, at no cost; after,
    // the backend is asked on each call. A failed describe keeps the last
    // answer. Never throws. [thread-safe]
    const DeviceInfo& current_info() noexcept;
    // Asks the backend now and publishes its answer; throws Error when it
    // fails. [thread-safe]
    const DeviceInfo& refresh_info();

    // Fills `d` as FAILED, keeping its name.
    static void fail(Duration& d, lapse_status status, std::string message);
    // Adds a final, named duration to the session, if one is attached.
    void record(const Duration& d);

    // Recording into a capture (capture/device_recording.cpp). A named
    // window closed by end_slow is handed over here, pending or final.
    void capture_window(Duration& d) noexcept;
    // What capture_window and capture_pending share (capture/admit.cpp).
    void hand_over(CaptureCore* capture, WindowNote* note, TokenWords token, Stream stream,
                   const Duration* final) noexcept;
    // hand_over when the capture cannot take the note at once: admit() in
    // full, and the note back to unshared when it was dropped.
    void hand_over_rest(CaptureCore* capture, WindowNote* note) noexcept;
    // Attaches (or, with null, detaches) the capture this device records
    // into; the previous one is drained of this device's windows first.
    void attach_capture(std::shared_ptr<Capture> capture);
    // Drains this device's windows from its capture (before it closes).
    void detach_capture() noexcept;
    // The collector's side of the claim: resolves notes of this device,
    // publishing every one that reaches a final state; returns how many
    // did (those are moved to the front of `notes`).
    std::size_t resolve_notes(WindowNote** notes, std::size_t count, std::chrono::nanoseconds timeout);
    // Gives up a note's window that will never resolve (device closing):
    // abandons the token and publishes it as not measured, with `cause`.
    void give_up_note(WindowNote* note, const char* cause) noexcept;

    void work_failed(std::exception_ptr error) noexcept;
    std::exception_ptr take_work_error() noexcept;

    OpenedBackend backend;
    const lapse_plugin* plugin;  // == backend.plugin
    lapse_device* device;        // == backend.device
    // Where profile_start, profile_end and profile_abandon go: the device
    // itself, or past the layers that add nothing to a window
    // (lapse/dispatch.h). Everything else goes to plugin/device, which
    // take the same tokens.
    lapse_window_dispatch windows;
    // The device's lapse.resolve_compact/1, or null: Device::resolve over
    // a span asks it first and resolves in full only what it leaves.
    const lapse_resolve_compact* compact;
    // Its strided form, or null: a span's windows are then resolved in
    // their own words (resolve_run_in_place).
    lapse_resolve_compact_strided_fn compact_strided;
    // What describe answered at open (never written after, so read without
    // a lock); current_info() is the device as it is now.
    DeviceInfo info;
    // Set once an extension or the raw handle has been handed out: only
    // they change a device (Vulkan's attach adds a stream); the generic
    // ABI never does.
    std::atomic<bool> info_may_change{false};
    std::shared_ptr<RuntimeState> runtime;
    // Set by retire(), after every other call on the device returned (the
    // contract of close), so a plain flag: whatever reads it later on
    // another thread was ordered after close by the caller.
    bool closed = false;
    std::string stack;      // the backend stack as opened: "forward (backend) -> cpu (backend.inner)"
    bool disabled = false;  // LAPSE_DISABLE: every window is a no-op

    std::mutex session_mutex;
    std::shared_ptr<Session> session;
    // Whether `session` is set, read without the lock: a device that
    // records only into a capture takes no mutex per window.
    std::atomic<bool> has_session{false};

    // The capture this device records into (null: none). Read per named
    // window without a lock; every capture ever attached is kept alive
    // until the device closes, so the pointer never dangles.
    std::atomic<CaptureCore*> capture{nullptr};
    std::atomic<uint32_t> capture_source{0};
    std::mutex capture_mutex;
    std::vector<std::shared_ptr<Capture>> captures_kept;

private:
    void shut_down() noexcept;
    // Claims the shared notes among `items` for this call (or takes the
    // result another thread published); the rest go to the plugin as before.
    std::size_t claim_shared(Duration* const* items, std::size_t count, Duration** claimed, bool collector);
    // After the plugin answered: records `d` (session) and publishes a
    // shared note's result, or hands a still-pending one back.
    void finish_resolved(Duration& d);

    // The plugin's resolve of a gathered batch (in slices past the ABI's
    // uint32_t count), its first error kept for the windows it failed.
    struct BatchStatus;
    BatchStatus call_resolve(const lapse_token* tokens, lapse_duration* out, std::size_t count,
                             std::chrono::nanoseconds timeout);
    // Writes each answer out[i] into *where[i] (a sound READY one straight
    // into its words, any other through settle_other) and finishes the
    // named ones; true when some window is still pending.
    bool settle(Duration* const* where, const lapse_duration* out, std::size_t count, const BatchStatus& batch);
    // A sound READY answer, into the Duration's words.
    static void set_answer(Duration& d, const lapse_duration& r) noexcept;
    // resolve_span's chunk through the compact resolve: each READY pair
    // straight into its Duration, what it leaves (RESOLVE_FULL, a refused
    // or failed call) through call_resolve and settle, answered into `out`
    // (resolve_span's buffer, `count` long). True when some window is
    // still pending.
    bool resolve_chunk_compact(const lapse_token* tokens, Duration* const* where, std::size_t count,
                               lapse_duration* out, std::chrono::nanoseconds timeout);
    // resolve_span's run of this device's windows (next to each other in
    // the span) through the strided compact resolve, each token read and
    // each pair written in the Duration's own words; the rest as
    // resolve_chunk_compact does; `named`: some Duration of the run has a
    // note (a name or message to finish). True when some window is still
    // pending.
    bool resolve_run_in_place(Duration* run, std::size_t count, bool named, lapse_duration* out,
                              std::chrono::nanoseconds timeout);
    // What both compact forms leave: resolved in full, `out` the answers'
    // buffer. True when some window is still pending.
    bool resolve_full_after_compact(const lapse_token* tokens, Duration* const* where, std::size_t count,
                                    lapse_duration* out, std::chrono::nanoseconds timeout);
    struct ReadyPairs;
    // `d` fails, naming the plugin: `pair` cannot be a duration.
    [[gnu::noinline, gnu::cold]] void fail_impossible_pair(Duration& d, lapse_stamp_pair pair);
    // Where a span's Duration is resolved: here (a pending window of this
    // device, not shared with a capture), nowhere (final already), or the
    // general way (another device's, or shared).
    enum class Reach { here, final_already, elsewhere };
    Reach reach(const Duration& d) const noexcept;
    // An answer other than a sound READY one; false when it is PENDING.
    bool settle_other(Duration& d, const lapse_duration& r, const BatchStatus& batch);

    // Asks describe; publishes the answer when it differs from the last.
    lapse_status describe_now(CallError& error);

    // Every answer info() handed out stays readable until the device
    // closes: a newer one is added, never written over an older one.
    std::mutex info_mutex_;
    std::vector<std::unique_ptr<const DeviceInfo>> info_answers_;
    std::atomic<const DeviceInfo*> info_now_{nullptr};

    std::atomic<bool> has_work_error_{false};
    std::mutex work_mutex_;
    std::exception_ptr work_error_;
};

// sdk::window_dispatch_target, with the plugin's get_extension behind a
// catch (the SDK's version is noexcept). plugin_calls.cpp.
lapse_window_dispatch guarded_window_dispatch_target(const lapse_plugin* plugin, lapse_device* device) noexcept;
// sdk::resolve_compact_of, likewise guarded. plugin_calls.cpp.
const lapse_resolve_compact* guarded_resolve_compact(const lapse_plugin* plugin, lapse_device* device) noexcept;

int64_t monotonic_now_ns() noexcept;
uint64_t current_thread_id() noexcept;
void set_note_message(WindowNote*& note, std::string message);
// Copies a final duration's result into its (shared) note.
void publish_result(WindowNote& note, const Duration& d) noexcept;

}  // namespace lapse::detail
