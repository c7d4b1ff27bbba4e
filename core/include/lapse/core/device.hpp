// lapse core — an open device: submit work, open and close windows, resolve.
//
//   lapse::Device dev = runtime.open(lapse::Config::builtin());
//   lapse::Duration d = dev.profile(0, [&] { dev.submit(0, [](void*) { work(); }); },
//                                   {.name = "work"});
//   if (auto iv = d.resolve()) std::printf("%.3f ms (%s)\n", iv->ms(), lapse::to_string(iv->method));
//
// profile() is the closure-bracketed helper of the design:
//   * the backend opens a window        -> DEVICE timing, resolves later;
//   * the backend answers "no window"   -> the core syncs the stream, reads
//     the host clock, runs the closure, syncs, reads the clock: SYSTEM;
//   * the window cannot open            -> the closure STILL runs and the
//     Duration is FAILED with the error (only the measurement is lost);
//   * the closure throws                -> the window is abandoned (RAII)
//     and the exception propagates.
// The split API (profile_start / profile_end / profile_abandon) does the
// same, one call at a time, and may end a window on another thread.
//
// Hot path: profile_start / profile_end make one plugin call each, do not
// allocate, lock or log (a named window takes one call more at each end:
// its note, reused once the thread is warm, and its hand-over to the
// session or capture). Nothing holds a lock while a closure runs.
//
// Thread safety: every member may be called from any thread concurrently,
// except close() and destruction, which must come after every other call.
#pragma once

#include <lapse/core/detail/device_calls.hpp>
#include <lapse/core/duration.hpp>
#include <lapse/core/error.hpp>
#include <lapse/core/export.hpp>
#include <lapse/core/name.hpp>
#include <lapse/core/window.hpp>
#include <lapse/plugin.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace lapse {

class Capture;
class Session;

// Every stream of the device (for sync).
inline constexpr Stream all_streams = LAPSE_ALL_STREAMS;

struct DeviceInfo {
    std::string plugin;          // descriptor name of the top plugin, e.g. "forward"
    std::string plugin_version;  // its version
    std::string plugin_file;     // the file it was loaded from
    std::string name;            // the device's name from describe
    uint32_t stream_count = 0;
    uint64_t capabilities = 0;   // LAPSE_CAP_* as opened

    bool has(uint64_t capability) const noexcept { return (capabilities & capability) == capability; }
};

struct EndOptions {
    // Make a batching backend run what it still holds queued before the
    // window closes, so the window holds all the work registered in it.
    bool flush = false;
};

struct ProfileOptions {
    std::string_view name{};  // recorded into the session when not empty
    bool flush = false;       // as EndOptions::flush
};

class LAPSE_CORE_API Device {
public:
    Device() noexcept;
    Device(Device&&) noexcept;
    Device& operator=(Device&&) noexcept;
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;
    // Closes the device (see close()).
    ~Device();

    explicit operator bool() const noexcept { return core_ != nullptr; }
    // The device as the backend describes it now. An extension can change
    // it (Vulkan's attach adds a stream): once extension() or handle() has
    // been handed out, info() asks the backend again on each call (never
    // on a window's path); before, it is what open saw, at no cost. The
    // reference stays valid, and reads the same, until the device closes:
    // a newer answer is a new object. [thread-safe]
    const DeviceInfo& info() const;
    // Asks the backend now (describe) and returns its answer; throws Error
    // when the backend fails to describe itself (info() keeps the last
    // answer then). [thread-safe]
    const DeviceInfo& refresh_info();

    // Hands work to `stream`: `work(void* native)` or `work()`, run exactly
    // once in stream order. `native` is the stream's native context (the
    // recording VkCommandBuffer, the CUstream, nullptr on a CPU worker).
    // Throws Error when the backend refuses the work. An exception thrown
    // by `work` is kept and rethrown by the next sync().
    template <class F>
    void submit(Stream stream, F&& work)
    {
        using Box = detail::WorkBox<std::decay_t<F>>;
        auto* box = new Box{core_.get(), std::forward<F>(work)};
        submit_raw(stream, &Box::run, box, &Box::destroy);
    }

    // Waits until the work submitted to `stream` (or all streams) before
    // the call has finished. Throws Error on a device error, or rethrows
    // the first exception a submitted work function threw since the last
    // sync.
    void sync(Stream stream = all_streams);

