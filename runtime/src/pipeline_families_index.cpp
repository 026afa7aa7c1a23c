// The index family of the op-call pipeline (gather / index_select, take_along_axis): infer-meta
// (infer_meta_index.cpp), the index values checked on the device as phi_ops/dispatch.py
// _check_index does (min and max of the index, read back: this synchronizes), then the
// kernel on x and index as given (phi_ops/dispatch.py _launch), so results are identical. Out
// of range values and every other error take the Python path, which raises its message.
#include "infer_meta.h"
#include "kernel_cache.h"
#include "ops.h"
#include "pipeline_run.h"
#include "plugin.h"

namespace hwport::pipeline {

// Every value of `index` in [0, bound) (an empty index passes): its min and max reduced into
// the two elements of one tensor, read back with one copy.
bool index_in_bounds(const Tensor& index, int64_t bound) {
  if (index.numel() == 0) return true;
  static const OpSpec* const reductions[2] = {op_spec("min"), op_spec("max")};
  const Tensor in = index.ndim() == 0 ? contiguous_view(index, {1}) : index;
  AttrValue axes;
  axes.type = HWP_ATTR_INT64_ARRAY;
  for (int64_t i = 0; i < in.ndim(); ++i) axes.ints.push_back(i);
  Attrs attrs;
  attrs.emplace_back("axis", std::move(axes));
  attrs.emplace_back("keepdim", AttrValue::of_bool(false));
  Device* dev = index.device();
  const Tensor both = Tensor::empty({2}, index.dtype, dev, "index bounds");
  for (int k = 0; k < 2; ++k) {
    Tensor out = both;  // element k as a 0-d tensor
    out.shape.clear();
    out.strides.clear();
    out.offset = k;
    const Tensor* ins[] = {&in};
    launch(*reductions[k], index.dtype, dev, ins, 1, &out, attrs);
  }
  const Plugin& p = *dev->plugin;
  int64_t v64[2] = {0, 0};
  int32_t v32[2] = {0, 0};
  const bool wide = index.dtype == DType::Int64;
  p.check(p.memory.copy_d2h(dev->index, wide ? static_cast<void*>(v64) : v32,
                            both.storage->buffer(), both.byte_offset(),
                            2 * itemsize(index.dtype)),
          "copy_d2h");
  const int64_t lo = wide ? v64[0] : v32[0], hi = wide ? v64[1] : v32[1];
  return lo >= 0 && hi < bound;
}

namespace {

// gather, index_select and take_along_axis: (x, index, axis).
PyObject* run_indexed(const OpSpec& op, const BoundArgs& a, bool along) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  Tensor* index = a.slot[1] ? as_tensor(a.slot[1]) : nullptr;
  PyObject* axis_obj = a.slot[2];
  int64_t axis = op.attrs[0].default_value.i, norm_axis = 0, bound = 0;
  if (!x || !index || index->device() != x->device() ||
      (!axis_obj && !op.attrs[0].default_value.has_default) ||
      (axis_obj && !plain_int(axis_obj, &axis)))
    return nullptr;
  Shape shape;
  const MetaIn mx{&x->shape, x->dtype}, mi{&index->shape, index->dtype};
  if (!(along ? infer_take_along_axis(op, mx, mi, axis, &shape, &norm_axis, &bound)
              : infer_gather(op, mx, mi, axis, &shape, &norm_axis, &bound)))
    return nullptr;
  Device* device = x->device();
  // A composite (index_select) runs here only with its own kernel; else its decomposition.
  if (!op.primitive && !native_kernel(op, device, x->dtype)) return nullptr;
  if (!index_in_bounds(*index, bound)) return nullptr;
  Tensor out = Tensor::empty(shape, x->dtype, device, op.name);
  Attrs attrs;
  attrs.emplace_back("axis", AttrValue::of_int(norm_axis));
  const Tensor* ins[] = {x, index};
  launch(op, x->dtype, device, ins, 2, &out, attrs);
  return to_python(std::move(out));
}

}  // namespace

PyObject* run_gather(const OpSpec& op, const BoundArgs& a) { return run_indexed(op, a, false); }
PyObject* run_take_along_axis(const OpSpec& op, const BoundArgs& a) {
  return run_indexed(op, a, true);
}

bool str_attr(const BoundArgs& a, int slot, const char* def, std::string* out) {
  PyObject* v = a.slot[slot];
  if (!v) {
    *out = def;
    return true;
  }
  if (!PyUnicode_CheckExact(v)) return false;
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(v, &n);
  if (!s) {
    PyErr_Clear();
    return false;
  }
  out->assign(s, static_cast<size_t>(n));
  return true;
}

// scatter(x, index, updates, axis=0, reduce="assign"): updates cast to x's dtype, index
// values checked on the device, then the kernel (phi_ops/dispatch.py _launch).
PyObject* run_scatter(const OpSpec& op, const BoundArgs& a) {
  Tensor* t[3];
  Device* device = tensors_on_one_device(a, 3, t);
  if (!device) return nullptr;
  int64_t axis = op.attrs[0].default_value.i, norm = 0, bound = 0;
  std::string reduce;
  PyObject* axis_obj = a.slot[3];
  if ((axis_obj && !plain_int(axis_obj, &axis)) || !str_attr(a, 4, "assign", &reduce) ||
      !infer_scatter(op, {&t[0]->shape, t[0]->dtype}, {&t[1]->shape, t[1]->dtype},
                     {&t[2]->shape, t[2]->dtype}, axis, reduce, &norm, &bound) ||
      !index_in_bounds(*t[1], bound))
    return nullptr;
  const Tensor updates = cast(*t[2], t[0]->dtype);
  Tensor out = Tensor::empty(t[0]->shape, t[0]->dtype, device, op.name);
  Attrs attrs;
  attrs.emplace_back("axis", AttrValue::of_int(norm));
  AttrValue r;
  r.type = HWP_ATTR_STRING;
  r.s = reduce;
  attrs.emplace_back("reduce", std::move(r));
  const Tensor* ins[] = {t[0], t[1], &updates};
  launch(op, t[0]->dtype, device, ins, 3, &out, attrs);
  return to_python(std::move(out));
}

}  // namespace hwport::pipeline
