// _core's eager JIT hook (dispatch.h, issue 17): set_jit_provider(fn | None) registers the
// Python callable run_kernel asks to run an op through compiled kernels where the device has no
// kernel for it, and compiled_stats() counts the calls it ran.
//
// The provider is called as fn(op, dtype, place, inputs, outputs, attrs) -> bool, from any
// thread, with or without the GIL held by the caller: the GIL is taken here for the call. An
// exception from it never escapes: it is reported once per (op, dtype, device) as a
// RuntimeWarning and the op takes the CPU fallback.
#include <pybind11/stl.h>

#include <mutex>
#include <set>
#include <string>
#include <tuple>

#include "bindings.h"
#include "dispatch.h"
#include "errors.h"
#include "jit_composite.h"
#include "kernel_registry.h"

namespace hwport {

namespace {

// The registered callable, owned here (leaked on purpose at exit: a static py::object would be
// destroyed after the interpreter). Read and written with the GIL held.
py::object* g_provider = nullptr;
py::object* g_composite = nullptr;  // provide_composite (jit_composite.h), same ownership
std::set<std::tuple<int, DType, const Device*>>* g_warned = nullptr;  // under the GIL

py::object attr_to_py(const AttrValue& a) {
  switch (a.type) {
    case HWP_ATTR_BOOL: return py::bool_(a.i != 0);
    case HWP_ATTR_INT64: return py::int_(a.i);
    case HWP_ATTR_FLOAT64: return py::float_(a.f);
    case HWP_ATTR_STRING: return py::str(a.s);
    case HWP_ATTR_DTYPE: return py::str(dtype_name(static_cast<DType>(a.i)));
    case HWP_ATTR_INT64_ARRAY: return py::cast(a.ints);
    case HWP_ATTR_FLOAT64_ARRAY: return py::cast(a.floats);
    default: return py::none();
  }
}

void warn_once(int op, DType dtype, const Device* device, const std::string& what) {
  if (!g_warned) g_warned = new std::set<std::tuple<int, DType, const Device*>>();
  if (!g_warned->insert({op, dtype, device}).second) return;
  const std::string msg = "hwport eager JIT: " + op_name(op) + " (" + dtype_name(dtype) +
                          ") on " + device->name + " failed, running it on the CPU fallback: " +
                          what;
  // Warnings configured as errors must not escape either.
  if (PyErr_WarnEx(PyExc_RuntimeWarning, msg.c_str(), 1) != 0) PyErr_Clear();
}

bool call_provider(int op, DType dtype, Device* device, const Tensor* const* inputs,
                   int num_inputs, Tensor* const* outputs, int num_outputs, const Attrs& attrs) {
  if (!Py_IsInitialized()) return false;
  py::gil_scoped_acquire gil;
  if (!g_provider) return false;
  py::object fn = *g_provider;  // keeps it alive should the call unregister it
  try {
    py::list ins, outs;
    for (int i = 0; i < num_inputs; ++i) ins.append(py::cast(*inputs[i]));
    for (int i = 0; i < num_outputs; ++i) outs.append(py::cast(*outputs[i]));
    py::dict py_attrs;
    for (const auto& kv : attrs) py_attrs[py::str(kv.first)] = attr_to_py(kv.second);
    py::object done = fn(op_name(op), dtype_name(dtype), place_of(device), ins, outs, py_attrs);
    return done.ptr() == Py_True;
  } catch (py::error_already_set& e) {
    warn_once(op, dtype, device, e.what());
  } catch (const std::exception& e) {
    warn_once(op, dtype, device, e.what());
  }
  return false;
}

py::dict stats_to_py(const std::map<std::tuple<std::string, std::string, std::string>,
                                    uint64_t>& stats) {
  py::dict out;
  for (const auto& kv : stats)
    out[py::make_tuple(std::get<0>(kv.first), std::get<1>(kv.first), std::get<2>(kv.first))] =
        kv.second;
  return out;
}

}  // namespace

bool jit_composite_registered() { return g_composite != nullptr; }

PyObject* jit_composite(int op, const char* name, Device* device, PyObject* inputs,
                        PyObject* attrs) {
  if (!g_composite) return nullptr;
  py::object fn = *g_composite;  // keeps it alive should the call unregister it
  try {
    py::object out = fn(name, place_of(device), py::reinterpret_borrow<py::object>(inputs),
                        py::reinterpret_borrow<py::object>(attrs));
    return out.is_none() ? nullptr : out.release().ptr();
  } catch (py::error_already_set& e) {
    warn_once(op, DType::Float32, device, e.what());
  } catch (const std::exception& e) {
    warn_once(op, DType::Float32, device, e.what());
  }
  return nullptr;
}

void bind_jit(py::module_& m) {
  m.def("set_jit_provider", [](py::object fn) {
    if (!fn.is_none() && !PyCallable_Check(fn.ptr()))
      raise(ErrorKind::Type, "set_jit_provider: expected a callable or None");
    set_jit_provider(nullptr);
    delete g_provider;
    g_provider = nullptr;
    if (fn.is_none()) return;
    g_provider = new py::object(std::move(fn));
    set_jit_provider(call_provider);
  }, py::arg("fn"),
     "Registers the eager JIT: fn(op, dtype, place, inputs, outputs, attrs) -> bool, asked "
     "where a device with a codegen target has no kernel for a call (None: no JIT).");
  m.def("set_jit_composite_provider", [](py::object fn) {
    if (!fn.is_none() && !PyCallable_Check(fn.ptr()))
      raise(ErrorKind::Type, "set_jit_composite_provider: expected a callable or None");
    delete g_composite;
    g_composite = fn.is_none() ? nullptr : new py::object(std::move(fn));
  }, py::arg("fn"),
     "Registers fn(op, place, inputs, attrs) -> outputs | None, asked for a composite op on a "
     "device with a codegen target and no kernel for it before its formula runs (None: no "
     "hook).");
  m.def("jit_provider", []() -> py::object {
    return g_provider ? *g_provider : py::none();
  }, "The registered eager JIT provider, or None.");
  m.def("compiled_stats", []() { return stats_to_py(compiled_stats()); },
        "How often each (op, device type, dtype) ran through the eager JIT's compiled kernels.");
}

}  // namespace hwport
