// lapse core — a scoped window that records: the habit of Tracy's
// ZoneScoped.
//
//   void frame(lapse::Device& dev) {
//       LAPSE_SCOPE(dev, 0, "frame");    // opens here, closes at the end of the scope
//       ...
//   }
//
// The guard opens a named window and ends it when the scope exits
// normally; a device recording into a capture records it (the Duration is
// not needed: the capture resolves it). Left by an exception, the guard
// abandons the window instead (its work did not finish as measured).
// duration() ends the window early and returns its Duration, for a caller
// who wants the number.
//
// A name fixed at the call site (a string literal) is cheaper interned
// once, as Tracy's ZoneScopedN does with its static source location:
//
//   LAPSE_SCOPE_STATIC(dev, 0, "frame");   // a lapse::Name made once
//
// Both record the same name (lapse/core/name.hpp says what a Name costs).
#pragma once

#include <lapse/core/device.hpp>

#include <exception>
#include <string_view>

namespace lapse {

class ScopedWindow {
public:
    ScopedWindow(Device& device, Stream stream, std::string_view name, EndOptions options = {})
        : device_(&device), window_(device.profile_start(stream, name)), options_(options),
          exceptions_(std::uncaught_exceptions())
    {
    }
    ScopedWindow(Device& device, Stream stream, const Name& name, EndOptions options = {})
        : device_(&device), window_(device.profile_start(stream, name)), options_(options),
          exceptions_(std::uncaught_exceptions())
    {
    }
    ScopedWindow(const ScopedWindow&) = delete;
    ScopedWindow& operator=(const ScopedWindow&) = delete;
    ~ScopedWindow()
    {
        if (!window_.open()) return;
        if (std::uncaught_exceptions() > exceptions_)
            device_->profile_abandon(window_);  // unwinding: abandoned, not recorded
        else
            device_->profile_end(window_, options_);  // recorded; the Duration is not needed
    }

    // Ends the window now; later calls return a not-measured Duration.
    Duration duration() { return window_.open() ? device_->profile_end(window_, options_) : Duration{}; }
    const Window& window() const noexcept { return window_; }

private:
    Device* device_;
    Window window_;
    EndOptions options_;
    int exceptions_;
};

}  // namespace lapse

#define LAPSE_DETAIL_CONCAT2(a, b) a##b
#define LAPSE_DETAIL_CONCAT(a, b) LAPSE_DETAIL_CONCAT2(a, b)
// A ScopedWindow named `name` on `stream` of `device`, to the end of the scope.
#define LAPSE_SCOPE(device, stream, name) \
    ::lapse::ScopedWindow LAPSE_DETAIL_CONCAT(lapse_scope_, __LINE__)((device), (stream), (name))
// The same for a string literal `literal` (anything else does not compile),
// interned once per call site.
#define LAPSE_SCOPE_STATIC(device, stream, literal)                                                    \
    static const ::lapse::Name LAPSE_DETAIL_CONCAT(lapse_scope_name_, __LINE__)("" literal "");       \
    ::lapse::ScopedWindow LAPSE_DETAIL_CONCAT(lapse_scope_, __LINE__)((device), (stream),                \
                                                                      LAPSE_DETAIL_CONCAT(lapse_scope_name_, __LINE__))
