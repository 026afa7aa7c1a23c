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
  int64_t a;
  if (nd == 0 || !normalize_axis(axis, nd, &a)) return false;
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
  out->resize(perm->size());
  for (size_t k = 0; k < perm->size(); ++k)
    if (!normalize_axis((*perm)[k], nd, &(*out)[k])) return false;
  std::vector<int64_t> sorted = *out;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t k = 0; k < static_cast<int64_t>(sorted.size()); ++k)
    if (sorted[k] != k) return false;
  return static_cast<int64_t>(sorted.size()) == nd;
}

}  // namespace hwport::pipeline

namespace hwport::pipeline {

bool normalize_axis(int64_t axis, int64_t ndim, int64_t* out) {
  const int64_t bound = ndim > 1 ? ndim : 1;
  if (axis < -bound || axis >= bound) return false;
  *out = axis < 0 ? axis + bound : axis;
  return true;
}

bool normalize_axes(const std::vector<int64_t>& axes, int64_t ndim, std::vector<int64_t>* out) {
  out->resize(axes.size());
  for (size_t i = 0; i < axes.size(); ++i)
    if (!normalize_axis(axes[i], ndim, &(*out)[i])) return false;
  std::sort(out->begin(), out->end());
  return std::adjacent_find(out->begin(), out->end()) == out->end();
}

bool infer_squeeze(const MetaIn& x, const std::vector<int64_t>& axes, Shape* out,
                   std::vector<int64_t>* norm_axes) {
  const Shape& s = *x.shape;
  const int64_t nd = static_cast<int64_t>(s.size());
  if (!axes.empty()) {
    if (!normalize_axes(axes, nd, norm_axes)) return false;
  } else {
    norm_axes->clear();
    for (int64_t i = 0; i < nd; ++i)
      if (s[i] == 1) norm_axes->push_back(i);
  }
  out->clear();
  for (int64_t i = 0; i < nd; ++i) {
    const bool listed = std::find(norm_axes->begin(), norm_axes->end(), i) != norm_axes->end();
    if (!(listed && s[i] == 1)) out->push_back(s[i]);
  }
  return true;
}

bool infer_unsqueeze(const MetaIn& x, const std::vector<int64_t>& axes, Shape* out,
                     std::vector<int64_t>* norm_axes) {
  const int64_t out_nd = static_cast<int64_t>(x.shape->size() + axes.size());
  if (out_nd > HWP_MAX_NDIM || !normalize_axes(axes, out_nd, norm_axes)) return false;
  out->clear();
  size_t src = 0;
  for (int64_t i = 0; i < out_nd; ++i) {
    if (std::find(norm_axes->begin(), norm_axes->end(), i) != norm_axes->end()) {
      out->push_back(1);
    } else {
      if (src >= x.shape->size()) return false;  // an axis beyond the output's rank
      out->push_back((*x.shape)[src++]);
    }
  }
  return true;
}

bool infer_flatten(const MetaIn& x, int64_t start, int64_t stop, Shape* out) {
  const Shape& s = *x.shape;
  const int64_t nd = static_cast<int64_t>(s.size());
  int64_t a, b;
  if (!normalize_axis(start, nd, &a) || !normalize_axis(stop, nd, &b)) return false;
  if (nd == 0) {
    *out = {1};
    return true;
  }
  if (a > b) return false;
  out->assign(s.begin(), s.begin() + a);
  int64_t n = 1;
  for (int64_t i = a; i <= b; ++i) n *= s[i];
  out->push_back(n);
  out->insert(out->end(), s.begin() + b + 1, s.end());
  return true;
}

bool infer_expand(const MetaIn& x, const std::vector<int64_t>& shape, Shape* out) {
  const Shape& s = *x.shape;
  if (shape.size() < s.size() || shape.size() > HWP_MAX_NDIM) return false;
  const size_t lead = shape.size() - s.size();
  *out = shape;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    if (i < lead) {
      if (d < 0) return false;
      continue;
    }
    const int64_t src = s[i - lead];
    if (d == -1) (*out)[i] = src;
    else if (d < 0 || (src != 1 && src != d)) return false;
  }
  return true;
}

