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

#include "backend_open.hpp"

#include <lapse/core/device.hpp>
#include <lapse/core/duration.hpp>
#include <lapse/dispatch.h>

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

namespace lapse::detail {

struct RuntimeState;

// What a window carries besides its token: only allocated for a named
// window (for the session) or one that failed (for its message).
struct WindowNote {
    std::string name;
    uint64_t thread = 0;
    std::string message;
};

class DeviceCore {
public:
    DeviceCore(OpenedBackend opened, DeviceInfo info, std::shared_ptr<RuntimeState> runtime) noexcept;
    ~DeviceCore();

    // Resolves `count` durations of this device with one plugin call (or
    // fails them all with LAPSE_ERROR_CLOSED once the device is closed).
    void resolve(Duration* const* items, std::size_t count, std::chrono::nanoseconds timeout);

    // Closes the plugin's device and keeps this object as a closed shell
    // (see the top of this file). [once, after every other call on the device]
    static void retire(std::unique_ptr<DeviceCore> core) noexcept;
    // Asks the plugin to describe the device again, into `info`.
    void refresh_info();

    // Fills `d` as FAILED, keeping its name.
    static void fail(Duration& d, lapse_status status, std::string message);
    // Adds a final, named duration to the session, if one is attached.
    void record(const Duration& d);

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
    DeviceInfo info;
    std::shared_ptr<RuntimeState> runtime;
    // Set by retire(), after every other call on the device returned (the
    // contract of close), so a plain flag: whatever reads it later on
    // another thread was ordered after close by the caller.
    bool closed = false;

    std::mutex session_mutex;
    std::shared_ptr<Session> session;

private:
    void shut_down() noexcept;

    std::atomic<bool> has_work_error_{false};
    std::mutex work_mutex_;
    std::exception_ptr work_error_;
};

// sdk::window_dispatch_target, with the plugin's get_extension behind a
// catch (the SDK's version is noexcept). plugin_calls.cpp.
lapse_window_dispatch guarded_window_dispatch_target(const lapse_plugin* plugin, lapse_device* device) noexcept;

int64_t monotonic_now_ns() noexcept;
uint64_t current_thread_id() noexcept;
WindowNote* make_note(std::string_view name);
void set_note_message(WindowNote*& note, std::string message);

}  // namespace lapse::detail
