#include "dlpack.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "errors.h"

namespace hwport {

namespace {

struct ExportContext {
  Tensor tensor;  // keeps the storage alive while a consumer holds the data
  Shape shape;
  Shape strides;
  DLManagedTensor managed;
  DLManagedTensorVersioned versioned;
};

DLDataType to_dl_dtype(DType d) {
  const uint8_t bits = static_cast<uint8_t>(itemsize(d) * 8);
  switch (d) {
    case DType::Bool: return {kDLBool, 8, 1};
    case DType::UInt8: return {kDLUInt, 8, 1};
    case DType::BFloat16: return {kDLBfloat, 16, 1};
    case DType::Float16: case DType::Float32: case DType::Float64: return {kDLFloat, bits, 1};
    default: return {kDLInt, bits, 1};
  }
}

bool from_dl_dtype(DLDataType t, DType* out) {
  if (t.lanes != 1) return false;
  switch (t.code) {
    case kDLBool: if (t.bits != 8) return false; *out = DType::Bool; return true;
    case kDLUInt: if (t.bits != 8) return false; *out = DType::UInt8; return true;
    case kDLBfloat: if (t.bits != 16) return false; *out = DType::BFloat16; return true;
    case kDLFloat:
      if (t.bits == 16) *out = DType::Float16;
      else if (t.bits == 32) *out = DType::Float32;
      else if (t.bits == 64) *out = DType::Float64;
      else return false;
      return true;
    case kDLInt:
      if (t.bits == 8) *out = DType::Int8;
      else if (t.bits == 16) *out = DType::Int16;
      else if (t.bits == 32) *out = DType::Int32;
      else if (t.bits == 64) *out = DType::Int64;
      else return false;
      return true;
    default: return false;
  }
}

void delete_export(DLManagedTensor* self) {
  std::unique_ptr<ExportContext> owned(static_cast<ExportContext*>(self->manager_ctx));
}

void delete_export_versioned(DLManagedTensorVersioned* self) {
  std::unique_ptr<ExportContext> owned(static_cast<ExportContext*>(self->manager_ctx));
}

// Orders the tensor's pending work before the consumer's use of device memory: DLPack's
// `stream` is the consumer's stream (-1: the consumer orders it; none given: it may use the
// data at once).
void order_for_consumer(Device* dev, std::optional<int64_t> consumer_stream) {
  if (consumer_stream && *consumer_stream == -1) return;
  if (consumer_stream && *consumer_stream < -1)
    raise(ErrorKind::Value, "__dlpack__: stream must be -1, None or a stream handle (>= 0), got " +
                                std::to_string(*consumer_stream));
  const Plugin& p = *dev->plugin;
  HWP_Stream ours = dev->current_stream();
  if (consumer_stream && p.stream.native_stream_wait) {
    p.check(p.stream.native_stream_wait(dev->index, static_cast<uintptr_t>(*consumer_stream),
                                        ours),
            "native_stream_wait");
    return;
  }
  dev->synchronize_stream(ours);
}

std::unique_ptr<ExportContext> export_tensor(const Tensor& t, DLTensor* dl,
                                             std::optional<int64_t> consumer_stream) {
  Device* dev = t.device();
  const Plugin& p = *dev->plugin;
  const bool host = dev->host_memory;
  if (!exchanges_memory(*dev))
    raise(ErrorKind::Runtime, "__dlpack__: " + dev->name + " memory is neither host-addressable "
                              "nor exchanged by its plugin (properties.dlpack_device_type and "
                              "memory.device_address); ask for a host copy (dl_device=(1, 0), "
                              "e.g. np.from_dlpack(t, device='cpu')) or copy it first with "
                              ".to('cpu')");
  if (host)
    dev->synchronize();  // the consumer reads at once; it shares no stream with us
  else
    order_for_consumer(dev, consumer_stream);
  auto ctx = std::make_unique<ExportContext>();
  ctx->tensor = t;
  ctx->shape = t.shape;
  ctx->strides = t.strides;
  void* data = nullptr;
  if (t.storage->buffer()) {
    if (host)
      p.check(p.memory.host_address(dev->index, t.storage->buffer(), t.byte_offset(), &data),
              "host_address");
    else
      p.check(p.memory.device_address(dev->index, t.storage->buffer(), t.byte_offset(), &data),
              "device_address");
  }
  dl->data = data;
  dl->device = dlpack_device_of(*dev);
  dl->ndim = static_cast<int32_t>(t.shape.size());
  dl->dtype = to_dl_dtype(t.dtype);
  dl->shape = ctx->shape.data();
  dl->strides = ctx->strides.data();
  dl->byte_offset = 0;
  return ctx;
}

Tensor wrap_dltensor(const DLTensor& dl, Device* device, const std::function<void()>& release);

}  // namespace

DLDevice dlpack_device_of(const Device& d) {
  if (d.host_memory) return {kDLCPU, 0};
  if (d.dlpack_type != 0) return {d.dlpack_type, d.dlpack_id};
  return {kDLExtDev, d.index};
}

std::string dlpack_device_str(DLDevice d) {
  // DLPack's DLDeviceType names, indexed by value.
  static const char* const kNames[] = {
      nullptr,       "kDLCPU",     "kDLCUDA",    "kDLCUDAHost", "kDLOpenCL",
      nullptr,       nullptr,      "kDLVulkan",  "kDLMetal",    "kDLVPI",
      "kDLROCM",     "kDLROCMHost", "kDLExtDev", "kDLCUDAManaged", "kDLOneAPI",
      "kDLWebGPU",   "kDLHexagon", "kDLMAIA"};
  const int32_t n = static_cast<int32_t>(sizeof kNames / sizeof kNames[0]);
  const char* name = d.device_type >= 0 && d.device_type < n ? kNames[d.device_type] : nullptr;
  return "(" + std::to_string(d.device_type) + ", " + std::to_string(d.device_id) + ")" +
         (name ? std::string(" ") + name : "");
}

DLManagedTensor* to_dlpack(const Tensor& t, std::optional<int64_t> consumer_stream) {
  DLTensor dl{};
  auto ctx = export_tensor(t, &dl, consumer_stream);
  ctx->managed.dl_tensor = dl;
  ctx->managed.manager_ctx = ctx.get();
  ctx->managed.deleter = delete_export;
  return &ctx.release()->managed;
}

DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t,
                                              std::optional<int64_t> consumer_stream) {
  DLTensor dl{};
  auto ctx = export_tensor(t, &dl, consumer_stream);
  ctx->versioned.version = {1, 0};
  ctx->versioned.flags = 0;  // writable: the consumer shares the tensor's memory
  ctx->versioned.dl_tensor = dl;
  ctx->versioned.manager_ctx = ctx.get();
  ctx->versioned.deleter = delete_export_versioned;
  return &ctx.release()->versioned;
}

