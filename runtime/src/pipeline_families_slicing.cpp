// The slicing family of the op-call pipeline (slice, split): the views
// phi_ops/decompositions.py slice / split build (_slice_view per axis: the same shape, strides
// and offset; a part of size 0 keeps the offset), so results and layouts are identical. A
// device with a native kernel for the op takes the Python path, which runs that kernel.
#include <pybind11/pybind11.h>

#include "infer_meta.h"
#include "kernel_cache.h"
#include "pipeline_run.h"

namespace hwport::pipeline {

namespace {

// decompositions._slice_view: x[..., start:stop:step, ...] along `axis` (n elements).
void slice_view(Tensor* t, int64_t axis, int64_t start, int64_t n, int64_t step) {
  if (n > 0) t->offset += start * t->strides[axis];
  t->shape[axis] = n;
  t->strides[axis] *= step;
}

Tensor* view_input(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  return x && !native_kernel(op, x->device(), x->dtype) ? x : nullptr;
}

// A required ints attribute (an int or a list/tuple of ints).
bool required_ints(const BoundArgs& a, int slot, std::vector<int64_t>* out) {
  return a.slot[slot] && a.slot[slot] != Py_None && int_list(a.slot[slot], out);
}

}  // namespace

// slice(x, axes, starts, ends, strides=None)
PyObject* run_slice(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = view_input(op, a);
  const int s = op.num_inputs;
  std::vector<int64_t> axes, starts, ends, strides;
  SlicePlan plan;
  if (!x || !required_ints(a, s, &axes) || !required_ints(a, s + 1, &starts) ||
      !required_ints(a, s + 2, &ends) || !int_list(a.slot[s + 3], &strides) ||
      !infer_slice({&x->shape, x->dtype}, axes, starts, ends, strides, &plan))
    return nullptr;
  Tensor out = *x;
  for (size_t k = 0; k < plan.axes.size(); ++k)
    slice_view(&out, plan.axes[k], plan.starts[k], plan.shape[plan.axes[k]], plan.steps[k]);
  return to_python(std::move(out));
}

// split(x, sections, axis=0): a list of views (sections: an int = that many equal parts, a
// list = part sizes).
PyObject* run_split(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = view_input(op, a);
  const int s = op.num_inputs;
  std::vector<int64_t> sections, sizes;
  int64_t axis = op.attrs[1].default_value.i, norm_axis = 0;
  PyObject* given = a.slot[s];
  if (!x || !required_ints(a, s, &sections) ||
      (a.slot[s + 1] && !plain_int(a.slot[s + 1], &axis)))
    return nullptr;
  const bool sizes_given = PyList_Check(given) || PyTuple_Check(given);
  if (!sizes_given && sections[0] > (int64_t{1} << 20)) return nullptr;  // Python's to judge
  if (!infer_split({&x->shape, x->dtype}, sections, sizes_given, axis, &sizes, &norm_axis))
    return nullptr;
  pybind11::list out(sizes.size());
  int64_t start = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Tensor part = *x;
    slice_view(&part, norm_axis, start, sizes[k], 1);
    start += sizes[k];
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(k), to_python(std::move(part)));
  }
  return out.release().ptr();
}

}  // namespace hwport::pipeline
