// Tensor = a strided view (shape, strides in elements, element offset) over a Storage (one
// allocation from a device's caching allocator, or foreign host memory wrapped zero-copy).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "device.h"
#include "dtype.h"

namespace hwport {

using Shape = std::vector<int64_t>;

class Storage {
  struct Key {
    explicit Key() = default;
  };

 public:
  explicit Storage(Key) {}  // use allocate() or wrap()
  // Memory from the device's caching allocator, on the device's current stream;
  // segment_start: at offset 0 of its plugin buffer (base_offset() == 0).
  static std::shared_ptr<Storage> allocate(Device* device, uint64_t nbytes,
                                           bool segment_start = false);
  // Memory owned elsewhere, wrapped by the plugin without copying: host memory
  // (memory.wrap_host_memory, HWP_DEVICE_HOST_MEMORY devices) or memory of this device that
  // another framework allocated, at the address memory.device_address would give
  // (memory.wrap_device_memory). `release` runs after the device has finished with it.
  enum class Foreign { Host, Device };
  static std::shared_ptr<Storage> wrap(Device* device, Foreign kind, void* ptr, uint64_t nbytes,
                                       std::function<void()> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  Device* device() const { return device_; }
  HWP_Buffer buffer() const { return buffer_; }
  uint64_t base_offset() const { return base_offset_; }  // bytes into buffer()
  uint64_t nbytes() const { return nbytes_; }
  // Records use on a stream other than the allocation stream (cross-stream reuse safety).
  // The allocator compares the streams under its lock: forget_stream may re-key the block.
  void record_stream(HWP_Stream stream) {
    if (block_) device_->allocator->record_stream(block_, stream);
  }
  // Bumped by every in-place write into the storage (Tensor.set_value, an optimizer's
  // update): autograd compares it with the version a saved tensor had when its node was
  // recorded, so that a gradient is never computed from overwritten data.
  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  Device* device_ = nullptr;
  Block* block_ = nullptr;
  HWP_Buffer buffer_ = nullptr;
  uint64_t base_offset_ = 0;
  uint64_t nbytes_ = 0;
  Foreign foreign_ = Foreign::Host;  // for memory wrapped by wrap()
  std::function<void()> release_;
  uint64_t version_ = 0;
};

// ---- checked size arithmetic ------------------------------------------------------------
// Every element count, byte count and view extent of the runtime goes through these, so none
// wraps around. The limit: byte offsets and byte strides cross the ABI as int64, so no tensor
// (view or allocation) may span more than INT64_MAX bytes.
constexpr uint64_t kMaxTensorBytes = static_cast<uint64_t>(INT64_MAX);

// Throws ValueError (prefixed `what`) unless every dim is >= 0 and the product of the dims,
// zeros counted as 1 (the largest contiguous stride), fits in int64.
void check_shape(const Shape& shape, const std::string& what);
// Bytes of a contiguous tensor of a checked shape: throws OutOfMemoryError (prefixed `what`,
// naming shape and dtype) above kMaxTensorBytes; ValueError for an empty tensor whose
// contiguous strides in bytes (zero dims counted as 1) would overflow int64.
uint64_t tensor_nbytes(const Shape& shape, DType dtype, const std::string& what);
// Element extents [*lo, *hi] of a view relative to its first element; false (extents 0) for an
// empty view. Throws ValueError (prefixed `what`) when an extent, or any stride in bytes,
// overflows int64. The shape must be checked (check_shape).
bool view_extent(const Shape& shape, const Shape& strides, DType dtype, const std::string& what,
                 int64_t* lo, int64_t* hi);

Shape contiguous_strides(const Shape& shape);  // shape checked (throws ValueError otherwise)
int64_t numel(const Shape& shape);             // shape checked (throws ValueError otherwise)
std::string shape_str(const Shape& shape);

namespace autograd {
struct Meta;  // autograd.h
}

// A tensor's autograd identity (stop_gradient, grad, the node that made it). It moves with the
// tensor and is dropped by a copy: a copy of the struct is a new tensor (a view made by copying
// one starts with no gradient history; the autograd layer links outputs to their node).
class AutogradSlot {
 public:
  AutogradSlot() = default;
  AutogradSlot(const AutogradSlot&) {}
  AutogradSlot& operator=(const AutogradSlot&) {
    meta.reset();
    return *this;
  }
  AutogradSlot(AutogradSlot&&) noexcept = default;
  AutogradSlot& operator=(AutogradSlot&&) noexcept = default;
  std::shared_ptr<autograd::Meta> meta;
};

struct Tensor {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;       // in elements
  int64_t offset = 0;  // in elements
  DType dtype = DType::Float32;
  AutogradSlot autograd;

  Device* device() const { return storage->device(); }
  int64_t numel() const { return hwport::numel(shape); }
  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  bool is_contiguous() const;
  uint64_t byte_offset() const {
    return storage->base_offset() + static_cast<uint64_t>(offset) * itemsize(dtype);
  }
  // A fresh contiguous tensor on `device` (uninitialized memory). Size errors (ValueError,
  // OutOfMemoryError) name `what`, the op asking for it.
  static Tensor empty(const Shape& shape, DType dtype, Device* device,
                      const char* what = "empty");
  // Byte range [lo, hi) of the storage that the view touches (for span copies).
  void byte_span(uint64_t* lo, uint64_t* hi) const;
};

}  // namespace hwport
