// lapse core — an open profiling window (the split API).
//
// Device::profile_start returns a Window in one of three forms:
//   device  the backend opened a window: it holds the token {id, opened_on};
//   system  the backend has no clock for the stream (LAPSE_NO_WINDOW): the
//           core synced the stream and holds the host-clock start;
//   failed  the window could not open: it holds the error, and ending it
//           gives a FAILED Duration (the caller's work still runs).
// A Window is move-only; destroying one that is still open abandons it
// (that is the RAII guard of Device::profile). It must not outlive its
// Device.
#pragma once

#include <lapse/core/duration.hpp>

namespace lapse {

class Window {
public:
    enum class Kind : uint32_t { closed, device, system, failed };

    Window() noexcept = default;
    // Moves copy every field and reset only what the moved-from window
    // owns (device_, note_, kind_, and fast_): the rest is plain data, left
    // as it was.
    Window(Window&& other) noexcept
        : device_(other.device_), note_(other.note_), token_(other.token_),
          system_start_ns_(other.system_start_ns_), stream_(other.stream_), kind_(other.kind_),
          failure_(other.failure_), fast_(other.fast_)
    {
        other.device_ = nullptr;
        other.note_ = nullptr;
        other.kind_ = Kind::closed;
        other.fast_ = false;
    }
    Window& operator=(Window&& other) noexcept
    {
        if (this != &other) {
            release();
            device_ = other.device_;
            note_ = other.note_;
            token_ = other.token_;
            system_start_ns_ = other.system_start_ns_;
            stream_ = other.stream_;
            kind_ = other.kind_;
            failure_ = other.failure_;
            fast_ = other.fast_;
            other.device_ = nullptr;
            other.note_ = nullptr;
            other.kind_ = Kind::closed;
            other.fast_ = false;
        }
        return *this;
    }
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;
    // One inline test; the calls are out of line. Nothing is reset: the
    // object ends here. It tests kind_ alone: a closed window never holds
    // a note (whatever closes a window takes its note or frees it), and an
    // open one that owns nothing costs a call that does nothing.
    LAPSE_DETAIL_HOT_INLINE ~Window()
    {
        if (kind_ != Kind::closed) [[unlikely]]
            detail::release_parts(kind_ == Kind::device ? device_ : nullptr, token_, note_);
    }

    Kind kind() const noexcept { return kind_; }
    // Still to be ended or abandoned (also true for a failed window, whose
    // end reports the failure).
    bool open() const noexcept { return kind_ != Kind::closed; }
    Stream stream() const noexcept { return stream_; }
    // The backend's token; meaningful for Kind::device only.
    lapse_token token() const noexcept { return token_; }
    // When Kind::failed: why it could not open.
    lapse_status error_status() const noexcept { return failure_; }
    std::string_view error_message() const noexcept { return detail::note_message(note_); }
    std::string_view name() const noexcept { return detail::note_name(note_); }

private:
    friend class Device;
    friend class detail::DeviceCore;

    // A device window still holds its token in the backend; a note is
    // heap memory. Nothing else needs releasing.
    bool owns() const noexcept { return kind_ == Kind::device || note_ != nullptr; }
    // Gives up what it owns and leaves the window closed.
    void release() noexcept
    {
        if (owns()) [[unlikely]]
            detail::release_parts(kind_ == Kind::device ? device_ : nullptr, token_, note_);
        device_ = nullptr;
        note_ = nullptr;
        kind_ = Kind::closed;
        fast_ = false;
    }
    // An open device window (profile_start's fast path), named when `note`
    // is not null.
    Window(detail::DeviceCore* device, lapse_token token, Stream stream, detail::WindowNote* note) noexcept
        : device_(device), note_(note), token_(token), stream_(stream), kind_(Kind::device), fast_(true)
    {
    }
    // A window from a slow path, moved in: fast_ is false in a way the
    // compiler can see (see Device::profile_end).
    struct FromSlowPath {};
    Window(Window&& other, FromSlowPath) noexcept : Window(std::move(other)) { fast_ = false; }

    detail::DeviceCore* device_ = nullptr;
    detail::WindowNote* note_ = nullptr;
    detail::TokenWords token_{};
    int64_t system_start_ns_ = 0;
    Stream stream_ = 0;
    Kind kind_ = Kind::closed;
    lapse_status failure_ = LAPSE_OK;
    // Opened by Device::profile_start's inline path (a device window of an
    // open device, named or not). Only such a window takes profile_end's
    // inline path; the compiler then sees, on that path, exactly what
    // profile_start put in.
    bool fast_ = false;
};

}  // namespace lapse
