// lapse Python package — captures: every named window of a run into a
// file (lapse/core/capture.hpp), and reading one back.
//
//   cap = rt.record_into("run.lapse-capture")   # or lapse.Capture(path, ...)
//   with dev.window("step", stream=0): ...      # recorded: the Duration may be dropped
//   cap.close()                                 # the end chunk: a complete file
//   names = [w.name for w in lapse.CaptureReader("run.lapse-capture")]
#include "binding.hpp"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace lapse::python {

namespace {

// A CapturedWindow with its strings copied: the reader's views end at its
// next call, a Python object lives as long as Python holds it.
struct PyCapturedWindow {
    std::string name;
    uint32_t source = 0;
    lapse::Stream stream = 0;
    uint64_t thread = 0;
    uint64_t close_thread = 0;
    std::string state;
    std::string method;
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    int failure = LAPSE_OK;
    std::string cause;
    uint64_t flags = 0;
    bool ready = false;
};

lapse::CapturePolicy policy_of(const std::string& name)
{
    if (name == "drop") return lapse::CapturePolicy::drop;
    if (name == "block") return lapse::CapturePolicy::block;
    throw lapse::Error(LAPSE_ERROR_INVALID_ARGUMENT,
                       "Capture: policy '" + name + "' is neither \"drop\" nor \"block\"");
}

std::shared_ptr<lapse::Capture> open_capture(const std::filesystem::path& path, const py::object& budget,
                                             const std::string& policy, const py::object& flush_ms)
{
    lapse::CaptureOptions o;
    o.path = path;
    if (!budget.is_none()) o.budget_bytes = budget.cast<uint64_t>();
    o.policy = policy_of(policy);
    if (!flush_ms.is_none()) o.flush_interval = std::chrono::milliseconds(flush_ms.cast<int64_t>());
    return lapse::Capture::open(std::move(o));  // its errors name the file
}

// A Capture, a path (opened with the defaults) or None.
std::shared_ptr<lapse::Capture> capture_arg(const py::object& target)
{
    if (target.is_none()) return nullptr;
    if (py::isinstance<lapse::Capture>(target)) return target.cast<std::shared_ptr<lapse::Capture>>();
    return open_capture(target.cast<std::filesystem::path>(), py::none(), "drop", py::none());
}

}  // namespace

