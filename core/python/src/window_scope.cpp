// lapse Python package — `with dev.window("step", stream=0):`, the hot path.
//
// Written against the CPython API rather than through pybind11: a window
// block makes three calls (window(), __enter__, __exit__), and pybind11's
// general dispatch (overload resolution, argument casters, keyword
// matching) costs several hundred ns per call, more than the window. Here
// window() is a METH_FASTCALL method and the scope a plain C type whose
// __enter__ / __exit__ are METH_NOARGS / METH_FASTCALL, so the interpreter
// calls them directly. What the scope does is still the C++ API's:
// Device::profile_start, profile_end, profile_abandon.
#include "binding.hpp"

#include <cstring>
#include <new>
#include <string_view>

namespace lapse::python {

namespace {

PyTypeObject* device_type = nullptr;     // lapse.Device (pybind11)
PyTypeObject* durations_type = nullptr;  // lapse.Durations (pybind11)
PyTypeObject* name_type = nullptr;       // lapse.Name (pybind11)

// The C++ object behind a pybind11 instance of a class bound with a plain
// holder (no multiple inheritance): what a cast would find, without the
// caster's generic search. The caller has checked the type.
template <class T>
T* value_of(PyObject* instance) noexcept
{
    auto* inst = reinterpret_cast<py::detail::instance*>(instance);
    return static_cast<T*>(inst->get_value_and_holder().value_ptr());
}

struct ScopeObject {
    PyObject_HEAD
    PyObject* device_obj;  // strong: the device outlives the scope
    PyDevice* device;
    PyObject* into_obj;    // strong, or NULL
    DurationList* list;
    PyObject* name;        // strong str, or NULL
    const lapse::detail::InternedName* interned;  // a lapse.Name's entry (never freed), or NULL
    PyObject* duration_obj;  // the Python Duration handed out, once asked for
    lapse::Stream stream;
    bool flush;
    // Constructed in place after tp_alloc, destroyed in dealloc.
    lapse::Window window;
    lapse::Duration duration;
};

// Scopes freed are kept for the next window() (as CPython keeps floats and
// frames): a `with` block then allocates no scope. Touched with the GIL held.
constexpr int kFreeScopesMax = 16;
ScopeObject* free_scopes[kFreeScopesMax];
int free_scope_count = 0;

void scope_dealloc(PyObject* self)
{
    auto* s = reinterpret_cast<ScopeObject*>(self);
    s->window.~Window();  // abandons a window still open
    s->duration.~Duration();
    Py_XDECREF(s->duration_obj);
    Py_XDECREF(s->name);
    Py_XDECREF(s->into_obj);
    Py_XDECREF(s->device_obj);
    if (free_scope_count < kFreeScopesMax) {
        free_scopes[free_scope_count++] = s;
        return;
    }
    Py_TYPE(self)->tp_free(self);
}

PyObject* scope_enter(PyObject* self, PyObject*)
{
    auto* s = reinterpret_cast<ScopeObject*>(self);
    std::string_view name;
    if (s->name != nullptr) {
        Py_ssize_t size = 0;
        const char* utf8 = PyUnicode_AsUTF8AndSize(s->name, &size);  // no copy for an ASCII str
        if (utf8 == nullptr) return nullptr;
        name = std::string_view(utf8, static_cast<std::size_t>(size));
    }
    try {
        s->window = s->interned != nullptr
                        ? s->device->live().profile_start(s->stream, lapse::Name::from_entry(s->interned))
                        : s->device->live().profile_start(s->stream, name);
    } catch (const std::bad_alloc&) {
        return PyErr_NoMemory();
    }
    Py_INCREF(self);
    return self;
}

PyObject* scope_exit(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    auto* s = reinterpret_cast<ScopeObject*>(self);
    const bool raised = nargs > 0 && args[0] != Py_None;
    try {
        if (raised) {
            s->device->device.profile_abandon(s->window);
        } else {
            lapse::Duration d = s->device->device.profile_end(s->window, lapse::EndOptions{s->flush});
            if (s->list != nullptr)
                s->list->add(py::reinterpret_borrow<py::object>(s->device_obj), std::move(d));
            else
                s->duration = std::move(d);
        }
    } catch (const std::bad_alloc&) {
        return PyErr_NoMemory();
    }
    Py_RETURN_FALSE;  // an exception propagates
}

PyObject* scope_duration(PyObject* self, void*)
{
    auto* s = reinterpret_cast<ScopeObject*>(self);
    if (s->duration_obj == nullptr) {
        try {
            py::object d = py::cast(std::move(s->duration));
            py::detail::keep_alive_impl(d, s->device_obj);  // a Duration must not outlive its device
            s->duration_obj = d.release().ptr();
        } catch (py::error_already_set& e) {
            e.restore();
            return nullptr;
        } catch (const std::exception& e) {
            PyErr_SetString(PyExc_RuntimeError, e.what());
            return nullptr;
        }
    }
    Py_INCREF(s->duration_obj);
    return s->duration_obj;
}

PyMethodDef scope_methods[] = {
    {"__enter__", scope_enter, METH_NOARGS, "Opens the window."},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(scope_exit)), METH_FASTCALL,
     "Closes the window, or abandons it when the block raised."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef scope_getset[] = {
    {"duration", scope_duration, nullptr,
     "The window's Duration once the block ended (not measured when it raised or was ended into a list).",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject scope_type = [] {
    PyTypeObject t{};
    Py_SET_REFCNT(reinterpret_cast<PyObject*>(&t), 1);  // a static type: never freed
    t.tp_name = "lapse.WindowScope";
    t.tp_basicsize = sizeof(ScopeObject);
    t.tp_dealloc = scope_dealloc;
    t.tp_flags = Py_TPFLAGS_DEFAULT;
    t.tp_doc = "The context manager of Device.window().";
    t.tp_methods = scope_methods;
    t.tp_getset = scope_getset;
    return t;
}();

// A zeroed scope with a reference count of one.
ScopeObject* new_scope()
{
    if (free_scope_count == 0) return reinterpret_cast<ScopeObject*>(scope_type.tp_alloc(&scope_type, 0));
    ScopeObject* s = free_scopes[--free_scope_count];
    std::memset(reinterpret_cast<char*>(s) + sizeof(PyObject), 0, sizeof(ScopeObject) - sizeof(PyObject));
    PyObject_Init(reinterpret_cast<PyObject*>(s), &scope_type);  // a fresh reference, as tp_alloc gives
    return s;
}

// Interned keyword names: the interpreter passes interned names, so the
// pointer test answers almost always.
PyObject* kw_name = nullptr;
PyObject* kw_stream = nullptr;
PyObject* kw_flush = nullptr;
PyObject* kw_into = nullptr;

PyObject** const keywords[4] = {&kw_name, &kw_stream, &kw_flush, &kw_into};

// The position of keyword `key` (name, stream, flush, into), or -1. By
// identity first: the interpreter passes the interned names, so a string
// comparison is only for keys built at run time.
int keyword_index(PyObject* key)
{
    for (int i = 0; i < 4; ++i)
        if (key == *keywords[i]) return i;
    for (int i = 0; i < 4; ++i)
        if (PyUnicode_Compare(key, *keywords[i]) == 0) return i;
    if (PyErr_Occurred()) PyErr_Clear();  // not a str: reported as unexpected below
    return -1;
}

// Device.window(name=None, stream=0, flush=False, into=None)
PyObject* device_window(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames)
{
    if (!PyObject_TypeCheck(self, device_type)) {
        PyErr_SetString(PyExc_TypeError, "window() needs a lapse.Device");
        return nullptr;
    }
    PyObject* values[4] = {nullptr, nullptr, nullptr, nullptr};  // name, stream, flush, into
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "window() takes at most 4 arguments (name, stream, flush, into)");
        return nullptr;
    }
    for (Py_ssize_t i = 0; i < nargs; ++i) values[i] = args[i];
    const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; ++i) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, i);
        const int at = keyword_index(key);
        if (at < 0 || values[at] != nullptr) {
            PyErr_Format(PyExc_TypeError, "window() got %s keyword argument '%U'",
                         at < 0 ? "an unexpected" : "a repeated", key);
            return nullptr;
        }
        values[at] = args[nargs + i];
    }

    lapse::Stream stream = 0;
    if (values[1] != nullptr) {
        unsigned long v = PyLong_AsUnsignedLong(values[1]);
        if (v == static_cast<unsigned long>(-1) && PyErr_Occurred()) return nullptr;
        if (v > UINT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "window(): stream does not fit in 32 bits");
            return nullptr;
        }
        stream = static_cast<lapse::Stream>(v);
    }
    bool flush = false;
    if (values[2] != nullptr) {
        int t = PyObject_IsTrue(values[2]);
        if (t < 0) return nullptr;
        flush = t != 0;
    }
    PyObject* name = values[0] != nullptr && values[0] != Py_None ? values[0] : nullptr;
    const lapse::detail::InternedName* interned = nullptr;
    if (name != nullptr && !PyUnicode_Check(name)) {
        if (!PyObject_TypeCheck(name, name_type)) {
            PyErr_SetString(PyExc_TypeError, "window(): name must be a str, a lapse.Name or None");
            return nullptr;
        }
        interned = value_of<lapse::Name>(name)->entry();
        name = nullptr;  // the entry is the name: no text to keep
    }
    PyObject* into = values[3] != nullptr && values[3] != Py_None ? values[3] : nullptr;
    if (into != nullptr && !PyObject_TypeCheck(into, durations_type)) {
        PyErr_SetString(PyExc_TypeError, "window(): into must be a lapse.Durations or None");
        return nullptr;
    }

    ScopeObject* s = new_scope();
    if (s == nullptr) return nullptr;
    new (&s->window) lapse::Window();
    new (&s->duration) lapse::Duration();
    Py_INCREF(self);
    s->device_obj = self;
    s->device = value_of<PyDevice>(self);
    s->stream = stream;
    s->flush = flush;
    s->interned = interned;
    if (name != nullptr) {
        Py_INCREF(name);
        s->name = name;
    }
    if (into != nullptr) {
        Py_INCREF(into);
        s->into_obj = into;
        s->list = value_of<DurationList>(into);
    }
    return reinterpret_cast<PyObject*>(s);
}

