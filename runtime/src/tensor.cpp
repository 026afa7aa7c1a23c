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

namespace {

[[noreturn]] void shape_overflow(const Shape& shape, const std::string& what) {
  raise(ErrorKind::Value, what + ": shape " + shape_str(shape) +
                              " has more elements than an int64 can count");
}

}  // namespace

void check_shape(const Shape& shape, const std::string& what) {
  int64_t span = 1;
  for (int64_t d : shape) {
    if (d < 0) raise(ErrorKind::Value, what + ": negative dimension in shape " + shape_str(shape));
    if (__builtin_mul_overflow(span, d > 0 ? d : 1, &span)) shape_overflow(shape, what);
  }
}

uint64_t tensor_nbytes(const Shape& shape, DType dtype, const std::string& what) {
  // The contiguous strides in bytes (zero dims counted as 1) must fit too: plugins form them.
  int64_t span = 1, bytes = 0;
  for (int64_t d : shape) span *= d > 0 ? d : 1;  // fits: check_shape
  const int64_t n = numel(shape);
  if (__builtin_mul_overflow(span, static_cast<int64_t>(itemsize(dtype)), &bytes)) {
    const std::string described = "a tensor of shape " + shape_str(shape) + " and dtype " +
                                  dtype_name(dtype) + " (" + std::to_string(n) +
                                  " elements of " + std::to_string(itemsize(dtype)) + " bytes)";
    if (n == 0)
      raise(ErrorKind::Value, what + ": the strides of " + described + " overflow int64 bytes");
    raise(ErrorKind::OutOfMemory, what + ": " + described +
                                      " is larger than any device can hold (at most " +
                                      std::to_string(kMaxTensorBytes) + " bytes)");
  }
  return static_cast<uint64_t>(n) * itemsize(dtype);
}

bool view_extent(const Shape& shape, const Shape& strides, DType dtype, const std::string& what,
                 int64_t* lo, int64_t* hi) {
  *lo = *hi = 0;
  const int64_t size = static_cast<int64_t>(itemsize(dtype));
  bool empty = false, overflow = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t extent = 0, bytes = 0;
    // Plugins scale every stride to bytes, a size-1 dim's too.
    overflow |= __builtin_mul_overflow(strides[i], size, &bytes);
    if (shape[i] == 0) empty = true;
    if (empty || overflow) continue;
    overflow |= __builtin_mul_overflow(shape[i] - 1, strides[i], &extent) ||
                __builtin_add_overflow(extent < 0 ? *lo : *hi, extent, extent < 0 ? lo : hi);
  }
  // The byte extents must be representable too: (hi - lo + 1) elements of `size` bytes.
  int64_t span = 0;
  overflow |= !empty && (__builtin_sub_overflow(*hi, *lo, &span) ||
                         __builtin_add_overflow(span, 1, &span) ||
                         __builtin_mul_overflow(span, size, &span));
  if (overflow)
    raise(ErrorKind::Value, what + ": a view of shape " + shape_str(shape) + " and strides " +
                                shape_str(strides) + " spans more bytes than an int64 can count");
  if (empty) *lo = *hi = 0;
  return !empty;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    if (__builtin_mul_overflow(s, shape[i] > 0 ? shape[i] : 1, &s))
      shape_overflow(shape, "contiguous strides");
  }
  return strides;
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) shape_overflow(shape, "numel");
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool Tensor::is_contiguous() const {
  for (int64_t d : shape)
    if (d == 0) return true;
  int64_t expected = 1;  // bounded by numel: no dim is 0
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device* device, const char* what) {
  check_shape(shape, what);
  const uint64_t nbytes = tensor_nbytes(shape, dtype, what);
  Tensor t;
  t.shape = shape;
  t.strides = contiguous_strides(shape);
  t.dtype = dtype;
  try {
    t.storage = Storage::allocate(device, nbytes);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::OutOfMemory) throw;
    raise(ErrorKind::OutOfMemory, std::string(what) + ": cannot allocate a tensor of shape " +
                                      shape_str(shape) + " and dtype " + dtype_name(dtype) +
                                      ": " + e.what());
  }
  return t;
}

void Tensor::byte_span(uint64_t* lo, uint64_t* hi) const {
  int64_t min_e = 0, max_e = 0;
  if (!view_extent(shape, strides, dtype, "byte_span", &min_e, &max_e)) {
    *lo = *hi = byte_offset();
    return;
  }
  // Views are checked against their storage when made, so these stay inside it.
  const uint64_t size = itemsize(dtype);
  *lo = storage->base_offset() + static_cast<uint64_t>(offset + min_e) * size;
  *hi = storage->base_offset() + static_cast<uint64_t>(offset + max_e + 1) * size;
}

}  // namespace hwport
