// lapse Python package — what the binding files share (not installed).
//
// The package binds the C++ API directly (pybind11): a Python exception
// thrown in a closure unwinds through Device::profile like a C++ one, so
// the window is abandoned by the same guard; and the objects Python holds
// are the C++ Window and Duration themselves.
//
// The GIL: released wherever lapse may wait (resolve, sync, submit, close)
// and taken again by submitted Python work on the stream's thread.
#pragma once

#include <lapse/core.hpp>

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

namespace lapse::python {

namespace py = pybind11;

// The device as Python holds it. close() stops new work and new windows
// (they answer "closed") and waits for the work submitted; the C++ device
// itself closes when the last Python object that needs it goes (windows and
// durations keep it alive), so a duration still pending when the host calls
// close() can end, resolve or be dropped safely. Closing waits for submitted
// work, which may need the GIL: the GIL is released meanwhile.
struct PyDevice {
    lapse::Device device;
    lapse::Device closed_device;  // never opened: answers "the device is closed"
    bool closed = false;          // read and written with the GIL held

    explicit PyDevice(lapse::Device d) : device(std::move(d)) {}
    PyDevice(const PyDevice&) = delete;
    PyDevice& operator=(const PyDevice&) = delete;
    ~PyDevice()
    {
        py::gil_scoped_release released;
        device.close();
    }
    // Where new work and new windows go.
    lapse::Device& live() noexcept { return closed ? closed_device : device; }
    void close()
    {
        if (closed) return;
        closed = true;
        py::gil_scoped_release released;
        try {
            device.sync();
        } catch (...) {
            // What the work raised is dropped with the device: close cannot fail.
        }
    }
};

// Durations kept in one C++ array: windows ended into it, resolved in bulk,
// with no Python object per window.
struct DurationList {
    // Declared first, destroyed last: the items release their windows while
    // their devices are still alive.
    std::vector<py::object> devices;  // every device an item came from
    std::vector<lapse::Duration> items;

    void add(const py::object& device, lapse::Duration d)
    {
        bool known = false;
        for (const py::object& o : devices) known = known || o.is(device);
        if (!known) devices.push_back(device);
        items.push_back(std::move(d));
    }
    void clear()
    {
        items.clear();
        devices.clear();
    }
};

// Raises lapse.Error(status, message).
[[noreturn]] void raise_error(lapse_status status, const std::string& message);

// Seconds (None: wait as long as it takes) -> a resolve timeout.
std::chrono::nanoseconds to_timeout(const py::object& seconds);

void bind_errors(py::module_& m);
void bind_durations(py::module_& m);
void bind_device(py::module_& m);
// Capture, CaptureReader, CapturedWindow, CaptureStats.
void bind_capture(py::module_& m);
// A lapse.Capture, a path (a capture opened with the defaults) or None (null).
std::shared_ptr<lapse::Capture> capture_from(const py::object& target);
// Device.window() and its context manager (after bind_device and bind_durations).
void bind_window_scope(py::module_& m);

// The bulk resolve result: NumPy arrays, one entry per duration.
py::object resolve_to_arrays(lapse::Device& device, std::vector<lapse::Duration*>& durations,
                             std::chrono::nanoseconds timeout);

}  // namespace lapse::python
