#include "dlpack.h"

#include <functional>
#include <memory>

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

std::unique_ptr<ExportContext> export_tensor(const Tensor& t, DLTensor* dl) {
  Device* dev = t.device();
  if (!dev->host_memory)
    raise(ErrorKind::Runtime, "__dlpack__: " + dev->name + " memory is not host-addressable; "
                              "copy to a host-memory place first with .to('cpu')");
  dev->synchronize();  // the consumer reads at once; it shares no stream with us
  auto ctx = std::make_unique<ExportContext>();
  ctx->tensor = t;
  ctx->shape = t.shape;
  ctx->strides = t.strides;
  void* data = nullptr;
  if (t.storage->buffer()) {
    const Plugin& p = *dev->plugin;
    p.check(p.memory.host_address(dev->index, t.storage->buffer(), t.byte_offset(), &data),
            "host_address");
  }
  dl->data = data;
  dl->device = {kDLCPU, 0};
  dl->ndim = static_cast<int32_t>(t.shape.size());
  dl->dtype = to_dl_dtype(t.dtype);
  dl->shape = ctx->shape.data();
  dl->strides = ctx->strides.data();
  dl->byte_offset = 0;
  return ctx;
}

Tensor wrap_dltensor(const DLTensor& dl, Device* device, const std::function<void()>& release);

}  // namespace

DLManagedTensor* to_dlpack(const Tensor& t) {
  DLTensor dl{};
  auto ctx = export_tensor(t, &dl);
  ctx->managed.dl_tensor = dl;
  ctx->managed.manager_ctx = ctx.get();
  ctx->managed.deleter = delete_export;
  return &ctx.release()->managed;
}

DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t) {
  DLTensor dl{};
  auto ctx = export_tensor(t, &dl);
  ctx->versioned.version = {1, 0};
  ctx->versioned.flags = 0;  // writable: the consumer shares the tensor's memory
  ctx->versioned.dl_tensor = dl;
  ctx->versioned.manager_ctx = ctx.get();
  ctx->versioned.deleter = delete_export_versioned;
  return &ctx.release()->versioned;
}

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
  return wrap_dltensor(managed->dl_tensor, device, release);
}

Tensor from_dlpack(DLManagedTensor* managed, Device* device) {
  auto release = [managed]() {
    if (managed->deleter) managed->deleter(managed);
  };
  return wrap_dltensor(managed->dl_tensor, device, release);
}

namespace {

Tensor wrap_dltensor(const DLTensor& dl, Device* device, const std::function<void()>& release) {
  DType dtype;
  if (dl.device.device_type != kDLCPU && dl.device.device_type != kDLCUDAHost) {
    release();
    raise(ErrorKind::Value, "from_dlpack: only host memory (kDLCPU) can be imported, got "
                            "DLPack device type " + std::to_string(dl.device.device_type));
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
  t.shape.assign(dl.shape, dl.shape + dl.ndim);
  t.strides = dl.strides ? Shape(dl.strides, dl.strides + dl.ndim) : contiguous_strides(t.shape);
  const int64_t size = static_cast<int64_t>(itemsize(dtype));
  int64_t lo = 0, hi = 0;  // element extents relative to the first element
  bool empty = false;
  for (int i = 0; i < dl.ndim; ++i) {
    if (t.shape[i] == 0) empty = true;
    int64_t extent = (t.shape[i] - 1) * t.strides[i];
    if (extent < 0) lo += extent; else hi += extent;
  }
  char* first = static_cast<char*>(dl.data) + dl.byte_offset;
  uint64_t nbytes = empty ? 0 : static_cast<uint64_t>((hi - lo + 1) * size);
  try {
    t.storage = Storage::wrap_host(device, first + lo * size, nbytes, release);
  } catch (...) {
    release();
    throw;
  }
  t.offset = -lo;
  return t;
}

}  // namespace

}  // namespace hwport
