// lapse Python package — durations: one at a time, or in bulk into NumPy.
#include "binding.hpp"

#include <pybind11/numpy.h>

#include <cmath>
#include <limits>

namespace lapse::python {

namespace {

// A FAILED duration raises; "not measured" and "still pending" are None.
py::object interval_or_none(const lapse::Duration& d)
{
    if (d.failed()) raise_error(d.error_status(), std::string(d.error_message()));
    if (auto iv = d.interval()) return py::cast(*iv);
    return py::none();
}

// Bulk results as arrays (no Python object per window).
struct Resolution {
    py::array_t<int64_t> start_ns, end_ns;
    py::array_t<uint8_t> state, method;
    py::array_t<bool> ready;
    py::array_t<double> ns, ms;  // NaN where there is no number
    bool final = false;
};

}  // namespace

py::object resolve_to_arrays(lapse::Device& device, std::vector<lapse::Duration*>& durations,
                             std::chrono::nanoseconds timeout)
{
    const std::size_t n = durations.size();
    // Device::resolve takes one array: move the durations into it and back
    // (a block copy each), with the GIL released while the device works.
    std::vector<lapse::Duration> batch;
    batch.reserve(n);
    for (lapse::Duration* d : durations) batch.push_back(std::move(*d));
    bool final = false;
    {
        py::gil_scoped_release released;
        try {
            final = device.resolve(batch, timeout);
        } catch (...) {
            for (std::size_t i = 0; i < n; ++i) *durations[i] = std::move(batch[i]);
            throw;
        }
    }
    for (std::size_t i = 0; i < n; ++i) *durations[i] = std::move(batch[i]);

    Resolution r;
    r.final = final;
    r.start_ns = py::array_t<int64_t>(n);
    r.end_ns = py::array_t<int64_t>(n);
    r.state = py::array_t<uint8_t>(n);
    r.method = py::array_t<uint8_t>(n);
    r.ready = py::array_t<bool>(n);
    r.ns = py::array_t<double>(n);
    r.ms = py::array_t<double>(n);
    auto start = r.start_ns.mutable_unchecked<1>();
    auto end = r.end_ns.mutable_unchecked<1>();
    auto state = r.state.mutable_unchecked<1>();
    auto method = r.method.mutable_unchecked<1>();
    auto ready = r.ready.mutable_unchecked<1>();
    auto ns = r.ns.mutable_unchecked<1>();
    auto ms = r.ms.mutable_unchecked<1>();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t i = 0; i < n; ++i) {
        const lapse::Duration& d = *durations[i];
        const auto iv = d.interval();
        const auto at = static_cast<py::ssize_t>(i);
        state(at) = static_cast<uint8_t>(d.state());
        method(at) = static_cast<uint8_t>(d.method());
        ready(at) = iv.has_value();
        start(at) = iv ? iv->start_ns : 0;
        end(at) = iv ? iv->end_ns : 0;
        ns(at) = iv ? static_cast<double>(iv->ns()) : nan;
        ms(at) = iv ? iv->ms() : nan;
    }
    return py::cast(std::move(r));
}

void bind_durations(py::module_& m)
{
    py::class_<lapse::Interval>(m, "Interval", "A measured interval (ns on its clock domain).")
        .def_readonly("start_ns", &lapse::Interval::start_ns)
        .def_readonly("end_ns", &lapse::Interval::end_ns)
        .def_property_readonly("ns", &lapse::Interval::ns)
        .def_property_readonly("ms", &lapse::Interval::ms)
        .def_property_readonly("method", [](const lapse::Interval& iv) { return lapse::to_string(iv.method); })
        .def_property_readonly("domain", [](const lapse::Interval& iv) { return lapse::to_string(iv.domain); })
        .def("__repr__", [](const lapse::Interval& iv) {
            return "<lapse.Interval " + std::to_string(iv.ns()) + " ns (" + lapse::to_string(iv.method) + ")>";
        });

    py::class_<lapse::Duration>(m, "Duration",
                                "What a closed window measured. resolve() waits and answers an Interval, or None "
                                "when not measured (never 0.0); a failed duration raises lapse.Error.")
        .def(
            "resolve",
            [](lapse::Duration& d, const py::object& timeout) {
                std::chrono::nanoseconds t = to_timeout(timeout);
                {
                    py::gil_scoped_release released;
                    d.resolve(t);
                }
                return interval_or_none(d);
            },
            py::arg("timeout") = py::none(), "Waits up to `timeout` seconds (None: as long as it takes).")
        .def("abandon", &lapse::Duration::abandon)
        .def_property_readonly("state", [](const lapse::Duration& d) { return lapse::to_string(d.state()); })
        .def_property_readonly("method", [](const lapse::Duration& d) { return lapse::to_string(d.method()); })
        .def_property_readonly("pending", &lapse::Duration::pending)
        .def_property_readonly("ready", &lapse::Duration::ready)
        .def_property_readonly("failed", &lapse::Duration::failed)
        .def_property_readonly("stream", &lapse::Duration::stream)
        .def_property_readonly("name", [](const lapse::Duration& d) { return std::string(d.name()); })
        .def_property_readonly("error_status", [](const lapse::Duration& d) { return int(d.error_status()); })
        .def_property_readonly("error_message",
                               [](const lapse::Duration& d) { return std::string(d.error_message()); })
        .def("__repr__", [](const lapse::Duration& d) {
            std::string r = "<lapse.Duration " + std::string(lapse::to_string(d.state()));
            if (auto iv = d.interval()) r += " " + std::to_string(iv->ns()) + " ns (" + lapse::to_string(iv->method) + ")";
            return r + ">";
        });

    py::class_<DurationList>(m, "Durations",
                             "Durations kept in one C++ array: end windows into it (profile_end(w, into=...), "
                             "window(..., into=...)) and resolve them in bulk, with no Python object per window.")
        .def(py::init<>())
        .def("__len__", [](const DurationList& l) { return l.items.size(); })
        .def("clear", &DurationList::clear)
        .def("reserve", [](DurationList& l, std::size_t n) { l.items.reserve(n); });

    py::class_<Resolution>(m, "Resolution",
                           "Bulk resolve results: NumPy arrays, one entry per duration. `ready` says where "
                           "start_ns/end_ns hold a number; ns and ms are NaN where they do not.")
        .def_readonly("start_ns", &Resolution::start_ns)
        .def_readonly("end_ns", &Resolution::end_ns)
        .def_readonly("state", &Resolution::state)
        .def_readonly("method", &Resolution::method)
        .def_readonly("ready", &Resolution::ready)
        .def_readonly("ns", &Resolution::ns)
        .def_readonly("ms", &Resolution::ms)
        .def_readonly("final", &Resolution::final, "True when no duration is still pending.");

    m.attr("STATE_PENDING") = py::int_(int(LAPSE_DURATION_PENDING));
    m.attr("STATE_READY") = py::int_(int(LAPSE_DURATION_READY));
    m.attr("STATE_NOT_MEASURED") = py::int_(int(LAPSE_DURATION_NOT_MEASURED));
    m.attr("STATE_FAILED") = py::int_(int(LAPSE_DURATION_FAILED));
    m.attr("METHOD_NONE") = py::int_(int(LAPSE_TIMING_NONE));
    m.attr("METHOD_SYSTEM") = py::int_(int(LAPSE_TIMING_SYSTEM));
    m.attr("METHOD_DEVICE") = py::int_(int(LAPSE_TIMING_DEVICE));
}

}  // namespace lapse::python
