// The creation families of the op-call pipeline (fill, full, zeros, ones: `creation`;
// arange): the attributes as phi_ops/dispatch.py normalizes them (shape, the value as
// promotion.scalar_for_dtype gives it, the dtype by name), the place (`place=`, None: the
// current device) as _core.resolve_place resolves it, then the kernel into a fresh output. A
// composite runs here only with its own kernel; else its decomposition (the Python path).
#include <Python.h>

#include <cstring>

#include "infer_meta.h"
#include "kernel_cache.h"
#include "py_convert.h"
#include "pipeline_run.h"

namespace hwport::pipeline {

namespace {

// The device of the call's `place=` (the slot after the attributes of an op without inputs).
Device* place_of_call(const OpSpec& op, const BoundArgs& a) {
  PyObject* place = a.slot[op.num_inputs + op.num_attrs];
  return device_from_py(place ? place : Py_None);  // throws on a bad place: Python's message
}

// A dtype attribute: given, else its default (false: None where None is refused, or a
// default of None that the caller must infer: *inferred).
bool dtype_attr(const AttrSpec& spec, PyObject* v, const OpSpec& op, DType* out,
                bool* inferred) {
  *inferred = false;
  if (v && v != Py_None) {
    *out = dtype_from_py(v, op.name, spec.name);
    return true;
  }
  if (!spec.default_value.has_default) return false;
  if (spec.default_value.is_none) {
    *inferred = true;  // full: from fill_value; arange: from its bounds
    return true;
  }
  if (v == Py_None) return false;  // "None is not allowed"
  *out = static_cast<DType>(spec.default_value.i);
  return true;
}

// A float attribute of arange: a plain int or float (absent: its default; None: *none).
bool number_attr(const AttrSpec& spec, PyObject* v, Number* out, bool* none) {
  *none = false;
  if (!v) {
    if (spec.default_value.is_none) {
      *none = true;
      return true;
    }
    out->is_int = !spec.default_value.is_float;
    out->i = spec.default_value.i;
    out->f = spec.default_value.f;
    return spec.default_value.has_default;
  }
  if (v == Py_None) {
    *none = spec.default_value.is_none;
    return *none;
  }
  if (PyFloat_CheckExact(v)) {
    out->is_int = false;
    out->f = PyFloat_AS_DOUBLE(v);
    return true;
  }
  out->is_int = true;
  return plain_int(v, &out->i);  // bools (ints to numpy, not to the count): Python's rule
}

AttrValue number_value(const Number& n) {
  return n.is_int ? AttrValue::of_int(n.i) : AttrValue::of_float(n.f);
}

PyObject* launch_creation(const OpSpec& op, const Shape& shape, DType dtype, Device* device,
                          Attrs&& attrs) {
  if (!op.primitive && !native_kernel(op, device, dtype)) return nullptr;
  Tensor out = Tensor::empty(shape, dtype, device, op.name);
  launch(op, dtype, device, nullptr, 0, &out, attrs);
  return to_python(std::move(out));
}

}  // namespace

// fill(shape, value, dtype), full(shape, fill_value, dtype=None), zeros/ones(shape, dtype).
bool creation_call(const OpSpec& op, const BoundArgs& a, Shape* shape, DType* out,
                   Attrs* attrs) {
  std::vector<int64_t> given;
  PyObject* value = nullptr;
  DType dtype = DType::Float32;
  bool inferred = false;
  for (int k = 0; k < op.num_attrs; ++k) {  // shape, then the value (if any), then dtype
    const AttrSpec& spec = op.attrs[k];
    PyObject* v = a.slot[op.num_inputs + k];
    if (spec.kind == AttrKind::Ints && (!v || v == Py_None || !int_list(v, &given)))
      return false;
    if (spec.kind == AttrKind::Float && !(value = v)) return false;  // required
    if (spec.kind == AttrKind::DType && !dtype_attr(spec, v, op, &dtype, &inferred))
      return false;
  }
  if (inferred) {  // full: bool -> bool, int -> int64, float -> float32
    if (!value) return false;
    dtype = PyBool_Check(value) ? DType::Bool
            : PyLong_CheckExact(value) ? DType::Int64 : DType::Float32;
  }
  if (!infer_creation(op, given, dtype, shape)) return false;
  AttrValue shape_attr;
  shape_attr.type = HWP_ATTR_INT64_ARRAY;
  shape_attr.ints = *shape;
  attrs->emplace_back("shape", std::move(shape_attr));
  for (int k = 0; k < op.num_attrs; ++k) {  // the value under the op's own name
    if (op.attrs[k].kind != AttrKind::Float) continue;
    AttrValue v;
    if (!value_for_dtype(value, dtype, &v)) return false;
    attrs->emplace_back(op.attrs[k].name, std::move(v));
  }
  AttrValue name;
  name.type = HWP_ATTR_STRING;
  name.s = dtype_name(dtype);
  attrs->emplace_back("dtype", std::move(name));
  *out = dtype;
  return true;
}

namespace {

using CreationCall = bool (*)(const OpSpec&, const BoundArgs&, Shape*, DType*, Attrs*);

PyObject* run_planned(CreationCall call, const OpSpec& op, const BoundArgs& a) {
  Shape shape;
  DType dtype;
  Attrs attrs;
  if (!call(op, a, &shape, &dtype, &attrs)) return nullptr;
  return launch_creation(op, shape, dtype, place_of_call(op, a), std::move(attrs));
}

void add_dtype_name(DType dtype, Attrs* attrs) {
  AttrValue name;
  name.type = HWP_ATTR_STRING;
  name.s = dtype_name(dtype);
  attrs->emplace_back("dtype", std::move(name));
}

}  // namespace

PyObject* run_creation(const OpSpec& op, const BoundArgs& a) {
  return run_planned(creation_call, op, a);
}

// eye(n, m=None, dtype): the attributes as eye's plan has them (m resolved).
bool eye_call(const OpSpec& op, const BoundArgs& a, Shape* shape, DType* out, Attrs* attrs) {
  int64_t n = 0, m = 0;
  PyObject* vn = a.slot[op.num_inputs];
  PyObject* vm = a.slot[op.num_inputs + 1];
  const bool has_m = vm && vm != Py_None;
  bool inferred = false;
  if (!vn || !plain_int(vn, &n) || (has_m && !plain_int(vm, &m)) ||
      !dtype_attr(op.attrs[2], a.slot[op.num_inputs + 2], op, out, &inferred) || inferred ||
      !infer_eye(op, n, has_m ? &m : nullptr, *out, shape))
    return false;
  attrs->emplace_back("n", AttrValue::of_int(n));
  attrs->emplace_back("m", AttrValue::of_int((*shape)[1]));
  add_dtype_name(*out, attrs);
  return true;
}

PyObject* run_eye(const OpSpec& op, const BoundArgs& a) { return run_planned(eye_call, op, a); }

// linspace(start, stop, num, dtype): start and stop plain numbers (bools as Python keeps them:
// bools), num a plain int.
bool linspace_call(const OpSpec& op, const BoundArgs& a, Shape* shape, DType* out,
                   Attrs* attrs) {
  Number bound[2];
  for (int k = 0; k < 2; ++k) {
    PyObject* v = a.slot[op.num_inputs + k];
    bool none = false;
    if (!v) return false;  // required
    if (PyBool_Check(v)) {
      bound[k].i = v == Py_True;
    } else if (!number_attr(op.attrs[k], v, &bound[k], &none) || none) {
      return false;
    }
  }
  int64_t num = 0;
  PyObject* vnum = a.slot[op.num_inputs + 2];
  bool inferred = false;
  if (!vnum || !plain_int(vnum, &num) ||
      !dtype_attr(op.attrs[3], a.slot[op.num_inputs + 3], op, out, &inferred) || inferred ||
      !infer_linspace(op, num, *out, shape))
    return false;
  attrs->emplace_back("start", number_value(bound[0]));
  attrs->emplace_back("stop", number_value(bound[1]));
  attrs->emplace_back("num", AttrValue::of_int(num));
  add_dtype_name(*out, attrs);
  return true;
}

PyObject* run_linspace(const OpSpec& op, const BoundArgs& a) {
  return run_planned(linspace_call, op, a);
}

// arange(start=0, end=None, step=1, dtype=None)
bool arange_call(const OpSpec& op, const BoundArgs& a, ArangePlan* plan, Attrs* attrs) {
  Number n[3];
  bool none[3];
  for (int k = 0; k < 3; ++k)
    if (!number_attr(op.attrs[k], a.slot[op.num_inputs + k], &n[k], &none[k])) return false;
  if (none[0] || none[2]) return false;
  DType dtype = DType::Int64;
  bool inferred = false;
  if (!dtype_attr(op.attrs[3], a.slot[op.num_inputs + 3], op, &dtype, &inferred))
    return false;
  if (!infer_arange(op, n[0], none[1] ? nullptr : &n[1], n[2], !inferred, dtype, plan))
    return false;
  attrs->emplace_back("start", number_value(plan->start));
  attrs->emplace_back("end", number_value(plan->end));
  attrs->emplace_back("step", number_value(plan->step));
  AttrValue name;
  name.type = HWP_ATTR_STRING;
  name.s = dtype_name(plan->out);
  attrs->emplace_back("dtype", std::move(name));
  return true;
}

PyObject* run_arange(const OpSpec& op, const BoundArgs& a) {
  ArangePlan plan;
  Attrs attrs;
  if (!arange_call(op, a, &plan, &attrs)) return nullptr;
  return launch_creation(op, {plan.n}, plan.out, place_of_call(op, a), std::move(attrs));
}

// full_like(x, fill_value, dtype=None), zeros_like / ones_like(x, dtype=None): x's shape,
// the dtype given (else x's), full_like's value as promotion.scalar_for_dtype gives it.
bool like_call(const OpSpec& op, const BoundArgs& a, const MetaIn& x, DType* out,
               Attrs* attrs) {
  PyObject* value = nullptr;
  DType dtype = x.dtype;
  bool inferred = false;
  const AttrSpec* value_spec = nullptr;
  for (int k = 0; k < op.num_attrs; ++k) {
    const AttrSpec& spec = op.attrs[k];
    PyObject* v = a.slot[op.num_inputs + k];
    if (spec.kind == AttrKind::Float) {
      if (!(value = v)) return false;  // required
      value_spec = &spec;
    } else if (spec.kind == AttrKind::DType) {
      if (!dtype_attr(spec, v, op, &dtype, &inferred)) return false;
    }
  }
  if (!infer_like(op, x, !inferred, dtype, out)) return false;
  if (value_spec) {
    AttrValue v;
    if (!value_for_dtype(value, *out, &v)) return false;
    attrs->emplace_back(value_spec->name, std::move(v));
  }
  AttrValue name;
  name.type = HWP_ATTR_STRING;
  name.s = dtype_name(*out);
  attrs->emplace_back("dtype", std::move(name));
  return true;
}

PyObject* run_like(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  DType dtype;
  Attrs attrs;
  if (!x || !like_call(op, a, {&x->shape, x->dtype}, &dtype, &attrs)) return nullptr;
  Device* device = x->device();
  if (native_kernel(op, device, x->dtype))
    return run_one_input_composite(op, x, x->shape, dtype, attrs);
  // No kernel of its own: the decomposition is one fill(shape of x, value, dtype), launched
  // here (zeros_like runs in every embedding and gather backward; the Python path costs ~10x).
  if (SelectionProbe* p = probe_for(op)) {  // the decomposition's path, keyed by x as in Python
    p->formula = true;
    p->key = x->dtype;
    p->device = device;
    if (p->dry) Py_RETURN_NONE;
  }
  static const OpSpec* const fill = op_spec("fill");
  AttrValue value = AttrValue::of_int(std::strcmp(op.name, "ones_like") == 0 ? 1 : 0);
  for (const auto& [name, v] : attrs)
    if (name == "fill_value") value = v;
  AttrValue shape;
  shape.type = HWP_ATTR_INT64_ARRAY;
  shape.ints = x->shape;
  Attrs fill_attrs;
  fill_attrs.emplace_back("shape", std::move(shape));
  fill_attrs.emplace_back("value", std::move(value));
  add_dtype_name(dtype, &fill_attrs);
  return launch_creation(*fill, x->shape, dtype, device, std::move(fill_attrs));
}

}  // namespace hwport::pipeline