    // Opens a window on `stream` (see Window for its three forms). Never
    // throws for a window that cannot open: the Window carries the error.
    // Inline: an unnamed window costs one plugin call and no more.
    //
    // The fast path is shaped for the compiler to keep the caller's Window
    // and Duration in registers (prvalue returns, slow paths out of line on
    // a copy, tokens and durations as 8-byte words): docs/performance.md,
    // "Measurements behind the public headers", says why and what it saves.
    LAPSE_DETAIL_HOT_INLINE Window profile_start(Stream stream, std::string_view name = {})
    {
        return start_inline<false>(stream, name, nullptr);
    }
    // The same, named by a Name (lapse/core/name.hpp): no text is copied.
    LAPSE_DETAIL_HOT_INLINE Window profile_start(Stream stream, const Name& name)
    {
        return start_inline<true>(stream, {}, name.entry());
    }
    // Closes `window` (on its own stream, from any thread) and returns its
    // Duration: pending for a device window, READY/SYSTEM for a system-time
    // window, FAILED for a window that could not open or close (the window
    // is then released, never left open). `window` is closed afterwards.
    LAPSE_DETAIL_HOT_INLINE Duration profile_end(Window& window, EndOptions options = {})
    {
        detail::DeviceCore* core = core_.get();
        // Only a window from profile_start's inline path ends inline; any
        // other one started out of line and ends there too, so the two
        // inline halves meet without a merge of unknown windows.
        // A device window always has device_ set, so a closed device (core_
        // null) never matches it and needs no test of its own here.
        if (!window.fast_ || window.kind_ != Window::Kind::device || window.device_ != core) [[unlikely]] {
            if (disabled_ && !window.open()) {
                // LAPSE_DISABLE: a window that never opened, not measured.
                Duration d;
                d.set_stream(window.stream_);
                return d;
            }
            // Named, system time, failed, closed, foreign: on a copy (see above).
            Window w(std::move(window));
            Duration d = end_slow(w, options);
            window = std::move(w);
            return d;
        }
        detail::CallErrorBuffer error;
        lapse_status status;
        try {
            status = plugin_->profile_end(device_, window.token_, detail::end_options(options.flush), &error.e);
        } catch (...) {
            status = detail::plugin_threw(plugin_, "profile_end", error.e);
        }
        window.kind_ = Window::Kind::closed;
        window.device_ = nullptr;
        window.fast_ = false;
        detail::WindowNote* note = window.note_;
        window.note_ = nullptr;
        if (status != LAPSE_OK) [[unlikely]] {
            // Abandons the window, never leaves it open.
            Duration d = end_failed(window.stream_, window.token_, status, error.e, note);
            return d;
        }
        if (note != nullptr) [[unlikely]] {
            // Named: recorded when it resolves, by the caller or the collector.
            Duration d(core, window.token_, window.stream_, note);
            detail::capture_pending(core, note, window.token_, window.stream_);
            return d;
        }
        return Duration(core_.get(), window.token_, window.stream_);
    }
    // Gives the window up. Cannot fail.
    void profile_abandon(Window& window) noexcept;

    // Windows a backend extension writes where the host records its own
    // work (Vulkan attach mode: cmd_profile_start / cmd_profile_end into
    // the host's VkCommandBuffer; lapse/core/vulkan_attach.hpp wraps them).
    // The wrapper makes the extension's call and hands its answer here, so
    // the window becomes a Window and then a Duration like any other: named
    // ones are recorded into the session and capture, dropped Durations
    // included. adopt_start: `status` and `token` as the extension's start
    // returned them (LAPSE_NO_WINDOW, no clock on the stream, gives a
    // window that ends not measured, with the cause). adopt_end: the
    // extension's end of `window` returned `status`; a window that is not
    // an open device window of this device ends as profile_end would end it
    // (failed, closed, foreign), without the extension's answer.
    Window adopt_start(Stream stream, lapse_status status, lapse_token token, const lapse_error* error,
                       std::string_view name = {});
    Duration adopt_end(Window& window, lapse_status status, const lapse_error* error);

    // The closure-bracketed helper (see the top of this file).
    template <class F>
    Duration profile(Stream stream, F&& closure, ProfileOptions options = {})
    {
        Window window = profile_start(stream, options.name);
        std::forward<F>(closure)();  // a throw abandons `window` in its destructor
        return profile_end(window, EndOptions{options.flush});
    }
    // The same, named by a Name (lapse/core/name.hpp): no text is copied.
    template <class F>
    Duration profile(Stream stream, const Name& name, F&& closure, EndOptions options = {})
    {
        Window window = profile_start(stream, name);
        std::forward<F>(closure)();
        return profile_end(window, options);
    }

    // Resolves many durations, waiting up to `timeout` in all: this
    // device's with one plugin call per 128 of them (the compact resolve,
    // lapse/resolve_compact.h, where the device offers it, and the full
    // one for what that leaves), another device's through that device.
    // Durations already final are left as they are.
    // True when every duration is final (ready, not measured or failed);
    // false when some are still pending.
    bool resolve(std::span<Duration> durations, std::chrono::nanoseconds timeout = wait_forever);

