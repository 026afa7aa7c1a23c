// The arg_reduce (argmax, argmin) and scan (cumsum, cumprod) families of the op-call
// pipeline: one axis, or x flattened when none is given. Each launches as
// phi_ops/dispatch.py _launch_flattening does (x, or x flattened / a 0-d x as [1]; a fresh
// output seen in the planned shape), so results are identical.
#include "infer_meta.h"
#include "ops.h"
#include "pipeline_run.h"

namespace hwport::pipeline {

namespace {

// x's axis (None: flattened) and, for arg_reduce, keepdim, from the call; false where the
// Python path decides.
bool axis_attrs(const OpSpec& op, const BoundArgs& a, bool* has_axis, int64_t* axis,
                bool* keepdim) {
  if (!op.attrs[0].default_value.is_none) return false;  // None given would be an error
  if (!optional_int(a, op.num_inputs, has_axis, axis)) return false;
  return !keepdim || bool_attr(op, a, 1, keepdim);
}

PyObject* launch_flattening(const OpSpec& op, const Tensor& x, const AxisPlan& plan,
                            Attrs&& attrs) {
  const Tensor in = plan.flatten || x.ndim() == 0 ? contiguous_view(x, {x.numel()}) : x;
  Shape shape;  // the kernel's output: arg_reduce drops the reduced dim
  for (int64_t i = 0; i < in.ndim(); ++i)
    if (op.family != Family::Arg_reduce || i != plan.axis) shape.push_back(in.shape[i]);
  Tensor out = Tensor::empty(shape, plan.out, x.device(), op.name);
  const Tensor* ins[] = {&in};
  launch(op, x.dtype, x.device(), ins, 1, &out, attrs);
  out.shape = plan.shape;
  out.strides = contiguous_strides(plan.shape);
  return to_python(std::move(out));
}

}  // namespace

PyObject* run_arg_reduce(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  bool has_axis = false, keepdim = false;
  int64_t axis = 0;
  AxisPlan plan;
  if (!x || !axis_attrs(op, a, &has_axis, &axis, &keepdim) ||
      !infer_arg_reduce(op, {&x->shape, x->dtype}, has_axis, axis, keepdim, &plan))
    return nullptr;
  Attrs attrs;
  attrs.emplace_back("axis", AttrValue::of_int(plan.axis));
  attrs.emplace_back("keepdim", AttrValue::of_bool(keepdim));
  return launch_flattening(op, *x, plan, std::move(attrs));
}

PyObject* run_scan(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  bool has_axis = false;
  int64_t axis = 0;
  AxisPlan plan;
  if (!x || !axis_attrs(op, a, &has_axis, &axis, nullptr) ||
      !infer_scan(op, {&x->shape, x->dtype}, has_axis, axis, &plan))
    return nullptr;
  Attrs attrs;
  attrs.emplace_back("axis", AttrValue::of_int(plan.axis));
  return launch_flattening(op, *x, plan, std::move(attrs));
}

}  // namespace hwport::pipeline
