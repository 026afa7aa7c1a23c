// The norm and matmul families (phi_ops/infer_meta.py unary + _check_norm, matmul).
#include "infer_meta.h"

namespace hwport::pipeline {

bool infer_norm(const OpSpec& op, const MetaIn& x, const MetaIn* const* affine, int n_affine,
                int64_t normalized_ndim, double epsilon, ElementwisePlan* plan) {
  const int64_t nd = static_cast<int64_t>(x.shape->size());
  if (normalized_ndim < 1 || normalized_ndim > nd || !(epsilon >= 0)) return false;
  const Shape trailing(x.shape->end() - normalized_ndim, x.shape->end());
  for (int i = 0; i < n_affine; ++i) {
    const MetaIn* m = affine[i];
    if (m && (*m->shape != trailing || !is_floating(m->dtype))) return false;
  }
  if (!op.has_kernel_dtype(x.dtype)) return false;  // float-only: no int promotion for nn ops
  plan->shape = *x.shape;
  plan->out = plan->compute = x.dtype;
  return true;
}

bool infer_matmul(const OpSpec& op, const MetaIn& x, const MetaIn& y, bool transpose_x,
                  bool transpose_y, MatmulPlan* plan) {
  Shape xs = *x.shape, ys = *y.shape;
  if (xs.empty() || ys.empty()) return false;
  if (transpose_x && xs.size() >= 2) std::swap(xs[xs.size() - 1], xs[xs.size() - 2]);
  if (transpose_y && ys.size() >= 2) std::swap(ys[ys.size() - 1], ys[ys.size() - 2]);
  const bool x_vec = xs.size() == 1, y_vec = ys.size() == 1;
  if (x_vec) xs.insert(xs.begin(), 1);
  if (y_vec) ys.push_back(1);
  if (xs.back() != ys[ys.size() - 2]) return false;
  if (!broadcast(Shape(xs.begin(), xs.end() - 2), Shape(ys.begin(), ys.end() - 2),
                 &plan->batch))
    return false;
  plan->m = xs[xs.size() - 2];
  plan->k = xs.back();
  plan->n = ys.back();
  plan->shape = plan->batch;
  if (!x_vec) plan->shape.push_back(plan->m);
  if (!y_vec) plan->shape.push_back(plan->n);
  plan->dtype = promote_types(x.dtype, y.dtype);
  return op.has_kernel_dtype(plan->dtype);
}

bool infer_linear(const OpSpec& op, const MetaIn& x, const MetaIn& weight, const MetaIn* bias,
                  Shape* out, DType* dtype) {
  const Shape &xs = *x.shape, &ws = *weight.shape;
  if (ws.size() != 2 || xs.empty() || xs.back() != ws[0]) return false;
  if (bias && *bias->shape != Shape{ws[1]}) return false;  // "bias must have shape [out]"
  *out = Shape(xs.begin(), xs.end() - 1);
  out->push_back(ws[1]);
  *dtype = promote_types(x.dtype, weight.dtype);
  return fits_bytes(*out, *dtype) && op.has_kernel_dtype(x.dtype);
}

bool infer_embedding(const OpSpec& op, const MetaIn& index, const MetaIn& weight, Shape* out,
                     int64_t* bound) {
  if ((index.dtype != DType::Int32 && index.dtype != DType::Int64) ||
      weight.shape->size() != 2)
    return false;
  *out = *index.shape;
  out->push_back((*weight.shape)[1]);
  *bound = (*weight.shape)[0];
  return fits_bytes(*out, weight.dtype) && op.has_kernel_dtype(index.dtype);
}

bool infer_attention(const OpSpec& op, const MetaIn& q, const MetaIn& k, const MetaIn& v,
                     const MetaIn* mask, bool is_causal, Shape* out, DType* dtype) {
  for (const MetaIn* m : {&q, &k, &v})
    if (m->shape->size() < 2) return false;  // "must be [..., L, E]"
  const Shape &qs = *q.shape, &ks = *k.shape, &vs = *v.shape;
  if (qs.back() != ks.back() || ks[ks.size() - 2] != vs[vs.size() - 2]) return false;
  Shape qk, batch;
  if (!broadcast(Shape(qs.begin(), qs.end() - 2), Shape(ks.begin(), ks.end() - 2), &qk) ||
      !broadcast(qk, Shape(vs.begin(), vs.end() - 2), &batch))
    return false;
  if (mask) {
    Shape scores = batch, b;
    scores.push_back(qs[qs.size() - 2]);
    scores.push_back(ks[ks.size() - 2]);
    if (!broadcast(scores, *mask->shape, &b) || b != scores || is_causal) return false;
  }
  *out = batch;
  out->push_back(qs[qs.size() - 2]);
  out->push_back(vs.back());
  *dtype = promote_types(promote_types(q.dtype, k.dtype), v.dtype);
  return op.has_kernel_dtype(q.dtype);
}

bool infer_cross_entropy(const OpSpec& op, const MetaIn& logits, const MetaIn& label,
                         const std::string& reduction, int64_t ignore_index, Shape* out) {
  const Shape& ls = *logits.shape;
  if ((label.dtype != DType::Int32 && label.dtype != DType::Int64) || ls.size() != 2 ||
      *label.shape != Shape{ls[0]})
    return false;
  if (reduction != "mean" && reduction != "sum" && reduction != "none") return false;
  if (label.dtype == DType::Int32 && (ignore_index < INT32_MIN || ignore_index > INT32_MAX))
    return false;  // promotion.check_scalar_fits
  *out = reduction == "none" ? Shape{ls[0]} : Shape{};
  return op.has_kernel_dtype(logits.dtype);
}

}  // namespace hwport::pipeline
