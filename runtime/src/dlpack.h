// DLPack (https://dmlc.github.io/dlpack) exchange: the data structures of the DLPack ABI (1.0
// versioned and pre-1.0 unversioned capsules) and the zero-copy conversions, for host-memory
// devices (as kDLCPU) and for devices whose plugin exchanges its own memory (ABI 1.1:
// properties.dlpack_device_type, memory.device_address / wrap_device_memory).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tensor.h"

namespace hwport {

enum DLDeviceTypeCode : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLROCM = 10,
  kDLExtDev = 12
};
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

// Whether tensors of `d` export zero-copy: host memory, or a DLPack device its plugin names.
inline bool exchanges_memory(const Device& d) { return d.host_memory || d.dlpack_type != 0; }
// The DLPack device a tensor of `d` exports as: (kDLCPU, 0) for host memory, the plugin's
// (type, id) for exchanging devices, else (kDLExtDev, index) (and export fails).
DLDevice dlpack_device_of(const Device& d);
// "(2, 0) kDLCUDA": a DLPack device for messages.
std::string dlpack_device_str(DLDevice d);

// DLPack tensors that keep `t` alive; the caller owns them (call their deleter). Device memory
// is ordered for the consumer's `consumer_stream` (DLPack's `stream`: -1 = the consumer orders
// it; none = ready at once, by synchronizing). Throw when the memory cannot be exchanged.
DLManagedTensor* to_dlpack(const Tensor& t, std::optional<int64_t> consumer_stream);
DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t,
                                              std::optional<int64_t> consumer_stream);
// Wrap a DLPack tensor as a tensor on `device` without copying: host memory on a host-memory
// device, or memory of the DLPack device that `device` is. They take ownership (the deleter
// runs when the tensor's storage dies, or at once on error).
Tensor from_dlpack(DLManagedTensor* managed, Device* device);
Tensor from_dlpack(DLManagedTensorVersioned* managed, Device* device);

}  // namespace hwport
