// The concat, reshape and transpose families (phi_ops/infer_meta.py concat, reshape,
// transpose).
#include <algorithm>

#include "infer_meta.h"

namespace hwport::pipeline {

bool infer_concat(const OpSpec& op, const std::vector<MetaIn>& xs, int64_t axis, Shape* shape,
                  DType* dtype, int64_t* norm_axis) {
  if (xs.empty()) return false;
  const Shape& first = *xs[0].shape;
  const int64_t nd = static_cast<int64_t>(first.size());
  if (nd == 0 || axis < -nd || axis >= nd) return false;
  const int64_t a = axis < 0 ? axis + nd : axis;
  *shape = first;
  (*shape)[a] = 0;
  DType common = xs[0].dtype;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Shape& s = *xs[i].shape;
    if (s.size() != first.size()) return false;
    for (int64_t k = 0; k < nd; ++k)
      if (k != a && s[k] != first[k]) return false;
    (*shape)[a] += s[a];
    if (i) common = promote_types(common, xs[i].dtype);
  }
  if (!op.has_kernel_dtype(common)) return false;
  *dtype = common;
  *norm_axis = a;
  return true;
}

bool infer_reshape(const MetaIn& x, const std::vector<int64_t>& shape, Shape* out) {
  int64_t numel = 1;
  for (int64_t d : *x.shape) numel *= d;
  *out = shape;
  int unknown = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (unknown >= 0) return false;
      unknown = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return false;
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      return false;
    }
  }
  if (unknown >= 0) {
    if (known == 0 || numel % known) return false;
    (*out)[unknown] = numel / known;
  } else if (known != numel) {
    return false;
  }
  return out->size() <= HWP_MAX_NDIM;
}

bool infer_transpose(const MetaIn& x, const std::vector<int64_t>* perm,
                     std::vector<int64_t>* out) {
  const int64_t nd = static_cast<int64_t>(x.shape->size());
  out->clear();
  if (!perm) {
    for (int64_t k = nd - 1; k >= 0; --k) out->push_back(k);
    return true;
  }
  const int64_t bound = nd > 1 ? nd : 1;
  for (int64_t p : *perm) {
    if (p < -bound || p >= bound) return false;
    out->push_back(p < 0 ? p + bound : p);
  }
  std::vector<int64_t> sorted = *out;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t k = 0; k < static_cast<int64_t>(sorted.size()); ++k)
    if (sorted[k] != k) return false;
  return static_cast<int64_t>(sorted.size()) == nd;
}

}  // namespace hwport::pipeline
