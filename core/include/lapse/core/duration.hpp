// lapse core — durations: what a closed window measured, resolved later.
//
// Closing a window does not wait for the device; the Duration it returns
// resolves later, one at a time (resolve) or in batches
// (Device::resolve). A Duration is a small move-only value; one that is
// destroyed before it resolved abandons its window, so nothing leaks.
//
// "Not measured" (nothing ran in the window, or its stamps were lost) is
// NOT zero: resolve() gives no interval and state() says not_measured.
// A FAILED duration carries the status and message of what went wrong,
// and method none (whichever plugin failed it).
//
// A READY duration over a batching backend may say it is partial:
// work_queued() when work registered in the window was still queued at a
// close without flush (queued_ops() says how many operations), and
// holds_earlier_work() when queued work from before the window ran inside
// it. Neither is the cost of "the work in the window" alone.
//
// Lifetime: a Duration (or Window) that outlives its Device is safe: once
// the device is closed it resolves FAILED with LAPSE_ERROR_CLOSED, and its
// destructor does nothing more (the core keeps a closed device's few
// bookkeeping bytes for the life of the process, so that nothing pending
// ever points at freed memory; see Device::close).
#pragma once

#include <lapse/core/detail/hot_inline.hpp>
#include <lapse/core/detail/token_words.hpp>
#include <lapse/core/detail/window_parts.hpp>
#include <lapse/core/export.hpp>
#include <lapse/status.h>
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
    uint32_t flags = 0;       // LAPSE_DURATION_* (lapse/window.h): see work_queued()
    uint32_t queued_ops = 0;  // with work_queued(): operations left queued at close (saturates at 65535)

    int64_t ns() const noexcept { return end_ns - start_ns; }
    double ms() const noexcept { return static_cast<double>(end_ns - start_ns) / 1e6; }
    // Work registered in the window was still queued at its close (a
    // batching backend, closed without flush): the interval covers what ran.
    bool work_queued() const noexcept { return (flags & LAPSE_DURATION_WORK_QUEUED) != 0; }
    // Queued work from before the window ran inside it.
    bool holds_earlier_work() const noexcept { return (flags & LAPSE_DURATION_HOLDS_EARLIER_WORK) != 0; }
};

// Timeouts for resolve. Negative timeouts poll like zero.
inline constexpr std::chrono::nanoseconds wait_forever = std::chrono::nanoseconds::max();
inline constexpr std::chrono::nanoseconds poll = std::chrono::nanoseconds::zero();

}  // namespace lapse

// The machinery of Duration's words, which packs the enums above.
#include <lapse/core/detail/duration_fields.hpp>

namespace lapse {

class Device;
class Window;

class Duration : private detail::DurationFields {
public:
    // A duration of nothing: not measured.
    Duration() noexcept = default;
    // A move copies every word (one block copy of DurationFields) and
    // resets only what the moved-from duration owns (device_, note_) and
    // its state, so that it reads "not measured". The hot path
    // `durations[i] = dev.profile_end(w)` runs the assignment and the
    // temporary's destructor once per window.
    Duration(Duration&& other) noexcept : detail::DurationFields(other) { other.reset_moved_from(); }
    Duration& operator=(Duration&& other) noexcept
    {
        if (this != &other) {
            if (owns()) [[unlikely]] {
                // Releases what this held after taking over `other`, so
                // that nothing of `other` has to survive the call.
                detail::DeviceCore* device = device_;
                detail::WindowNote* note = note_;
                lapse_token token = token_words();
                assign(other);
                detail::release_parts(device, token, note);
            } else {
                assign(other);
            }
        }
        return *this;
    }
    Duration(const Duration&) = delete;
    Duration& operator=(const Duration&) = delete;
    // One inline test; the calls are out of line. Nothing is reset: the
    // object ends here.
    LAPSE_DETAIL_HOT_INLINE ~Duration()
    {
        if (owns()) [[unlikely]]
            detail::release_parts(device_, token_words(), note_);
    }

    DurationState state() const noexcept { return static_cast<DurationState>(static_cast<uint8_t>(tags_ >> 32)); }
    bool pending() const noexcept { return state() == DurationState::pending; }
    bool ready() const noexcept { return state() == DurationState::ready; }
    bool failed() const noexcept { return state() == DurationState::failed; }
    // How it was measured; none while pending and when not measured.
    TimingMethod method() const noexcept { return static_cast<TimingMethod>(tag_bits(detail::tag_method_shift, 0x7)); }
    // LAPSE_DURATION_* flags of a READY duration (0 otherwise).
    uint32_t flags() const noexcept { return tag_bits(detail::tag_flags_shift, detail::tag_flags_kept); }
    // Work registered in the window was still queued when it closed
    // without flush (a batching backend): the number covers what ran.
    bool work_queued() const noexcept { return (flags() & LAPSE_DURATION_WORK_QUEUED) != 0; }
    // With work_queued(): how many operations were left (saturates at 65535).
    uint32_t queued_ops() const noexcept { return static_cast<uint16_t>(tags_ >> detail::tag_queued_shift); }
    // Queued work from before the window ran inside it.
    bool holds_earlier_work() const noexcept { return (flags() & LAPSE_DURATION_HOLDS_EARLIER_WORK) != 0; }
    Stream stream() const noexcept { return static_cast<Stream>(tags_); }

