// The unary and binary families (phi_ops/infer_meta.py unary / binary).
#include "infer_meta.h"

namespace hwport::pipeline {

bool out_dtype(const OpSpec& op, DType common, DType* out) {
  switch (op.out_rule) {
    case OutRule::Same: *out = common; return true;
    case OutRule::Bool: *out = DType::Bool; return true;
    case OutRule::Int64: *out = DType::Int64; return true;
    case OutRule::Float: *out = is_floating(common) ? common : DType::Float32; return true;
    default: return false;
  }
}

bool infer_unary(const OpSpec& op, const MetaIn& x, DType attr_dtype, ElementwisePlan* plan) {
  DType d = x.dtype;
  plan->cast[0] = false;
  if (!op.has_dtype(d) && op.ints_as_float32 && !is_floating(d)) {
    d = DType::Float32;  // exp(int32) computes in float32, as PyTorch does
    plan->cast[0] = true;
  }
  if (op.out_rule == OutRule::Attr && op.out_attr >= 0)
    plan->out = attr_dtype;
  else if (!out_dtype(op, d, &plan->out))
    return false;
  if (!op.has_kernel_dtype(d)) return false;  // Python: "... does not support; supported: ..."
  plan->shape = *x.shape;
  plan->compute = d;
  return true;
}

bool broadcast(const Shape& a, const Shape& b, Shape* out) {
  if (a == b) {
    *out = a;
    return true;
  }
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  out->assign(n, 1);
  for (size_t k = 0; k < n; ++k) {
    const int64_t da = k < n - a.size() ? 1 : a[k - (n - a.size())];
    const int64_t db = k < n - b.size() ? 1 : b[k - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[k] = da == 1 ? db : da;
  }
  return true;
}

bool infer_binary(const OpSpec& op, const MetaIn& x, const MetaIn& y, ElementwisePlan* plan) {
  if (!broadcast(*x.shape, *y.shape, &plan->shape)) return false;
  const DType common = promote_types(x.dtype, y.dtype);
  if (!op.has_dtype(common)) return false;
  if (!out_dtype(op, common, &plan->out)) return false;
  plan->compute = op.out_rule == OutRule::Float ? plan->out : common;
  if (!op.has_kernel_dtype(plan->compute)) return false;
  plan->cast[0] = x.dtype != plan->compute;
  plan->cast[1] = y.dtype != plan->compute;
  return true;
}

bool infer_where(const OpSpec& op, const MetaIn& condition, const MetaIn& x, const MetaIn& y,
                 ElementwisePlan* plan) {
  Shape xy;  // pairwise broadcasting fails exactly where the three-way one does
  if (!broadcast(*x.shape, *y.shape, &xy) || !broadcast(*condition.shape, xy, &plan->shape))
    return false;
  plan->out = plan->compute = promote_types(x.dtype, y.dtype);
  if (!op.has_kernel_dtype(plan->compute)) return false;
  plan->cast[0] = condition.dtype != DType::Bool;
  plan->cast[1] = x.dtype != plan->compute;
  plan->cast[2] = y.dtype != plan->compute;
  return true;
}

}  // namespace hwport::pipeline