PyMethodDef window_def = {
    "window", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(device_window)),
    METH_FASTCALL | METH_KEYWORDS,
    "window(name=None, stream=0, flush=False, into=None): `with dev.window(\"step\", stream=0):` times the "
    "block's work; the window closes on exit, or is abandoned when the block raises (the exception goes on). "
    "into: a lapse.Durations to end the window into."};

}  // namespace

void bind_window_scope(py::module_& m)
{
    device_type = reinterpret_cast<PyTypeObject*>(py::type::of<PyDevice>().ptr());
    durations_type = reinterpret_cast<PyTypeObject*>(py::type::of<DurationList>().ptr());
    name_type = reinterpret_cast<PyTypeObject*>(py::type::of<lapse::Name>().ptr());
    if (PyType_Ready(&scope_type) < 0) throw py::error_already_set();
    kw_name = PyUnicode_InternFromString("name");
    kw_stream = PyUnicode_InternFromString("stream");
    kw_flush = PyUnicode_InternFromString("flush");
    kw_into = PyUnicode_InternFromString("into");
    if (!kw_name || !kw_stream || !kw_flush || !kw_into) throw py::error_already_set();
    Py_INCREF(&scope_type);
    m.add_object("WindowScope", py::handle(reinterpret_cast<PyObject*>(&scope_type)));
    py::object method = py::reinterpret_steal<py::object>(PyDescr_NewMethod(device_type, &window_def));
    if (!method) throw py::error_already_set();
    py::setattr(py::handle(reinterpret_cast<PyObject*>(device_type)), "window", method);
}

}  // namespace lapse::python
