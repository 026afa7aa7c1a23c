// DLPack (https://dmlc.github.io/dlpack) exchange for host-memory devices: the data structures
// of the DLPack ABI (1.0 versioned and pre-1.0 unversioned capsules) and the zero-copy
// conversions.
#pragma once

#include <cstdint>

#include "tensor.h"

namespace hwport {

enum DLDeviceTypeCode : int32_t { kDLCPU = 1, kDLCUDAHost = 3, kDLExtDev = 12 };
enum DLDataTypeCode : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 };

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; NULL means compact row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
constexpr uint64_t kDLFlagReadOnly = 1;
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

// DLPack tensors that keep `t` alive; the caller owns them (call their deleter).
// Throw when the device's memory is not host-addressable.
DLManagedTensor* to_dlpack(const Tensor& t);
DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t);
// Wrap a DLPack tensor in host memory as a tensor on `device` without copying; they take
// ownership (the deleter runs when the tensor's storage dies, or at once on error).
Tensor from_dlpack(DLManagedTensor* managed, Device* device);
Tensor from_dlpack(DLManagedTensorVersioned* managed, Device* device);

}  // namespace hwport
