// lapse core — durations: what a closed window measured, resolved later.
//
// Closing a window does not wait for the device; the Duration it returns
// resolves later, one at a time (resolve) or in batches
// (Device::resolve). A Duration is a small move-only value; one that is
// destroyed before it resolved abandons its window, so nothing leaks.
//
// "Not measured" (nothing ran in the window, or its stamps were lost) is
// NOT zero: resolve() gives no interval and state() says not_measured.
// A FAILED duration carries the status and message of what went wrong.
//
// Lifetime: a Duration must not outlive the Device it came from (as an
// iterator must not outlive its container).
#pragma once

#include <lapse/core/export.hpp>
#include <lapse/status.h>  // before window.h, which uses lapse_status without including it
#include <lapse/window.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace lapse {

using Stream = lapse_stream;

enum class TimingMethod : uint32_t {
    none = LAPSE_TIMING_NONE,     // not measured
    system = LAPSE_TIMING_SYSTEM, // host clock around syncs
    device = LAPSE_TIMING_DEVICE  // the device's own clock
};

enum class DurationState : uint32_t {
    pending = LAPSE_DURATION_PENDING,
    ready = LAPSE_DURATION_READY,
    not_measured = LAPSE_DURATION_NOT_MEASURED,
    failed = LAPSE_DURATION_FAILED
};

enum class ClockDomain : uint32_t {
    none = LAPSE_CLOCK_NONE,
    host_monotonic = LAPSE_CLOCK_HOST_MONOTONIC,
    device = LAPSE_CLOCK_DEVICE
};

LAPSE_CORE_API const char* to_string(TimingMethod method) noexcept;  // "system", "device", "none"
LAPSE_CORE_API const char* to_string(DurationState state) noexcept;  // "pending", "ready", ...
LAPSE_CORE_API const char* to_string(ClockDomain domain) noexcept;   // "host", "device", "none"

// A measured interval: start and end in ns on `domain`'s clock.
struct Interval {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    ClockDomain domain = ClockDomain::none;
    TimingMethod method = TimingMethod::none;

    int64_t ns() const noexcept { return end_ns - start_ns; }
    double ms() const noexcept { return static_cast<double>(end_ns - start_ns) / 1e6; }
};

// Timeouts for resolve. Negative timeouts poll like zero.
inline constexpr std::chrono::nanoseconds wait_forever = std::chrono::nanoseconds::max();
inline constexpr std::chrono::nanoseconds poll = std::chrono::nanoseconds::zero();

namespace detail {
class DeviceCore;
struct WindowNote;  // name, thread and error message: allocated only when needed
LAPSE_CORE_API void abandon_token(DeviceCore* device, lapse_token token) noexcept;
LAPSE_CORE_API void free_note(WindowNote* note) noexcept;
LAPSE_CORE_API std::string_view note_name(const WindowNote* note) noexcept;
LAPSE_CORE_API std::string_view note_message(const WindowNote* note) noexcept;
}  // namespace detail

class Device;
class Window;

class Duration {
public:
    // A duration of nothing: not measured.
    Duration() noexcept = default;
    Duration(Duration&& other) noexcept { take(other); }
    Duration& operator=(Duration&& other) noexcept
    {
        if (this != &other) {
            release();
            take(other);
        }
        return *this;
    }
    Duration(const Duration&) = delete;
    Duration& operator=(const Duration&) = delete;
    ~Duration() { release(); }

    DurationState state() const noexcept { return state_; }
    bool pending() const noexcept { return state_ == DurationState::pending; }
    bool ready() const noexcept { return state_ == DurationState::ready; }
    bool failed() const noexcept { return state_ == DurationState::failed; }
    // How it was measured; none while pending and when not measured.
    TimingMethod method() const noexcept { return method_; }
    Stream stream() const noexcept { return stream_; }

    // Waits up to `timeout` for the device. The interval when READY;
    // nullopt when still pending, not measured or failed (state() says
    // which). Calling it again after a final state answers the same.
    LAPSE_CORE_API std::optional<Interval> resolve(std::chrono::nanoseconds timeout = wait_forever);

    // The interval if already READY; never waits.
    std::optional<Interval> interval() const noexcept
    {
        if (state_ != DurationState::ready) return std::nullopt;
        return Interval{start_ns_, end_ns_, domain_, method_};
    }

    // When FAILED: the status and message of the cause (LAPSE_OK and "" otherwise).
    lapse_status error_status() const noexcept { return failure_; }
    std::string_view error_message() const noexcept { return detail::note_message(note_); }
    // The window's name, "" when it had none.
    std::string_view name() const noexcept { return detail::note_name(note_); }

    // Gives the window up without reading it. Cannot fail.
    void abandon() noexcept
    {
        release();
        state_ = DurationState::not_measured;
        method_ = TimingMethod::none;
    }

private:
    friend class Device;
    friend class detail::DeviceCore;

    void take(Duration& o) noexcept
    {
        device_ = std::exchange(o.device_, nullptr);
        note_ = std::exchange(o.note_, nullptr);
        token_ = o.token_;
        start_ns_ = o.start_ns_;
        end_ns_ = o.end_ns_;
        stream_ = o.stream_;
        state_ = o.state_;
        method_ = o.method_;
        domain_ = o.domain_;
        failure_ = o.failure_;
        o.state_ = DurationState::not_measured;
        o.method_ = TimingMethod::none;
    }
    void release() noexcept
    {
        if (device_ != nullptr) detail::abandon_token(std::exchange(device_, nullptr), token_);
        if (note_ != nullptr) detail::free_note(std::exchange(note_, nullptr));
    }

    detail::DeviceCore* device_ = nullptr;  // set while pending on a device
    detail::WindowNote* note_ = nullptr;
    lapse_token token_{};
    int64_t start_ns_ = 0;
    int64_t end_ns_ = 0;
    Stream stream_ = 0;
    DurationState state_ = DurationState::not_measured;
    TimingMethod method_ = TimingMethod::none;
    ClockDomain domain_ = ClockDomain::none;
    lapse_status failure_ = LAPSE_OK;
};

}  // namespace lapse
