/* hwport CPU plugin — the fill and copy kernels. Both move raw element bits, so one inner loop
 * per element size (1, 2, 4, 8 bytes) serves every dtype. */
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "parallel.h"

#define CPU_DEFINE_FILL_COPY(N, T)                                                             \
  static void fill_##N(char *const *p, const int64_t *s, int64_t n, const void *aux) {         \
    typedef CPU_UA(T) UA; /* any alignment */                                                  \
    T v;                                                                                       \
    memcpy(&v, aux, sizeof v);                                                                 \
    if (s[0] == N) {                                                                           \
      UA *o = (UA *)p[0];                                                                      \
      for (int64_t i = 0; i < n; ++i) o[i] = v;                                                \
    } else {                                                                                   \
      char *po = p[0];                                                                         \
      for (int64_t i = 0; i < n; ++i, po += s[0]) *(UA *)po = v;                               \
    }                                                                                          \
  }                                                                                            \
  static void copy_##N(char *const *p, const int64_t *s, int64_t n, const void *aux) {         \
    typedef CPU_UA(T) UA;                                                                      \
    (void)aux;                                                                                 \
    if (s[0] == N && s[1] == N) {                                                              \
      memmove(p[0], p[1], (size_t)n * N);                                                      \
    } else {                                                                                   \
      char *po = p[0];                                                                         \
      const char *px = p[1];                                                                   \
      for (int64_t i = 0; i < n; ++i, po += s[0], px += s[1]) *(UA *)po = *(const UA *)px;     \
    }                                                                                          \
  }
CPU_DEFINE_FILL_COPY(1, uint8_t)
CPU_DEFINE_FILL_COPY(2, uint16_t)
CPU_DEFINE_FILL_COPY(4, uint32_t)
CPU_DEFINE_FILL_COPY(8, uint64_t)

static cpu_inner_fn by_size(size_t itemsize, int fill) {
  switch (itemsize) {
  case 1: return fill ? fill_1 : copy_1;
  case 2: return fill ? fill_2 : copy_2;
  case 4: return fill ? fill_4 : copy_4;
  default: return fill ? fill_8 : copy_8;
  }
}

static int is_float(HWP_DType d) {
  return d == HWP_DTYPE_FLOAT16 || d == HWP_DTYPE_BFLOAT16 || d == HWP_DTYPE_FLOAT32 ||
         d == HWP_DTYPE_FLOAT64;
}

/* Reads attribute "value" and stores it, converted to `dtype`, in `bytes`.
 * Integer and bool dtypes: INT64 first (exact for any int64), else FLOAT64 (truncated toward
 * zero, saturating). Float dtypes: FLOAT64 first, else INT64. Integers narrower than int64 wrap;
 * bool is value != 0; float16/bfloat16 round to nearest even. */
static HWP_Status fill_value(const HWP_KernelContext *ctx, HWP_DType dtype, uint8_t *bytes) {
  if (!HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) || ctx->get_attr == NULL)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "fill: the kernel context has no get_attr");
  int64_t iv = 0;
  double fv = 0.0;
  int have_int = 0, have_float = 0;
  HWP_Status st;
  if (is_float(dtype)) {
    have_float = (st = ctx->get_attr(ctx, "value", HWP_ATTR_FLOAT64, &fv, NULL)) == HWP_OK;
    if (!have_float)
      have_int = (st = ctx->get_attr(ctx, "value", HWP_ATTR_INT64, &iv, NULL)) == HWP_OK;
  } else {
    have_int = (st = ctx->get_attr(ctx, "value", HWP_ATTR_INT64, &iv, NULL)) == HWP_OK;
    if (!have_int)
      have_float = (st = ctx->get_attr(ctx, "value", HWP_ATTR_FLOAT64, &fv, NULL)) == HWP_OK;
  }
  if (!have_int && !have_float)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "fill: attribute 'value' is %s (expected an int64 or float64; status %d)",
                     st == HWP_ERROR_NOT_FOUND ? "missing" : "not a number", (int)st);
  switch (dtype) {
#define CPU_FILL_CASE(CODE, name, T)                                                           \
  case HWP_DTYPE_##CODE: {                                                                     \
    T t = have_int ? CPU_CV_KI_##name(iv) : CPU_CV_KD_##name(fv);                              \
    memcpy(bytes, &t, sizeof t);                                                               \
    return HWP_OK;                                                                             \
  }
    CPU_FOR_EACH_DTYPE(CPU_FILL_CASE)
