// The linear and embedding families of the op-call pipeline: infer-meta in C++
// (infer_meta_nn_linalg.cpp); both are composites, so a call runs here only where the device
// has the op's own kernel and every floating input has the key dtype (else the Python path
// decomposes it), launched as phi_ops/dispatch.py _launch does (inputs as given).
#include "infer_meta.h"
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
  if (!fused_kernel_fits(op, device, x->dtype, in, 3)) return nullptr;
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
  if (!fused_kernel_fits(op, device, index->dtype, in, 2) || !index_in_bounds(*index, bound))
    return nullptr;
  Tensor out = Tensor::empty(shape, w->dtype, device, op.name);
  launch(op, index->dtype, device, in, 2, &out, Attrs{});
  return to_python(std::move(out));
}

}  // namespace hwport::pipeline