    // Waits up to `timeout` for the device. The interval when READY;
    // nullopt when still pending, not measured or failed (state() says
    // which). Calling it again after a final state answers the same.
    LAPSE_CORE_API std::optional<Interval> resolve(std::chrono::nanoseconds timeout = wait_forever);

    // The interval if already READY; never waits.
    std::optional<Interval> interval() const noexcept
    {
        if (!ready()) return std::nullopt;
        return Interval{static_cast<int64_t>(first_), static_cast<int64_t>(second_),
                        static_cast<ClockDomain>(tag_bits(detail::tag_domain_shift, 0x7)), method(), flags(),
                        queued_ops()};
    }

    // When FAILED: the status and message of the cause (LAPSE_OK and "" otherwise).
    lapse_status error_status() const noexcept
    {
        return failed() ? static_cast<lapse_status>(static_cast<int32_t>(first_)) : LAPSE_OK;
    }
    std::string_view error_message() const noexcept { return detail::note_message(note_); }
    // The window's name, "" when it had none.
    std::string_view name() const noexcept { return detail::note_name(note_); }

    // Gives the window up without reading it. Cannot fail.
    void abandon() noexcept
    {
        release();
        set_state(DurationState::not_measured);
    }

private:
    friend class Device;
    friend class detail::DeviceCore;

    uint32_t tag_bits(int shift, uint32_t mask) const noexcept { return static_cast<uint32_t>(tags_ >> shift) & mask; }
    // Keeps the stream, replaces the rest of tags_.
    void set_state(DurationState state, TimingMethod method = TimingMethod::none,
                   ClockDomain domain = ClockDomain::none) noexcept
    {
        tags_ = detail::pack_duration_tags(stream(), state, method, domain);
    }
    void set_stream(Stream stream) noexcept { tags_ = (tags_ & ~uint64_t{0xffffffff}) | stream; }
    // While pending (and on the way to a final state, until the plugin has
    // let the window go): the token.
    detail::TokenWords token_words() const noexcept { return {first_, second_}; }
    void set_token(detail::TokenWords token) noexcept
    {
        first_ = token.id;
        second_ = token.tail;
    }
    void set_ready(TimingMethod method, ClockDomain domain, int64_t start_ns, int64_t end_ns, uint32_t flags = 0,
                   uint32_t queued_ops = 0) noexcept
    {
        tags_ = detail::pack_duration_tags(stream(), DurationState::ready, method, domain, flags, queued_ops);
        first_ = static_cast<uint64_t>(start_ns);
        second_ = static_cast<uint64_t>(end_ns);
    }
    // set_ready with every tag but the stream packed already
    // (pack_duration_tags of stream 0): a bulk resolve packs them once.
    void set_ready_packed(uint64_t ready_tags, int64_t start_ns, int64_t end_ns) noexcept
    {
        tags_ = (tags_ & 0xFFFFFFFFu) | ready_tags;
        first_ = static_cast<uint64_t>(start_ns);
        second_ = static_cast<uint64_t>(end_ns);
    }
    // set_ready_packed where the stamps are in first_/second_ already (a
    // strided resolve wrote them over the token).
    void mark_ready_packed(uint64_t ready_tags) noexcept { tags_ = (tags_ & 0xFFFFFFFFu) | ready_tags; }
    void set_failed(lapse_status status) noexcept
    {
        set_state(DurationState::failed);
        first_ = static_cast<uint64_t>(static_cast<int64_t>(status));
        second_ = 0;
    }

    // A pending duration holds its token in the backend (device_ set); a
    // note is heap memory. Nothing else needs releasing.
    // One branch, not two: the or of the two pointers.
    bool owns() const noexcept
    {
        return (reinterpret_cast<std::uintptr_t>(device_) | reinterpret_cast<std::uintptr_t>(note_)) != 0;
    }
    void release() noexcept
    {
        if (owns()) [[unlikely]]
            detail::release_parts(device_, token_words(), note_);
        device_ = nullptr;
        note_ = nullptr;
    }
    void assign(Duration& o) noexcept
    {
        static_cast<detail::DurationFields&>(*this) = o;
        o.reset_moved_from();
    }
    void reset_moved_from() noexcept
    {
        device_ = nullptr;
        note_ = nullptr;
        set_state(DurationState::not_measured);
    }
    // A pending duration of a device window (profile_end's fast path), in
    // one aggregate initialisation.
    Duration(detail::DeviceCore* device, detail::TokenWords token, Stream stream,
             detail::WindowNote* note = nullptr) noexcept
        : detail::DurationFields{device, note, token.id, token.tail,
                                 detail::pack_duration_tags(stream, DurationState::pending)}
    {
    }
};

}  // namespace lapse
