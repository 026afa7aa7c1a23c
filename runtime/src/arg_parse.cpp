#include "arg_parse.h"

#include <pybind11/pybind11.h>

#include <cmath>
#include <cstring>

#include "py_convert.h"

namespace hwport::pipeline {

namespace py = pybind11;

namespace {

// An op without inputs (creation) takes `place` after its attributes.
const char* param_name(const OpSpec& op, int i) {
  if (i < op.num_inputs) return op.inputs[i].name;
  return i - op.num_inputs < op.num_attrs ? op.attrs[i - op.num_inputs].name : "place";
}

}  // namespace

bool bind_args(const OpSpec& op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
               BoundArgs* out) {
  out->count = op.num_inputs + op.num_attrs + (op.num_inputs == 0 ? 1 : 0);
  if (out->count > kMaxParams || nargs > out->count) return false;
  for (int i = 0; i < out->count; ++i) out->slot[i] = i < nargs ? args[i] : nullptr;
  if (!kwnames) return true;
  const Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
    if (!name) {
      PyErr_Clear();
      return false;
    }
    int found = -1;
    for (int i = 0; i < out->count; ++i)
      if (std::strcmp(param_name(op, i), name) == 0) found = i;
    if (found < 0 || out->slot[found]) return false;
    out->slot[found] = args[nargs + k];
  }
  return true;
}

Tensor* as_tensor(PyObject* obj) {
  py::detail::make_caster<Tensor> caster;
  if (!caster.load(obj, /*convert=*/false)) return nullptr;
  return &static_cast<Tensor&>(caster);
}

bool is_plain_scalar(PyObject* obj) {
  return PyBool_Check(obj) || PyLong_CheckExact(obj) || PyFloat_CheckExact(obj);
}

DType weak_scalar_dtype(PyObject* scalar, DType tensor_dtype) {
  if (PyBool_Check(scalar)) return tensor_dtype;
  if (PyLong_Check(scalar)) return tensor_dtype == DType::Bool ? DType::Int64 : tensor_dtype;
  return is_floating(tensor_dtype) ? tensor_dtype : DType::Float32;
}

bool kernel_attrs(const OpSpec& op, const BoundArgs& args, int64_t ndim, Attrs* out,
                  DType* out_dtype) {
  for (int a = 0; a < op.num_attrs; ++a) {
    const AttrSpec& spec = op.attrs[a];
    const AttrDefault& def = spec.default_value;
    PyObject* v = args.slot[op.num_inputs + a];
    if (a == op.out_attr && spec.kind == AttrKind::DType) {
      if (!v || v == Py_None) return false;  // Python: "dtype is required"
      *out_dtype = dtype_from_py(v, op.name, spec.name);
      AttrValue name;
      name.type = HWP_ATTR_STRING;
      name.s = dtype_name(*out_dtype);
      out->emplace_back(spec.name, std::move(name));
      continue;
    }
    if (v == Py_None) {  // only where None is the default (else Python's message)
      if (!def.has_default || !def.is_none) return false;
      continue;
    }
    if (!v && (!def.has_default)) return false;
    switch (spec.kind) {
      case AttrKind::Bool: {
        if (!v) {
          if (def.is_none) return false;
          out->emplace_back(spec.name, AttrValue::of_bool(def.b));
        } else if (PyBool_Check(v)) {
          out->emplace_back(spec.name, AttrValue::of_bool(v == Py_True));
        } else {
          return false;
        }
        break;
      }
      case AttrKind::Int: {
        int64_t x = def.i;
        if (!v && def.is_none) continue;
        if (v && !plain_int(v, &x)) return false;
        if (spec.is_axis && !normalize_axis(x, ndim, &x)) return false;
        out->emplace_back(spec.name, AttrValue::of_int(x));
        break;
      }
      case AttrKind::Float: {
        if (!v) {
          if (def.is_none) continue;
          out->emplace_back(spec.name, def.is_float ? AttrValue::of_float(def.f)
                                                    : AttrValue::of_int(def.i));
        } else if (PyFloat_CheckExact(v)) {
          out->emplace_back(spec.name, AttrValue::of_float(PyFloat_AS_DOUBLE(v)));
        } else {
          int64_t x;  // an int stays exact (dispatch._number); beyond int64: Python's rule
          if (!plain_int(v, &x)) return false;
          out->emplace_back(spec.name, AttrValue::of_int(x));
        }
        break;
      }
      default: return false;
    }
  }
  return true;
}

