/* hwport CPU plugin — helpers shared by the reduction/scan (kernels_reduce.c), matmul
 * (kernels_linalg.c) and fused nn (kernels_nn.c) kernels: view snapshots that outlive the kernel
 * call, dimension bookkeeping, and a vectorizable float exp. Not part of any ABI. */
#ifndef HWPORT_CPU_REDUCE_COMMON_H
#define HWPORT_CPU_REDUCE_COMMON_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "dims.h"
#include "view_snapshot.h"
#include "fast_expf.h"
#include "parallel.h"

/* kernels_nn.c: softmax, log_softmax, layer_norm, rms_norm (registered by kernels_linalg.c). */
void cpu_register_nn_kernels(const HWP_HostApi *host);
/* kernels_nn.c: the ISA its float32 row functions and kernels_nn_grad.c's are cloned for (0
 * baseline, 1 AVX2+FMA, 2 AVX-512), detected once. */
int cpu_nn_isa_level(void);
/* The `lanes` partial sums l[] added pairwise into l[0] (a tree, not a chain of dependent
 * adds: short rows pay for the reduction once per row). */
#define CPU_LANE_TREE(l, lanes)                                                                \
  for (int w_ = (lanes) / 2; w_ > 0; w_ /= 2)                                                  \
    for (int j_ = 0; j_ < w_; ++j_) (l)[j_] += (l)[j_ + w_]
/* kernels_nn_grad.c: softmax_grad, layer_norm_grad, rms_norm_grad (registered likewise). */
void cpu_register_nn_grad_kernels(const HWP_HostApi *host);
/* kernels_loss.c: cross_entropy, cross_entropy_grad (registered likewise). */
void cpu_register_loss_kernels(const HWP_HostApi *host);

/* Checks that an output view is contiguous (NULL strides or the C-order strides; size-1 dims
 * and empty views may have any). */
static inline HWP_Status cpu_rview_require_contiguous(const char *op, const cpu_view *v) {
  if (v->numel == 0) return HWP_OK; /* no element: any strides */
  int64_t expect = 1;
  for (int k = v->ndim - 1; k >= 0; --k) {
    if (CPU_UNLIKELY(v->shape[k] != 1 && v->strides[k] != expect))
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: the output must be contiguous (stride[%d] = %lld, expected %lld)", op,
                       k, (long long)v->strides[k], (long long)expect);
    expect *= v->shape[k];
  }
  return HWP_OK;
}

static inline int cpu_is_float_dtype(HWP_DType d) {
  return d == HWP_DTYPE_FLOAT16 || d == HWP_DTYPE_BFLOAT16 || d == HWP_DTYPE_FLOAT32 ||
         d == HWP_DTYPE_FLOAT64;
}

/* A BOOL attribute, or `fallback` where the context has none of that name. */
static inline int cpu_attr_flag(const HWP_KernelContext *ctx, const char *name, int fallback) {
  uint8_t v = 0;
  if (HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) && ctx->get_attr != NULL &&
      ctx->get_attr(ctx, name, HWP_ATTR_BOOL, &v, NULL) == HWP_OK)
    return v != 0;
  return fallback;
}

/* Reads an INT64 attribute that must be a dim of an ndim-dimensional input (non-negative as
 * the host promises; a negative one is accepted Python-style for robustness). A 0-d input takes
 * axis 0 or -1 as "the single element". */
static inline HWP_Status cpu_attr_axis(const HWP_KernelContext *ctx, const char *op,
                                       const char *name, int32_t ndim, int64_t *axis) {
  int64_t a = 0;
  HWP_Status st = HWP_ERROR_NOT_FOUND;
  if (HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) && ctx->get_attr != NULL)
    st = ctx->get_attr(ctx, name, HWP_ATTR_INT64, &a, NULL);
  if (st != HWP_OK)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute '%s' is %s (expected an int64)",
                     op, name, st == HWP_ERROR_NOT_FOUND ? "missing" : "not an integer");
  int32_t n = ndim > 0 ? ndim : 1;
  if (a < 0) a += n;
  if (CPU_UNLIKELY(a < 0 || a >= n))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute '%s' = %lld is out of range for "
                     "a %d-d input", op, name, (long long)a, (int)ndim);
  *axis = a;
  return HWP_OK;
}

/* Splits x's dims around `axis`: outer dims (before it, merged where contiguous) of total size
 * O, the axis itself (length L, stride s) and inner dims (after it) of total size I. A 0-d x is
 * one element: L = 1. Fills the plan fields named in CPU_SPLIT_AXIS. */