namespace hwport::pipeline {

// uniform(shape, seed, low, high, offset, dtype), normal(shape, seed, mean, std, offset,
// dtype): the attributes as phi_ops/dispatch.py _attrs normalizes them (ints exact, a float
// attribute an int where an int is given), in ops.yaml's order, shape checked and dtype named.
bool random_call(const OpSpec& op, const BoundArgs& a, Shape* shape, DType* out, Attrs* attrs) {
  std::vector<int64_t> given;
  DType dtype = DType::Float32;
  bool inferred = false;
  Attrs values;
  for (int k = 0; k < op.num_attrs; ++k) {
    const AttrSpec& spec = op.attrs[k];
    const AttrDefault& def = spec.default_value;
    PyObject* v = a.slot[op.num_inputs + k];
    switch (spec.kind) {
      case AttrKind::Ints:
        if (!v || v == Py_None || !int_list(v, &given)) return false;
        break;
      case AttrKind::DType:
        if (!dtype_attr(spec, v, op, &dtype, &inferred) || inferred) return false;
        break;
      case AttrKind::Int: {
        int64_t x = def.i;
        if (v ? !plain_int(v, &x) : !def.has_default || def.is_none) return false;
        values.emplace_back(spec.name, AttrValue::of_int(x));
        break;
      }
      case AttrKind::Float: {
        if (!v) {
          if (!def.has_default || def.is_none) return false;
          values.emplace_back(spec.name, def.is_float ? AttrValue::of_float(def.f)
                                                      : AttrValue::of_int(def.i));
        } else if (PyFloat_CheckExact(v)) {
          values.emplace_back(spec.name, AttrValue::of_float(PyFloat_AS_DOUBLE(v)));
        } else {
          int64_t x;  // an int stays exact (dispatch._number); beyond int64: Python's rule
          if (!plain_int(v, &x)) return false;
          values.emplace_back(spec.name, AttrValue::of_int(x));
        }
        break;
      }
      default: return false;
    }
  }
  if (!infer_creation(op, given, dtype, shape)) return false;
  AttrValue shape_attr;
  shape_attr.type = HWP_ATTR_INT64_ARRAY;
  shape_attr.ints = *shape;
  attrs->emplace_back("shape", std::move(shape_attr));
  for (auto& nv : values) attrs->push_back(std::move(nv));
  add_dtype_name(dtype, attrs);
  *out = dtype;
  return true;
}

// uniform: its kernel; normal: its kernel where the device has one, else (after these checks)
// its decomposition on the Python path, the one source of it until ops.yaml's formula grammar
// can say it.
PyObject* run_random(const OpSpec& op, const BoundArgs& a) {
  Shape shape;
  DType dtype;
  Attrs attrs;
  if (!random_call(op, a, &shape, &dtype, &attrs)) return nullptr;
  Device* device = place_of_call(op, a);
  if (op.primitive || native_kernel(op, device, dtype))
    return launch_creation(op, shape, dtype, device, std::move(attrs));
  return nullptr;
}

}  // namespace hwport::pipeline
