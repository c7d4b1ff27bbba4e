// lapse::Device, Window and Duration: the hot path (one plugin call per
// start and end, no allocation, lock or log for unnamed windows), the
// system-time fallback, run-anyway on open failure, and resolve.
#include "device_core.hpp"

#include "capture/thread_recording.hpp"

#include "plugin_text.hpp"
#include "runtime_state.hpp"

#include <lapse/core/session.hpp>
#include <lapse/sdk/duration.hpp>
#include <lapse/sdk/error.hpp>
#include <lapse/sdk/resolve_compact.hpp>
#include <lapse/sdk/window_dispatch.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <thread>
#include <limits>
#include <vector>

namespace lapse {

namespace detail {

int64_t monotonic_now_ns() noexcept
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

uint64_t current_thread_id() noexcept
{
    static thread_local const uint64_t id = static_cast<uint64_t>(::syscall(SYS_gettid));
    return id;
}

void set_note_message(WindowNote*& note, std::string message)
{
    if (note == nullptr) {
        note = take_note();
    }
    set_message(*note, std::move(message));
}

void abandon_token(DeviceCore* device, lapse_token token) noexcept
{
    if (device == nullptr || device->closed || device->windows.plugin == nullptr) return;
    try {
        device->windows.plugin->profile_abandon(device->windows.device, token);
    } catch (...) {
        // Abandon cannot fail: it runs in destructors and during unwinding,
        // where a throw would terminate the host. The plugin is broken; the
        // window is given up all the same.
    }
}

void free_note(WindowNote* note) noexcept
{
    // A note shared with a capture is freed by whichever side lets go last.
    if (note->claim.load(std::memory_order_relaxed) == note_unshared ||
        note->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
        keep_note(note);
}

void release_parts(DeviceCore* device, lapse_token token, WindowNote* note) noexcept
{
    // A window handed to a capture is the collector's to resolve: dropping
    // its Duration gives up only the caller's share.
    const bool shared = note != nullptr && note->claim.load(std::memory_order_relaxed) != note_unshared;
    if (device != nullptr && !shared) abandon_token(device, token);
    if (note != nullptr) free_note(note);
}

std::string_view note_name(const WindowNote* note) noexcept
{
    return note != nullptr ? name_of(*note) : std::string_view{};
}

std::string_view note_message(const WindowNote* note) noexcept
{
    return note != nullptr ? message_of(*note) : std::string_view{};
}

void work_failed(DeviceCore* device, std::exception_ptr error) noexcept
{
    if (device != nullptr) device->work_failed(std::move(error));
}

DeviceCore::DeviceCore(OpenedBackend opened, DeviceInfo info_, std::shared_ptr<RuntimeState> runtime_) noexcept
    : backend(std::move(opened)), plugin(backend.plugin), device(backend.device),
      windows(guarded_window_dispatch_target(plugin, device)), compact(guarded_resolve_compact(plugin, device)),
      compact_strided(compact != nullptr ? sdk::resolve_compact_strided_of(*compact) : nullptr),
      info(std::move(info_)), runtime(std::move(runtime_))
{
    try {
        info_answers_.push_back(std::make_unique<const DeviceInfo>(info));
        info_now_.store(info_answers_.back().get(), std::memory_order_release);
    } catch (...) {
        // Out of memory for the first answer: current_info() falls back to `info`.
    }
}

DeviceCore::~DeviceCore()
{
    detach_capture();  // its windows go into the capture before the device closes
    close_opened(backend);
}

lapse_status DeviceCore::describe_now(CallError& error)
{
    lapse_device_info raw{};
    raw.struct_size = sizeof(lapse_device_info);
    lapse_status s;
    try {
        s = plugin->describe(device, &raw, &error.e);
    } catch (...) {
        s = plugin_threw(plugin, "describe", error.e);
    }
    if (s < 0) return s;
    const std::string_view name = array_text(raw.name);
    const DeviceInfo* now = info_now_.load(std::memory_order_acquire);
    if (now != nullptr && now->name == name && now->stream_count == raw.stream_count &&
        now->capabilities == raw.capabilities)
        return s;  // unchanged: the answer handed out stays the one
    auto next = std::make_unique<DeviceInfo>(now != nullptr ? *now : info);
    next->name = std::string(name);
    next->stream_count = raw.stream_count;
    next->capabilities = raw.capabilities;
    info_answers_.push_back(std::move(next));
    info_now_.store(info_answers_.back().get(), std::memory_order_release);
    return s;
}

const DeviceInfo& DeviceCore::current_info() noexcept
{
    if (info_may_change.load(std::memory_order_acquire) && plugin != nullptr) {
        try {
            std::lock_guard lock(info_mutex_);
            CallError error;
            (void)describe_now(error);  // a failure keeps the last answer
        } catch (...) {
            // Out of memory for a new answer: the last one stands.
        }
    }
    const DeviceInfo* now = info_now_.load(std::memory_order_acquire);
    return now != nullptr ? *now : info;
}

const DeviceInfo& DeviceCore::refresh_info()
{
    std::lock_guard lock(info_mutex_);
    CallError error;
    const lapse_status s = describe_now(error);
    if (s < 0) throw Error(s, "refresh_info: " + error.describe("describe", s));
    const DeviceInfo* now = info_now_.load(std::memory_order_acquire);
    return now != nullptr ? *now : info;
}

void DeviceCore::work_failed(std::exception_ptr error) noexcept
{
    std::lock_guard lock(work_mutex_);
    if (!work_error_) work_error_ = std::move(error);  // the first one explains the rest
    has_work_error_.store(true, std::memory_order_release);
}

std::exception_ptr DeviceCore::take_work_error() noexcept
{
    if (!has_work_error_.load(std::memory_order_acquire)) return nullptr;
    std::lock_guard lock(work_mutex_);
    has_work_error_.store(false, std::memory_order_relaxed);
    return std::exchange(work_error_, nullptr);
}

void DeviceCore::fail(Duration& d, lapse_status status, std::string message)
{
    d.set_failed(status < 0 ? status : LAPSE_ERROR_INTERNAL);
    set_note_message(d.note_, std::move(message));
}

void DeviceCore::record(const Duration& d)
{
    if (d.note_ == nullptr || !has_name(*d.note_) || d.pending()) return;
    if (!has_session.load(std::memory_order_acquire)) return;
    std::shared_ptr<Session> target;
    {
        std::lock_guard lock(session_mutex);
        target = session;
    }
    if (!target) return;
    WindowRecord r;
    r.name = name_of(*d.note_);
    r.thread = d.note_->thread;
    r.stream = d.stream();
    r.method = d.method();
    r.state = d.state();
    if (std::optional<Interval> interval = d.interval()) {
        r.start_ns = interval->start_ns;
        r.end_ns = interval->end_ns;
        r.domain = interval->domain;
    }
    r.failure = d.error_status();
    r.flags = d.flags();
    r.queued_ops = d.queued_ops();
    target->add(std::move(r));
}

}  // namespace detail

const char* to_string(TimingMethod method) noexcept
{
    switch (method) {
    case TimingMethod::none: return "none";
    case TimingMethod::system: return "system";
    case TimingMethod::device: return "device";
    }
    return "unknown";
}

const char* to_string(DurationState state) noexcept
{
    switch (state) {
    case DurationState::pending: return "pending";
    case DurationState::ready: return "ready";
    case DurationState::not_measured: return "not measured";
    case DurationState::failed: return "failed";
    }
    return "unknown";
}

const char* to_string(ClockDomain domain) noexcept
{
    switch (domain) {
    case ClockDomain::none: return "none";
    case ClockDomain::host_monotonic: return "host";
    case ClockDomain::device: return "device";
    }
    return "unknown";
}

std::optional<Interval> Duration::resolve(std::chrono::nanoseconds timeout)
{
    if (device_ != nullptr) {
        Duration* self = this;
        device_->resolve(&self, 1, timeout);
    }
    return interval();
}

Device::Device() noexcept = default;
Device::Device(std::unique_ptr<detail::DeviceCore> core) noexcept
    // A disabled device keeps no plugin for the inline path, so its windows
    // take the slow path's first test and return (no plugin call at all).
    : core_(std::move(core)), plugin_(core_ && !core_->disabled ? core_->windows.plugin : nullptr),
      device_(core_ ? core_->windows.device : nullptr), disabled_(core_ && core_->disabled)
{
}
Device::Device(Device&& other) noexcept
    : core_(std::move(other.core_)), plugin_(std::exchange(other.plugin_, nullptr)),
      device_(std::exchange(other.device_, nullptr)), disabled_(std::exchange(other.disabled_, false))
{
}
Device& Device::operator=(Device&& other) noexcept
{
    if (this != &other) {
        close();
        core_ = std::move(other.core_);
        plugin_ = std::exchange(other.plugin_, nullptr);
        device_ = std::exchange(other.device_, nullptr);
        disabled_ = std::exchange(other.disabled_, false);
    }
    return *this;
}
Device::~Device() { close(); }

void Device::close() noexcept
{
    plugin_ = nullptr;
    device_ = nullptr;
    disabled_ = false;  // a closed device answers "closed", disabled or not
    detail::DeviceCore::retire(std::move(core_));
}

namespace {
[[noreturn]] void closed(const char* call)
{
    throw Error(LAPSE_ERROR_CLOSED, std::string(call) + ": the device is closed");
}

// The plugin's profile_end of one of its open windows; a throw is the
// plugin's failure, answered as one.
lapse_status end_in_plugin(const lapse_plugin* plugin, lapse_device* device, const lapse_token& token, bool flush,
                           lapse_error& error) noexcept
{
    try {
        return plugin->profile_end(device, token, detail::end_options(flush), &error);
    } catch (...) {
        return detail::plugin_threw(plugin, "profile_end", error);
    }
}
}  // namespace

const DeviceInfo& Device::info() const
{
    if (!core_) closed("info");
    return core_->current_info();
}

const DeviceInfo& Device::refresh_info()
{
    if (!core_) closed("refresh_info");
    return core_->refresh_info();
}

const lapse_plugin& Device::plugin() const
{
    if (!core_) closed("plugin");
    return *core_->plugin;
}

lapse_device* Device::handle() const
{
    if (!core_) closed("handle");
    // The raw handle reaches the plugin's extensions too: info() asks again.
    core_->info_may_change.store(true, std::memory_order_release);
    return core_->device;
}

void Device::submit_raw(Stream stream, lapse_work_fn run, void* user, void (*destroy)(void*))
{
    if (!core_) {
        destroy(user);
        closed("submit");
    }
    detail::CallError error;
    lapse_status s;
    try {
        s = core_->plugin->submit(core_->device, stream, run, user, &error.e);
    } catch (...) {
        // A throw is an error: by submit's contract the plugin never runs
        // `run`, and the host still owns the work.
        s = detail::plugin_threw(core_->plugin, "submit", error.e);
    }
    if (s < 0) {
        destroy(user);  // on an error the plugin never calls it: we still own it
        throw Error(s, error.describe("submit", s));
    }
}

void Device::sync(Stream stream)
{
    if (!core_) closed("sync");
    detail::CallError error;
    lapse_status s;
    try {
        s = core_->plugin->sync(core_->device, stream, &error.e);
    } catch (...) {
        s = detail::plugin_threw(core_->plugin, "sync", error.e);
    }
    if (s < 0) throw Error(s, error.describe("sync", s));
    if (std::exception_ptr work_error = core_->take_work_error()) std::rethrow_exception(work_error);
}

Window Device::profile_start_slow(Stream stream, std::string_view name)
{
    Window w;
    w.stream_ = stream;
    if (core_ && core_->disabled) [[unlikely]]
        return w;  // LAPSE_DISABLE: nothing opens, nothing is recorded
    if (!name.empty()) w.note_ = detail::make_name_note(name);
    detail::DeviceCore* core = core_.get();
    if (core == nullptr) {
        w.kind_ = Window::Kind::failed;
        w.failure_ = LAPSE_ERROR_CLOSED;
        detail::set_note_message(w.note_, "profile_start: the device is closed");
        return w;
    }
    w.device_ = core;
    detail::CallErrorBuffer error;
    lapse_token token{};
    lapse_status s;
    try {
        s = core->windows.plugin->profile_start(core->windows.device, stream, &token, &error.e);
    } catch (...) {
        s = detail::plugin_threw(core->windows.plugin, "profile_start", error.e);
    }
    w.token_ = token;
    if (s == LAPSE_OK)
        w.kind_ = Window::Kind::device;
    else
        finish_start(w, s, error.e);
    return w;
}

Window Device::finish_start(Stream stream, lapse_token token, lapse_status s, const lapse_error& start_error,
                            detail::WindowNote* note)
{
    Window w;
    w.note_ = note;
    w.device_ = core_.get();
    w.token_ = token;
    w.stream_ = stream;
    finish_start(w, s, start_error);
    return w;
}

void Device::finish_start(Window& w, lapse_status s, const lapse_error& start_error)
{
    detail::DeviceCore* core = core_.get();
    auto describe = [](const lapse_error& e, const char* call, lapse_status status) {
        if (!detail::error_text(e).empty()) return std::string(detail::error_text(e));
        return std::string(call) + ": " + lapse_status_name(status);
    };
    if (s == LAPSE_NO_WINDOW) {
        // No clock on this stream: measure in system time. The sync makes
        // the start mean "everything before has finished".
        detail::CallErrorBuffer error;
        lapse_status synced;
        try {
            synced = core->plugin->sync(core->device, w.stream_, &error.e);
        } catch (...) {
            synced = detail::plugin_threw(core->plugin, "sync", error.e);
        }
        if (synced < 0) {
            w.kind_ = Window::Kind::failed;
            w.failure_ = synced;
            detail::set_note_message(w.note_, "profile_start: syncing stream " + std::to_string(w.stream_) +
                                                  " for a system-time window: " + describe(error.e, "sync", synced));
            return;
        }
        w.system_start_ns_ = detail::monotonic_now_ns();
        w.kind_ = Window::Kind::system;
        return;
    }
    w.kind_ = Window::Kind::failed;
    w.failure_ = s < 0 ? s : LAPSE_ERROR_INTERNAL;
    detail::set_note_message(w.note_, s < 0 ? describe(start_error, "profile_start", s)
                                            : "profile_start: plugin '" + std::string(core->windows.plugin->name) +
                                                  "' answered an unexpected status " + std::to_string(s));
}

Duration Device::end_failed(Stream stream, lapse_token token, lapse_status s, const lapse_error& error,
                            detail::WindowNote* note)
{
    Duration d;
    d.note_ = note;  // a named window's: its name is kept
    d.set_stream(stream);
    d.set_token(token);
    fail_end(d, s, error);
    core_->record(d);
    core_->capture_window(d);
    return d;
}

void Device::fail_end(Duration& d, lapse_status s, const lapse_error& error)
{
    detail::DeviceCore* core = core_.get();
    // Never leave a window open behind a failed close.
    detail::abandon_token(core, d.token_words());
    std::string message = !detail::error_text(error).empty() ? std::string(detail::error_text(error))
                                                             : std::string("profile_end: ") + lapse_status_name(s);
    if (s >= 0) message = "profile_end: unexpected status " + std::to_string(s);
    detail::DeviceCore::fail(d, s, std::move(message));
}

Duration Device::end_slow(Window& w, EndOptions options)
{
    detail::DeviceCore* const here = core_.get();
    if (w.kind_ == Window::Kind::device && w.device_ == here && plugin_ != nullptr) [[likely]] {
        // An open window of this open device that did not open on the
        // inline path (one adopt_start made): the close of the inline path,
        // then the capture. The checks below are for every other kind.
        detail::CallErrorBuffer error;
        const lapse_status s = end_in_plugin(plugin_, device_, w.token_, options.flush, error.e);
        w.kind_ = Window::Kind::closed;
        w.device_ = nullptr;
        Duration d;
        d.set_stream(w.stream_);
        d.note_ = std::exchange(w.note_, nullptr);
        d.set_token(w.token_);
        if (s == LAPSE_OK) [[likely]] {
            d.device_ = here;
            d.set_state(DurationState::pending);
        } else {
            fail_end(d, s, error.e);  // abandons the window, never leaves it open
            here->record(d);
        }
        here->capture_window(d);  // recorded when it resolves, by the caller or the collector
        return d;
    }
    Duration d;
    d.set_stream(w.stream_);
    if (core_ && core_->disabled && !w.open()) [[unlikely]]
        return d;  // LAPSE_DISABLE: not measured, no message
    if (!w.open()) {
        detail::DeviceCore::fail(d, LAPSE_ERROR_INVALID_TOKEN,
                                 "profile_end: the window is not open (already ended or abandoned)");
        return d;
    }
    if (w.device_ != nullptr && w.device_->closed) {
        // Its device was closed under it (close() let the window go).
        w.device_ = nullptr;
        w.kind_ = Window::Kind::closed;
        d.note_ = std::exchange(w.note_, nullptr);
        detail::DeviceCore::fail(d, LAPSE_ERROR_CLOSED, "profile_end: the device was closed before the window ended");
        return d;
    }
    if (w.device_ != nullptr && w.device_ != core_.get()) {
        // Leave it open: its own device will abandon it.
        detail::DeviceCore::fail(d, LAPSE_ERROR_INVALID_ARGUMENT, "profile_end: the window belongs to another device");
        return d;
    }
    detail::DeviceCore* core = core_.get();
    d.note_ = std::exchange(w.note_, nullptr);
    Window::Kind kind = std::exchange(w.kind_, Window::Kind::closed);
    w.device_ = nullptr;

    switch (kind) {
    case Window::Kind::device: {
        if (core == nullptr || plugin_ == nullptr) {
            // The device was closed under the window.
            detail::DeviceCore::fail(d, LAPSE_ERROR_CLOSED, "profile_end: the device is closed");
            break;
        }
        // A named window: the same close as the inline fast path.
        detail::CallErrorBuffer error;
        const lapse_status s = end_in_plugin(plugin_, device_, w.token_, options.flush, error.e);
        d.set_token(w.token_);
        if (s == LAPSE_OK) {
            d.device_ = core;
            d.set_state(DurationState::pending);
            core->capture_window(d);  // recorded when it resolves, by the caller or the collector
            return d;
        }
        fail_end(d, s, error.e);  // abandons the window, never leaves it open
        break;
    }
    case Window::Kind::system: {
        // A batching backend runs its queue on sync, so the end sync also
        // covers `flush`; the closing sync is what makes the number mean
        // "the work has finished".
        detail::CallErrorBuffer error;
        lapse_status s;
        try {
            s = core->plugin->sync(core->device, w.stream_, &error.e);
        } catch (...) {
            s = detail::plugin_threw(core->plugin, "sync", error.e);
        }
        int64_t end = detail::monotonic_now_ns();
        if (s < 0) {
            std::string cause = !detail::error_text(error.e).empty() ? std::string(detail::error_text(error.e))
                                                                      : std::string("sync: ") + lapse_status_name(s);
            detail::DeviceCore::fail(d, s, "profile_end: syncing stream " + std::to_string(w.stream_) +
                                               " for a system-time window: " + cause);
            break;
        }
        d.set_ready(TimingMethod::system, ClockDomain::host_monotonic, w.system_start_ns_, end);
        break;
    }
    case Window::Kind::failed: {
        std::string message(detail::note_message(d.note_));
        detail::DeviceCore::fail(d, w.failure_, std::move(message));
        break;
    }
    case Window::Kind::closed: break;
    }
    if (core != nullptr) {
        core->record(d);
        core->capture_window(d);
    }
    return d;
}

void Device::profile_abandon(Window& window) noexcept { window.release(); }

const void* Device::extension(const char* id) const noexcept
{
    if (!core_ || id == nullptr || core_->plugin->get_extension == nullptr) return nullptr;
    try {
        const void* found = core_->plugin->get_extension(core_->device, id);
        // An extension may change the device: info() asks again from now on.
        if (found != nullptr) core_->info_may_change.store(true, std::memory_order_release);
        return found;
    } catch (...) {
        return nullptr;  // "not offered": an extension lookup cannot fail
    }
}

void Device::record_into(std::shared_ptr<Session> session)
{
    if (!core_) closed("record_into");
    if (session) {
        const DeviceInfo& i = core_->current_info();
        session->set_backend(BackendRecord{i.plugin, i.plugin_version, i.name, i.stream_count, i.capabilities});
    }
    std::lock_guard lock(core_->session_mutex);
    core_->has_session.store(session != nullptr, std::memory_order_release);
    core_->session = std::move(session);
}

void Device::record_into(std::shared_ptr<Capture> capture)
{
    if (!core_) closed("record_into");
    core_->attach_capture(std::move(capture));
}

}  // namespace lapse
