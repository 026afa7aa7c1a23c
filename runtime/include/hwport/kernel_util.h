/* hwport C ABI v1 — static inline conveniences for kernel writers (no ABI surface of their own;
 * kept apart from kernel.h so that tools parsing the declarations, e.g. cffi, see no bodies). */
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

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_KERNEL_UTIL_H */
