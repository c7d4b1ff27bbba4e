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
    Window(Window&& other) noexcept { take(other); }
    Window& operator=(Window&& other) noexcept
    {
        if (this != &other) {
            release();
            take(other);
        }
        return *this;
    }
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;
    ~Window() { release(); }

    Kind kind() const noexcept { return kind_; }
    // Still to be ended or abandoned (also true for a failed window, whose
    // end reports the failure).
    bool open() const noexcept { return kind_ != Kind::closed; }
    Stream stream() const noexcept { return stream_; }
    // The backend's token; meaningful for Kind::device only.
    const lapse_token& token() const noexcept { return token_; }
    // When Kind::failed: why it could not open.
    lapse_status error_status() const noexcept { return failure_; }
    std::string_view error_message() const noexcept { return detail::note_message(note_); }
    std::string_view name() const noexcept { return detail::note_name(note_); }

private:
    friend class Device;
    friend class detail::DeviceCore;

    void take(Window& o) noexcept
    {
        device_ = std::exchange(o.device_, nullptr);
        note_ = std::exchange(o.note_, nullptr);
        token_ = o.token_;
        system_start_ns_ = o.system_start_ns_;
        stream_ = o.stream_;
        kind_ = std::exchange(o.kind_, Kind::closed);
        failure_ = o.failure_;
    }
    void release() noexcept
    {
        if (kind_ == Kind::device && device_ != nullptr) detail::abandon_token(device_, token_);
        device_ = nullptr;
        kind_ = Kind::closed;
        if (note_ != nullptr) detail::free_note(std::exchange(note_, nullptr));
    }

    detail::DeviceCore* device_ = nullptr;
    detail::WindowNote* note_ = nullptr;
    lapse_token token_{};
    int64_t system_start_ns_ = 0;
    Stream stream_ = 0;
    Kind kind_ = Kind::closed;
    lapse_status failure_ = LAPSE_OK;
};

}  // namespace lapse
