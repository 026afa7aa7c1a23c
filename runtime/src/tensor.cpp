#include "tensor.h"

#include "errors.h"

namespace hwport {

std::shared_ptr<Storage> Storage::allocate(Device* device, uint64_t nbytes, bool segment_start) {
  auto s = std::make_shared<Storage>(Key{});
  s->device_ = device;
  s->nbytes_ = nbytes;
  if (nbytes == 0) return s;
  s->block_ = device->allocator->allocate(nbytes, device->current_stream(), segment_start);
  s->buffer_ = s->block_->segment;
  s->base_offset_ = s->block_->offset;
  return s;
}

std::shared_ptr<Storage> Storage::wrap(Device* device, Foreign kind, void* ptr, uint64_t nbytes,
                                       std::function<void()> release) {
  const Plugin& plugin = *device->plugin;
  const bool host = kind == Foreign::Host;
  HWP_Buffer buffer = nullptr;
  if (nbytes > 0) {
    auto wrap_fn = host ? plugin.memory.wrap_host_memory : plugin.memory.wrap_device_memory;
    const char* name = host ? "wrap_host_memory" : "wrap_device_memory";
    if (!wrap_fn)
      raise(ErrorKind::NotSupported,
            device->name + " cannot wrap " +
                (host ? "host memory" : "device memory of another framework") +
                " (its plugin has no memory." + name + ")");
    plugin.check(wrap_fn(device->index, ptr, nbytes, &buffer), name);
  }
  auto s = std::make_shared<Storage>(Key{});
  s->device_ = device;
  s->nbytes_ = nbytes;
  s->buffer_ = buffer;
  s->foreign_ = kind;
  s->release_ = std::move(release);
  return s;
}

Storage::~Storage() {
  if (block_) {
    device_->allocator->free(block_);
    return;
  }
  if (!release_) return;
  // Foreign memory: queued kernels may still read it, so finish the device's work first.
  const Plugin& plugin = *device_->plugin;
  plugin.device.synchronize_device(device_->index);
  auto release_buffer = foreign_ == Foreign::Device ? plugin.memory.release_device_buffer
                                                   : plugin.memory.release_host_buffer;
  if (buffer_ && release_buffer) release_buffer(device_->index, buffer_);
  release_();
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (shape[i] == 0) return true;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device* device) {
  for (int64_t d : shape)
    if (d < 0) raise(ErrorKind::Value, "negative dimension in shape " + shape_str(shape));
  Tensor t;
  t.shape = shape;
  t.strides = contiguous_strides(shape);
  t.dtype = dtype;
  t.storage = Storage::allocate(device, static_cast<uint64_t>(hwport::numel(shape)) * itemsize(dtype));
  return t;
}

void Tensor::byte_span(uint64_t* lo, uint64_t* hi) const {
  int64_t min_e = offset, max_e = offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      *lo = *hi = byte_offset();
      return;
    }
    int64_t extent = (shape[i] - 1) * strides[i];
    if (extent < 0) min_e += extent; else max_e += extent;
  }
  const uint64_t size = itemsize(dtype);
  *lo = storage->base_offset() + static_cast<uint64_t>(min_e) * size;
  *hi = storage->base_offset() + static_cast<uint64_t>(max_e + 1) * size;
}

}  // namespace hwport
