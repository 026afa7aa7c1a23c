// The reduction family (phi_ops/infer_meta.py reduce).
#include <algorithm>

#include "infer_meta.h"

namespace hwport::pipeline {

bool infer_reduce(const OpSpec& op, const MetaIn& x, const ReduceAttrs& attrs, ReducePlan* plan) {
  const Shape& shape = *x.shape;
  const int64_t ndim = static_cast<int64_t>(shape.size());
  if (ndim == 0) return false;  // nothing to reduce: Python returns x itself, cast
  plan->axes.clear();
  if (attrs.axis.empty()) {
    for (int64_t i = 0; i < ndim; ++i) plan->axes.push_back(i);
  } else {
    if (!normalize_axes(attrs.axis, ndim, &plan->axes))
      return false;  // "names a dimension twice"
  }
  for (int64_t a : plan->axes)
    if (shape[static_cast<size_t>(a)] == 0) return false;  // max/min refuse; the rest: Python
  if (attrs.has_dtype) {
    plan->key = attrs.dtype;
    plan->out = attrs.dtype;
  } else {
    plan->key = x.dtype;
    if (op.out_rule == OutRule::Sum)
      plan->out = is_floating(x.dtype) ? x.dtype : DType::Int64;
    else if (!out_dtype(op, x.dtype, &plan->out))
      return false;
  }
  if (!op.has_kernel_dtype(plan->key)) return false;
  plan->shape.clear();
  for (int64_t i = 0; i < ndim; ++i) {
    const bool reduced = std::binary_search(plan->axes.begin(), plan->axes.end(), i);
    if (!reduced) plan->shape.push_back(shape[static_cast<size_t>(i)]);
    else if (attrs.keepdim) plan->shape.push_back(1);
  }
  return true;
}

}  // namespace hwport::pipeline

namespace hwport::pipeline {

// phi_ops/infer_meta.py arg_reduce.
bool infer_arg_reduce(const OpSpec& op, const MetaIn& x, bool has_axis, int64_t axis,
                      bool keepdim, AxisPlan* plan) {
  const Shape& shape = *x.shape;
  const int64_t ndim = static_cast<int64_t>(shape.size());
  plan->shape.clear();
  plan->flatten = !has_axis;
  plan->axis = 0;
  if (!has_axis) {
    if (numel(shape) == 0) return false;  // "has no elements"
    if (keepdim) plan->shape.assign(shape.size(), 1);
  } else {
    if (!normalize_axis(axis, ndim, &plan->axis)) return false;
    if (ndim && shape[plan->axis] == 0) return false;  // "cannot reduce over the zero-size"
    for (int64_t i = 0; i < ndim; ++i) {
      if (i != plan->axis) plan->shape.push_back(shape[i]);
      else if (keepdim) plan->shape.push_back(1);
    }
  }
  return out_dtype(op, x.dtype, &plan->out) && op.has_kernel_dtype(x.dtype);
}

// phi_ops/infer_meta.py scan.
bool infer_scan(const OpSpec& op, const MetaIn& x, bool has_axis, int64_t axis,
                AxisPlan* plan) {
  const Shape& shape = *x.shape;
  plan->flatten = !has_axis;
  plan->axis = 0;
  if (!has_axis) {
    plan->shape = {numel(shape)};
  } else {
    if (!normalize_axis(axis, static_cast<int64_t>(shape.size()), &plan->axis)) return false;
    plan->shape = shape;
  }
  if (op.out_rule == OutRule::Sum)
    plan->out = is_floating(x.dtype) ? x.dtype : DType::Int64;
  else if (!out_dtype(op, x.dtype, &plan->out))
    return false;
  return op.has_kernel_dtype(x.dtype);
}

}  // namespace hwport::pipeline
