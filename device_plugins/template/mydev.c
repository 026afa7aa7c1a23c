/* mydev.c — the template of a port: a device runtime and the `copy` kernel, no other
 * hand-written kernels (every other op decomposes or runs on the host's counted CPU fallback;
 * the codegen target, once the compiler lands, gives the rest). The "device" here keeps its
 * memory in host memory: replace the bodies marked DRIVER with calls into your driver. */
#define _POSIX_C_SOURCE 200809L
#include <hwport/hwport.h>
#include <hwport/kernel_util.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGNMENT 64

static __thread char g_error[256];

static const char *last_error(void) { return g_error; }

static HWP_Status fail(HWP_Status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_error, sizeof g_error, fmt, ap);
  va_end(ap);
  return status;
}

#define CHECK_DEVICE(d) \
  if ((d) != 0) return fail(HWP_ERROR_INVALID_ARGUMENT, "no device %d (mydev has 1)", (int)(d))

/* ---- device ------------------------------------------------------------------------------ */
static HWP_Status get_device_count(int32_t *count) {
  if (!count) return fail(HWP_ERROR_INVALID_ARGUMENT, "count is NULL");
  *count = 1; /* DRIVER: the number of devices */
  return HWP_OK;
}

static HWP_Status synchronize_device(int32_t device) {
  CHECK_DEVICE(device);
  return HWP_OK; /* DRIVER: wait for the device's queues; everything here is synchronous */
}

static HWP_Status get_properties(int32_t device, HWP_DeviceProperties *props) {
  CHECK_DEVICE(device);
  if (!props) return fail(HWP_ERROR_INVALID_ARGUMENT, "props is NULL");
  HWP_DeviceProperties p;
  memset(&p, 0, sizeof p);
  snprintf(p.name, sizeof p.name, "mydev template device");
  snprintf(p.vendor, sizeof p.vendor, "you");
  p.total_memory = 1ull << 30;
  p.memory_alignment = ALIGNMENT;
  p.compute_units = 1;
  p.max_work_group_size = 1;
  p.max_allocation = 1ull << 30;
  p.simd_width = 1;
  /* the host's struct may be older (shorter) than these headers: fill only what it has */
  const size_t n = props->struct_size < sizeof p ? props->struct_size : sizeof p;
  p.struct_size = props->struct_size;
  memcpy(props, &p, n);
  return HWP_OK;
}

static const HWP_DeviceTable g_device = {
    .struct_size = sizeof(HWP_DeviceTable),
    .get_device_count = get_device_count,
    .synchronize_device = synchronize_device,
    .get_properties = get_properties,
};

/* ---- memory: a buffer is whatever handle the driver gives; here an aligned block ---------- */
static HWP_Status allocate(int32_t device, uint64_t nbytes, HWP_Buffer *out) {
  CHECK_DEVICE(device);
  void *p = NULL;
  if (nbytes == 0 || !out) return fail(HWP_ERROR_INVALID_ARGUMENT, "allocate: bad argument");
  if (nbytes > (1ull << 30) || posix_memalign(&p, ALIGNMENT, (size_t)nbytes) != 0)
    return fail(HWP_ERROR_OUT_OF_MEMORY, "allocate: %llu bytes", (unsigned long long)nbytes);
  *out = (HWP_Buffer)p;
  return HWP_OK;
}

static HWP_Status deallocate(int32_t device, HWP_Buffer buffer) {
  CHECK_DEVICE(device);
  free(buffer);
  return HWP_OK;
}

static HWP_Status copy_h2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset, const void *src,
                           uint64_t nbytes) {
  CHECK_DEVICE(device);
  if (!dst || (!src && nbytes)) return fail(HWP_ERROR_INVALID_ARGUMENT, "copy_h2d: NULL");
  if (nbytes) memcpy((char *)dst + dst_offset, src, (size_t)nbytes);
  return HWP_OK;
}

