/* hwport CPU plugin — helpers of the non-elementwise kernels (kernels_index.c,
 * kernels_random.c): self-contained copies of tensor views, attribute readers, a blocked
 * parallel loop over an N-d index space, and element moves by item size.
 *
 * Everything is static inline: each including file uses a subset. */
#ifndef HWPORT_CPU_INDEX_ND_H
#define HWPORT_CPU_INDEX_ND_H

#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "view_snapshot.h"
#include "parallel.h"

/* Elements per run of the N-d loops, and the least work (elements) one parallel chunk gets. */
#define CPU_ND_BLOCK 8192
#define CPU_ND_GRAIN 32768

/* ---- views ------------------------------------------------------------------------------ */

/* A 0-d view becomes the 1-d view of its one element (shape [1]). */
static inline void cpu_xview_promote0(cpu_view *v) {
  if (v->ndim == 0) {
    v->ndim = 1;
    v->shape[0] = 1;
    v->strides[0] = 0;
  }
}

/* True when the view is row-major contiguous (dims of size 1 may have any stride; an empty
 * view is contiguous). */
static inline int cpu_xview_contiguous(const cpu_view *v) {
  if (v->numel == 0) return 1;
  int64_t acc = 1;
  for (int k = v->ndim - 1; k >= 0; --k) {
    if (v->shape[k] != 1 && v->strides[k] != acc) return 0;
    acc *= v->shape[k];
  }
  return 1;
}

static inline int cpu_is_float_dtype(HWP_DType d) {
  return d == HWP_DTYPE_FLOAT16 || d == HWP_DTYPE_BFLOAT16 || d == HWP_DTYPE_FLOAT32 ||
         d == HWP_DTYPE_FLOAT64;
}

/* ---- attributes ------------------------------------------------------------------------- */

static inline HWP_Status cpu_get_attr(const HWP_KernelContext *ctx, const char *name,
                                      HWP_AttrType type, void *out, int64_t *count) {
  if (!HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) || ctx->get_attr == NULL)
    return HWP_ERROR_NOT_FOUND;
  return ctx->get_attr(ctx, name, type, out, count);
}

/* Reads INT64 attribute `name` (`fallback` when absent; `required` makes absence an error). */
static inline HWP_Status cpu_attr_int(const HWP_KernelContext *ctx, const char *op,
                                      const char *name, int required, int64_t fallback,
                                      int64_t *out) {
  int64_t v = fallback;
  HWP_Status st = cpu_get_attr(ctx, name, HWP_ATTR_INT64, &v, NULL);
  if (st == HWP_ERROR_NOT_FOUND && !required) {
    *out = fallback;
    return HWP_OK;
  }
  if (st != HWP_OK)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute '%s' is %s (expected an int64)",
                     op, name, st == HWP_ERROR_NOT_FOUND ? "missing" : "not an integer");
  *out = v;
  return HWP_OK;
}

/* Reads attribute "axis" for a tensor of rank `ndim` (absent: `fallback`, or an error when
 * `required`). A negative axis counts from the end. */
static inline HWP_Status cpu_attr_axis(const HWP_KernelContext *ctx, const char *op, int ndim,
                                       int required, int64_t fallback, int *axis) {
  int64_t a = fallback;
  HWP_Status st = cpu_attr_int(ctx, op, "axis", required, fallback, &a);
  if (st != HWP_OK) return st;
  if (a < 0) a += ndim;
  if (CPU_UNLIKELY(a < 0 || a >= ndim))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: axis %lld is out of range for rank %d", op,
                     (long long)a, ndim);
  *axis = (int)a;
  return HWP_OK;
}

/* ---- arithmetic that must round exactly as written ---------------------------------------
 * GCC contracts a*b+c into an FMA in GNU C mode wherever the target has one; results that must
 * match other plugins bit for bit (arange, uniform) put the product through this barrier. */
#if defined(__GNUC__) && defined(__x86_64__)
#define CPU_FP_BARRIER(x) __asm__("" : "+x"(x))
#elif defined(__GNUC__) && defined(__aarch64__)
#define CPU_FP_BARRIER(x) __asm__("" : "+w"(x))
#else
#define CPU_FP_BARRIER(x)                                                                      \
  do {                                                                                         \
    volatile double cpu_fp_barrier_ = (x);                                                     \
    (x) = cpu_fp_barrier_;                                                                     \
  } while (0)
