// The norm, matmul, concat and pad families of the op-call pipeline: each does what
// phi_ops/dispatch.py does for the op (its _launch_matmul, _fused_kernel_fits), so results
// are identical.
#include <cmath>
#include <cstring>
#include <vector>

#include <pybind11/pybind11.h>

#include "infer_meta.h"
#include "jit_composite.h"
#include "kernel_cache.h"
#include "ops.h"
#include "pipeline_run.h"

namespace hwport::pipeline {

bool unary_attrs_valid(const OpSpec& op, const Attrs& attrs) {
  if (op.num_attrs == 0) return true;  // most unary ops: no name comparison on their calls
  if (std::strcmp(op.name, "softplus") == 0) {
    double beta = 0;
    return attr_number(attrs, "beta", &beta) && beta != 0 && !std::isnan(beta);
  }
  return true;
}

namespace {

Tensor swap_last(Tensor t) {
  const size_t n = t.shape.size();
  std::swap(t.shape[n - 1], t.shape[n - 2]);
  std::swap(t.strides[n - 1], t.strides[n - 2]);
  return t;
}

}  // namespace

bool fused_kernel_fits(const OpSpec& op, Device* device, DType key, const Tensor* const* in,
                       int n) {
  if (op.primitive) return true;
  if (!native_kernel(op, device, key)) return false;
  for (int i = 0; i < n; ++i)
    if (in[i] && is_floating(in[i]->dtype) && in[i]->dtype != key) return false;
  return true;
}

bool bool_attr(const OpSpec& op, const BoundArgs& a, int k, bool* out) {
  PyObject* v = a.slot[op.num_inputs + k];
  if (!v) {
    *out = op.attrs[k].default_value.b;
    return op.attrs[k].default_value.has_default && !op.attrs[k].default_value.is_none;
  }
  if (!PyBool_Check(v)) return false;
  *out = v == Py_True;
  return true;
}

bool optional_int(const BoundArgs& a, int slot, bool* has, int64_t* out) {
  PyObject* v = a.slot[slot];
  *has = v && v != Py_None;
  return !*has || plain_int(v, out);
}

Tensor contiguous_view(const Tensor& t, const Shape& shape) {  // dispatch.reshape_view
  Tensor c = contiguous(t);
  c.shape = shape;
  c.strides = contiguous_strides(shape);
  return c;
}

// layer_norm(x, weight?, bias?) / rms_norm(x, weight?): attrs as the Python path passes them
// (normalized_ndim, epsilon, has_<input> per affine input).
PyObject* run_norm(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  if (!x) return nullptr;
  const int n = op.num_inputs;
  const Tensor* in[3] = {x, nullptr, nullptr};
  MetaIn metas[3];
  const MetaIn* affine[2] = {nullptr, nullptr};
  Device* device = x->device();
  for (int i = 1; i < n; ++i) {
    PyObject* v = a.slot[i];
    if (!v || v == Py_None) continue;
    const Tensor* t = as_tensor(v);
    if (!t || t->device() != device) return nullptr;
    in[i] = t;
    metas[i] = {&t->shape, t->dtype};
    affine[i - 1] = &metas[i];
  }
  Attrs attrs;
  DType unused = x->dtype;
  if (!kernel_attrs(op, a, x->ndim(), &attrs, &unused)) return nullptr;
  double nd = 0, eps = 0;
  if (!attr_number(attrs, "normalized_ndim", &nd) || !attr_number(attrs, "epsilon", &eps))
    return nullptr;
  ElementwisePlan plan;
  if (!infer_norm(op, {&x->shape, x->dtype}, affine, n - 1, static_cast<int64_t>(nd), eps,
                  &plan))
    return nullptr;
  if (!fused_kernel_fits(op, device, plan.compute, in, n)) {
    // No kernel at all: the eager JIT's one fused kernel of the decomposition first (a device
    // with a codegen target), else the Python path's decomposition.
    if (native_kernel(op, device, plan.compute) || probe_for(op)) return nullptr;
    return jit_composite_for(op, a.slot, a, plan.compute, device);
  }
  std::vector<const Tensor*> given;
  for (int i = 0; i < n; ++i) {
    if (i) attrs.emplace_back(std::string("has_") + op.inputs[i].name,
                              AttrValue::of_bool(in[i] != nullptr));
    if (in[i]) given.push_back(in[i]);
  }
  Tensor out = Tensor::empty(plan.shape, plan.out, device, op.name);
  launch(op, plan.compute, device, given.data(), static_cast<int>(given.size()), &out, attrs);
  return to_python(std::move(out));
}

PyObject* run_matmul(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  Tensor* y = a.slot[1] ? as_tensor(a.slot[1]) : nullptr;
  bool tx = false, ty = false;
  if (!x || !y || !bool_attr(op, a, 0, &tx) || !bool_attr(op, a, 1, &ty)) return nullptr;
  Device* device = x->device();
  if (y->device() != device) return nullptr;
  MatmulPlan plan;
  if (!infer_matmul(op, {&x->shape, x->dtype}, {&y->shape, y->dtype}, tx, ty, &plan))
    return nullptr;
  if (plan.k == 0) return nullptr;  // zeros: the Python path's form
  Tensor vx = cast(*x, plan.dtype), vy = cast(*y, plan.dtype);
  if (vx.ndim() == 1) vx = contiguous_view(vx, {1, vx.shape[0]});
  if (vy.ndim() == 1) vy = contiguous_view(vy, {vy.shape[0], 1});
  if (tx && x->ndim() >= 2) vx = swap_last(std::move(vx));
  if (ty && y->ndim() >= 2) vy = swap_last(std::move(vy));
  if (x->ndim() >= 3 && y->ndim() <= 2 && !tx) {
    // x [batch.., m, k] @ y [k, n]: one [batch * m, k] @ [k, n] (a linear layer's shape), not
    // a batch of small products over a broadcast y.
    int64_t rows = plan.m;
    for (int64_t b : plan.batch) rows *= b;
    vx = contiguous_view(vx, {rows, plan.k});
    Tensor out = Tensor::empty({rows, plan.n}, plan.dtype, device, op.name);
    const Tensor* in[] = {&vx, &vy};
    launch(op, plan.dtype, device, in, 2, &out, Attrs{});
    out.shape = plan.shape;
    out.strides = contiguous_strides(plan.shape);
    return to_python(std::move(out));
  }
  Shape xs = plan.batch, ys = plan.batch;
  xs.insert(xs.end(), {plan.m, plan.k});
  ys.insert(ys.end(), {plan.k, plan.n});
  vx = broadcast_to(vx, xs);
  vy = broadcast_to(vy, ys);
  Shape full = plan.batch;
  full.insert(full.end(), {plan.m, plan.n});
  Tensor out = Tensor::empty(full, plan.dtype, device, op.name);
  const Tensor* in[] = {&vx, &vy};
  launch(op, plan.dtype, device, in, 2, &out, Attrs{});
  if (out.shape != plan.shape) {  // a vector operand's dim dropped: a view of the result
    out.shape = plan.shape;
    out.strides = contiguous_strides(plan.shape);
  }
  return to_python(std::move(out));
}

namespace {

// The tensors of a list/tuple argument, all on one device, with their metas; false (the Python
// path) for anything else.
bool tensor_list(PyObject* seq, std::vector<const Tensor*>* xs, std::vector<MetaIn>* metas) {
  if (!seq || !(PyList_Check(seq) || PyTuple_Check(seq))) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject** items = PySequence_Fast_ITEMS(seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const Tensor* t = as_tensor(items[i]);
    if (!t || (i && t->device() != (*xs)[0]->device())) return false;
    xs->push_back(t);
    metas->push_back({&t->shape, t->dtype});
  }
  return true;
}

// Points each of xs not of `dtype` at its cast, kept in *casted.
void cast_all(std::vector<const Tensor*>* xs, DType dtype, std::vector<Tensor>* casted) {
  casted->reserve(xs->size());
  for (const Tensor*& t : *xs) {
    if (t->dtype == dtype) continue;
    casted->push_back(cast(*t, dtype));
    t = &casted->back();
  }
}

// Casts xs to `dtype` and runs the op's kernel with its normalized `axis` (concat, stack).
PyObject* launch_along_axis(const OpSpec& op, std::vector<const Tensor*>* xs, const Shape& shape,
                            DType dtype, Device* device, int64_t norm_axis) {
  std::vector<Tensor> casted;
  cast_all(xs, dtype, &casted);
  Tensor out = Tensor::empty(shape, dtype, device, op.name);
  Attrs attrs;
  attrs.emplace_back("axis", AttrValue::of_int(norm_axis));
  launch(op, dtype, device, xs->data(), static_cast<int>(xs->size()), &out, attrs);
  return to_python(std::move(out));
}

}  // namespace

PyObject* run_concat(const OpSpec& op, const BoundArgs& a) {
  int64_t axis = 0;
  PyObject* axis_obj = a.slot[1];
  if (axis_obj && !plain_int(axis_obj, &axis)) return nullptr;
  if (!axis_obj) axis = op.attrs[0].default_value.i;
  std::vector<const Tensor*> xs;
  std::vector<MetaIn> metas;
  if (!tensor_list(a.slot[0], &xs, &metas)) return nullptr;
  Shape shape;
  DType dtype;
  int64_t norm_axis;
  if (!infer_concat(op, metas, axis, &shape, &dtype, &norm_axis)) return nullptr;
  Device* device = xs[0]->device();
  return launch_along_axis(op, &xs, shape, dtype, device, norm_axis);
}

// pad(x, pad, value=0.0): the value as promotion.scalar_for_dtype gives it (x's dtype), pad
// extended to 2 * ndim (phi_ops/dispatch.py _launch).
bool pad_call(const OpSpec& op, const BoundArgs& a, const MetaIn& x, Shape* shape,
              Attrs* attrs) {
  PyObject* given = a.slot[op.num_inputs];
  std::vector<int64_t> pad, full;
  if (!given || given == Py_None || !int_list(given, &pad) ||
      !infer_pad(op, x, pad, &full, shape))
    return false;
  PyObject* v = a.slot[op.num_inputs + 1];
  const AttrDefault& def = op.attrs[1].default_value;
  pybind11::object fallback;  // the default, as Python holds it
  if (!v) {
    fallback = def.is_float ? pybind11::object(pybind11::float_(def.f))
                            : pybind11::object(pybind11::int_(def.i));
    v = fallback.ptr();
  }
  AttrValue value;
  if (!value_for_dtype(v, x.dtype, &value)) return false;
  AttrValue pad_attr;
  pad_attr.type = HWP_ATTR_INT64_ARRAY;
  pad_attr.ints = std::move(full);
  attrs->emplace_back("pad", std::move(pad_attr));
  attrs->emplace_back("value", std::move(value));
  return true;
}

PyObject* run_pad(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  Shape shape;
  Attrs attrs;
  if (!x || !pad_call(op, a, {&x->shape, x->dtype}, &shape, &attrs)) return nullptr;
  Tensor out = Tensor::empty(shape, x->dtype, x->device(), op.name);
  const Tensor* in[] = {x};
  launch(op, x->dtype, x->device(), in, 1, &out, attrs);
  return to_python(std::move(out));
}

// stack(xs, axis=0): a composite; with the device's own kernel, inputs cast to the promoted
// dtype (phi_ops/dispatch.py _prepared_inputs), else the Python path's decomposition.
PyObject* run_stack(const OpSpec& op, const BoundArgs& a) {
  int64_t axis = op.attrs[0].default_value.i, norm_axis = 0;
  if (a.slot[1] && !plain_int(a.slot[1], &axis)) return nullptr;
  std::vector<const Tensor*> xs;
  std::vector<MetaIn> metas;
  if (!tensor_list(a.slot[0], &xs, &metas)) return nullptr;
  Shape shape;
  DType dtype;
  if (!infer_stack(op, metas, axis, &shape, &dtype, &norm_axis)) return nullptr;
  Device* device = xs[0]->device();
  if (!fused_kernel_fits(op, device, dtype, xs.data(), static_cast<int>(xs.size())))
    return nullptr;
  return launch_along_axis(op, &xs, shape, dtype, device, norm_axis);
}

// tile(x, repeat_times): repeats left-padded to x's rank and x's shape to theirs.
bool tile_call(const OpSpec& op, const BoundArgs& a, const MetaIn& x, Shape* shape,
               Attrs* attrs) {
  PyObject* given = a.slot[op.num_inputs];
  std::vector<int64_t> repeats;
  AttrValue full;
  full.type = HWP_ATTR_INT64_ARRAY;
  if (!given || given == Py_None || !int_list(given, &repeats) ||
      !infer_tile(op, x, repeats, &full.ints, shape))
    return false;
  attrs->emplace_back("repeats", std::move(full));
  return true;
}

PyObject* run_one_input_composite(const OpSpec& op, const Tensor* x, const Shape& shape,
                                  DType dtype, const Attrs& attrs) {
  const Tensor* in[] = {x};
  if (!fused_kernel_fits(op, x->device(), x->dtype, in, 1)) return nullptr;
  Tensor out = Tensor::empty(shape, dtype, x->device(), op.name);
  launch(op, x->dtype, x->device(), in, 1, &out, attrs);
  return to_python(std::move(out));
}

bool roll_call(const OpSpec& op, const BoundArgs& a, const MetaIn& x, Attrs* attrs) {
  PyObject* given = a.slot[op.num_inputs];
  std::vector<int64_t> axes;
  AttrValue shifts, norm;
  shifts.type = norm.type = HWP_ATTR_INT64_ARRAY;
  if (!given || given == Py_None || !int_list(given, &shifts.ints) ||
      !int_list(a.slot[op.num_inputs + 1], &axes) ||  // absent or None: []
      !infer_roll(op, x, shifts.ints, axes, &norm.ints))
    return false;
  attrs->emplace_back("shifts", std::move(shifts));
  attrs->emplace_back("axis", std::move(norm));
  return true;
}

// roll(x, shifts, axis=[]): a composite; with the device's own kernel, else the Python
// path's decomposition.
PyObject* run_roll(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  Attrs attrs;
  if (!x || !roll_call(op, a, {&x->shape, x->dtype}, &attrs)) return nullptr;
  return run_one_input_composite(op, x, x->shape, x->dtype, attrs);
}

bool topk_call(const OpSpec& op, const BoundArgs& a, const MetaIn& x, Shape* shape,
               int64_t* norm_axis) {
  int64_t k = 0, axis = op.attrs[1].default_value.i;
  bool largest = true;
  PyObject* vk = a.slot[op.num_inputs];
  PyObject* vaxis = a.slot[op.num_inputs + 1];
  return vk && plain_int(vk, &k) && (!vaxis || plain_int(vaxis, &axis)) &&
         bool_attr(op, a, 2, &largest) && infer_topk(op, x, k, axis, shape, norm_axis);
}

// topk(x, k, axis=-1, largest=True) -> (values, indices): the device's own kernel (two
// outputs), else phi_ops/decompositions.py topk's sub-op kernels in its order: argsort along
// the axis (descending where largest), the first k of it copied, take_along_axis of x. A 0-d
// x takes the Python path.
PyObject* run_topk(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  Shape shape;
  int64_t axis = 0;
  bool largest = true;
  if (!x || x->ndim() == 0 || !topk_call(op, a, {&x->shape, x->dtype}, &shape, &axis) ||
      !bool_attr(op, a, 2, &largest))
    return nullptr;
  Device* device = x->device();
  const int64_t k = shape[axis];
  Tensor values = Tensor::empty(shape, x->dtype, device, op.name);
  Tensor indices = Tensor::empty(shape, DType::Int64, device, op.name);
  const Tensor* in[] = {x};
  if (native_kernel(op, device, x->dtype)) {
    Attrs attrs;
    attrs.emplace_back("k", AttrValue::of_int(k));
    attrs.emplace_back("axis", AttrValue::of_int(axis));
    attrs.emplace_back("largest", AttrValue::of_bool(largest));
    Tensor* outs[] = {&values, &indices};
    if (values.numel() > 0) run_kernel(registry_id(op), x->dtype, device, in, 1, outs, 2, attrs);
  } else {
    static const OpSpec* const argsort = op_spec("argsort");
    static const OpSpec* const along = op_spec("take_along_axis");
    Tensor order = Tensor::empty(x->shape, DType::Int64, device, "argsort");
    Attrs sort_attrs;
    sort_attrs.emplace_back("axis", AttrValue::of_int(axis));
    sort_attrs.emplace_back("descending", AttrValue::of_bool(largest));
    launch(*argsort, x->dtype, device, in, 1, &order, sort_attrs);
    Tensor first = order;  // order[..., :k, ...] along axis, copied
    first.shape[axis] = k;
    if (first.numel() > 0) indices = contiguous(first);
    const Tensor* ins[] = {x, &indices};
    Attrs take_attrs;
    take_attrs.emplace_back("axis", AttrValue::of_int(axis));
    launch(*along, x->dtype, device, ins, 2, &values, take_attrs);
  }
  return pybind11::make_tuple(std::move(values), std::move(indices)).release().ptr();
}

// tile(x, repeats): a composite; with the device's own kernel, else the Python path's
// decomposition.
PyObject* run_tile(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  Shape shape;
  Attrs attrs;
  if (!x || !tile_call(op, a, {&x->shape, x->dtype}, &shape, &attrs)) return nullptr;
  return run_one_input_composite(op, x, shape, x->dtype, attrs);
}

// tril / triu(x, diagonal=0): a composite; with the device's own kernel, else the Python path.
PyObject* run_matrix_unary(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  int64_t diagonal = op.attrs[0].default_value.i;
  if (!x || (a.slot[1] && !plain_int(a.slot[1], &diagonal)) ||
      !infer_matrix_unary(op, {&x->shape, x->dtype}))
    return nullptr;
  const Tensor* in[] = {x};
  if (!fused_kernel_fits(op, x->device(), x->dtype, in, 1)) return nullptr;
  Tensor out = Tensor::empty(x->shape, x->dtype, x->device(), op.name);
  Attrs attrs;
  attrs.emplace_back("diagonal", AttrValue::of_int(diagonal));
  launch(op, x->dtype, x->device(), in, 1, &out, attrs);
  return to_python(std::move(out));
}

}  // namespace hwport::pipeline
