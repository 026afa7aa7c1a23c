/* hwport C ABI v1 — static inline conveniences for kernel writers (no ABI surface of their own;
 * kept apart from kernel.h so that tools parsing the declarations, e.g. cffi, see no bodies).
 * Needs GCC or Clang (__builtin_*_overflow). */
#ifndef HWPORT_KERNEL_UTIL_H
#define HWPORT_KERNEL_UTIL_H

#include "hwport/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Convenience readers for kernel writers. */
static inline int64_t hwp_attr_int64(const HWP_KernelContext *ctx, const char *name,
                                     int64_t fallback) {
  int64_t v = fallback;
  return ctx->get_attr(ctx, name, HWP_ATTR_INT64, &v, NULL) == HWP_OK ? v : fallback;
}
static inline double hwp_attr_float64(const HWP_KernelContext *ctx, const char *name,
                                      double fallback) {
  double v = fallback;
  return ctx->get_attr(ctx, name, HWP_ATTR_FLOAT64, &v, NULL) == HWP_OK ? v : fallback;
}

/* Byte size of one element of `dtype`; 0 for an unknown code. */
static inline size_t hwp_dtype_size(HWP_DType dtype) {
  switch (dtype) {
  case HWP_DTYPE_BOOL: case HWP_DTYPE_INT8: case HWP_DTYPE_UINT8: return 1;
  case HWP_DTYPE_INT16: case HWP_DTYPE_FLOAT16: case HWP_DTYPE_BFLOAT16: return 2;
  case HWP_DTYPE_INT32: case HWP_DTYPE_FLOAT32: return 4;
  case HWP_DTYPE_INT64: case HWP_DTYPE_FLOAT64: return 8;
  default: return 0;
  }
}

/* Checks the sizes of view `v` (ndim in 0..HWP_MAX_NDIM, shape non-NULL when ndim > 0):
 * every dim >= 0; the bytes of a contiguous tensor of its shape (zero dims counted as 1), every
 * stride in bytes and the view's byte extent (lowest to highest element, end included) within
 * int64. Then every offset a kernel forms from the view, a sum of index * stride * itemsize
 * over the dims, fits in int64. NULL strides mean contiguous. Returns NULL and sets *numel, or
 * what is wrong (a static string, for an error message). The host never passes a view that
 * fails it; a kernel checks to stay safe without relying on that. */
static inline const char *hwp_view_size_error(const HWP_TensorView *v, int64_t *numel) {
  const int64_t size = (int64_t)hwp_dtype_size(v->dtype);
  int64_t span = 1, lo = 0, hi = 0, extent = 0;
  int empty = 0;
  if (size == 0) return "an unknown dtype";
  for (int k = v->ndim - 1; k >= 0; --k) {
    const int64_t d = v->shape[k], stride = v->strides != NULL ? v->strides[k] : span;
    int64_t bytes = 0;
    if (d < 0) return "a negative dim";
    if (__builtin_mul_overflow(span, d > 0 ? d : 1, &span))
      return "more elements than an int64 can count";
    if (__builtin_mul_overflow(stride, size, &bytes))
      return "a stride whose byte size overflows int64";
    if (d == 0) empty = 1;
    if (empty) continue;
    if (__builtin_mul_overflow(d - 1, bytes, &extent) ||
        __builtin_add_overflow(extent < 0 ? lo : hi, extent, extent < 0 ? &lo : &hi))
      return "a byte extent that overflows int64";
  }
  if (!empty && (__builtin_sub_overflow(hi, lo, &extent) ||
                 __builtin_add_overflow(extent, size, &extent)))
    return "a byte extent that overflows int64";
  if (__builtin_mul_overflow(span, size, &extent)) /* its contiguous size, as the host's limit */
    return "more bytes than an int64 can count";
  *numel = empty ? 0 : span;
  return NULL;
}

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_KERNEL_UTIL_H */