void bind_capture(py::module_& m)
{
    py::class_<lapse::CaptureStats>(m, "CaptureStats", "Counters since the capture opened.")
        .def_readonly("recorded", &lapse::CaptureStats::recorded)
        .def_readonly("dropped", &lapse::CaptureStats::dropped)
        .def_readonly("queued", &lapse::CaptureStats::queued)
        .def_readonly("bytes_written", &lapse::CaptureStats::bytes_written)
        .def_readonly("chunks", &lapse::CaptureStats::chunks)
        .def_readonly("held_bytes", &lapse::CaptureStats::held_bytes)
        .def_readonly("peak_held_bytes", &lapse::CaptureStats::peak_held_bytes)
        .def_readonly("budget_bytes", &lapse::CaptureStats::budget_bytes);

    py::class_<lapse::Capture, std::shared_ptr<lapse::Capture>>(
        m, "Capture",
        "Every named window of the devices recording into it, streamed to a file "
        "(Runtime.record_into, Device.record_into, LAPSE_CAPTURE).")
        .def(py::init(&open_capture), py::arg("path"), py::arg("budget") = py::none(),
             py::arg("policy") = "drop", py::arg("flush_ms") = py::none(),
             "Opens (truncates) the file. budget: bytes of windows held at most (default 4 MiB); "
             "policy: \"drop\" (count what does not fit) or \"block\" (the closing thread waits).")
        .def_property_readonly("path", &lapse::Capture::path)
        .def_property_readonly("stats", &lapse::Capture::stats)
        .def(
            "flush",
            [](lapse::Capture& c) {
                py::gil_scoped_release released;  // pending windows may wait on Python work
                c.flush();
            },
            "Writes what is queued and resolved now, and waits for it.")
        .def(
            "close",
            [](lapse::Capture& c) {
                py::gil_scoped_release released;
                c.close();
            },
            "Drains every queued window and writes the end chunk: the file is complete. Idempotent.")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](lapse::Capture& c, const py::handle&, const py::handle&, const py::handle&) {
            py::gil_scoped_release released;
            c.close();
            return false;
        });

    py::class_<PyCapturedWindow>(m, "CapturedWindow", "One window read from a capture.")
        .def_readonly("name", &PyCapturedWindow::name)
        .def_readonly("source", &PyCapturedWindow::source)
        .def_readonly("stream", &PyCapturedWindow::stream)
        .def_readonly("thread", &PyCapturedWindow::thread)
        .def_readonly("close_thread", &PyCapturedWindow::close_thread)
        .def_readonly("state", &PyCapturedWindow::state)
        .def_readonly("method", &PyCapturedWindow::method)
        .def_readonly("ready", &PyCapturedWindow::ready)
        .def_readonly("start_ns", &PyCapturedWindow::start_ns)
        .def_readonly("end_ns", &PyCapturedWindow::end_ns)
        .def_property_readonly("ns", [](const PyCapturedWindow& w) -> py::object {
            if (!w.ready) return py::none();  // not measured is no number, never 0
            return py::int_(w.end_ns - w.start_ns);
        })
        .def_readonly("failure", &PyCapturedWindow::failure)
        .def_readonly("cause", &PyCapturedWindow::cause)
        .def_readonly("flags", &PyCapturedWindow::flags);

    py::class_<lapse::CaptureReader>(m, "CaptureReader",
                                     "Reads a capture one window at a time (iterate it), in constant memory; "
                                     "damaged chunks are skipped and listed in .damage.")
        .def(py::init([](const std::filesystem::path& p) { return std::make_unique<lapse::CaptureReader>(p); }),
             py::arg("path"))
        .def("__iter__", [](py::object self) { return self; })
        .def("__next__",
             [](lapse::CaptureReader& r) {
                 lapse::CapturedWindow w;
                 if (!r.next(w)) throw py::stop_iteration();
                 PyCapturedWindow out;
                 out.name.assign(w.name);
                 out.source = w.source;
                 out.stream = w.stream;
                 out.thread = w.thread;
                 out.close_thread = w.close_thread;
                 out.state = lapse::to_string(w.state);
                 out.method = lapse::to_string(w.method);
                 out.ready = w.state == lapse::DurationState::ready;
                 out.start_ns = w.start_ns;
                 out.end_ns = w.end_ns;
                 out.failure = w.failure;
                 out.cause.assign(w.cause);
                 out.flags = w.flags;
                 return out;
             })
        .def_property_readonly("complete", &lapse::CaptureReader::complete,
                               "True once the end chunk was read: the capture was closed, not cut short.")
        .def_property_readonly("windows_read", &lapse::CaptureReader::windows_read)
        .def_property_readonly("chunks_read", &lapse::CaptureReader::chunks_read)
        .def_property_readonly("dropped_total", &lapse::CaptureReader::dropped_total)
        .def_property_readonly("dropped",
                               [](const lapse::CaptureReader& r) {
                                   py::dict out;
                                   for (const lapse::CaptureDrop& d : r.dropped()) out[py::str(d.name)] = d.count;
                                   return out;
                               })
        .def_property_readonly("damage", [](const lapse::CaptureReader& r) {
            py::list out;
            for (const lapse::CaptureDamage& d : r.damage()) out.append(py::make_tuple(d.offset, d.size, d.cause));
            return out;
        });
}

// Runtime.record_into and Device.record_into take what capture_arg takes.
std::shared_ptr<lapse::Capture> capture_from(const py::object& target) { return capture_arg(target); }

}  // namespace lapse::python
