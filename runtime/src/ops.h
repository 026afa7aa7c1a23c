// The ops the runtime core itself needs (the full op library is generated from ops.yaml by
// phi_ops): shape/dtype inference for them lives here, next to their dispatch.
#pragma once

#include <string>

#include "dispatch.h"
#include "tensor.h"

namespace hwport {

// numpy broadcasting of two shapes; throws ValueError naming `op` and both shapes.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// A view of `t` broadcast to `shape` (stride 0 on expanded dims); shapes must be compatible.
Tensor broadcast_to(const Tensor& t, const Shape& shape);

Tensor contiguous(const Tensor& t);
// A contiguous copy in fresh memory on the same device (even when t is contiguous).
Tensor clone(const Tensor& t);
Tensor cast(const Tensor& t, DType dtype);
Tensor full(const Shape& shape, const AttrValue& value, DType dtype, Device* device);
// Elementwise binary op with numpy broadcasting and type promotion.
Tensor binary(int op, const Tensor& a, const Tensor& b);
// The same view's data on another device (a contiguous copy); `t` itself if already there.
Tensor to_device(const Tensor& t, Device* device);

}  // namespace hwport
