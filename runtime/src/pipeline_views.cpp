// The view families of the op-call pipeline (reshape, flatten, transpose, squeeze, unsqueeze,
// expand, flip): each builds the view phi_ops/decompositions.py builds for the op (the same shape,
// strides and offset; reshape and flatten copy where the layout allows no view), so results
// and layouts are identical.
#include <algorithm>
#include <vector>

#include "infer_meta.h"
#include "kernel_cache.h"
#include "ops.h"
#include "pipeline_run.h"

namespace hwport::pipeline {

namespace {

// phi_ops/decompositions.py _view_strides (PyTorch's computeStride): strides that show
// (shape, strides) as new_shape without a copy; false where the layout does not allow it.
bool view_strides(const Shape& shape, const Shape& strides, const Shape& new_shape,
                  Shape* out) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (numel == 0 || shape.empty()) {
    *out = contiguous_strides(new_shape);
    return true;
  }
  out->assign(new_shape.size(), 0);
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        (*out)[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace

namespace {

// decompositions._reshape: a view where the layout allows, else a contiguous copy.
PyObject* reshaped(const Tensor* x, Shape shape) {
  Shape strides;
  Tensor out;
  if (view_strides(x->shape, x->strides, shape, &strides)) {
    out = *x;
  } else {
    out = clone(*x);
    strides = contiguous_strides(shape);
  }
  out.shape = std::move(shape);
  out.strides = std::move(strides);
  return to_python(std::move(out));
}

Tensor* input(const BoundArgs& a) { return a.slot[0] ? as_tensor(a.slot[0]) : nullptr; }

// A view as the op's result: like every output (infer_meta.check_size) it must be
// representable; tensor_nbytes throws otherwise and the call takes the Python path, which
// raises its message (expand to 2**62 elements: OutOfMemoryError naming expand).
PyObject* view_result(const OpSpec& op, Tensor&& t) {
  tensor_nbytes(t.shape, t.dtype, op.name);
  return to_python(std::move(t));
}

// An ints attribute (None or absent: `none_ok` says whether that is the empty list).
bool ints_attr(const BoundArgs& a, int slot, bool none_ok, std::vector<int64_t>* out) {
  PyObject* v = a.slot[slot];
  if (!v || v == Py_None) {
    out->clear();
    return none_ok;
  }
  return int_list(v, out);
}

}  // namespace

PyObject* run_reshape(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = input(a);
  std::vector<int64_t> given;
  if (!x || !ints_attr(a, op.num_inputs, false, &given)) return nullptr;
  Shape shape;
  if (!infer_reshape({&x->shape, x->dtype}, given, &shape)) return nullptr;
  return reshaped(x, std::move(shape));
}

PyObject* run_flatten(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = input(a);
  int64_t bounds[2];
  for (int k = 0; k < 2; ++k) {  // start_axis, stop_axis (ints with defaults)
    PyObject* v = a.slot[op.num_inputs + k];
    bounds[k] = op.attrs[k].default_value.i;
    if (v && !plain_int(v, &bounds[k])) return nullptr;
  }
  Shape shape;
  if (!x || !infer_flatten({&x->shape, x->dtype}, bounds[0], bounds[1], &shape))
    return nullptr;
  return reshaped(x, std::move(shape));
}

PyObject* run_squeeze(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = input(a);
  std::vector<int64_t> given, axes;
  Shape shape;
  if (!x || !ints_attr(a, op.num_inputs, true, &given) ||
      !infer_squeeze({&x->shape, x->dtype}, given, &shape, &axes))
    return nullptr;
  Tensor out = *x;
  out.shape.clear();
  out.strides.clear();
  for (int64_t i = 0; i < x->ndim(); ++i) {
    if (x->shape[i] == 1 && std::find(axes.begin(), axes.end(), i) != axes.end()) continue;
    out.shape.push_back(x->shape[i]);
    out.strides.push_back(x->strides[i]);
  }
  return view_result(op, std::move(out));
}

PyObject* run_unsqueeze(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = input(a);
  std::vector<int64_t> given, axes;
  Shape shape;
  if (!x || !ints_attr(a, op.num_inputs, false, &given) ||
      !infer_unsqueeze({&x->shape, x->dtype}, given, &shape, &axes))
    return nullptr;
  Tensor out = *x;
  out.shape = shape;
  out.strides.clear();
  size_t src = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end()) {
      // any stride works for a size-1 dim; the decomposition's keeps contiguity visible
      out.strides.push_back(src < x->shape.size() ? x->strides[src] * x->shape[src] : 1);
    } else {
      out.strides.push_back(x->strides[src++]);
    }
  }
  return view_result(op, std::move(out));
}

PyObject* run_expand(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = input(a);
  std::vector<int64_t> given;
  Shape shape;
  if (!x || !ints_attr(a, op.num_inputs, false, &given) ||
      !infer_expand({&x->shape, x->dtype}, given, &shape))
    return nullptr;
  Tensor out = *x;
  out.shape = shape;
  out.strides.assign(shape.size(), 0);
  const size_t lead = shape.size() - x->shape.size();
  for (size_t i = lead; i < shape.size(); ++i)
    out.strides[i] = x->shape[i - lead] == shape[i] ? x->strides[i - lead] : 0;
  return view_result(op, std::move(out));
}

// flip: negative strides, the offset at the last element of each flipped dim
// (decompositions.flip); a device with a native flip kernel takes the Python path.
PyObject* run_flip(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = input(a);
  std::vector<int64_t> given, axes;
  if (!x || !ints_attr(a, op.num_inputs, false, &given) ||
      !infer_flip(op, {&x->shape, x->dtype}, given, &axes) ||
      native_kernel(op, x->device(), x->dtype))
    return nullptr;
  Tensor out = *x;
  for (int64_t ax : axes) {
    if (out.shape[ax] > 0) out.offset += (out.shape[ax] - 1) * out.strides[ax];
    out.strides[ax] = -out.strides[ax];
  }
  return view_result(op, std::move(out));
}

PyObject* run_transpose(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  if (!x) return nullptr;
  std::vector<int64_t> given, perm;
  PyObject* p = a.slot[1];
  const bool reversed = !p || p == Py_None;
  if (!reversed && !int_list(p, &given)) return nullptr;
  if (!infer_transpose({&x->shape, x->dtype}, reversed ? nullptr : &given, &perm))
    return nullptr;
  Tensor out = *x;
  for (size_t k = 0; k < perm.size(); ++k) {
    out.shape[k] = x->shape[perm[k]];
    out.strides[k] = x->strides[perm[k]];
  }
  return view_result(op, std::move(out));
}

}  // namespace hwport::pipeline
