/* hwport CPU plugin — fused backward kernels of the normalizations (ops.yaml softmax_grad,
 * layer_norm_grad, rms_norm_grad): the VJP rules call these composites, so one launch here
 * replaces the ~5 to ~20 sub-ops of their formulas.
 *
 * Float dtypes; float16/bfloat16/float32 compute in float32 (float64 in float64). Work goes
 * line by line (a line = the softmax axis, or the normalized trailing dims), multithreaded over
 * lines; each line is read two to four times while it sits in cache:
 *   softmax_grad     dot = sum(g * o); y = (g - dot) * o
 *   layer_norm_grad  mean, rstd as layer_norm has them; xh = (x - mean) * rstd, gh = g * w;
 *                    y = (gh - mean(gh) - xh * mean(gh * xh)) * rstd
 *   rms_norm_grad    rstd = 1 / sqrt(mean(x^2) + eps); y = (gh - x * rstd^2 * mean(gh * x)) * rstd
 * Sums go over NNG_LANES compute-type lanes per block of NNG_BLOCK elements, the lanes added
 * pairwise, each block into a double. float32/float64 lines with a unit stride are read and
 * written in place; others (strided, half types, an axis that is not the innermost) are
 * gathered into compute-type buffers first. */
#include <pthread.h>

#include "reduce_common.h"

#define NNG_LANES 16
#define NNG_BLOCK 1024

/* ---- lines: a tensor as R lines of N elements ------------------------------------------------ */

typedef struct nng_lines {
  int rn, ln; /* merged row dims (all but the line's) and line dims */
  int64_t rshape[HWP_MAX_NDIM], rstride[HWP_MAX_NDIM];
  int64_t lshape[HWP_MAX_NDIM], lstride[HWP_MAX_NDIM];
} nng_lines;

/* v's dims split into rows and lines: the line is dims [l0, l1) of v. */
static void nng_lines_of(const cpu_view *v, int l0, int l1, nng_lines *out) {
  out->rn = out->ln = 0;
  for (int k = 0; k < v->ndim; ++k) {
    if (k >= l0 && k < l1) {
      out->lshape[out->ln] = v->shape[k];
      out->lstride[out->ln++] = v->strides[k];
    } else {
      out->rshape[out->rn] = v->shape[k];
      out->rstride[out->rn++] = v->strides[k];
    }
  }
  out->rn = cpu_merge_dims(out->rn, out->rshape, out->rstride);
  out->ln = cpu_merge_dims(out->ln, out->lshape, out->lstride);
}

/* The stride of a line that is one strided run (0 when it is not: an offset table is needed). */
static int64_t nng_run_stride(const nng_lines *l) {
  return l->ln == 0 ? 1 : l->ln == 1 ? l->lstride[0] : 0;
}

/* ---- loads and stores of one line in the compute type --------------------------------- */

/* dst[j] = line element j of the line at p (stride s, or the offsets off when s == 0). */
static void nng_load_f(HWP_DType dt, const char *p, int64_t n, int64_t s, const int64_t *off,
                       float *dst) {
  for (int64_t j = 0; j < n; ++j) {
    const int64_t e = s ? j * s : off[j];
    switch (dt) {
      case HWP_DTYPE_FLOAT16: dst[j] = cpu_f16_to_f32(((const CPU_UA(uint16_t) *)p)[e]); break;
      case HWP_DTYPE_BFLOAT16: dst[j] = cpu_bf16_to_f32(((const CPU_UA(uint16_t) *)p)[e]); break;
      default: dst[j] = ((const cpu_ua_float *)p)[e]; break;
    }
  }
}
static void nng_load_d(const char *p, int64_t n, int64_t s, const int64_t *off, double *dst) {
  for (int64_t j = 0; j < n; ++j) dst[j] = ((const cpu_ua_double *)p)[s ? j * s : off[j]];
}
static void nng_store_f(HWP_DType dt, char *p, int64_t n, int64_t s, const int64_t *off,
                        const float *src) {
  for (int64_t j = 0; j < n; ++j) {
    const int64_t e = s ? j * s : off[j];
    switch (dt) {
      case HWP_DTYPE_FLOAT16: ((CPU_UA(uint16_t) *)p)[e] = cpu_f32_to_f16(src[j]); break;
      case HWP_DTYPE_BFLOAT16: ((CPU_UA(uint16_t) *)p)[e] = cpu_f32_to_bf16(src[j]); break;
      default: ((cpu_ua_float *)p)[e] = src[j]; break;
    }
  }
}
static void nng_store_d(char *p, int64_t n, int64_t s, const int64_t *off, const double *src) {
  for (int64_t j = 0; j < n; ++j) ((cpu_ua_double *)p)[s ? j * s : off[j]] = src[j];
}

