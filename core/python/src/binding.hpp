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

#include <string>
#include <vector>

namespace lapse::python {

namespace py = pybind11;

// The device as Python holds it; closing waits for submitted work, which
// may need the GIL, so the GIL is released while it closes.
struct PyDevice {
    lapse::Device device;

    explicit PyDevice(lapse::Device d) : device(std::move(d)) {}
    PyDevice(const PyDevice&) = delete;
    PyDevice& operator=(const PyDevice&) = delete;
    ~PyDevice() { close(); }
    void close()
    {
        if (!device) return;
        py::gil_scoped_release released;
        device.close();
    }
};

// Durations kept in one C++ array: windows ended into it, resolved in bulk,
// with no Python object per window.
struct DurationList {
    std::vector<lapse::Duration> items;
};

// Raises lapse.Error(status, message).
[[noreturn]] void raise_error(lapse_status status, const std::string& message);

// Seconds (None: wait as long as it takes) -> a resolve timeout.
std::chrono::nanoseconds to_timeout(const py::object& seconds);

void bind_errors(py::module_& m);
void bind_durations(py::module_& m);
void bind_device(py::module_& m);

// The bulk resolve result: NumPy arrays, one entry per duration.
py::object resolve_to_arrays(lapse::Device& device, std::vector<lapse::Duration*>& durations,
                             std::chrono::nanoseconds timeout);

}  // namespace lapse::python