static inline void cpu_split_axis(const cpu_view *x, int64_t axis, int64_t *O, int64_t *L,
                                  int64_t *I, int64_t *s, int *on, int64_t *oshape,
                                  int64_t *ostride, int *inn, int64_t *ishape,
                                  int64_t *istride) {
  *L = x->ndim > 0 ? x->shape[axis] : 1;
  *s = x->ndim > 0 ? x->strides[axis] : 1;
  *O = 1;
  *I = 1;
  *on = 0;
  *inn = 0;
  for (int k = 0; k < x->ndim; ++k) {
    if (k < axis) {
      *O *= x->shape[k];
      oshape[*on] = x->shape[k];
      ostride[(*on)++] = x->strides[k];
    } else if (k > axis) {
      *I *= x->shape[k];
      ishape[*inn] = x->shape[k];
      istride[(*inn)++] = x->strides[k];
    }
  }
  *on = cpu_merge_dims(*on, oshape, ostride);
  *inn = cpu_merge_dims(*inn, ishape, istride);
}
#define CPU_SPLIT_AXIS(P, x, axis)                                                             \
  cpu_split_axis((x), (axis), &(P)->O, &(P)->L, &(P)->I, &(P)->s, &(P)->on, (P)->oshape,       \
                 (P)->ostride, &(P)->inn, (P)->ishape, (P)->istride)


/* 64-byte aligned scratch (free with free()); NULL on failure or n == 0 bytes -> 64 bytes. */
static inline void *cpu_scratch(size_t nbytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, nbytes > 0 ? nbytes : 64) != 0) return NULL;
  return p;
}

/* NaN-propagating max (is_min = 0) or min of `a` and the contiguous x[0..n) (any alignment),
 * with GCC/Clang vector extensions: the auto-vectorizer does not take a NaN-propagating select
 * as a reduction, so the lanes are written out (16-byte vectors; CPU_EXT_ACC accumulators hide
 * the latency of the compare-and-blend chain). */
#define CPU_EXT_ACC 8
#define CPU_DEFINE_EXTREME(NAME, T, V, VI)                                                     \
  static inline T NAME(const void *p, int64_t n, T a, int is_min) {                            \
    enum { W = (int)(sizeof(V) / sizeof(T)) };                                                 \
    const char *x = (const char *)p;                                                           \
    int64_t i = 0;                                                                             \
    if (n >= CPU_EXT_ACC * W) {                                                                \
      V acc[CPU_EXT_ACC];                                                                      \
      for (int k = 0; k < CPU_EXT_ACC; ++k)                                                    \
        for (int l = 0; l < W; ++l) acc[k][l] = a;                                             \
      for (; i + CPU_EXT_ACC * W <= n; i += CPU_EXT_ACC * W)                                   \
        for (int k = 0; k < CPU_EXT_ACC; ++k) {                                                \
          V v;                                                                                 \
          memcpy(&v, x + (size_t)(i + k * W) * sizeof(T), sizeof v);                           \
          VI m = (is_min ? (v < acc[k]) : (v > acc[k])) | (v != v);                            \
          acc[k] = (V)(((VI)v & m) | ((VI)acc[k] & ~m));                                       \
        }                                                                                      \
      for (int k = 0; k < CPU_EXT_ACC; ++k)                                                    \
        for (int l = 0; l < W; ++l) {                                                          \
          T v = acc[k][l];                                                                     \
          a = ((is_min ? v < a : v > a) || v != v) ? v : a;                                    \
        }                                                                                      \
    }                                                                                          \
    for (; i < n; ++i) {                                                                       \
      T v;                                                                                     \
      memcpy(&v, x + (size_t)i * sizeof(T), sizeof v);                                         \
      a = ((is_min ? v < a : v > a) || v != v) ? v : a;                                        \
    }                                                                                          \
    return a;                                                                                  \
  }
typedef float cpu_v4f __attribute__((vector_size(16)));
typedef int32_t cpu_v4i __attribute__((vector_size(16)));
typedef double cpu_v2d __attribute__((vector_size(16)));
typedef int64_t cpu_v2l __attribute__((vector_size(16)));
CPU_DEFINE_EXTREME(cpu_extreme_f32, float, cpu_v4f, cpu_v4i)
CPU_DEFINE_EXTREME(cpu_extreme_f64, double, cpu_v2d, cpu_v2l)

#endif /* HWPORT_CPU_REDUCE_COMMON_H */
