/* Zoo plugins for hwcheck's checker-correctness cases (issue 12): each is the zoo's `good`
 * plugin (test_runtime.h, no stream table, one "add" float32 kernel) wrong in one way a vendor's
 * port could ship. Built by hwport_add_zoo (tests/plugins/CMakeLists.txt) once per variant.
 *
 *   extra_exports          a debug helper, zc_dump_stats, is exported next to
 *                          hwport_plugin_init (marked with HWP_EXPORT "to call it from gdb").
 *   underlinked            also registers "exp" float32, which calls expf, but the library is
 *                          not linked with -lm: it loads in any process that already has libm
 *                          (Python, the runtime) and fails with RTLD_NOW anywhere else.
 *   abort_kernel           "add" handles ranks up to 2; for more it prints a message and calls
 *                          abort() (a vendor's "unreachable" handler).
 *   runtime_not_supported  "add" returns HWP_ERROR_NOT_SUPPORTED for ranks above 2 (an
 *                          unsupported shape found at run time): valid, the host must fall
 *                          back to the CPU for those calls.
 *   no_copy                "add" is registered without HWP_KERNEL_ACCEPTS_STRIDED and there is
 *                          no "copy" kernel: the host's contiguous copy of a strided input
 *                          silently runs on the CPU fallback.
 * Ids 1-4 of its own (its variants never share a build with test_plugin.c's). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ZC_ID_extra_exports 1
#define ZC_ID_underlinked 2
#define ZC_ID_abort_kernel 3
#define ZC_ID_runtime_not_supported 4
#define ZC_ID_no_copy 5

#ifndef HWP_TEST_VARIANT
#error "compile with -DHWP_TEST_VARIANT=<variant> (see the list at the top of this file)"
#endif
#define ZC_CAT_(a, b) a##b
#define ZC_CAT(a, b) ZC_CAT_(a, b)
#define ZC_STR_(x) #x
#define ZC_STR(x) ZC_STR_(x)
#define ZC_VARIANT ZC_CAT(ZC_ID_, HWP_TEST_VARIANT)
#define ZC_IS(v) (ZC_VARIANT == ZC_ID_##v)
#if ZC_VARIANT < 1
#error "unknown HWP_TEST_VARIANT"
#endif

#include "test_runtime.h"

#define ZC_MAX_RANK 2 /* abort_kernel, runtime_not_supported: the ranks "add" handles */

/* The byte offset of element `idx` of a view (NULL strides: contiguous). */
static int64_t zc_offset(const HWP_TensorView *v, const int64_t *idx) {
  int64_t off = 0, contiguous = 1;
  int32_t k;
  for (k = v->ndim - 1; k >= 0; --k) {
    off += idx[k] * (v->strides ? v->strides[k] : contiguous);
    contiguous *= v->shape[k];
  }
  return off;
}

/* Checks an elementwise float32 call: every input has the output's shape (the host broadcasts
 * with stride-0 views), the output is contiguous. Returns the element count or -1. */
static int64_t zc_check(const HWP_KernelContext *ctx, int32_t inputs, const char *op) {
  int32_t i, k;
  int64_t numel = 1;
  const HWP_TensorView *out;
  if (ctx == NULL || ctx->num_inputs != inputs || ctx->num_outputs != 1) {
    tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: expected %d inputs and 1 output", op, (int)inputs);
    return -1;
  }
  out = &ctx->outputs[0];
  if (out->dtype != HWP_DTYPE_FLOAT32 || out->ndim < 0 || out->ndim > HWP_MAX_NDIM) {
    tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: output dtype %d rank %d", op, (int)out->dtype,
            (int)out->ndim);
    return -1;
  }
  for (i = 0; i < inputs; ++i) {
    const HWP_TensorView *in = &ctx->inputs[i];
    if (in->dtype != HWP_DTYPE_FLOAT32 || in->ndim != out->ndim) {
      tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: input %d dtype %d rank %d", op, (int)i,
              (int)in->dtype, (int)in->ndim);
      return -1;
    }
    for (k = 0; k < out->ndim; ++k)
      if (in->shape[k] != out->shape[k]) {
        tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: input %d dimension %d differs", op, (int)i,
                (int)k);
        return -1;
      }
  }
  for (k = 0; k < out->ndim; ++k) numel *= out->shape[k];
  return numel;
}

/* out[i] = a[i] + b[i] (unary == NULL) or unary(a[i]), walking the output's index space. */
static HWP_Status zc_elementwise(const HWP_KernelContext *ctx, float (*unary)(float),
                                 const char *op) {
  int32_t inputs = unary ? 1 : 2;
  int64_t idx[HWP_MAX_NDIM] = {0};
  int64_t numel = zc_check(ctx, inputs, op), i;
  const HWP_TensorView *out;
  float *po;
  int32_t k;
  if (numel < 0) return HWP_ERROR_INVALID_ARGUMENT;
  out = &ctx->outputs[0];
  po = (float *)((char *)out->buffer + out->byte_offset);
  for (i = 0; i < numel; ++i) {
    const HWP_TensorView *a = &ctx->inputs[0];
    float x = *(const float *)((const char *)a->buffer + a->byte_offset +
                               4 * zc_offset(a, idx));
    if (unary) {
      po[i] = unary(x);
    } else {
      const HWP_TensorView *b = &ctx->inputs[1];
      po[i] = x + *(const float *)((const char *)b->buffer + b->byte_offset +
                                   4 * zc_offset(b, idx));
    }
    for (k = out->ndim - 1; k >= 0; --k) {
      if (++idx[k] < out->shape[k]) break;
      idx[k] = 0;
    }
  }
  return HWP_OK;
}