static HWP_Status copy_d2h(int32_t device, void *dst, HWP_Buffer src, uint64_t src_offset,
                           uint64_t nbytes) {
  CHECK_DEVICE(device);
  if (!src || (!dst && nbytes)) return fail(HWP_ERROR_INVALID_ARGUMENT, "copy_d2h: NULL");
  if (nbytes) memcpy(dst, (const char *)src + src_offset, (size_t)nbytes);
  return HWP_OK;
}

static HWP_Status copy_d2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset, HWP_Buffer src,
                           uint64_t src_offset, uint64_t nbytes) {
  CHECK_DEVICE(device);
  if (!dst || !src) return fail(HWP_ERROR_INVALID_ARGUMENT, "copy_d2d: NULL");
  memmove((char *)dst + dst_offset, (const char *)src + src_offset, (size_t)nbytes);
  return HWP_OK;
}

static const HWP_MemoryTable g_memory = {
    .struct_size = sizeof(HWP_MemoryTable),
    .allocate = allocate,
    .deallocate = deallocate,
    .copy_h2d = copy_h2d,
    .copy_d2h = copy_d2h,
    .copy_d2d = copy_d2d,
};

/* ---- the copy kernel: any strided view (strides 0 or negative) into a contiguous output,
 * item by item; the host also uses it to make strided inputs contiguous ---------------------- */
static HWP_Status copy_kernel(const HWP_KernelContext *ctx) {
  if (ctx->num_inputs != 1 || ctx->num_outputs != 1)
    return fail(HWP_ERROR_INVALID_ARGUMENT, "copy: expected 1 input and 1 output");
  const HWP_TensorView *x = &ctx->inputs[0], *out = &ctx->outputs[0];
  int64_t n = 0, index[HWP_MAX_NDIM] = {0};
  const char *bad = hwp_view_size_error(x, &n);
  if (bad) return fail(HWP_ERROR_INVALID_ARGUMENT, "copy: the input has %s", bad);
  const size_t size = hwp_dtype_size(x->dtype);
  const char *src = (const char *)x->buffer + x->byte_offset;
  char *dst = (char *)out->buffer + out->byte_offset;
  if (!x->strides) { /* NULL strides: contiguous */
    memcpy(dst, src, (size_t)n * size);
    return HWP_OK;
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = 0;
    for (int32_t k = 0; k < x->ndim; ++k) at += index[k] * x->strides[k];
    memcpy(dst + (size_t)i * size, src + at * (int64_t)size, size);
    for (int32_t k = x->ndim - 1; k >= 0 && ++index[k] == x->shape[k]; --k) index[k] = 0;
  }
  return HWP_OK;
}

/* ---- the plugin table and the one exported symbol ------------------------------------------ */
static const HWP_PluginApi g_api = {
    .struct_size = sizeof(HWP_PluginApi),
    .abi_major = HWP_ABI_VERSION_MAJOR,
    .abi_minor = HWP_ABI_VERSION_MINOR,
    .device_type = "mydev",
    .plugin_version = "0.1.0",
    .device = &g_device,
    .memory = &g_memory,
    .get_last_error = last_error,
};

HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out) {
  if (!host || !out) return fail(HWP_ERROR_INVALID_ARGUMENT, "init: NULL argument");
  if (host->abi_major != HWP_ABI_VERSION_MAJOR)
    return fail(HWP_ERROR_VERSION_MISMATCH, "built for ABI %d, host has %u",
                HWP_ABI_VERSION_MAJOR, (unsigned)host->abi_major);
  for (HWP_DType dtype = 0; dtype < HWP_DTYPE_COUNT; ++dtype) {
    const HWP_KernelRegistration reg = {
        .struct_size = sizeof(HWP_KernelRegistration),
        .op_name = "copy",
        .dtype = dtype,
        .flags = HWP_KERNEL_ACCEPTS_STRIDED,
        .fn = copy_kernel,
    };
    const HWP_Status st = host->register_kernel(host->host_context, &reg);
    if (st != HWP_OK) return fail(st, "register_kernel(copy, dtype %d) failed", (int)dtype);
  }
  *out = &g_api;
  return HWP_OK;
}
