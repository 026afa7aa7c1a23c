// The index family (phi_ops/infer_meta.py gather, take_along_axis).
#include "infer_meta.h"

namespace hwport::pipeline {

namespace {

bool int_index(const MetaIn& index) {  // infer_meta._require_int_index
  return index.dtype == DType::Int32 || index.dtype == DType::Int64;
}

}  // namespace

bool infer_gather(const OpSpec& op, const MetaIn& x, const MetaIn& index, int64_t axis,
                  Shape* out, int64_t* norm_axis, int64_t* bound) {
  const int64_t ndim = static_cast<int64_t>(x.shape->size());
  if (!int_index(index) || index.shape->size() != 1 || ndim == 0 ||
      !normalize_axis(axis, ndim, norm_axis))
    return false;
  *out = *x.shape;
  *bound = (*out)[*norm_axis];
  (*out)[*norm_axis] = (*index.shape)[0];
  return op.has_kernel_dtype(x.dtype);
}

bool infer_take_along_axis(const OpSpec& op, const MetaIn& x, const MetaIn& index,
                           int64_t axis, Shape* out, int64_t* norm_axis, int64_t* bound) {
  const int64_t ndim = static_cast<int64_t>(x.shape->size());
  if (!int_index(index) || static_cast<int64_t>(index.shape->size()) != ndim || ndim == 0 ||
      !normalize_axis(axis, ndim, norm_axis))
    return false;
  Shape others_x, others_i;
  for (int64_t i = 0; i < ndim; ++i) {
    if (i == *norm_axis) continue;
    others_x.push_back((*x.shape)[i]);
    others_i.push_back((*index.shape)[i]);
  }
  if (!broadcast(others_x, others_i, out)) return false;
  out->insert(out->begin() + *norm_axis, (*index.shape)[*norm_axis]);
  *bound = (*x.shape)[*norm_axis];
  return op.has_kernel_dtype(x.dtype);
}

bool infer_topk(const OpSpec& op, const MetaIn& x, int64_t k, int64_t axis, Shape* out,
                int64_t* norm_axis) {
  const int64_t ndim = static_cast<int64_t>(x.shape->size());
  if (!normalize_axis(axis, ndim, norm_axis)) return false;
  if (ndim == 0 && k != 1) return false;  // "for a 0-d x, expected k=1"
  const int64_t dim = ndim ? (*x.shape)[*norm_axis] : 1;
  if (k < 0 || k > dim) return false;  // "must be in [0, dim]"
  *out = *x.shape;
  if (ndim) (*out)[*norm_axis] = k;
  return fits_bytes(*out, DType::Int64) && fits_bytes(*out, x.dtype) &&
         op.has_kernel_dtype(x.dtype);
}

bool infer_scatter(const OpSpec& op, const MetaIn& x, const MetaIn& index, const MetaIn& updates,
                   int64_t axis, const std::string& reduce, int64_t* norm_axis, int64_t* bound) {
  const int64_t ndim = static_cast<int64_t>(x.shape->size());
  if (!int_index(index) || ndim == 0 || index.shape->size() != 1 ||
      !normalize_axis(axis, ndim, norm_axis))
    return false;
  Shape expected = *x.shape;
  expected[*norm_axis] = (*index.shape)[0];
  if (*updates.shape != expected || (reduce != "assign" && reduce != "add")) return false;
  *bound = (*x.shape)[*norm_axis];
  return op.has_kernel_dtype(x.dtype);
}

}  // namespace hwport::pipeline
