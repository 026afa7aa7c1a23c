// The nn families of the op-call pipeline: infer-meta in C++ (infer_meta_nn_linalg.cpp,
// infer_meta_elementwise.cpp). linear and embedding run here only where the device has the
// op's own kernel and every floating input has the key dtype (else the Python path decomposes
// them), launched as phi_ops/dispatch.py _launch does (inputs as given); dropout,
// rotary_embedding, scaled_dot_product_attention and cross_entropy run their kernel, else
// (after these checks) their C++ formula where ops.yaml has one (attention, cross_entropy_grad)
// or their decompositions on the Python path.
#include "infer_meta.h"
#include "kernel_cache.h"
#include "ops.h"
#include "pipeline_run.h"

namespace hwport::pipeline {

// linear(x, weight, bias=None)
PyObject* run_linear(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  Tensor* w = a.slot[1] ? as_tensor(a.slot[1]) : nullptr;
  PyObject* b_obj = a.slot[2];
  Tensor* b = b_obj && b_obj != Py_None ? as_tensor(b_obj) : nullptr;
  if (!x || !w || (b_obj && b_obj != Py_None && !b)) return nullptr;
  Device* device = x->device();
  if (w->device() != device || (b && b->device() != device)) return nullptr;
  const MetaIn bias{b ? &b->shape : nullptr, b ? b->dtype : DType::Float32};
  Shape shape;
  DType dtype;
  if (!infer_linear(op, {&x->shape, x->dtype}, {&w->shape, w->dtype}, b ? &bias : nullptr,
                    &shape, &dtype))
    return nullptr;
  const Tensor* in[] = {x, w, b};
  // the kernel takes one dtype (an integer weight promotes in the Python decomposition)
  if (w->dtype != x->dtype || (b && b->dtype != x->dtype) ||
      !fused_kernel_fits(op, device, x->dtype, in, 3))
    return nullptr;
  Tensor out = Tensor::empty(shape, dtype, device, op.name);
  Attrs attrs;
  attrs.emplace_back("has_bias", AttrValue::of_bool(b != nullptr));
  launch(op, x->dtype, device, in, b ? 3 : 2, &out, attrs);
  return to_python(std::move(out));
}

// embedding(index, weight): index values checked against weight's rows on the device
PyObject* run_embedding(const OpSpec& op, const BoundArgs& a) {
  Tensor* index = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  Tensor* w = a.slot[1] ? as_tensor(a.slot[1]) : nullptr;
  if (!index || !w || w->device() != index->device()) return nullptr;
  Shape shape;
  int64_t bound = 0;
  if (!infer_embedding(op, {&index->shape, index->dtype}, {&w->shape, w->dtype}, &shape,
                       &bound))
    return nullptr;
  Device* device = index->device();
  const Tensor* in[] = {index, w};
  // keyed by the index: the weight may have any dtype
  if (!fused_kernel_fits(op, device, index->dtype, in, 1) || !index_in_bounds(*index, bound))
    return nullptr;
  Tensor out = Tensor::empty(shape, w->dtype, device, op.name);
  launch(op, index->dtype, device, in, 2, &out, Attrs{});
  return to_python(std::move(out));
}

// dropout(x, p, training, seed, offset): the unary rule and p in [0, 1] (NaN refused), the
// attributes as phi_ops/dispatch.py _attrs gives them.
bool dropout_call(const OpSpec& op, const BoundArgs& a, const MetaIn& x, ElementwisePlan* plan,
                  Attrs* attrs) {
  DType unused = x.dtype;
  double p = 0;
  return kernel_attrs(op, a, static_cast<int64_t>(x.shape->size()), attrs, &unused) &&
         attr_number(*attrs, "p", &p) && p >= 0.0 && p <= 1.0 &&
         infer_unary(op, x, x.dtype, plan);
}

PyObject* run_dropout(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  ElementwisePlan plan;
  Attrs attrs;
  if (!x || !dropout_call(op, a, {&x->shape, x->dtype}, &plan, &attrs) || plan.cast[0])
    return nullptr;
  return run_one_input_composite(op, x, plan.shape, plan.out, attrs);
}

// rotary_embedding(x, cos, sin): the unary rule on x; its last dim even, cos and sin
// broadcasting to x's shape (phi_ops/infer_meta.py _check_rotary).
bool infer_rotary(const OpSpec& op, const MetaIn& x, const MetaIn& cos, const MetaIn& sin,
                  ElementwisePlan* plan) {
  if (x.shape->empty() || x.shape->back() % 2) return false;
  for (const MetaIn* m : {&cos, &sin}) {
    Shape b;
    if (!broadcast(*x.shape, *m->shape, &b) || b != *x.shape) return false;
  }
  return infer_unary(op, x, x.dtype, plan);
}

PyObject* run_rotary(const OpSpec& op, const BoundArgs& a) {
  Tensor* t[3];
  Device* device = tensors_on_one_device(a, 3, t);
  if (!device) return nullptr;
  ElementwisePlan plan;
  if (!infer_rotary(op, {&t[0]->shape, t[0]->dtype}, {&t[1]->shape, t[1]->dtype},
                    {&t[2]->shape, t[2]->dtype}, &plan) || plan.cast[0])
    return nullptr;
  const Tensor* in[] = {t[0], t[1], t[2]};
  if (!fused_kernel_fits(op, device, plan.compute, in, 3)) return nullptr;
  Tensor out = Tensor::empty(plan.shape, plan.out, device, op.name);
  launch(op, plan.compute, device, in, 3, &out, Attrs{});
  return to_python(std::move(out));
}

// adam_update(param, grad, moment1, moment2, beta1, ...): every input of param's shape and
// dtype (phi_ops/infer_meta.py optimizer_update; false: the Python path raises its error).
bool infer_optimizer_update(const OpSpec& op, const MetaIn* const* in, int n) {
  if (!(op.dtypes & (1u << static_cast<unsigned>(in[0]->dtype)))) return false;
  for (int i = 1; i < n; ++i)
    if (*in[i]->shape != *in[0]->shape || in[i]->dtype != in[0]->dtype) return false;
  return true;
}

// The plugin's kernel into fresh outputs (one per input but the gradient), else the Python
// path's decomposition.
PyObject* run_optimizer_update(const OpSpec& op, const BoundArgs& a) {
  constexpr int kMax = 8;
  const int n = op.num_inputs, n_out = n - 1;
  if (n > kMax) return nullptr;
  Tensor* t[kMax];
  MetaIn m[kMax];
  const MetaIn* mp[kMax];
  const Tensor* in[kMax];
  for (int i = 0; i < n; ++i) {
    if (!a.slot[i] || !(t[i] = as_tensor(a.slot[i]))) return nullptr;
    if (t[i]->device() != t[0]->device()) return nullptr;
    m[i] = {&t[i]->shape, t[i]->dtype};
    mp[i] = &m[i];
    in[i] = t[i];
  }
  Device* device = t[0]->device();
  Attrs attrs;
  DType unused = t[0]->dtype;
  if (!infer_optimizer_update(op, mp, n) ||
      !kernel_attrs(op, a, static_cast<int64_t>(t[0]->ndim()), &attrs, &unused) ||
      !fused_kernel_fits(op, device, t[0]->dtype, in, n))
    return nullptr;
  std::vector<Tensor> outs;
  std::vector<Tensor*> out_ptrs;
  outs.reserve(n_out);
  for (int i = 0; i < n_out; ++i)
    outs.push_back(Tensor::empty(t[0]->shape, t[0]->dtype, device, op.name));
  for (Tensor& o : outs) out_ptrs.push_back(&o);
  launch_outputs(op, t[0]->dtype, device, in, n, out_ptrs.data(), n_out, attrs);
  PyObject* result = PyTuple_New(n_out);
  if (!result) return nullptr;
  for (int i = 0; i < n_out; ++i) {
    PyObject* o = to_python(std::move(outs[i]));
    if (!o) {
      Py_DECREF(result);
      return nullptr;
    }
    PyTuple_SET_ITEM(result, i, o);
  }
  return result;
}

// softmax_grad(out, grad, axis), layer_norm_grad / rms_norm_grad(x, grad, weight?,
// normalized_ndim, epsilon): grad of the first input's shape and dtype (phi_ops/infer_meta.py
// grad_like); the kernel's attributes (axis normalized, has_<input> per optional input).
bool grad_like_call(const OpSpec& op, const BoundArgs& a, const MetaIn* const* in, int n,
                    Attrs* attrs) {
  const MetaIn& x = *in[0];
  if (!in[1] || *in[1]->shape != *x.shape || in[1]->dtype != x.dtype ||
      !op.has_kernel_dtype(x.dtype))
    return false;
  DType unused = x.dtype;
  if (!kernel_attrs(op, a, static_cast<int64_t>(x.shape->size()), attrs, &unused)) return false;
  double nd = 0, eps = 0;
  if (!attr_number(*attrs, "normalized_ndim", &nd)) return true;  // softmax_grad: the axis
  ElementwisePlan plan;
  if (!attr_number(*attrs, "epsilon", &eps) ||
      !infer_norm(op, x, in + 2, n - 2, static_cast<int64_t>(nd), eps, &plan))
    return false;
  for (int i = 2; i < n; ++i)
    attrs->emplace_back(std::string("has_") + op.inputs[i].name,
                        AttrValue::of_bool(in[i] != nullptr));
  return true;
}

// The plugin's fused backward kernel, else the C++ formula (every sub-op through the pipeline).
PyObject* run_grad_like(const OpSpec& op, const BoundArgs& a) {
  constexpr int kMax = 4;
  const int n = op.num_inputs;
  if (n > kMax) return nullptr;
  const Tensor* t[kMax] = {};
  MetaIn m[kMax];
  const MetaIn* mp[kMax] = {};
  PyObject* given[kMax] = {};
  Device* device = nullptr;
  for (int i = 0; i < n; ++i) {
    PyObject* v = a.slot[i];
    given[i] = v ? v : Py_None;
    if (!v || v == Py_None) {
      if (!op.inputs[i].optional) return nullptr;
      continue;
    }
    if (!(t[i] = as_tensor(v))) return nullptr;
    if (device && t[i]->device() != device) return nullptr;
    device = t[i]->device();
    m[i] = {&t[i]->shape, t[i]->dtype};
    mp[i] = &m[i];
  }
  Attrs attrs;
  if (!t[0] || !grad_like_call(op, a, mp, n, &attrs)) return nullptr;
  const DType key = t[0]->dtype;
  if (!fused_kernel_fits(op, device, key, t, n)) return select_formula(op, given, a, key, device);
  std::vector<const Tensor*> present;
  for (int i = 0; i < n; ++i)
    if (t[i]) present.push_back(t[i]);
  Tensor out = Tensor::empty(t[0]->shape, key, device, op.name);
  launch(op, key, device, present.data(), static_cast<int>(present.size()), &out, attrs);
  return to_python(std::move(out));
}

// cross_entropy_grad(logits, label, grad, reduction, ignore_index): logits and label as
// cross_entropy checks them, grad of its output's shape and logits' dtype.
bool cross_entropy_grad_call(const OpSpec& op, const BoundArgs& a, const MetaIn& logits,
                             const MetaIn& label, const MetaIn& grad, Attrs* attrs) {
  Shape loss;
  return cross_entropy_call(op, a, logits, label, &loss, attrs) && *grad.shape == loss &&
         grad.dtype == logits.dtype;
}

// The plugin's kernel where every label is a class (an ignored or bad one: the Python path,
// which checks the labels, then runs the same kernel), else the C++ formula.
PyObject* run_cross_entropy_grad(const OpSpec& op, const BoundArgs& a) {
  Tensor* t[3];
  Device* device = tensors_on_one_device(a, 3, t);
  if (!device) return nullptr;
  Attrs attrs;
  if (!cross_entropy_grad_call(op, a, {&t[0]->shape, t[0]->dtype}, {&t[1]->shape, t[1]->dtype},
                               {&t[2]->shape, t[2]->dtype}, &attrs))
    return nullptr;
  const Tensor* in[] = {t[0], t[1], t[2]};
  const DType key = t[0]->dtype;
  if (!fused_kernel_fits(op, device, key, in, 3)) return select_formula(op, a.slot, a, key, device);
  // an ignored or bad label: the Python path (its label check, then this kernel)
  if (!index_in_bounds(*t[1], t[0]->shape[1])) return nullptr;
  Tensor out = Tensor::empty(t[0]->shape, key, device, op.name);
  launch(op, key, device, in, 3, &out, attrs);
  return to_python(std::move(out));
}

namespace {

PyObject* meta_tuple(const Shape& shape, DType out, DType key) {
  PyObject* dims = PyTuple_New(static_cast<Py_ssize_t>(shape.size()));
  if (!dims) return nullptr;
  for (size_t i = 0; i < shape.size(); ++i)
    PyTuple_SET_ITEM(dims, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(shape[i]));
  return Py_BuildValue("(Nss)", dims, dtype_name(out), dtype_name(key));
}

}  // namespace

PyObject* infer_more_meta(const OpSpec& op, const std::vector<MetaIn>& in,
                          const std::vector<bool>& present, const BoundArgs& a) {
  ElementwisePlan plan;
  Attrs attrs;
  switch (op.family) {
    case Family::Random: {
      Shape shape;
      DType dtype;
      if (random_call(op, a, &shape, &dtype, &attrs)) return meta_tuple(shape, dtype, dtype);
      break;
    }
    case Family::Dropout:
      if (dropout_call(op, a, in[0], &plan, &attrs))
        return meta_tuple(plan.shape, plan.out, plan.compute);
      break;
    case Family::Optimizer_update: {
      std::vector<const MetaIn*> ptrs;
      for (size_t i = 0; i < in.size(); ++i) {
        if (!present[i]) Py_RETURN_NONE;
        ptrs.push_back(&in[i]);
      }
      DType unused = in[0].dtype;
      if (infer_optimizer_update(op, ptrs.data(), static_cast<int>(ptrs.size())) &&
          kernel_attrs(op, a, static_cast<int64_t>(in[0].shape->size()), &attrs, &unused))
        return meta_tuple(*in[0].shape, in[0].dtype, in[0].dtype);
      break;
    }
    case Family::Grad_like: {
      std::vector<const MetaIn*> ptrs;
      for (size_t i = 0; i < in.size(); ++i) ptrs.push_back(present[i] ? &in[i] : nullptr);
      if (ptrs.size() >= 2 && ptrs[0] &&
          grad_like_call(op, a, ptrs.data(), static_cast<int>(ptrs.size()), &attrs))
        return meta_tuple(*in[0].shape, in[0].dtype, in[0].dtype);
      break;
    }
    case Family::Rotary:
      if (infer_rotary(op, in[0], in[1], in[2], &plan))
        return meta_tuple(plan.shape, plan.out, plan.compute);
      break;
    case Family::Scatter: {
      int64_t axis = op.attrs[0].default_value.i, norm = 0, bound = 0;
      std::string reduce;
      PyObject* v = a.slot[op.num_inputs];
      if ((!v || plain_int(v, &axis)) && str_attr(a, op.num_inputs + 1, "assign", &reduce) &&
          infer_scatter(op, in[0], in[1], in[2], axis, reduce, &norm, &bound))
        return meta_tuple(*in[0].shape, in[0].dtype, in[0].dtype);
      break;
    }
    case Family::Attention: {
      if (!present[0] || !present[1] || !present[2]) break;
      const MetaIn* ptrs[4] = {&in[0], &in[1], &in[2], present[3] ? &in[3] : nullptr};
      Shape shape;
      DType dtype;
      if (attention_call(op, a, ptrs, &shape, &dtype, &attrs))
        return meta_tuple(shape, dtype, in[0].dtype);
      break;
    }
    case Family::Cross_entropy: {
      Shape shape;
      if (cross_entropy_call(op, a, in[0], in[1], &shape, &attrs))
        return meta_tuple(shape, in[0].dtype, in[0].dtype);
      break;
    }
    case Family::Cross_entropy_grad:
      if (in.size() == 3 && present[0] && present[1] && present[2] &&
          cross_entropy_grad_call(op, a, in[0], in[1], in[2], &attrs))
        return meta_tuple(*in[0].shape, in[0].dtype, in[0].dtype);
      break;
    default: break;
  }
  Py_RETURN_NONE;
}

// scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False,
// scale=None): `in` holds the four metas (attn_mask nullptr where absent).
bool attention_call(const OpSpec& op, const BoundArgs& a, const MetaIn* const* in,
                    Shape* shape, DType* dtype, Attrs* attrs) {
  bool is_causal = false;
  if (!bool_attr(op, a, 0, &is_causal)) return false;
  DType unused = DType::Float32;
  if (!kernel_attrs(op, a, 0, attrs, &unused) ||
      !infer_attention(op, *in[0], *in[1], *in[2], in[3], is_causal, shape, dtype))
    return false;
  attrs->emplace_back("has_attn_mask", AttrValue::of_bool(in[3] != nullptr));
  return true;
}

PyObject* run_attention(const OpSpec& op, const BoundArgs& a) {
  Tensor* t[4] = {nullptr, nullptr, nullptr, nullptr};
  for (int i = 0; i < 4; ++i) {
    PyObject* v = a.slot[i];
    if (i == 3 && (!v || v == Py_None)) break;
    if (!v || !(t[i] = as_tensor(v))) return nullptr;
  }
  Device* device = t[0]->device();
  MetaIn m[4];
  const MetaIn* in[4] = {nullptr, nullptr, nullptr, nullptr};
  for (int i = 0; i < 4; ++i) {
    if (!t[i]) continue;
    if (t[i]->device() != device) return nullptr;
    m[i] = {&t[i]->shape, t[i]->dtype};
    in[i] = &m[i];
  }
  Shape shape;
  DType dtype;
  Attrs attrs;
  const Tensor* ins[] = {t[0], t[1], t[2], t[3]};
  if (!attention_call(op, a, in, &shape, &dtype, &attrs)) return nullptr;
  if (!fused_kernel_fits(op, device, t[0]->dtype, ins, 4)) {
    PyObject* given[4] = {a.slot[0], a.slot[1], a.slot[2], t[3] ? a.slot[3] : Py_None};
    return select_formula(op, given, a, t[0]->dtype, device);
  }
  Tensor out = Tensor::empty(shape, dtype, device, op.name);
  launch(op, t[0]->dtype, device, ins, t[3] ? 4 : 3, &out, attrs);
  return to_python(std::move(out));
}

// cross_entropy(logits, label, reduction="mean", ignore_index=-100)
bool cross_entropy_call(const OpSpec& op, const BoundArgs& a, const MetaIn& logits,
                        const MetaIn& label, Shape* shape, Attrs* attrs) {
  std::string reduction;
  int64_t ignore = op.attrs[1].default_value.i;
  PyObject* v = a.slot[op.num_inputs + 1];
  if (!str_attr(a, op.num_inputs, "mean", &reduction) || (v && !plain_int(v, &ignore)) ||
      !infer_cross_entropy(op, logits, label, reduction, ignore, shape))
    return false;
  AttrValue r;
  r.type = HWP_ATTR_STRING;
  r.s = reduction;
  attrs->emplace_back("reduction", std::move(r));
  attrs->emplace_back("ignore_index", AttrValue::of_int(ignore));
  return true;
}

PyObject* run_cross_entropy(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  Tensor* label = a.slot[1] ? as_tensor(a.slot[1]) : nullptr;
  if (!x || !label || label->device() != x->device()) return nullptr;
  Shape shape;
  Attrs attrs;
  const Tensor* ins[] = {x, label};
  if (!cross_entropy_call(op, a, {&x->shape, x->dtype}, {&label->shape, label->dtype}, &shape,
                          &attrs))
    return nullptr;
  // the kernel where every label is a class; ignored or bad labels: the Python path (its
  // label check names the bad one)
  if (!fused_kernel_fits(op, x->device(), x->dtype, ins, 1) ||
      !index_in_bounds(*label, x->shape[1]))
    return nullptr;
  Tensor out = Tensor::empty(shape, x->dtype, x->device(), op.name);
  launch(op, x->dtype, x->device(), ins, 2, &out, attrs);
  return to_python(std::move(out));
}

}  // namespace hwport::pipeline