namespace {

// A capsule that hwport itself exported for `device`: the view it came from, storage shared
// (no wrapping, which would give the plugin a second handle to its own allocation).
template <typename Managed>
std::optional<Tensor> own_export(Managed* managed, void (*own_deleter)(Managed*), Device* device) {
  if (managed->deleter != own_deleter) return std::nullopt;
  Tensor t = static_cast<ExportContext*>(managed->manager_ctx)->tensor;
  if (t.device() != device) return std::nullopt;
  managed->deleter(managed);
  return t;
}

}  // namespace

Tensor from_dlpack(DLManagedTensorVersioned* managed, Device* device) {
  auto release = [managed]() {
    if (managed->deleter) managed->deleter(managed);
  };
  if (managed->version.major != 1) {
    const uint32_t major = managed->version.major;
    release();
    raise(ErrorKind::Value, "from_dlpack: DLPack major version " + std::to_string(major) +
                                " is not supported (expected 1)");
  }
  if (auto t = own_export(managed, delete_export_versioned, device)) return *t;
  return wrap_dltensor(managed->dl_tensor, device, release);
}

Tensor from_dlpack(DLManagedTensor* managed, Device* device) {
  auto release = [managed]() {
    if (managed->deleter) managed->deleter(managed);
  };
  if (auto t = own_export(managed, delete_export, device)) return *t;
  return wrap_dltensor(managed->dl_tensor, device, release);
}

namespace {

Tensor wrap_dltensor(const DLTensor& dl, Device* device, const std::function<void()>& release) {
  DType dtype;
  const bool host = dl.device.device_type == kDLCPU || dl.device.device_type == kDLCUDAHost;
  const bool ours = device->dlpack_type != 0 && dl.device.device_type == device->dlpack_type &&
                    dl.device.device_id == device->dlpack_id;
  if (host ? !device->host_memory : !ours) {
    release();
    raise(ErrorKind::Value, "from_dlpack: " + device->name + " cannot take memory of DLPack " +
                                "device " + dlpack_device_str(dl.device) + " without a copy; it " +
                                "exchanges " + dlpack_device_str(dlpack_device_of(*device)) +
                                (device->host_memory || device->dlpack_type ? "" : " (nothing)"));
  }
  if (!from_dl_dtype(dl.dtype, &dtype)) {
    release();
    raise(ErrorKind::Type, "from_dlpack: unsupported DLPack dtype (code " +
                               std::to_string(dl.dtype.code) + ", bits " +
                               std::to_string(dl.dtype.bits) + ", lanes " +
                               std::to_string(dl.dtype.lanes) + ")");
  }
  Tensor t;
  t.dtype = dtype;
  const int64_t size = static_cast<int64_t>(itemsize(dtype));
  int64_t lo = 0, hi = 0;  // element extents relative to the first element
  bool empty = false;
  try {  // the producer's shape and strides are untrusted: checked like any view
    if (dl.ndim < 0 || dl.ndim > HWP_MAX_NDIM)
      raise(ErrorKind::Value, "from_dlpack: ndim " + std::to_string(dl.ndim) +
                                  " is out of range (expected 0.." +
                                  std::to_string(HWP_MAX_NDIM) + ")");
    if (dl.ndim > 0 && !dl.shape)
      raise(ErrorKind::Value, "from_dlpack: the DLTensor has ndim " + std::to_string(dl.ndim) +
                                  " but a NULL shape");
    t.shape.assign(dl.shape, dl.shape + dl.ndim);
    check_shape(t.shape, "from_dlpack");
    tensor_nbytes(t.shape, dtype, "from_dlpack");
    t.strides = dl.strides ? Shape(dl.strides, dl.strides + dl.ndim) : contiguous_strides(t.shape);
    empty = !view_extent(t.shape, t.strides, dtype, "from_dlpack", &lo, &hi);
  } catch (...) {
    release();
    throw;
  }
  char* first = static_cast<char*>(dl.data) + dl.byte_offset;
  uint64_t nbytes = empty ? 0 : static_cast<uint64_t>((hi - lo + 1) * size);
  try {
    t.storage = Storage::wrap(device, host ? Storage::Foreign::Host : Storage::Foreign::Device,
                              first + lo * size, nbytes, release);
  } catch (...) {
    release();
    throw;
  }
  t.offset = -lo;
  return t;
}

}  // namespace

}  // namespace hwport