/* ---- row math (CT: float or double; contiguous lines that do not overlap y) ------------------ */

/* sum over i < n of EXPR(i), in CT lanes per block, the lanes added pairwise into a double. */
#define NNG_SUM(CT, n, EXPR, result)                                                           \
  do {                                                                                         \
    double s_ = 0.0;                                                                           \
    for (int64_t b0_ = 0; b0_ < (n); b0_ += NNG_BLOCK) {                                       \
      const int64_t b1_ = (n) - b0_ < NNG_BLOCK ? (n) : b0_ + NNG_BLOCK;                       \
      CT l_[NNG_LANES];                                                                        \
      for (int j_ = 0; j_ < NNG_LANES; ++j_) l_[j_] = 0;                                       \
      int64_t i_ = b0_;                                                                        \
      for (; i_ + NNG_LANES <= b1_; i_ += NNG_LANES)                                           \
        for (int j_ = 0; j_ < NNG_LANES; ++j_) l_[j_] += EXPR(i_ + j_);                        \
      for (; i_ < b1_; ++i_) l_[0] += EXPR(i_);                                                \
      CPU_LANE_TREE(l_, NNG_LANES);                                                            \
      s_ += (double)l_[0];                                                                     \
    }                                                                                          \
    (result) = s_;                                                                             \
  } while (0)

#define NNG_DEFINE_ROWS(SUFFIX, CT, ATTR)                                                      \
  ATTR static void nng_softmax_row##SUFFIX(const CT *o, const CT *g, CT *y, int64_t n) {       \
    double dot;                                                                                \
    NNG_SUM(CT, n, NNG_GO, dot);                                                               \
    const CT d = (CT)dot;                                                                      \
    for (int64_t i = 0; i < n; ++i) y[i] = (g[i] - d) * o[i];                                  \
  }                                                                                            \
  ATTR static void nng_norm_row##SUFFIX(const CT *x, const CT *g, const CT *w, CT *y,          \
                                        int64_t n, double eps, int rms) {                      \
    double acc;                                                                                \
    CT mean = 0;                                                                               \
    if (!rms) {                                                                                \
      NNG_SUM(CT, n, NNG_X, acc);                                                              \
      mean = (CT)(acc / (double)n);                                                            \
    }                                                                                          \
    NNG_SUM(CT, n, NNG_D2, acc);                                                               \
    const CT r = (CT)(1.0 / sqrt(acc / (double)n + eps));                                      \
    double sg = 0.0, sgx;                                                                      \
    if (w != NULL) {                                                                           \
      if (!rms) NNG_SUM(CT, n, NNG_GW, sg);                                                    \
      NNG_SUM(CT, n, NNG_GWD, sgx);                                                            \
    } else {                                                                                   \
      if (!rms) NNG_SUM(CT, n, NNG_G, sg);                                                     \
      NNG_SUM(CT, n, NNG_GD, sgx);                                                             \
    }                                                                                          \
    const CT mg = (CT)(sg / (double)n);                                                        \
    /* layer_norm: xh * mean(gh * xh) = d * r * (sum(gh * d) * r / n); rms: x * r^2 * mean */  \
    const CT k = (CT)(sgx / (double)n) * r * r;                                                \
    if (w != NULL) {                                                                           \
      for (int64_t i = 0; i < n; ++i) y[i] = (g[i] * w[i] - mg - (x[i] - mean) * k) * r;       \
    } else {                                                                                   \
      for (int64_t i = 0; i < n; ++i) y[i] = (g[i] - mg - (x[i] - mean) * k) * r;              \
    }                                                                                          \
  }