#endif

/* a + b * c with the product rounded before the sum (never fused). */
static inline double cpu_add_mul(double a, double b, double c) {
  double p = b * c;
  CPU_FP_BARRIER(p);
  return a + p;
}

/* ---- the blocked N-d loop ----------------------------------------------------------------
 * cpu_nd_for calls fn(ctx, idx, n) for every run of `shape` (row-major): idx[0..ndim-1] is the
 * multi-index of the run's first element and the run covers idx[ndim-1] .. idx[ndim-1]+n-1
 * along the last dim, n <= block. Runs are spread over cpu_parallel_for (never two threads on
 * one run). ndim == 0 is one run of one element (idx points to a single 0). */
typedef void (*cpu_nd_fn)(void *ctx, const int64_t *idx, int64_t n);

typedef struct cpu_nd_job {
  int ndim;
  int64_t shape[HWP_MAX_NDIM];
  int64_t block, nblk;
  cpu_nd_fn fn;
  void *ctx;
} cpu_nd_job;

static inline void cpu_nd_chunk(void *p, int64_t begin, int64_t end) {
  const cpu_nd_job *j = p;
  int64_t idx[HWP_MAX_NDIM] = {0};
  if (j->ndim == 0) {
    j->fn(j->ctx, idx, 1);
    return;
  }
  const int last = j->ndim - 1;
  int64_t row = begin / j->nblk, b = begin % j->nblk;
  for (int k = last - 1; k >= 0; --k) {
    idx[k] = row % j->shape[k];
    row /= j->shape[k];
  }
  for (int64_t u = begin; u < end; ++u) {
    idx[last] = b * j->block;
    int64_t n = j->shape[last] - idx[last];
    j->fn(j->ctx, idx, n < j->block ? n : j->block);
    if (++b == j->nblk) {
      b = 0;
      for (int k = last - 1; k >= 0; --k) {
        if (++idx[k] < j->shape[k]) break;
        idx[k] = 0;
      }
    }
  }
}

/* `grain`: the least number of elements worth a parallel chunk. */
static inline void cpu_nd_for(int ndim, const int64_t *shape, int64_t block, int64_t grain,
                              cpu_nd_fn fn, void *ctx) {
  cpu_nd_job job;
  job.ndim = ndim;
  job.fn = fn;
  job.ctx = ctx;
  int64_t rows = 1;
  for (int k = 0; k < ndim; ++k) {
    job.shape[k] = shape[k];
    if (shape[k] == 0) return;
    if (k < ndim - 1) rows *= shape[k];
  }
  if (block < 1) block = 1;
  job.block = block;
  if (ndim == 0) {
    job.nblk = 1;
    cpu_nd_chunk(&job, 0, 1);
    return;
  }
  int64_t len = shape[ndim - 1];
  job.nblk = len / block + (len % block != 0); /* len + block - 1 may overflow */
  int64_t per_unit = len < block ? len : block;
  int64_t g = grain / per_unit;
  cpu_parallel_for(rows * job.nblk, g < 1 ? 1 : g, cpu_nd_chunk, &job);
}

/* Offset (in elements) of multi-index idx[0..nd-1] under `strides`, skipping dim `skip`
 * (pass -1 to skip none). */
static inline int64_t cpu_offset(const int64_t *idx, const int64_t *strides, int nd, int skip) {
  int64_t off = 0;
  for (int k = 0; k < nd; ++k)
    if (k != skip) off += idx[k] * strides[k];
  return off;
}

/* ---- element moves by item size ----------------------------------------------------------- */

static inline void cpu_move1(char *dst, const char *src, int64_t itemsize) {
  switch (itemsize) {
  case 1: *(CPU_UA(uint8_t) *)dst = *(const CPU_UA(uint8_t) *)src; break;
  case 2: *(CPU_UA(uint16_t) *)dst = *(const CPU_UA(uint16_t) *)src; break;
  case 4: *(CPU_UA(uint32_t) *)dst = *(const CPU_UA(uint32_t) *)src; break;
  default: *(CPU_UA(uint64_t) *)dst = *(const CPU_UA(uint64_t) *)src; break;
  }
}