    // A backend extension by id ("lapse.vulkan.commands/1"), or nullptr.
    const void* extension(const char* id) const noexcept;

    // Named windows are recorded into `session` when their durations
    // resolve (null stops recording). The session also receives this
    // device's backend description.
    void record_into(std::shared_ptr<Session> session);
    // Every named window this device closes from now on is recorded into
    // `capture` exactly once, whether its Duration is kept, resolved or
    // dropped (lapse/core/capture.hpp); null stops. The previous capture
    // first receives this device's windows still pending. Closing the
    // device drains its pending windows into the capture.
    void record_into(std::shared_ptr<Capture> capture);

    // The raw C ABI handles, for tools and tests that drive the plugin
    // directly (lapse bench, the conformance suite's misuse cases).
    const lapse_plugin& plugin() const;
    lapse_device* handle() const;

    // Closes the device: the backend runs the submitted work, abandons the
    // windows still open (and logs how many). Idempotent; cannot fail.
    // A Window or Duration of this device that is still pending afterwards
    // (one in a vector declared before the Device, or resolved after
    // close()) is safe: it resolves FAILED with LAPSE_ERROR_CLOSED. For
    // that the core keeps the closed device's bookkeeping (a few hundred
    // bytes, the plugin and its file already released) for the life of the
    // process: counting the Durations that point at it would cost every
    // window an atomic operation on the hot path.
    void close() noexcept;

private:
    friend class Runtime;
    explicit Device(std::unique_ptr<detail::DeviceCore> core) noexcept;
    void submit_raw(Stream stream, lapse_work_fn run, void* user, void (*destroy)(void*));
    // profile_start's body: a window named by `text` (copied into its note)
    // or, `Interned`, by `interned` (a Name's entry); unnamed when empty.
    // A template, so that the string form compiles to what it was before
    // Names: the disabled window's few instructions are sensitive to it.
    template <bool Interned>
    LAPSE_DETAIL_HOT_INLINE Window start_inline(Stream stream, std::string_view text,
                                                const detail::InternedName* interned)
    {
        if (plugin_ == nullptr) [[unlikely]] {
            if (disabled_) {
                // LAPSE_DISABLE: nothing opens, nothing is recorded, no call.
                Window w;
                w.stream_ = stream;
                return w;
            }
            // The device is closed.
            Window w = profile_start_slow(stream, Interned ? detail::interned_text(interned) : text);
            return Window(std::move(w), Window::FromSlowPath{});
        }
        // A named window opens inline too: its name goes into a note (one
        // call), carried by the Window to the capture at its end.
        detail::WindowNote* note = nullptr;
        if constexpr (Interned) {
            if (interned != nullptr) [[unlikely]]
                note = detail::make_interned_note(interned);
        } else {
            if (!text.empty()) [[unlikely]]
                note = detail::make_name_note(text);
        }
        detail::CallErrorBuffer error;
        lapse_token token{};
        lapse_status status;
        // A throw costs nothing until it happens (zero-cost unwinding); the
        // handler turns it into this plugin's failure, so the window reads
        // FAILED and profile()'s closure still runs.
        try {
            status = plugin_->profile_start(device_, stream, &token, &error.e);
        } catch (...) {
            status = detail::plugin_threw(plugin_, "profile_start", error.e);
        }
        if (status != LAPSE_OK) [[unlikely]] {
            Window w = finish_start(stream, token, status, error.e, note);  // no window (system time) or a failure
            return Window(std::move(w), Window::FromSlowPath{});
        }
        return Window(core_.get(), token, stream, note);
    }
    // The slow paths, out of line (system-time, failed, closed, foreign or
    // adopted windows; a named window opens and ends inline).
    Window profile_start_slow(Stream stream, std::string_view name);
    Window finish_start(Stream stream, lapse_token token, lapse_status status, const lapse_error& error,
                        detail::WindowNote* note);
    void finish_start(Window& w, lapse_status status, const lapse_error& error);
    Duration end_slow(Window& w, EndOptions options);
    // resolve() for spans its direct route does not take (windows of other
    // devices, shared with a capture, a closed device).
    bool resolve_general(std::span<Duration> durations, std::chrono::nanoseconds timeout);
    Duration end_failed(Stream stream, lapse_token token, lapse_status status, const lapse_error& error,
                        detail::WindowNote* note);
    void fail_end(Duration& d, lapse_status status, const lapse_error& error);

    std::unique_ptr<detail::DeviceCore> core_;
    // Copies of the core's plugin and device for the inline hot path (null
    // once closed).
    const lapse_plugin* plugin_ = nullptr;
    lapse_device* device_ = nullptr;
    // LAPSE_DISABLE: every window is a no-op, answered inline (plugin_ is
    // null too, so the fast path's first test leads here).
    bool disabled_ = false;
};

}  // namespace lapse