/* The summands, reading the row functions' locals. */
#define NNG_GO(i) (g[i] * o[i])
#define NNG_X(i) (x[i])
#define NNG_D2(i) ((x[i] - mean) * (x[i] - mean))
#define NNG_G(i) (g[i])
#define NNG_GW(i) (g[i] * w[i])
#define NNG_GD(i) (g[i] * (x[i] - mean))
#define NNG_GWD(i) (g[i] * w[i] * (x[i] - mean))

NNG_DEFINE_ROWS(_f, float, )
NNG_DEFINE_ROWS(_d, double, )

typedef void (*nng_softmax_fn)(const float *o, const float *g, float *y, int64_t n);
typedef void (*nng_norm_fn)(const float *x, const float *g, const float *w, float *y,
                            int64_t n, double eps, int rms);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(HWPORT_CPU_NO_DISPATCH)
#define NNG_X86_DISPATCH 1
NNG_DEFINE_ROWS(_f_avx2, float, __attribute__((target("avx2,fma"))))
NNG_DEFINE_ROWS(_f_avx512, float,
                __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma"))))
#endif

static struct {
  nng_softmax_fn softmax;
  nng_norm_fn norm;
} g_nng_f32 = {nng_softmax_row_f, nng_norm_row_f};
static pthread_once_t g_nng_once = PTHREAD_ONCE_INIT;

/* The widest float32 row functions the CPU runs (kernels_nn.c detects the ISA). */
static void nng_pick_isa(void) {
#ifdef NNG_X86_DISPATCH
  const int level = cpu_nn_isa_level();
  if (level == 2) {
    g_nng_f32.softmax = nng_softmax_row_f_avx512;
    g_nng_f32.norm = nng_norm_row_f_avx512;
  } else if (level == 1) {
    g_nng_f32.softmax = nng_softmax_row_f_avx2;
    g_nng_f32.norm = nng_norm_row_f_avx2;
  }
#endif
}

/* ---- the plan: up to two line inputs (a = out or x, g = grad), an optional weight, y -------- */

typedef struct nng_plan {
  const char *op;
  int kind; /* 0 softmax_grad, 1 layer_norm_grad, 2 rms_norm_grad */
  HWP_DType dt;
  int64_t isz; /* bytes per element */
  int64_t R, N;
  double eps;
  char *base[3]; /* a, g, y */
  nng_lines lines[3];
  int64_t *off[3]; /* per tensor: line offsets where its line is not one strided run */
  int has_w;
  cpu_view w;
  void *wv; /* the weight as a contiguous compute-type array */
  int failed;
} nng_plan;

static void nng_row(const nng_plan *P, const void *a, const void *g, void *y) {
  if (P->dt == HWP_DTYPE_FLOAT64) {
    if (P->kind == 0)
      nng_softmax_row_d(a, g, y, P->N);
    else
      nng_norm_row_d(a, g, P->wv, y, P->N, P->eps, P->kind == 2);
  } else if (P->kind == 0) {
    g_nng_f32.softmax(a, g, y, P->N);
  } else {
    g_nng_f32.norm(a, g, P->wv, y, P->N, P->eps, P->kind == 2);
  }
}

static void nng_task(void *ctx, int64_t b, int64_t e) {
  nng_plan *P = ctx;
  const int f64 = P->dt == HWP_DTYPE_FLOAT64;
  const int native = f64 || P->dt == HWP_DTYPE_FLOAT32;
  const size_t ct = f64 ? sizeof(double) : sizeof(float);
  int64_t s[3];
  int direct[3];
  char *buf[3] = {NULL, NULL, NULL};
  for (int t = 0; t < 3; ++t) {
    s[t] = nng_run_stride(&P->lines[t]);
    direct[t] = native && s[t] == 1;
    if (!direct[t] && (buf[t] = cpu_scratch(ct * (size_t)P->N)) == NULL) {
      __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED);
      b = e;
    }
  }
  for (int64_t r = b; r < e; ++r) {
    char *line[3];
    for (int t = 0; t < 3; ++t) {
      const nng_lines *l = &P->lines[t];
      char *p = P->base[t] + cpu_unravel_offset(r, l->rn, l->rshape, l->rstride) * P->isz;
      line[t] = p;
      if (direct[t] || t == 2) continue;
      if (f64)
        nng_load_d(p, P->N, s[t], P->off[t], (double *)buf[t]);
      else
        nng_load_f(P->dt, p, P->N, s[t], P->off[t], (float *)buf[t]);
    }
    nng_row(P, direct[0] ? line[0] : buf[0], direct[1] ? line[1] : buf[1],
            direct[2] ? line[2] : buf[2]);
    if (!direct[2]) {
      if (f64)
        nng_store_d(line[2], P->N, s[2], P->off[2], (const double *)buf[2]);
      else
        nng_store_f(P->dt, line[2], P->N, s[2], P->off[2], (const float *)buf[2]);
    }
  }
  for (int t = 0; t < 3; ++t) free(buf[t]);
}