#define CPU_DEFINE_MOVE_RUN(N, T)                                                              \
  static inline void cpu_copy_run_##N(char *dst, int64_t ds, const char *src, int64_t ss,      \
                                      int64_t n) {                                             \
    typedef CPU_UA(T) UA;                                                                      \
    if (ds == N && ss == N) {                                                                  \
      memcpy(dst, src, (size_t)n * N);                                                         \
    } else if (ds == N) {                                                                      \
      UA *o = (UA *)dst;                                                                       \
      for (int64_t i = 0; i < n; ++i, src += ss) o[i] = *(const UA *)src;                      \
    } else {                                                                                   \
      for (int64_t i = 0; i < n; ++i, dst += ds, src += ss) *(UA *)dst = *(const UA *)src;     \
    }                                                                                          \
  }                                                                                            \
  static inline void cpu_fill_run_##N(char *dst, int64_t ds, const void *value, int64_t n) {  \
    typedef CPU_UA(T) UA;                                                                      \
    T v;                                                                                       \
    memcpy(&v, value, N);                                                                      \
    if (ds == N) {                                                                             \
      UA *o = (UA *)dst;                                                                       \
      for (int64_t i = 0; i < n; ++i) o[i] = v;                                                \
    } else {                                                                                   \
      for (int64_t i = 0; i < n; ++i, dst += ds) *(UA *)dst = v;                               \
    }                                                                                          \
  }
CPU_DEFINE_MOVE_RUN(1, uint8_t)
CPU_DEFINE_MOVE_RUN(2, uint16_t)
CPU_DEFINE_MOVE_RUN(4, uint32_t)
CPU_DEFINE_MOVE_RUN(8, uint64_t)
#undef CPU_DEFINE_MOVE_RUN

/* Copies n elements of `itemsize` bytes; ds, ss: byte steps (any sign, 0 included). */
static inline void cpu_copy_run(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n,
                                int64_t itemsize) {
  switch (itemsize) {
  case 1: cpu_copy_run_1(dst, ds, src, ss, n); break;
  case 2: cpu_copy_run_2(dst, ds, src, ss, n); break;
  case 4: cpu_copy_run_4(dst, ds, src, ss, n); break;
  default: cpu_copy_run_8(dst, ds, src, ss, n); break;
  }
}

/* Writes the element at `value` (itemsize bytes) n times, ds bytes apart. */
static inline void cpu_fill_run(char *dst, int64_t ds, const void *value, int64_t n,
                                int64_t itemsize) {
  switch (itemsize) {
  case 1: cpu_fill_run_1(dst, ds, value, n); break;
  case 2: cpu_fill_run_2(dst, ds, value, n); break;
  case 4: cpu_fill_run_4(dst, ds, value, n); break;
  default: cpu_fill_run_8(dst, ds, value, n); break;
  }
}

/* ---- index tensors -------------------------------------------------------------------------- */

static inline int cpu_is_index_dtype(HWP_DType d) {
  return d == HWP_DTYPE_INT32 || d == HWP_DTYPE_INT64;
}

static inline int64_t cpu_load_index(const char *p, HWP_DType d) {
  if (d == HWP_DTYPE_INT32) return *(const CPU_UA(int32_t) *)p;
  return *(const CPU_UA(int64_t) *)p;
}

/* Records the first out-of-range index seen by any thread (*flag: 0 = none yet). */
static inline void cpu_flag_bad_index(int *flag, int64_t *value, int64_t v) {
  if (__atomic_exchange_n(flag, 1, __ATOMIC_RELAXED) == 0)
    __atomic_store_n(value, v, __ATOMIC_RELAXED);
}

/* ---- submission ------------------------------------------------------------------------ */

/* Enqueues run(payload) on ctx's stream (nothing when work == 0); takes `payload` (malloc'd). */
static inline HWP_Status cpu_submit_payload(const HWP_KernelContext *ctx, const char *op,
                                            HWP_Status (*run)(void *), void *payload,
                                            uint64_t work) {
  if (work == 0) {
    free(payload);
    return HWP_OK;
  }
  return cpu_submit_call(ctx, op, run, free, payload, work);
}

#endif /* HWPORT_CPU_INDEX_ND_H */