#undef CPU_FILL_CASE
  default:
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "fill: unknown dtype %d", (int)dtype);
  }
}

HWP_Status cpu_kernel_fill(const HWP_KernelContext *ctx) {
  HWP_Status st = cpu_check_context(ctx, "fill", 0, 1);
  if (st != HWP_OK) return st;
  cpu_task task;
  uint64_t nelems;
  st = cpu_prepare_task(ctx, "fill", &task, &nelems);
  if (st != HWP_OK) return st;
  HWP_DType d = ctx->outputs[0].dtype;
  st = fill_value(ctx, d, task.u.ew.aux.bytes); /* copied now: the context dies on return */
  if (st != HWP_OK) return st;
  task.u.ew.fn = by_size(hwp_dtype_size(d), 1);
  return cpu_launch(ctx, "fill", &task, nelems);
}

/* ---- transposing copies ----------------------------------------------------------------
 * A copy whose output rows are contiguous while the input runs contiguously down the output's
 * columns (a transpose of the last two dims, the input's innermost stride not 1) reads or writes
 * a new cache line per element in the row-by-row loop. It goes by TR_TILE x TR_TILE tiles
 * instead, whose input lines stay in cache while the output rows are written (4-byte elements
 * as 4 x 4 register transposes). Tiles run in parallel over the thread pool. */
#define TR_TILE 32
#define TR_MIN_ELEMENTS 4096 /* below this, the plain loop */

typedef struct tr_plan {
  cpu_elementwise ew; /* output and input; the last two dims are transposed */
  int64_t esz, tiles_r, tiles_c, tiles_per_matrix;
} tr_plan;

/* out[r][c] = *(x + r * N + c * xsc): row by row, contiguous writes (the tile's input lines
 * stay in cache). */
#define CPU_DEFINE_TR_TILE(N, T)                                                               \
  static void tr_tile_##N(char *o, int64_t osr, const char *x, int64_t xsc, int64_t rows,      \
                          int64_t cols) {                                                      \
    typedef CPU_UA(T) UA;                                                                      \
    for (int64_t r = 0; r < rows; ++r) {                                                       \
      UA *dst = (UA *)(o + r * osr);                                                           \
      const char *src = x + r * N;                                                             \
      for (int64_t c = 0; c < cols; ++c) dst[c] = *(const UA *)(src + c * xsc);                \
    }                                                                                          \
  }
CPU_DEFINE_TR_TILE(1, uint8_t)
CPU_DEFINE_TR_TILE(2, uint16_t)
CPU_DEFINE_TR_TILE(4, uint32_t)
CPU_DEFINE_TR_TILE(8, uint64_t)

#ifdef __SSE2__
#include <emmintrin.h>
/* 4-byte elements: 4 x 4 blocks transposed in registers (SSE2, the x86-64 baseline), the
 * partial blocks at the tile's edges by the scalar loop. */
static void tr_tile_4_sse2(char *o, int64_t osr, const char *x, int64_t xsc, int64_t rows,
                           int64_t cols) {
  const int64_t r4 = rows & ~(int64_t)3, c4 = cols & ~(int64_t)3;
  for (int64_t r = 0; r < r4; r += 4) {
    for (int64_t c = 0; c < c4; c += 4) {
      const char *s = x + r * 4 + c * xsc;
      __m128 a = _mm_loadu_ps((const float *)s), b = _mm_loadu_ps((const float *)(s + xsc));
      __m128 e = _mm_loadu_ps((const float *)(s + 2 * xsc));
      __m128 d = _mm_loadu_ps((const float *)(s + 3 * xsc));
      _MM_TRANSPOSE4_PS(a, b, e, d);
      char *t = o + r * osr + c * 4;
      _mm_storeu_ps((float *)t, a);
      _mm_storeu_ps((float *)(t + osr), b);
      _mm_storeu_ps((float *)(t + 2 * osr), e);
      _mm_storeu_ps((float *)(t + 3 * osr), d);
    }
  }
  if (c4 < cols) tr_tile_4(o + c4 * 4, osr, x + c4 * xsc, xsc, r4, cols - c4);
  if (r4 < rows) tr_tile_4(o + r4 * osr, osr, x + r4 * 4, xsc, rows - r4, cols);
}
#endif