static void nng_free(void *payload) {
  nng_plan *P = payload;
  for (int t = 0; t < 3; ++t) free(P->off[t]);
  free(P->wv);
  free(P);
}

static HWP_Status nng_run(void *payload) {
  nng_plan *P = payload;
  pthread_once(&g_nng_once, nng_pick_isa);
  const int f64 = P->dt == HWP_DTYPE_FLOAT64;
  for (int t = 0; t < 3; ++t) {
    const nng_lines *l = &P->lines[t];
    if (nng_run_stride(l) != 0) continue;
    if ((P->off[t] = malloc(sizeof(int64_t) * (size_t)P->N)) == NULL) goto oom;
    for (int64_t j = 0; j < P->N; ++j)
      P->off[t][j] = cpu_unravel_offset(j, l->ln, l->lshape, l->lstride);
  }
  if (P->has_w) {
    nng_lines wl;
    nng_lines_of(&P->w, 0, P->w.ndim, &wl);
    int64_t ws = nng_run_stride(&wl), *woff = NULL;
    if ((P->wv = cpu_scratch((f64 ? 8 : 4) * (size_t)P->N)) == NULL) goto oom;
    if (ws == 0) {
      if ((woff = malloc(sizeof(int64_t) * (size_t)P->N)) == NULL) goto oom;
      for (int64_t j = 0; j < P->N; ++j)
        woff[j] = cpu_unravel_offset(j, wl.ln, wl.lshape, wl.lstride);
    }
    if (f64)
      nng_load_d(P->w.base, P->N, ws, woff, P->wv);
    else
      nng_load_f(P->dt, P->w.base, P->N, ws, woff, P->wv);
    free(woff);
  }
  cpu_parallel_for(P->R, P->N >= 16384 ? 1 : 16384 / P->N, nng_task, P);
  if (!P->failed) return HWP_OK;
oom:
  return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for line buffers", P->op);
}

/* ---- the kernels --------------------------------------------------------------------------- */

/* `t` (named what) must have `like`'s dtype and shape. */
static HWP_Status nng_check_like(const char *op, const char *what, const cpu_view *t,
                                 const cpu_view *like, const char *like_name) {
  int ok = t->dtype == like->dtype && t->ndim == like->ndim;
  for (int k = 0; ok && k < t->ndim; ++k) ok = t->shape[k] == like->shape[k];
  if (!ok)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: %s (%s, %d-d) must have %s's dtype and shape (%s, %d-d)", op, what,
                     cpu_dtype_name(t->dtype), (int)t->ndim, like_name,
                     cpu_dtype_name(like->dtype), (int)like->ndim);
  return HWP_OK;
}