bool infer_flip(const OpSpec& op, const MetaIn& x, const std::vector<int64_t>& axes,
                std::vector<int64_t>* norm_axes) {
  const int64_t ndim = static_cast<int64_t>(x.shape->size());
  if (!normalize_axes(axes, ndim, norm_axes)) return false;
  if (ndim == 0 && !axes.empty()) return false;  // "out of range for a 0-d x"
  return op.has_kernel_dtype(x.dtype);
}

bool infer_pad(const OpSpec& op, const MetaIn& x, const std::vector<int64_t>& pad,
               std::vector<int64_t>* full, Shape* out) {
  const size_t ndim = x.shape->size();
  if (pad.size() % 2 || pad.size() > 2 * ndim) return false;  // "(before, after) pairs"
  for (int64_t v : pad)
    if (v < 0) return false;  // "must be >= 0"
  *full = pad;
  full->resize(2 * ndim, 0);
  out->resize(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    int64_t d = (*x.shape)[i];
    if (__builtin_add_overflow(d, (*full)[2 * i], &d) ||
        __builtin_add_overflow(d, (*full)[2 * i + 1], &d))
      return false;  // beyond any size check_size accepts
    (*out)[i] = d;
  }
  return fits_bytes(*out, x.dtype) && op.has_kernel_dtype(x.dtype);
}

bool infer_tile(const OpSpec& op, const MetaIn& x, const std::vector<int64_t>& repeats,
                std::vector<int64_t>* full, Shape* out) {
  for (int64_t r : repeats)
    if (r < 0) return false;  // "repeats must be >= 0"
  const size_t n = std::max(repeats.size(), x.shape->size());
  if (n > 16) return false;  // infer_meta.MAX_NDIM: "at most 16 are supported"
  full->assign(n - repeats.size(), 1);
  full->insert(full->end(), repeats.begin(), repeats.end());
  out->assign(n - x.shape->size(), 1);
  out->insert(out->end(), x.shape->begin(), x.shape->end());
  for (size_t i = 0; i < n; ++i)
    if (__builtin_mul_overflow((*out)[i], (*full)[i], &(*out)[i]))
      return false;  // beyond any size check_size accepts
  return fits_bytes(*out, x.dtype) && op.has_kernel_dtype(x.dtype);
}

bool infer_roll(const OpSpec& op, const MetaIn& x, const std::vector<int64_t>& shifts,
                const std::vector<int64_t>& axes, std::vector<int64_t>* norm_axes) {
  const int64_t ndim = static_cast<int64_t>(x.shape->size());
  norm_axes->resize(axes.size());
  for (size_t i = 0; i < axes.size(); ++i)
    if (!normalize_axis(axes[i], ndim, &(*norm_axes)[i])) return false;
  if (shifts.size() != (axes.empty() ? 1 : axes.size())) return false;  // "the same length"
  return fits_bytes(*x.shape, x.dtype) && op.has_kernel_dtype(x.dtype);
}

bool infer_stack(const OpSpec& op, const std::vector<MetaIn>& xs, int64_t axis, Shape* shape,
                 DType* dtype, int64_t* norm_axis) {
  if (xs.empty()) return false;  // "must hold at least one tensor"
  DType common = xs[0].dtype;
  for (size_t i = 1; i < xs.size(); ++i) {
    if (*xs[i].shape != *xs[0].shape) return false;  // "all must be equal"
    common = promote_types(common, xs[i].dtype);
  }
  if (!normalize_axis(axis, static_cast<int64_t>(xs[0].shape->size()) + 1, norm_axis))
    return false;
  *shape = *xs[0].shape;
  shape->insert(shape->begin() + *norm_axis, static_cast<int64_t>(xs.size()));
  *dtype = common;
  return fits_bytes(*shape, common) && op.has_kernel_dtype(common);
}

bool infer_matrix_unary(const OpSpec& op, const MetaIn& x) {
  return x.shape->size() >= 2 && op.has_kernel_dtype(x.dtype);  // "at least 2 dims"
}

}  // namespace hwport::pipeline
