// lapse Python package — devices: submit, sync, windows (split and
// closure forms; the `with` form is window_scope.cpp), bulk resolve.
#include "binding.hpp"

#include <pybind11/stl.h>

#include <functional>
#include <type_traits>
#include <utility>

namespace lapse::python {

namespace {

// Python work on a stream: takes the GIL on the stream's thread to run, and
// to drop its reference (the box that holds it dies on that thread). An
// exception it raises is kept by the device and re-raised by sync().
struct PyWork {
    PyObject* fn;

    explicit PyWork(py::object f) noexcept : fn(f.release().ptr()) {}
    PyWork(PyWork&& other) noexcept : fn(std::exchange(other.fn, nullptr)) {}
    PyWork(const PyWork&) = delete;
    PyWork& operator=(const PyWork&) = delete;
    PyWork& operator=(PyWork&&) = delete;
    ~PyWork()
    {
        if (fn == nullptr) return;
        py::gil_scoped_acquire gil;
        Py_DECREF(fn);
    }
    void operator()() const
    {
        py::gil_scoped_acquire gil;
        py::handle callable(fn);
        callable();
    }
};

std::string name_of(const py::object& name) { return name.is_none() ? std::string() : name.cast<std::string>(); }

// profile_start / profile with `name` as given: a lapse.Name by its entry
// (no text copied), a str or None by its text.
template <class Open>
auto with_name(const py::object& name, Open&& open)
{
    if (py::isinstance<lapse::Name>(name)) return open(name.cast<const lapse::Name&>());
    return open(name_of(name));
}

}  // namespace

void bind_device(py::module_& m)
{
    py::class_<lapse::Name>(m, "Name",
                            "A window name interned once: a window opened with it copies no text. Make one per "
                            "fixed name (a module constant), never one per window: each text is kept until the "
                            "process exits.")
        .def(py::init([](const std::string& text) { return lapse::Name(text); }), py::arg("text"))
        .def_property_readonly("text", [](const lapse::Name& n) { return std::string(n.text()); })
        .def(
            "__eq__", [](const lapse::Name& a, const lapse::Name& b) { return a.entry() == b.entry(); },
            py::is_operator())
        .def("__hash__", [](const lapse::Name& n) { return std::hash<const void*>()(n.entry()); })
        .def("__repr__", [](const lapse::Name& n) {
            return "lapse.Name(" + std::string(py::repr(py::str(std::string(n.text())))) + ")";
        });

    py::class_<lapse::DeviceInfo>(m, "DeviceInfo")
        .def_readonly("plugin", &lapse::DeviceInfo::plugin)
        .def_readonly("plugin_version", &lapse::DeviceInfo::plugin_version)
        .def_readonly("plugin_file", &lapse::DeviceInfo::plugin_file)
        .def_readonly("name", &lapse::DeviceInfo::name)
        .def_readonly("stream_count", &lapse::DeviceInfo::stream_count)
        .def_readonly("capabilities", &lapse::DeviceInfo::capabilities)
        .def("has", &lapse::DeviceInfo::has, py::arg("capability"));

    py::class_<lapse::Window>(m, "Window", "An open window (profile_start); end it with Device.profile_end.")
        .def_property_readonly("kind",
                               [](const lapse::Window& w) {
                                   switch (w.kind()) {
                                   case lapse::Window::Kind::device: return "device";
                                   case lapse::Window::Kind::system: return "system";
                                   case lapse::Window::Kind::failed: return "failed";
                                   case lapse::Window::Kind::closed: break;
                                   }
                                   return "closed";
                               })
        .def_property_readonly("open", &lapse::Window::open)
        .def_property_readonly("stream", &lapse::Window::stream)
        .def_property_readonly("name", [](const lapse::Window& w) { return std::string(w.name()); })
        .def_property_readonly("error_status", [](const lapse::Window& w) { return int(w.error_status()); })
        .def_property_readonly("error_message", [](const lapse::Window& w) { return std::string(w.error_message()); });

    py::class_<PyDevice>(m, "Device", "An open device (Runtime.open).")
        .def_property_readonly("info", [](PyDevice& d) { return d.live().info(); })
        .def(
            "submit",
            [](PyDevice& d, lapse::Stream stream, py::function fn) {
                PyWork work{std::move(fn)};
                py::gil_scoped_release released;  // a full queue may block; inline work takes the GIL
                d.live().submit(stream, std::move(work));
            },
            py::arg("stream"), py::arg("fn"), "Runs fn() once on the stream, in stream order.")
        .def(
            "sync",
            [](PyDevice& d, lapse::Stream stream) {
                lapse::Device& dev = d.live();
                py::gil_scoped_release released;
                dev.sync(stream);
            },
            py::arg("stream") = LAPSE_ALL_STREAMS,
            "Waits for the work submitted before; re-raises what a submitted function raised.")
        .def(
            "profile_start",
            [](PyDevice& d, lapse::Stream stream, const py::object& name) {
                return with_name(name, [&](const auto& n) { return d.live().profile_start(stream, n); });
            },
            py::arg("stream"), py::arg("name") = py::none(), py::keep_alive<0, 1>())
        .def(
            "profile_end",
            [](py::object self, lapse::Window& w, bool flush, DurationList* into) -> py::object {
                lapse::Duration dur = self.cast<PyDevice&>().device.profile_end(w, lapse::EndOptions{flush});
                if (into != nullptr) {
                    into->add(self, std::move(dur));
                    return py::none();
                }
                return py::cast(std::move(dur));
            },
            py::arg("window"), py::arg("flush") = false, py::arg("into") = nullptr, py::keep_alive<0, 1>(),
            "Closes the window: a Duration, or None when ended into a Durations.")
        .def(
            "profile_abandon", [](PyDevice& d, lapse::Window& w) { d.device.profile_abandon(w); },
            py::arg("window"))
        .def(
            "profile",
            [](PyDevice& d, lapse::Stream stream, py::function fn, const py::object& name, bool flush) {
                // A Python exception unwinds through here: the window is
                // abandoned by the C++ API's guard and the exception goes on.
                return with_name(name, [&](const auto& n) {
                    if constexpr (std::is_same_v<std::decay_t<decltype(n)>, lapse::Name>)
                        return d.live().profile(stream, n, [&] { fn(); }, lapse::EndOptions{flush});
                    else
                        return d.live().profile(stream, [&] { fn(); }, lapse::ProfileOptions{n, flush});
                });
            },
            py::arg("stream"), py::arg("fn"), py::arg("name") = py::none(), py::arg("flush") = false,
            py::keep_alive<0, 1>(), "Runs fn() inside a window on `stream` and returns its Duration.")
        .def(
            "resolve",
            [](PyDevice& d, const py::object& durations, const py::object& timeout) {
                const std::chrono::nanoseconds t = to_timeout(timeout);
                std::vector<lapse::Duration*> items;
                if (py::isinstance<DurationList>(durations)) {
                    // Taken out of the list while the GIL is released, so
                    // that another thread appending to or clearing it meanwhile
                    // cannot move what is being resolved; put back before
                    // anything appended since.
                    auto& list = durations.cast<DurationList&>();
                    std::vector<lapse::Duration> taken;
                    taken.swap(list.items);
                    items.reserve(taken.size());
                    for (auto& x : taken) items.push_back(&x);
                    auto put_back = [&] {
                        std::vector<lapse::Duration> added;
                        added.swap(list.items);
                        list.items = std::move(taken);
                        for (auto& x : added) list.items.push_back(std::move(x));
                    };
                    py::object result;
                    try {
                        result = resolve_to_arrays(d.device, items, t);
                    } catch (...) {
                        put_back();
                        throw;
                    }
                    put_back();
                    return result;
                }
                // Each Duration held (a reference each) while the GIL is
                // released, so no other thread can free one meanwhile.
                std::vector<py::object> held;
                for (const py::handle& x : durations) {
                    items.push_back(&x.cast<lapse::Duration&>());
                    held.push_back(py::reinterpret_borrow<py::object>(x));
                }
                return resolve_to_arrays(d.device, items, t);
            },
            py::arg("durations"), py::arg("timeout") = py::none(),
            "Resolves a Durations or a sequence of Duration in bulk: a Resolution of NumPy arrays.")
        .def(
            "record_into",
            [](PyDevice& d, const py::object& target) -> py::object {
                std::shared_ptr<lapse::Capture> capture = capture_from(target);
                lapse::Device& dev = d.live();
                {
                    // The previous capture first gets the pending windows,
                    // which may wait on Python work on a stream.
                    py::gil_scoped_release released;
                    dev.record_into(capture);
                }
                if (!capture) return py::none();
                return py::cast(capture);
            },
            py::arg("capture"),
            "Every named window this device closes from now on goes into `capture` (a Capture or a path); None "
            "stops. Returns the Capture.")
        .def(
            "extension",
            [](PyDevice& d, const std::string& id) -> py::object {
                const void* p = d.live().extension(id.c_str());
                if (p == nullptr) return py::none();
                return py::int_(reinterpret_cast<std::uintptr_t>(p));
            },
            py::arg("id"), "A backend extension's address (for ctypes), or None.")
        .def("close", &PyDevice::close,
             "Waits for the submitted work; later work and windows answer LAPSE_ERROR_CLOSED. Windows and "
             "durations already open still end and resolve; the device goes with the last of them.")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](PyDevice& d, const py::handle&, const py::handle&, const py::handle&) {
            d.close();
            return false;
        });
}

}  // namespace lapse::python