static HWP_Status nng_kernel(const HWP_KernelContext *ctx, int kind, const char *op) {
  const char *first = kind == 0 ? "out" : "x";
  if (ctx == NULL || !HWP_HAS_FIELD(ctx, HWP_KernelContext, outputs))
    return cpu_check_context(ctx, op, 2, 1); /* reports the bad context */
  const int has_w = kind != 0 && cpu_attr_flag(ctx, "has_weight", ctx->num_inputs >= 3);
  HWP_Status st = cpu_check_context(ctx, op, 2 + has_w, 1);
  if (st != HWP_OK) return st;
  cpu_view a, g, y;
  if ((st = cpu_view_load(op, first, &ctx->inputs[0], &a)) != HWP_OK ||
      (st = cpu_view_load(op, "grad", &ctx->inputs[1], &g)) != HWP_OK ||
      (st = cpu_view_load(op, "output 0", &ctx->outputs[0], &y)) != HWP_OK)
    return st;
  if (!cpu_is_float_dtype(a.dtype))
    return cpu_error(HWP_ERROR_NOT_SUPPORTED, "%s: dtype %s is not supported (float only)", op,
                     cpu_dtype_name(a.dtype));
  if ((st = nng_check_like(op, "grad", &g, &a, first)) != HWP_OK ||
      (st = nng_check_like(op, "the output", &y, &a, first)) != HWP_OK ||
      (st = cpu_rview_require_contiguous(op, &y)) != HWP_OK)
    return st;
  nng_plan *P = calloc(1, sizeof *P);
  if (P == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for the plan", op);
  P->op = op;
  P->kind = kind;
  P->dt = a.dtype;
  P->isz = a.itemsize;
  int l0 = 0, l1 = 0; /* the line's dims */
  if (kind == 0) {
    int64_t axis = 0;
    if ((st = cpu_attr_axis(ctx, op, "axis", a.ndim, &axis)) != HWP_OK) goto fail;
    l0 = a.ndim > 0 ? (int)axis : 0;
    l1 = a.ndim > 0 ? l0 + 1 : 0;
  } else {
    const int64_t nd = hwp_attr_int64(ctx, "normalized_ndim", 1);
    if (nd < 1 || nd > a.ndim) {
      st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: normalized_ndim = %lld must be in [1, %d] for a %d-d input", op,
                     (long long)nd, (int)a.ndim, (int)a.ndim);
      goto fail;
    }
    P->eps = hwp_attr_float64(ctx, "epsilon", 1e-5);
    l0 = a.ndim - (int)nd;
    l1 = a.ndim;
    if (has_w) {
      if ((st = cpu_view_load(op, "weight", &ctx->inputs[2], &P->w)) != HWP_OK) goto fail;
      int ok = P->w.dtype == a.dtype && P->w.ndim == (int)nd;
      for (int k = 0; ok && k < (int)nd; ++k) ok = P->w.shape[k] == a.shape[l0 + k];
      if (!ok) {
        st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: weight must be %s with x's last %lld dims as its shape", op,
                       cpu_dtype_name(a.dtype), (long long)nd);
        goto fail;
      }
      P->has_w = 1;
    }
  }
  if (a.numel == 0) {
    free(P);
    return HWP_OK;
  }
  P->R = 1;
  P->N = 1;
  for (int k = 0; k < a.ndim; ++k) {
    if (k >= l0 && k < l1)
      P->N *= a.shape[k];
    else
      P->R *= a.shape[k];
  }
  const cpu_view *views[3] = {&a, &g, &y};
  for (int t = 0; t < 3; ++t) {
    P->base[t] = views[t]->base;
    nng_lines_of(views[t], l0, l1, &P->lines[t]);
  }
  return cpu_submit_call(ctx, op, nng_run, nng_free, P, (uint64_t)a.numel); /* takes P */
fail:
  free(P);
  return st;
}

static HWP_Status kernel_softmax_grad(const HWP_KernelContext *ctx) {
  return nng_kernel(ctx, 0, "softmax_grad");
}
static HWP_Status kernel_layer_norm_grad(const HWP_KernelContext *ctx) {
  return nng_kernel(ctx, 1, "layer_norm_grad");
}
static HWP_Status kernel_rms_norm_grad(const HWP_KernelContext *ctx) {
  return nng_kernel(ctx, 2, "rms_norm_grad");
}

void cpu_register_nn_grad_kernels(const HWP_HostApi *host) {
  static const struct {
    const char *op;
    HWP_KernelFn fn;
  } ops[] = {
      {"softmax_grad", kernel_softmax_grad},
      {"layer_norm_grad", kernel_layer_norm_grad},
      {"rms_norm_grad", kernel_rms_norm_grad},
  };
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; ++o)
    for (HWP_DType d = HWP_DTYPE_FLOAT16; d <= HWP_DTYPE_FLOAT64; ++d)
      cpu_register_one(host, ops[o].op, d, ops[o].fn, HWP_KERNEL_ACCEPTS_STRIDED);
}