bool attr_number(const Attrs& attrs, const char* name, double* out) {
  for (const auto& [n, v] : attrs) {
    if (n != name) continue;
    if (v.type == HWP_ATTR_FLOAT64) *out = v.f;
    else if (v.type == HWP_ATTR_INT64) *out = static_cast<double>(v.i);
    else return false;
    return true;
  }
  return false;
}

bool plain_int(PyObject* v, int64_t* out) {
  if (!PyLong_CheckExact(v)) return false;  // bools and numpy ints: Python's rule
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (overflow || (x == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  *out = x;
  return true;
}

bool int_list(PyObject* v, std::vector<int64_t>* out) {
  out->clear();
  if (!v || v == Py_None) return true;
  int64_t x;
  if (plain_int(v, &x)) {
    out->push_back(x);
    return true;
  }
  if (!PyList_Check(v) && !PyTuple_Check(v)) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
  PyObject** items = PySequence_Fast_ITEMS(v);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!plain_int(items[i], &x)) return false;
    out->push_back(x);
  }
  return true;
}

bool reduce_attrs(const OpSpec& op, const BoundArgs& args, ReduceAttrs* out, Attrs* kernel) {
  for (int a = 0; a < op.num_attrs; ++a) {
    const AttrSpec& spec = op.attrs[a];
    PyObject* v = args.slot[op.num_inputs + a];
    const std::string name = spec.name;
    if (name == "axis" && spec.kind == AttrKind::Ints) {
      if (!int_list(v, &out->axis)) return false;
    } else if (name == "dtype" && spec.kind == AttrKind::DType) {
      out->has_dtype = v && v != Py_None;
      if (out->has_dtype) out->dtype = dtype_from_py(v, op.name, "dtype");  // throws: Python
    } else if (spec.kind == AttrKind::Bool) {
      bool b = spec.default_value.b;
      if (v && !PyBool_Check(v)) return false;
      if (v) b = v == Py_True;
      if (!v && (!spec.default_value.has_default || spec.default_value.is_none)) return false;
      if (name == "keepdim") out->keepdim = b;
      else kernel->emplace_back(spec.name, AttrValue::of_bool(b));
    } else {
      return false;
    }
  }
  return true;
}

namespace {

// The int range of an integer dtype (false: not one).
bool int_range(DType d, int64_t* lo, int64_t* hi) {
  switch (d) {
    case DType::Int8: *lo = INT8_MIN; *hi = INT8_MAX; return true;
    case DType::UInt8: *lo = 0; *hi = UINT8_MAX; return true;
    case DType::Int16: *lo = INT16_MIN; *hi = INT16_MAX; return true;
    case DType::Int32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
    case DType::Int64: *lo = INT64_MIN; *hi = INT64_MAX; return true;
    default: return false;
  }
}

}  // namespace

// promotion.scalar_for_dtype for a plain Python bool / int / float; false: the Python path
// decides (an int that does not fit the dtype raises there).
bool value_for_dtype(PyObject* v, DType dtype, AttrValue* out) {
  int64_t lo = 0, hi = 0;
  const bool integer = int_range(dtype, &lo, &hi);
  if (PyBool_Check(v)) {
    *out = AttrValue::of_bool(v == Py_True);
    return true;
  }
  int64_t i;
  if (plain_int(v, &i)) {
    if (integer && (i < lo || i > hi)) return false;  // "does not fit in <dtype>"
    *out = AttrValue::of_int(i);
    return true;
  }
  if (!PyFloat_CheckExact(v)) return false;
  const double f = PyFloat_AS_DOUBLE(v);
  if (!integer) {
    *out = AttrValue::of_float(f);
    return true;
  }
  // into an integer dtype as `cast` converts: truncated toward zero, saturated, NaN -> 0
  const double t = std::trunc(f);
  *out = AttrValue::of_int(std::isnan(t) ? 0
                           : t <= static_cast<double>(lo) ? lo
                           : t >= static_cast<double>(hi) ? hi
                                                          : static_cast<int64_t>(t));
  return true;
}

}  // namespace hwport::pipeline