static HWP_Status zc_add_f32(const HWP_KernelContext *ctx) {
  HWP_Status st;
  if (ctx == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "add: ctx is NULL");
  if ((st = tr_check_device(ctx->device, "add")) != HWP_OK) return st;
#if ZC_IS(abort_kernel)
  if (ctx->num_outputs == 1 && ctx->outputs[0].ndim > ZC_MAX_RANK) {
    fprintf(stderr, "zc add: rank %d is not implemented\n", (int)ctx->outputs[0].ndim);
    fflush(stderr);
    abort(); /* the bug: a kernel must return an error, never end the process */
  }
#elif ZC_IS(runtime_not_supported)
  if (ctx->num_outputs == 1 && ctx->outputs[0].ndim > ZC_MAX_RANK)
    return tr_fail(HWP_ERROR_NOT_SUPPORTED, "add: rank %d is not supported (at most %d)",
                   (int)ctx->outputs[0].ndim, ZC_MAX_RANK);
#endif
  return zc_elementwise(ctx, NULL, "add");
}

#if ZC_IS(underlinked)
static HWP_Status zc_exp_f32(const HWP_KernelContext *ctx) {
  HWP_Status st;
  if (ctx == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "exp: ctx is NULL");
  if ((st = tr_check_device(ctx->device, "exp")) != HWP_OK) return st;
  return zc_elementwise(ctx, expf, "exp"); /* libm: not linked */
}
#endif

#if ZC_IS(extra_exports)
/* The bug: exported, so it may clash with another library's symbol of the same name. */
HWP_EXPORT void zc_dump_stats(void);
HWP_EXPORT void zc_dump_stats(void) {
  fprintf(stderr, "device 0: %llu bytes in use\n", (unsigned long long)tr_stats[0].bytes_in_use);
}
#endif

/* ---- tables ----------------------------------------------------------------------------- */
static const HWP_DeviceTable zc_device_table = {
    sizeof(HWP_DeviceTable), tr_get_device_count, tr_synchronize_device, tr_get_properties,
    NULL, NULL, NULL};
static const HWP_MemoryTable zc_memory_table = {
    sizeof(HWP_MemoryTable), tr_allocate, tr_deallocate, tr_copy_h2d, tr_copy_d2h, tr_copy_d2d,
    NULL, NULL, NULL, NULL, tr_get_memory_stats, NULL, NULL, NULL, TR_DLPACK_MEMORY};
static const HWP_PluginApi zc_api = {
    sizeof(HWP_PluginApi), HWP_ABI_VERSION_MAJOR, HWP_ABI_VERSION_MINOR,
    "test_" ZC_STR(HWP_TEST_VARIANT), "1.0.0", &zc_device_table, &zc_memory_table,
    tr_get_last_error, NULL, NULL, NULL, NULL, NULL};

static HWP_Status zc_register(const HWP_HostApi *host, const char *op, HWP_KernelFn fn,
                              uint32_t flags) {
  HWP_KernelRegistration reg = {sizeof(HWP_KernelRegistration), NULL, HWP_DTYPE_FLOAT32, 0,
                                NULL, NULL};
  HWP_Status st;
  reg.op_name = op;
  reg.flags = flags;
  reg.fn = fn;
  st = host->register_kernel(host->host_context, &reg);
  return st == HWP_OK ? st : tr_fail(st, "register_kernel(%s, float32) failed with %d", op,
                                     (int)st);
}

HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out);
HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out) {
  HWP_Status st;
  if (host == NULL || out == NULL)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "hwport_plugin_init: NULL argument");
  if (!HWP_HAS_FIELD(host, HWP_HostApi, register_kernel) || host->register_kernel == NULL)
    return tr_fail(HWP_ERROR_VERSION_MISMATCH, "host API has no register_kernel");
  if (host->abi_major != HWP_ABI_VERSION_MAJOR)
    return tr_fail(HWP_ERROR_VERSION_MISMATCH, "host ABI major %u, plugin %d",
                   (unsigned)host->abi_major, HWP_ABI_VERSION_MAJOR);
  tr_memory_init("test_" ZC_STR(HWP_TEST_VARIANT)); /* HWPORT_<DEVICE TYPE>_MEMORY_LIMIT */
#if ZC_IS(no_copy)
  st = zc_register(host, "add", zc_add_f32, 0); /* the bug: contiguous inputs, and no copy */
#else
  st = zc_register(host, "add", zc_add_f32, HWP_KERNEL_ACCEPTS_STRIDED);
#endif
  if (st != HWP_OK) return st;
#if ZC_IS(underlinked)
  st = zc_register(host, "exp", zc_exp_f32, HWP_KERNEL_ACCEPTS_STRIDED);
  if (st != HWP_OK) return st;
#endif
  *out = &zc_api;
  return HWP_OK;
}
