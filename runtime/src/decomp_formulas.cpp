#include "decomp_formulas.h"

#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "errors.h"
#include "ops.h"
#include "pipeline_run.h"

namespace hwport::pipeline {

namespace {

using Obj = pybind11::object;
uint64_t g_calls = 0, g_failures = 0;  // under the GIL

Obj steal(PyObject* p) { return pybind11::reinterpret_steal<Obj>(p); }
Obj borrow(PyObject* p) { return pybind11::reinterpret_borrow<Obj>(p); }

// One sub-op through the pipeline's C++ entry: inputs by position, attrs by their OpSpec index.
Obj call(int op_id, std::initializer_list<PyObject*> in,
         std::initializer_list<std::pair<int, PyObject*>> attrs) {
  const OpSpec& op = *op_spec(op_id);
  BoundArgs a;
  a.count = op.num_inputs + op.num_attrs;
  int i = 0;
  for (PyObject* v : in) a.slot[i++] = v;
  for (const auto& [k, v] : attrs) a.slot[op.num_inputs + k] = v;
  return steal(call_op_entry(op, a));
}

const Tensor* tensor_arg(PyObject* obj, const char* what) {
  const Tensor* t = as_tensor(obj);
  if (!t) PyErr_Format(PyExc_TypeError, "formula: %s expects a Tensor", what);
  return t;
}

// decompositions.py _up: float16/bfloat16 -> float32 (the compute dtype of compound float math).
Obj up(PyObject* x) {
  const Tensor* t = tensor_arg(x, "up()");
  if (!t) return Obj();
  if (t->dtype != DType::Float16 && t->dtype != DType::BFloat16) return borrow(x);
  return steal(to_python(cast(*t, DType::Float32)));
}

// decompositions.py _to: t in like's dtype (no-op when it already is).
Obj down(PyObject* x, PyObject* like) {
  const Tensor* t = tensor_arg(x, "down()");
  const Tensor* l = t ? tensor_arg(like, "down()") : nullptr;
  if (!l) return Obj();
  if (t->dtype == l->dtype) return borrow(x);
  return steal(to_python(cast(*t, l->dtype)));
}

// decompositions.py _int_bound: a clip bound in like's integer dtype (a float truncates toward
// zero, NaN -> 0, +-inf -> the dtype's max/min; then saturates); a float dtype takes it as is.
Obj bound(PyObject* value, PyObject* like) {
  const Tensor* l = tensor_arg(like, "bound()");
  if (!l) return Obj();
  if (!is_integral(l->dtype)) return borrow(value);
  int64_t lo = 0, hi = 0;
  switch (l->dtype) {
    case DType::Int8: lo = INT8_MIN; hi = INT8_MAX; break;
    case DType::UInt8: lo = 0; hi = UINT8_MAX; break;
    case DType::Int16: lo = INT16_MIN; hi = INT16_MAX; break;
    case DType::Int32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: lo = INT64_MIN; hi = INT64_MAX; break;
  }
  int64_t v = 0;
  if (PyFloat_Check(value)) {
    const double d = PyFloat_AS_DOUBLE(value);
    if (std::isnan(d)) v = 0;
    else if (d >= 9223372036854775808.0) v = INT64_MAX;  // 2**63: beyond every range
    else if (d <= -9223372036854775808.0) v = INT64_MIN;
    else v = static_cast<int64_t>(d);  // truncation toward zero
  } else {
    int overflow = 0;
    v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred()) return Obj();
    if (overflow) v = overflow > 0 ? INT64_MAX : INT64_MIN;
  }
  return steal(PyLong_FromLongLong(v < lo ? lo : v > hi ? hi : v));
}

// empty(t): t holds no elements (false for a non-tensor: the sub-op then reports it).
bool is_empty(PyObject* x) {
  const Tensor* t = as_tensor(x);
  return t && t->numel() == 0;
}

// The axes of an ints attr (an int, a list/tuple of ints, or None/[]: every axis of t),
// non-negative, as decompositions.py gets them normalized from infer-meta.
bool axes_of(PyObject* axis, const Tensor& t, std::vector<int64_t>* out) {
  const int64_t nd = t.ndim();
  auto norm = [nd](int64_t a) { return nd ? ((a % nd) + nd) % nd : 0; };
  if (axis == Py_None || (PySequence_Check(axis) && PySequence_Size(axis) == 0)) {
    for (int64_t a = 0; a < nd; ++a) out->push_back(a);
    return true;
  }
  if (PyLong_Check(axis)) {
    out->push_back(norm(PyLong_AsLongLong(axis)));
    return !PyErr_Occurred();
  }
  pybind11::object seq = steal(PySequence_Fast(axis, "formula: axes must be ints"));
  if (!seq) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.ptr()); ++i) {
    const long long a = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq.ptr(), i));
    if (a == -1 && PyErr_Occurred()) return false;
    out->push_back(norm(a));
  }
  return true;
}