static void tr_tiles(void *ctx, int64_t begin, int64_t end) {
  const tr_plan *P = ctx;
  const cpu_elementwise *ew = &P->ew;
  const int last = ew->ndim - 1;
  const int64_t R = ew->shape[last - 1], C = ew->shape[last];
  const int64_t osr = ew->strides[0][last - 1], xsc = ew->strides[1][last];
  for (int64_t t = begin; t < end; ++t) {
    int64_t mat = t / P->tiles_per_matrix, in_mat = t % P->tiles_per_matrix;
    int64_t r0 = (in_mat / P->tiles_c) * TR_TILE, c0 = (in_mat % P->tiles_c) * TR_TILE;
    char *o = ew->base[0];
    const char *x = ew->base[1];
    for (int k = last - 2; k >= 0; --k) { /* the outer (batch) dims of matrix `mat` */
      int64_t i = mat % ew->shape[k];
      mat /= ew->shape[k];
      o += i * ew->strides[0][k];
      x += i * ew->strides[1][k];
    }
    o += r0 * osr + c0 * P->esz;
    x += r0 * P->esz + c0 * xsc;
    int64_t rows = R - r0 < TR_TILE ? R - r0 : TR_TILE, cols = C - c0 < TR_TILE ? C - c0 : TR_TILE;
    switch (P->esz) {
    case 1: tr_tile_1(o, osr, x, xsc, rows, cols); break;
    case 2: tr_tile_2(o, osr, x, xsc, rows, cols); break;
#ifdef __SSE2__
    case 4: tr_tile_4_sse2(o, osr, x, xsc, rows, cols); break;
#else
    case 4: tr_tile_4(o, osr, x, xsc, rows, cols); break;
#endif
    default: tr_tile_8(o, osr, x, xsc, rows, cols); break;
    }
  }
}

static HWP_Status tr_run(void *payload) {
  tr_plan *P = payload;
  int64_t matrices = 1;
  for (int k = 0; k < P->ew.ndim - 2; ++k) matrices *= P->ew.shape[k];
  cpu_parallel_for(matrices * P->tiles_per_matrix, 4, tr_tiles, P);
  return HWP_OK;
}

/* Whether the prepared copy is a transpose of its last two dims (see above). */
static int tr_applies(const cpu_elementwise *ew, int64_t esz, uint64_t nelems) {
  if (ew->ndim < 2 || nelems < TR_MIN_ELEMENTS) return 0;
  const int last = ew->ndim - 1;
  return ew->strides[0][last] == esz && ew->strides[1][last] != esz &&
         ew->strides[1][last - 1] == esz && ew->shape[last] >= 8 && ew->shape[last - 1] >= 8;
}

HWP_Status cpu_kernel_copy(const HWP_KernelContext *ctx) {
  HWP_Status st = cpu_check_context(ctx, "copy", 1, 1);
  if (st != HWP_OK) return st;
  HWP_DType d = ctx->outputs[0].dtype;
  if (CPU_UNLIKELY(ctx->inputs[0].dtype != d))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "copy: input dtype %s differs from output dtype %s (use cast)",
                     cpu_dtype_name(ctx->inputs[0].dtype), cpu_dtype_name(d));
  cpu_task task;
  uint64_t nelems;
  st = cpu_prepare_task(ctx, "copy", &task, &nelems);
  if (st != HWP_OK) return st;
  const int64_t esz = (int64_t)hwp_dtype_size(d);
  if (tr_applies(&task.u.ew, esz, nelems)) {
    tr_plan *P = malloc(sizeof *P);
    if (P == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "copy: no memory for a task");
    P->ew = task.u.ew;
    P->esz = esz;
    const int last = P->ew.ndim - 1;
    P->tiles_r = (P->ew.shape[last - 1] + TR_TILE - 1) / TR_TILE;
    P->tiles_c = (P->ew.shape[last] + TR_TILE - 1) / TR_TILE;
    P->tiles_per_matrix = P->tiles_r * P->tiles_c;
    return cpu_submit_call(ctx, "copy", tr_run, free, P, nelems); /* takes P */
  }
  task.u.ew.fn = by_size((size_t)esz, 0);
  return cpu_launch(ctx, "copy", &task, nelems);
}
