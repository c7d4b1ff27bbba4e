// lapse Python package — the module: errors, configs, the runtime.
#include "binding.hpp"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>

namespace lapse::python {

namespace {

// The exception type, created once with the module.
PyObject* error_type = nullptr;

}  // namespace

void raise_error(lapse_status status, const std::string& message) { throw lapse::Error(status, message); }

std::chrono::nanoseconds to_timeout(const py::object& seconds)
{
    if (seconds.is_none()) return lapse::wait_forever;
    double s = seconds.cast<double>();
    if (!(s > 0)) return lapse::poll;
    if (s >= 1e9) return lapse::wait_forever;
    return std::chrono::nanoseconds(static_cast<int64_t>(s * 1e9));
}

void bind_errors(py::module_& m)
{
    error_type = PyErr_NewExceptionWithDoc(
        "lapse.Error",
        "A lapse failure: .status (the lapse_status, an int), .status_name "
        "(\"LAPSE_ERROR_CONFIG\", ...) and the message, which names the file, key, "
        "window or call and the cause.",
        PyExc_RuntimeError, nullptr);
    m.add_object("Error", py::handle(error_type));
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const lapse::Error& e) {
            py::object exc = py::reinterpret_borrow<py::object>(error_type)(e.what());
            exc.attr("status") = static_cast<int>(e.status());
            exc.attr("status_name") = e.status_name();
            exc.attr("message") = std::string(e.what());
            PyErr_SetObject(error_type, exc.ptr());
        }
    });
}

}  // namespace lapse::python

PYBIND11_MODULE(_lapse, m)
{
    using namespace lapse::python;
    m.doc() = "lapse: profiling windows over pluggable backends (the C++ API, bound with pybind11)";
    bind_errors(m);

    m.attr("ALL_STREAMS") = py::int_(LAPSE_ALL_STREAMS);
    m.attr("CAP_DEVICE_CLOCK") = py::int_(uint64_t(LAPSE_CAP_DEVICE_CLOCK));
    m.attr("CAP_NESTED") = py::int_(uint64_t(LAPSE_CAP_NESTED));
    m.attr("CAP_OVERLAPPING") = py::int_(uint64_t(LAPSE_CAP_OVERLAPPING));
    m.attr("CAP_SPLIT_THREADS") = py::int_(uint64_t(LAPSE_CAP_SPLIT_THREADS));
    m.attr("CAP_BATCHING") = py::int_(uint64_t(LAPSE_CAP_BATCHING));

    py::class_<lapse::Config>(m, "Config", "A parsed TOML config (errors carry file:line:col).")
        .def_static("from_file", [](const std::filesystem::path& p) { return lapse::Config::from_file(p); },
                    py::arg("path"))
        .def_static(
            "from_string",
            [](const std::string& text, const std::string& source_name, const py::object& base_dir) {
                std::filesystem::path base = base_dir.is_none() ? std::filesystem::current_path()
                                                                : base_dir.cast<std::filesystem::path>();
                return lapse::Config::from_string(text, source_name, base);
            },
            py::arg("text"), py::arg("source_name") = "<string>", py::arg("base_dir") = py::none())
        .def_static("builtin", &lapse::Config::builtin, "The CPU plugin with 2 streams.")
        .def_static("default", &lapse::default_config, "The file LAPSE_CONFIG names (read now), else the builtin config.")
        .def_property_readonly("source_name", &lapse::Config::source_name)
        .def_property_readonly("backend_plugin", &lapse::Config::backend_plugin);

    bind_durations(m);
    bind_device(m);
    bind_window_scope(m);
    bind_capture(m);

    py::class_<lapse::Runtime>(m, "Runtime", "Loads plugins and opens devices.")
        .def(py::init([](const std::vector<std::filesystem::path>& search_paths) {
                 lapse::RuntimeOptions o;
                 o.search_paths = search_paths;
                 return lapse::Runtime(std::move(o));
             }),
             py::arg("search_paths") = std::vector<std::filesystem::path>{})
        .def(
            "open",
            [](lapse::Runtime& rt, const py::object& config) {
                lapse::Device d;
                if (config.is_none())
                    d = rt.open_default();  // LAPSE_CONFIG as it stood when the runtime was made
                else if (py::isinstance<lapse::Config>(config))
                    d = rt.open(config.cast<const lapse::Config&>());
                else
                    d = rt.open(lapse::Config::from_file(config.cast<std::filesystem::path>()));
                return std::make_unique<PyDevice>(std::move(d));
            },
            py::arg("config") = py::none(),
            "Opens a device: from a Config, a config file's path, or (None) LAPSE_CONFIG / the builtin config.")
        .def(
            "record_into",
            [](lapse::Runtime& rt, const py::object& target) -> py::object {
                std::shared_ptr<lapse::Capture> capture = capture_from(target);
                rt.record_into(capture);
                if (!capture) return py::none();
                return py::cast(capture);
            },
            py::arg("capture"),
            "Every device this runtime opens from now on records its named windows into `capture` (a Capture, "
            "or a path: a Capture opened with the defaults); None returns to LAPSE_CAPTURE / the config's "
            "[capture]. Returns the Capture.")
        .def_property_readonly(
            "capture", [](const lapse::Runtime& rt) { return rt.capture(); },
            "The capture this runtime's devices record into by default (record_into, LAPSE_CAPTURE), or None.");
}