Obj int_list(const std::vector<int64_t>& v) {
  Obj out = steal(PyList_New(static_cast<Py_ssize_t>(v.size())));
  if (!out) return out;
  for (size_t i = 0; i < v.size(); ++i) {
    PyObject* e = PyLong_FromLongLong(v[i]);
    if (!e) return Obj();
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), e);
  }
  return out;
}

// axes(axis, t): [axis % t.ndim], or [] for a 0-d t (softmax's one axis).
Obj axes(PyObject* axis, PyObject* like) {
  const Tensor* t = tensor_arg(like, "axes()");
  if (!t) return Obj();
  if (t->ndim() == 0) return int_list({});
  const long long a = PyLong_AsLongLong(axis);
  if (a == -1 && PyErr_Occurred()) return Obj();
  const int64_t nd = t->ndim();
  return int_list({((a % nd) + nd) % nd});
}

// all_axes(axis, t): a reduction's axes (every axis where none are given).
Obj all_axes(PyObject* axis, PyObject* like) {
  const Tensor* t = tensor_arg(like, "all_axes()");
  std::vector<int64_t> v;
  if (!t || !axes_of(axis, *t, &v)) return Obj();
  return int_list(v);
}

// count(t, axes): the number of elements those axes of t span.
Obj count(PyObject* x, PyObject* axis) {
  const Tensor* t = tensor_arg(x, "count()");
  std::vector<int64_t> v;
  if (!t || !axes_of(axis, *t, &v)) return Obj();
  int64_t n = 1;
  for (int64_t a : v) n *= t->shape[static_cast<size_t>(a)];
  return steal(PyLong_FromLongLong(n));
}

#include "decomp_formulas.inc"

}  // namespace

const FormulaEntry* formula_entry(int op_id) { return formula_table(op_id); }

PyObject* run_formula(const OpSpec& op, PyObject* const* in, const BoundArgs& a) {
  const FormulaEntry* e = formula_entry(op.id);
  if (!e) return nullptr;
  PyObject* at[kMaxParams] = {};
  for (int k = 0; k < e->num_attrs; ++k) {
    PyObject* given = a.slot[op.num_inputs + k];
    at[k] = given ? given : e->defaults[k];
  }
  PyObject* out = nullptr;
  try {
    out = e->fn(in, at);
  } catch (const Error&) {
    // an up()/down() cast refused: the Python path redoes the call and raises its message
  } catch (pybind11::error_already_set& e) {
    e.restore();
  }
  if (!out) {
    // The Python path redoes the call (kernels are pure, outputs fresh) and raises the
    // composite's own message rather than a sub-op's.
    PyErr_Clear();
    ++g_failures;
    return nullptr;
  }
  ++g_calls;
  return out;
}

uint64_t formula_calls() { return g_calls; }
uint64_t formula_failures() { return g_failures; }

}  // namespace hwport::pipeline
