// Tensor.__getitem__ in C++ for the basic forms (ints, slices, None, Ellipsis: a view), as
// hwport/indexing.py getitem computes them; every other key, every error, and every key while
// a pipeline layer is active (there indexing is op calls the layers see) go to that Python
// function (its messages), which is registered as the fallback.
#include <pybind11/pybind11.h>

#include "arg_parse.h"
#include "indexing_fast.h"
#include "autograd.h"
#include "layers.h"

namespace hwport {

namespace {

namespace py = pybind11;

PyObject* g_fallback = nullptr;  // hwport.indexing.getitem (owned for the process' life)

// The view `key` selects from `t`; false: a form or an error the Python function handles.
bool basic_view(const Tensor& t, PyObject* key, Tensor* out) {
  PyObject* single[1] = {key};
  PyObject* const* items = single;
  Py_ssize_t n = 1;
  if (PyTuple_Check(key)) {
    items = &PyTuple_GET_ITEM(key, 0);
    n = PyTuple_GET_SIZE(key);
  }
  int ellipses = 0;
  int64_t consumed = 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (items[i] == Py_Ellipsis) ++ellipses;
    else if (items[i] != Py_None) ++consumed;
  }
  const int64_t ndim = t.ndim();
  if (ellipses > 1 || consumed > ndim) return false;
  Shape shape, strides;
  std::vector<bool> is_new;  // the output dims None made
  int64_t offset = t.offset, dim = 0;
  const auto whole = [&](int64_t count) {
    for (int64_t c = 0; c < count; ++c, ++dim) {
      shape.push_back(t.shape[dim]);
      strides.push_back(t.strides[dim]);
    }
  };
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* k = items[i];
    if (k == Py_None) {
      is_new.resize(shape.size() + 1, false);
      is_new[shape.size()] = true;
      shape.push_back(1);
      strides.push_back(0);  // set below, as unsqueeze sets it
    } else if (k == Py_Ellipsis) {
      whole(ndim - consumed);
    } else if (PySlice_Check(k)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(k, &start, &stop, &step) < 0) {
        PyErr_Clear();
        return false;
      }
      if (step == 0) return false;
      const int64_t size = t.shape[dim], stride = t.strides[dim];
      const int64_t count = PySlice_AdjustIndices(size, &start, &stop, step);
      const int64_t bound = size > 1 ? size : 1;
      if (step > bound || step < -bound) step = step > 0 ? bound : -bound;  // keep it small
      if (count) offset += start * stride;
      shape.push_back(count);
      strides.push_back(stride * step);
      ++dim;
    } else if (PyLong_CheckExact(k)) {  // bools and numpy ints: the Python function
      int64_t v;
      if (!pipeline::plain_int(k, &v)) return false;
      const int64_t size = t.shape[dim];
      if (v < -size || v >= size) return false;
      offset += (v < 0 ? v + size : v) * t.strides[dim];
      ++dim;
    } else {
      return false;
    }
  }
  if (!ellipses) whole(ndim - dim);
  if (shape.size() > HWP_MAX_NDIM) return false;
  // A new dim's stride is unsqueeze's (hwport/indexing.py builds the same view from op calls
  // when layers are active): the next kept dim's stride times its size, 1 after the last.
  int64_t inner = 1;
  for (size_t j = strides.size(); j-- > 0;) {
    if (j < is_new.size() && is_new[j])
      strides[j] = inner;
    else
      inner = strides[j] * shape[j];
  }
  *out = t;
  out->shape = std::move(shape);
  out->strides = std::move(strides);
  out->offset = offset;
  return true;
}

PyObject* getitem(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  // With layers active indexing is op calls (hwport/indexing.py), so they see it.
  if (nargs == 2 && !layers::any_active() &&
      !(layers::autograd_wanted() && autograd::needs_grad(args[0]))) {
    if (const Tensor* t = pipeline::as_tensor(args[0])) {
      Tensor view;
      if (basic_view(*t, args[1], &view)) return py::cast(std::move(view)).release().ptr();
    }
  }
  if (!g_fallback) {
    PyErr_SetString(PyExc_RuntimeError, "Tensor.__getitem__: hwport.indexing not registered");
    return nullptr;
  }
  return PyObject_Vectorcall(g_fallback, args, static_cast<size_t>(nargs), nullptr);
}

PyMethodDef g_getitem_def = {
    "__getitem__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(getitem)),
    METH_FASTCALL, "Basic indexing (ints, slices, None, Ellipsis) as a view."};

}  // namespace

void register_indexing(py::module_& m) {
  m.def("_getitem_method", [](py::object fallback) {
    if (!g_fallback) g_fallback = fallback.release().ptr();
    py::object fn = py::reinterpret_steal<py::object>(PyCFunction_New(&g_getitem_def, nullptr));
    if (!fn) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(PyInstanceMethod_New(fn.ptr()));
  }, py::arg("fallback"),
        "Tensor.__getitem__: the basic forms in C++, every other key through `fallback` "
        "(hwport.indexing.getitem).");
}

}  // namespace hwport
