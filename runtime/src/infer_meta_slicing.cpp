// The slicing family (phi_ops/infer_meta.py slice_ and split): the views' shapes and the
// normalized bounds their decompositions take.
#include <algorithm>

#include "infer_meta.h"

namespace hwport::pipeline {

namespace {

// Python's slice(start, stop, step).indices(dim) for int bounds and a nonzero step.
void slice_indices(int64_t dim, int64_t step, int64_t* start, int64_t* stop) {
  const int64_t lower = step < 0 ? -1 : 0;
  const int64_t upper = step < 0 ? dim - 1 : dim;
  for (int64_t* v : {start, stop}) {
    if (*v < 0) {
      *v += dim;  // no overflow: dim >= 0
      if (*v < lower) *v = lower;
    } else if (*v > upper) {
      *v = upper;
    }
  }
}

// len(range(start, stop, step)) for bounds within [-1, dim] and |step| <= max(dim, 1).
int64_t range_len(int64_t start, int64_t stop, int64_t step) {
  if (step > 0) return start < stop ? (stop - start - 1) / step + 1 : 0;
  return start > stop ? (start - stop - 1) / -step + 1 : 0;
}

}  // namespace

bool infer_slice(const MetaIn& x, const std::vector<int64_t>& axes,
                 const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                 const std::vector<int64_t>& strides, SlicePlan* plan) {
  const size_t n = axes.size();
  if (starts.size() != n || ends.size() != n || (!strides.empty() && strides.size() != n))
    return false;  // "must have equal lengths"
  const int64_t ndim = static_cast<int64_t>(x.shape->size());
  if (ndim == 0 && n) return false;  // "out of range for a 0-d x"
  plan->shape = *x.shape;
  plan->axes.resize(n);
  plan->starts.resize(n);
  plan->ends.resize(n);
  plan->steps.resize(n);
  for (size_t k = 0; k < n; ++k) {
    int64_t step = strides.empty() ? 1 : strides[k];
    if (step == 0) return false;  // "strides must not be 0"
    int64_t a;
    if (!normalize_axis(axes[k], ndim, &a)) return false;
    const int64_t dim = plan->shape[a];
    int64_t start = starts[k], stop = ends[k];
    slice_indices(dim, step, &start, &stop);
    const int64_t most = std::max<int64_t>(dim, 1);
    if (step > most) step = most;  // one element: a stride that stays small
    if (step < -most) step = -most;
    plan->axes[k] = a;
    plan->starts[k] = start;
    plan->ends[k] = stop;
    plan->steps[k] = step;
    plan->shape[a] = range_len(start, stop, step);
  }
  std::vector<int64_t> sorted = plan->axes;
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();  // "names twice"
}

bool infer_split(const MetaIn& x, const std::vector<int64_t>& sections, bool sizes_given,
                 int64_t axis, std::vector<int64_t>* sizes, int64_t* norm_axis) {
  const int64_t ndim = static_cast<int64_t>(x.shape->size());
  if (ndim == 0) return false;  // "needs at least one dimension"
  if (!normalize_axis(axis, ndim, norm_axis)) return false;
  const int64_t dim = (*x.shape)[*norm_axis];
  *sizes = sections;
  if (sizes_given && std::count(sections.begin(), sections.end(), -1) == 1) {
    int64_t rest = 0;  // an overflowing sum is an error either way ("exceed" / "< 0")
    for (int64_t s : sections)
      if (s != -1 && __builtin_add_overflow(rest, s, &rest)) return false;
    if (rest > dim) return false;
    for (int64_t& s : *sizes)
      if (s == -1) s = dim - rest;
  }
  if (sections.size() == 1 && !sizes_given) {
    const int64_t parts = sections[0];
    if (parts <= 0 || dim % parts) return false;
    sizes->assign(static_cast<size_t>(parts), dim / parts);
  }
  int64_t total = 0;
  for (int64_t s : *sizes)
    if (s < 0 || __builtin_add_overflow(total, s, &total)) return false;
  return total == dim;
}

}  // namespace hwport::pipeline
