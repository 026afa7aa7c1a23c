/* hwport CPU plugin — a validated copy of an HWP_TensorView that outlives the kernel call (the
 * ABI's view and its arrays die when the kernel returns; queued work needs its own copy). */
#ifndef HWPORT_CPU_VIEW_SNAPSHOT_H
#define HWPORT_CPU_VIEW_SNAPSHOT_H

#include <stdint.h>
#include <string.h>

#include "hwport/kernel_util.h"
#include "internal.h"

/* A copy of an HWP_TensorView that outlives the kernel call. Strides in elements. */
typedef struct cpu_view {
  char *base; /* buffer + byte_offset; NULL only for an empty view */
  HWP_DType dtype;
  int32_t ndim;
  int64_t itemsize;
  int64_t numel;
  int64_t shape[HWP_MAX_NDIM];
  int64_t strides[HWP_MAX_NDIM];
} cpu_view;

/* Validates `v` (named `what` in messages) and copies it to `out`. NULL strides = contiguous. */
static inline HWP_Status cpu_view_load(const char *op, const char *what,
                                        const HWP_TensorView *v, cpu_view *out) {
  memset(out, 0, sizeof *out);
  if (CPU_UNLIKELY(!HWP_HAS_FIELD(v, HWP_TensorView, strides)))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s view is %s", op, what,
                     v == NULL ? "NULL" : "too small (struct_size)");
  size_t itemsize = hwp_dtype_size(v->dtype);
  if (CPU_UNLIKELY(itemsize == 0))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has unknown dtype %d", op, what,
                     (int)v->dtype);
  if (CPU_UNLIKELY(v->ndim < 0 || v->ndim > HWP_MAX_NDIM))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has ndim %d (allowed 0..%d)", op, what,
                     (int)v->ndim, HWP_MAX_NDIM);
  if (CPU_UNLIKELY(v->ndim > 0 && v->shape == NULL))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has ndim %d but shape is NULL", op,
                     what, (int)v->ndim);
  int64_t numel = 0;
  const char *bad = hwp_view_size_error(v, &numel);
  if (CPU_UNLIKELY(bad != NULL))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has %s", op, what, bad);
  out->dtype = v->dtype;
  out->ndim = v->ndim;
  out->itemsize = (int64_t)itemsize;
  int64_t acc = 1; /* bounded: the checked product of the dims, zeros counted as 1 */
  for (int k = v->ndim - 1; k >= 0; --k) {
    out->shape[k] = v->shape[k];
    out->strides[k] = v->strides != NULL ? v->strides[k] : acc;
    acc *= out->shape[k] > 0 ? out->shape[k] : 1;
  }
  out->numel = numel;
  if (numel > 0 && CPU_UNLIKELY(v->buffer == NULL))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s buffer is NULL", op, what);
  out->base = v->buffer == NULL ? NULL : (char *)v->buffer + v->byte_offset;
  return HWP_OK;
}

#endif /* HWPORT_CPU_VIEW_SNAPSHOT_H */
