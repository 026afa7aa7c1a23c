#include "ops.h"

#include "errors.h"

namespace hwport {

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  if (a == b) return a;
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      raise(ErrorKind::Value, std::string(op) + ": cannot broadcast x of shape " + shape_str(a) +
                                  " with y of shape " + shape_str(b) + " (dimension " +
                                  std::to_string(i) + ": " + std::to_string(da) + " vs " +
                                  std::to_string(db) + ")");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor broadcast_to(const Tensor& t, const Shape& shape) {
  if (t.shape == shape) return t;
  Tensor v;
  v.storage = t.storage;
  v.dtype = t.dtype;
  v.offset = t.offset;
  v.shape = shape;
  v.strides.assign(shape.size(), 0);
  const size_t lead = shape.size() - t.shape.size();
  for (size_t i = 0; i < t.shape.size(); ++i)
    v.strides[lead + i] = t.shape[i] == 1 && shape[lead + i] != 1 ? 0 : t.strides[i];
  return v;
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone(t); }

Tensor clone(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape, t.dtype, t.device(), "copy");
  if (out.numel() == 0) return out;
  const Tensor* in[] = {&t};
  Tensor* outs[] = {&out};
  run_kernel(core_ops().copy, t.dtype, t.device(), in, 1, outs, 1, Attrs{});
  return out;
}

Tensor cast(const Tensor& t, DType dtype) {
  if (t.dtype == dtype) return t;
  Tensor out = Tensor::empty(t.shape, dtype, t.device(), "cast");
  if (out.numel() == 0) return out;
  const Tensor* in[] = {&t};
  Tensor* outs[] = {&out};
  run_kernel(core_ops().cast, t.dtype, t.device(), in, 1, outs, 1, Attrs{});
  return out;
}

Tensor full(const Shape& shape, const AttrValue& value, DType dtype, Device* device) {
  Tensor out = Tensor::empty(shape, dtype, device, "full");
  if (out.numel() == 0) return out;
  Tensor* outs[] = {&out};
  run_kernel(core_ops().fill, dtype, device, nullptr, 0, outs, 1, Attrs{{"value", value}});
  return out;
}

Tensor binary(int op, const Tensor& a, const Tensor& b) {
  if (a.device() != b.device()) {
    raise(ErrorKind::Value, op_name(op) + ": x is on " + a.device()->name + " but y is on " +
                                b.device()->name + "; move one with .to(place) first");
  }
  const DType dtype = promote_types(a.dtype, b.dtype);
  const Shape shape =
      a.shape == b.shape ? a.shape : broadcast_shapes(op_name(op).c_str(), a.shape, b.shape);
  Tensor out = Tensor::empty(shape, dtype, a.device(), op_name(op).c_str());
  if (out.numel() == 0) return out;
  const Tensor ac = a.dtype == dtype ? broadcast_to(a, shape) : broadcast_to(cast(a, dtype), shape);
  const Tensor bc = b.dtype == dtype ? broadcast_to(b, shape) : broadcast_to(cast(b, dtype), shape);
  const Tensor* in[] = {&ac, &bc};
  Tensor* outs[] = {&out};
  run_kernel(op, dtype, a.device(), in, 2, outs, 1, Attrs{});
  return out;
}

Tensor to_device(const Tensor& t, Device* device) {
  if (t.device() == device) return t;
  Tensor moved = transfer(contiguous(t), device);
  return moved;
}

}  // namespace hwport
