// Device::adopt_start / adopt_end: windows a backend extension wrote into
// the host's own command stream (Vulkan attach mode), turned into Windows
// and Durations that record like every other window.
#include "device_core.hpp"

#include "plugin_text.hpp"

namespace lapse {

namespace {
std::string cause_of(const lapse_error* error, const char* call, lapse_status status)
{
    if (error != nullptr && !detail::error_text(*error).empty()) return std::string(detail::error_text(*error));
    return std::string(call) + ": " + lapse_status_name(status);
}
}  // namespace

Window Device::adopt_start(Stream stream, lapse_status s, lapse_token token, const lapse_error* error,
                           std::string_view name)
{
    Window w;
    w.stream_ = stream;
    detail::DeviceCore* core = core_.get();
    if (core != nullptr && core->disabled) return w;  // LAPSE_DISABLE: nothing is recorded
    if (!name.empty()) w.note_ = detail::make_name_note(name);
    if (core == nullptr) {
        w.kind_ = Window::Kind::failed;
        w.failure_ = LAPSE_ERROR_CLOSED;
        detail::set_note_message(w.note_, "adopt_start: the device is closed");
        return w;
    }
    w.device_ = core;
    w.token_ = token;
    if (s == LAPSE_OK) {
        w.kind_ = Window::Kind::device;
        return w;
    }
    w.kind_ = Window::Kind::failed;
    if (s == LAPSE_NO_WINDOW) {
        // No timestamps on the stream's queue: nothing can measure a
        // window in a command buffer the host submits itself.
        w.failure_ = LAPSE_ERROR_UNSUPPORTED;
        detail::set_note_message(w.note_, "cmd_profile_start: stream " + std::to_string(stream) +
                                              " has no device clock (LAPSE_NO_WINDOW)");
        return w;
    }
    w.failure_ = s < 0 ? s : LAPSE_ERROR_INTERNAL;
    detail::set_note_message(w.note_, s < 0 ? cause_of(error, "cmd_profile_start", s)
                                            : "cmd_profile_start: unexpected status " + std::to_string(s));
    return w;
}

Duration Device::adopt_end(Window& w, lapse_status s, const lapse_error* error)
{
    detail::DeviceCore* core = core_.get();
    if (w.kind_ != Window::Kind::device || w.device_ != core || core == nullptr || core->closed)
        return end_slow(w, EndOptions{});  // failed, closed, foreign: as profile_end ends them
    Duration d;
    d.set_stream(w.stream_);
    d.set_token(w.token_);
    d.note_ = std::exchange(w.note_, nullptr);
    w.kind_ = Window::Kind::closed;
    w.device_ = nullptr;
    w.fast_ = false;
    if (s == LAPSE_OK) {
        d.device_ = core;
        d.set_state(DurationState::pending);
        core->capture_window(d);  // recorded when it resolves, by the caller or the collector
        return d;
    }
    detail::abandon_token(core, d.token_words());  // never leave it open behind a failed end
    detail::DeviceCore::fail(d, s < 0 ? s : LAPSE_ERROR_INTERNAL,
                             s < 0 ? cause_of(error, "cmd_profile_end", s)
                                   : "cmd_profile_end: unexpected status " + std::to_string(s));
    core->record(d);
    core->capture_window(d);
    return d;
}

}  // namespace lapse
