/* hwport CPU plugin — fused kernels for composite nn ops: softmax, log_softmax, layer_norm,
 * rms_norm (a plugin kernel for a composite op takes priority over its decomposition).
 *
 * Float dtypes only; float16/bfloat16/float32 compute in float32 (float64 in float64); sums
 * run in blocks of NN_BLOCK elements over NN_LANES lanes, each block then added into a
 * float64. Work goes row by row (a row = the softmax axis, or the
 * normalized trailing dims), multithreaded over rows, two or three passes over each row while
 * it sits in cache:
 *   softmax      m = max(x); e = exp(x - m) stored while summing; y = e * (1 / sum)
 *   log_softmax  m = max(x); s = sum(exp(x - m)); y = (x - m) - log(s)
 *   layer_norm   mean; biased variance (second pass over x - mean); y = (x - mean) * rstd
 *                [* weight] [+ bias]
 *   rms_norm     ms = mean(x^2); y = x * (1 / sqrt(ms + eps)) [* weight]
 * float32 rows with a unit stride are read and written in place; other rows (strided, half
 * types, an axis that is not the innermost) are gathered into float buffers first. float32 exp
 * is the branch-free cpu_expf, which the compiler vectorizes; on x86-64 the float32 row
 * functions also come in AVX2+FMA and AVX-512 builds, picked at first use by CPUID. */
#include <pthread.h>

#include "reduce_common.h"

/* ---- per-dtype gathers and scatters (CT: float, or double for float64) ------------------ */

typedef struct nn_io {
  size_t ct_size;
  /* dst[i] = x[i * s], i < n */
  void (*gather)(void *dst, const char *p, int64_t n, int64_t s);
  /* dst[i] = x[off[i]], i < n */
  void (*gather_off)(void *dst, const char *p, const int64_t *off, int64_t n);
  /* dst[c * L + l] = x[l * s + off[c]], l < L, c < cnt */
  void (*gather_tile)(void *dst, const char *p, int64_t L, int64_t s, const int64_t *off,
                      int64_t cnt);
  /* out[i] = src[i], i < n (out contiguous) */
  void (*scatter)(char *out, const void *src, int64_t n);
  /* out[l * ld + c] = src[c * L + l], l < L, c < cnt */
  void (*scatter_tile)(char *out, int64_t ld, const void *src, int64_t L, int64_t cnt);
} nn_io;

#define NN_DEFINE_IO(NAME, T, CT, LOAD, STORE)                                                 \
  static void NAME##_gather(void *dstp, const char *p, int64_t n, int64_t s) {                 \
    CT *dst = (CT *)dstp;                                                                      \
    const CPU_UA(T) *x = (const CPU_UA(T) *)p;                                                 \
    for (int64_t i = 0; i < n; ++i) dst[i] = LOAD(x[i * s]);                                   \
  }                                                                                            \
  static void NAME##_gather_off(void *dstp, const char *p, const int64_t *off, int64_t n) {    \
    CT *dst = (CT *)dstp;                                                                      \
    const CPU_UA(T) *x = (const CPU_UA(T) *)p;                                                 \
    for (int64_t i = 0; i < n; ++i) dst[i] = LOAD(x[off[i]]);                                  \
  }                                                                                            \
  static void NAME##_gather_tile(void *dstp, const char *p, int64_t L, int64_t s,              \
                                 const int64_t *off, int64_t cnt) {                            \
    CT *dst = (CT *)dstp;                                                                      \
    const CPU_UA(T) *x = (const CPU_UA(T) *)p;                                                 \
    for (int64_t l = 0; l < L; ++l)                                                            \
      for (int64_t c = 0; c < cnt; ++c) dst[c * L + l] = LOAD(x[l * s + off[c]]);              \
  }                                                                                            \
  static void NAME##_scatter(char *out, const void *srcp, int64_t n) {                         \
    const CT *src = (const CT *)srcp;                                                          \
    CPU_UA(T) *o = (CPU_UA(T) *)out;                                                           \
    for (int64_t i = 0; i < n; ++i) o[i] = STORE(src[i]);                                      \
  }                                                                                            \
  static void NAME##_scatter_tile(char *out, int64_t ld, const void *srcp, int64_t L,          \
                                  int64_t cnt) {                                               \
    const CT *src = (const CT *)srcp;                                                          \
    CPU_UA(T) *o = (CPU_UA(T) *)out;                                                           \
    for (int64_t l = 0; l < L; ++l)                                                            \
      for (int64_t c = 0; c < cnt; ++c) o[l * ld + c] = STORE(src[c * L + l]);                 \
  }

#define NN_ID(x) (x)
NN_DEFINE_IO(nn_f16, uint16_t, float, cpu_f16_to_f32, cpu_f32_to_f16)
NN_DEFINE_IO(nn_bf16, uint16_t, float, cpu_bf16_to_f32, cpu_f32_to_bf16)
NN_DEFINE_IO(nn_f32, float, float, NN_ID, NN_ID)
NN_DEFINE_IO(nn_f64, double, double, NN_ID, NN_ID)

#define NN_IO(NAME, CT)                                                                        \
  { sizeof(CT), NAME##_gather, NAME##_gather_off, NAME##_gather_tile, NAME##_scatter,          \
    NAME##_scatter_tile }
static const nn_io g_nn_io[4] = {NN_IO(nn_f16, float), NN_IO(nn_bf16, float),
                                 NN_IO(nn_f32, float), NN_IO(nn_f64, double)};

/* float16/bfloat16 rows gathered and scattered at vector width (F16C; half_simd.h) when the
 * elementwise loops run at AVX2 or AVX-512 (cpu_ew_simd_level); the indexed forms stay scalar. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(HWPORT_CPU_NO_DISPATCH)
#include "half_simd.h"
#define NN_HALF_IO(name, short, isa, ATTRS)                                                    \
  ATTRS static void nn_##short##isa##_gather(void *dst, const char *p, int64_t n, int64_t s) { \
    cpu_half_load_##name##isa((float *)dst, p, s * 2, n);                                      \
  }                                                                                            \
  ATTRS static void nn_##short##isa##_scatter(char *out, const void *src, int64_t n) {         \
    cpu_half_store_##name##isa(out, (const float *)src, n);                                    \
  }
#define NN_AVX2_F16C __attribute__((target("avx2,fma,f16c")))
#define NN_AVX512_F16C __attribute__((target("avx512f,avx512dq,avx512bw,fma,f16c")))
NN_HALF_IO(float16, f16, _avx2, NN_AVX2_F16C)
NN_HALF_IO(bfloat16, bf16, _avx2, NN_AVX2_F16C)
NN_HALF_IO(float16, f16, _avx512, NN_AVX512_F16C)
NN_HALF_IO(bfloat16, bf16, _avx512, NN_AVX512_F16C)
#define NN_IO_HALF(short, isa)                                                                 \
  { sizeof(float), nn_##short##isa##_gather, nn_##short##_gather_off, nn_##short##_gather_tile,  \
    nn_##short##isa##_scatter, nn_##short##_scatter_tile }
static const nn_io g_nn_io_half[2][2] = {{NN_IO_HALF(f16, _avx2), NN_IO_HALF(bf16, _avx2)},
                                         {NN_IO_HALF(f16, _avx512), NN_IO_HALF(bf16, _avx512)}};
#define NN_HAVE_HALF_IO 1
#endif

static const nn_io *nn_io_of(HWP_DType dt) {
#ifdef NN_HAVE_HALF_IO
  const int level = cpu_ew_simd_level();
  if (level > 0 && (dt == HWP_DTYPE_FLOAT16 || dt == HWP_DTYPE_BFLOAT16))
    return &g_nn_io_half[level - 1][dt == HWP_DTYPE_BFLOAT16];
#endif
  return &g_nn_io[dt - HWP_DTYPE_FLOAT16];
}

#define NN_LANES 16   /* independent float accumulators */
#define NN_BLOCK 1024 /* elements summed in CT lanes before they are added into a double */

/* ---- row math ------------------------------------------------------------------------------- */

static inline double nn_exp_d(double x) { return exp(x); }

/* y = softmax(x) or log_softmax(x) of a contiguous row; x and y do not overlap. The row max
 * is a plain max over lanes (a NaN it drops still makes every output NaN through exp(x - m) and
 * the sum); the sum of the exponentials goes in blocks: NN_LANES CT lanes per block, added
 * pairwise, each block into a double. */
#define NN_DEFINE_SOFTMAX(NAME, CT, EXP, ATTR)                                                 \
  ATTR static void NAME(const void *xp, void *yp, int64_t n, int log_sm) {                     \
    const CT *x = (const CT *)xp;                                                              \
    CT *y = (CT *)yp;                                                                          \
    CT ml[NN_LANES];                                                                           \
    for (int j = 0; j < NN_LANES; ++j) ml[j] = (CT)-INFINITY;                                  \
    int64_t i0 = 0;                                                                            \
    for (; i0 + NN_LANES <= n; i0 += NN_LANES)                                                 \
      for (int j = 0; j < NN_LANES; ++j) ml[j] = x[i0 + j] > ml[j] ? x[i0 + j] : ml[j];        \
    for (; i0 < n; ++i0) ml[0] = x[i0] > ml[0] ? x[i0] : ml[0];                                \
    for (int w = NN_LANES / 2; w > 0; w /= 2)                                                  \
      for (int j = 0; j < w; ++j) ml[j] = ml[j + w] > ml[j] ? ml[j + w] : ml[j];               \
    const CT m = ml[0];                                                                        \
    double sum = 0.0;                                                                          \
    for (int64_t b0 = 0; b0 < n; b0 += NN_BLOCK) {                                             \
      const int64_t b1 = n - b0 < NN_BLOCK ? n : b0 + NN_BLOCK;                                \
      CT l[NN_LANES];                                                                          \
      int64_t i = b0;                                                                          \
      for (int j = 0; j < NN_LANES; ++j) l[j] = 0;                                             \
      if (!log_sm) {                                                                           \
        for (; i + NN_LANES <= b1; i += NN_LANES)                                              \
          for (int j = 0; j < NN_LANES; ++j) {                                                 \
            CT e = EXP(x[i + j] - m);                                                          \
            y[i + j] = e;                                                                      \
            l[j] += e;                                                                         \
          }                                                                                    \
      } else {                                                                                 \
        for (; i + NN_LANES <= b1; i += NN_LANES)                                              \
          for (int j = 0; j < NN_LANES; ++j) l[j] += EXP(x[i + j] - m);                        \
      }                                                                                        \
      if (i < b1) { /* the tail as one padded vector (exp(-inf) = 0): short rows stay SIMD */  \
        CT t[NN_LANES];                                                                        \
        const int64_t r = b1 - i;                                                              \
        for (int j = 0; j < NN_LANES; ++j) t[j] = (CT)-INFINITY;                               \
        for (int64_t j = 0; j < r; ++j) t[j] = x[i + j] - m;                                   \
        for (int j = 0; j < NN_LANES; ++j) {                                                   \
          t[j] = EXP(t[j]);                                                                    \
          l[j] += t[j];                                                                        \
        }                                                                                      \
        if (!log_sm)                                                                           \
          for (int64_t j = 0; j < r; ++j) y[i + j] = t[j];                                     \
      }                                                                                        \
      CPU_LANE_TREE(l, NN_LANES);                                                              \
      sum += (double)l[0];                                                                     \
    }                                                                                          \
    if (!log_sm) {                                                                             \
      const CT r = (CT)(1.0 / sum);                                                            \
      for (int64_t i = 0; i < n; ++i) y[i] *= r;                                               \
    } else {                                                                                   \
      const CT ls = (CT)log(sum);                                                              \
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - ls;                                  \
    }                                                                                          \
  }

/* Sum of x[i] (sq: of (x[i] - c)^2) over a contiguous row, in blocks as above. */
#define NN_DEFINE_ROWSUM(NAME, CT, ATTR)                                                       \
  ATTR static inline double NAME(const CT *x, int64_t n, CT c, int sq) {                       \
    double sum = 0.0;                                                                          \
    for (int64_t b0 = 0; b0 < n; b0 += NN_BLOCK) {                                             \
      const int64_t b1 = n - b0 < NN_BLOCK ? n : b0 + NN_BLOCK;                                \
      CT l[NN_LANES];                                                                          \
      int64_t i = b0;                                                                          \
      for (int j = 0; j < NN_LANES; ++j) l[j] = 0;                                             \
      if (sq) {                                                                                \
        for (; i + NN_LANES <= b1; i += NN_LANES)                                              \
          for (int j = 0; j < NN_LANES; ++j) {                                                 \
            CT d = x[i + j] - c;                                                               \
            l[j] += d * d;                                                                     \
          }                                                                                    \
        for (; i < b1; ++i) l[0] += (x[i] - c) * (x[i] - c);                                   \
      } else {                                                                                 \
        for (; i + NN_LANES <= b1; i += NN_LANES)                                              \
          for (int j = 0; j < NN_LANES; ++j) l[j] += x[i + j];                                 \
        for (; i < b1; ++i) l[0] += x[i];                                                      \
      }                                                                                        \
      CPU_LANE_TREE(l, NN_LANES);                                                              \
      sum += (double)l[0];                                                                     \
    }                                                                                          \
    return sum;                                                                                \
  }

/* Normalization of a contiguous row (layer_norm; rms_norm when rms): the mean, then the biased
 * variance from a second pass over x - mean (or the mean square), then one output pass. */
#define NN_DEFINE_NORM(NAME, CT, ROWSUM, ATTR)                                                 \
  ATTR static void NAME(const void *xp, void *yp, int64_t n, const void *wp, const void *bp,   \
                        double eps, int rms) {                                                 \
    const CT *x = (const CT *)xp, *w = (const CT *)wp, *b = (const CT *)bp;                    \
    CT *y = (CT *)yp;                                                                          \
    const CT mean = rms ? (CT)0 : (CT)(ROWSUM(x, n, 0, 0) / (double)n);                        \
    const CT r = (CT)(1.0 / sqrt(ROWSUM(x, n, mean, 1) / (double)n + eps));                    \
    if (w != NULL && b != NULL) {                                                              \
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * r * w[i] + b[i];                  \
    } else if (w != NULL) {                                                                    \
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * r * w[i];                         \
    } else if (b != NULL) {                                                                    \
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * r + b[i];                         \
    } else {                                                                                   \
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * r;                                \
    }                                                                                          \
  }

NN_DEFINE_ROWSUM(nn_rowsum_f, cpu_ua_float, )
NN_DEFINE_ROWSUM(nn_rowsum_d, cpu_ua_double, )
NN_DEFINE_SOFTMAX(nn_softmax_f, cpu_ua_float, cpu_expf, )
NN_DEFINE_SOFTMAX(nn_softmax_d, cpu_ua_double, nn_exp_d, )
NN_DEFINE_NORM(nn_norm_f, cpu_ua_float, nn_rowsum_f, )
NN_DEFINE_NORM(nn_norm_d, cpu_ua_double, nn_rowsum_d, )

typedef void (*nn_softmax_fn)(const void *x, void *y, int64_t n, int log_sm);
typedef void (*nn_norm_fn)(const void *x, void *y, int64_t n, const void *w, const void *b,
                           double eps, int rms);

/* On x86-64 the float32 row functions also exist for AVX2+FMA and AVX-512 (the plugin itself is
 * built for the baseline ISA); the first use picks the widest one the CPU supports. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(HWPORT_CPU_NO_DISPATCH)
#define NN_X86_DISPATCH 1
#define NN_AVX2 __attribute__((target("avx2,fma")))
#define NN_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))
NN_DEFINE_ROWSUM(nn_rowsum_f_avx2, cpu_ua_float, NN_AVX2)
NN_DEFINE_SOFTMAX(nn_softmax_f_avx2, cpu_ua_float, cpu_expf, NN_AVX2)
NN_DEFINE_NORM(nn_norm_f_avx2, cpu_ua_float, nn_rowsum_f_avx2, NN_AVX2)
NN_DEFINE_ROWSUM(nn_rowsum_f_avx512, cpu_ua_float, NN_AVX512)
NN_DEFINE_SOFTMAX(nn_softmax_f_avx512, cpu_ua_float, cpu_expf, NN_AVX512)
NN_DEFINE_NORM(nn_norm_f_avx512, cpu_ua_float, nn_rowsum_f_avx512, NN_AVX512)
#endif

/* float16/bfloat16 rows at AVX2 / AVX-512 (when the nn level and the elementwise level agree):
 * the mean and variance passes over the gathered float32 row as NN_DEFINE_NORM, then one output
 * pass that narrows each vector as it is computed and stores it into the half row (the output
 * pass and the scatter fused: two L1 passes fewer per row). Same arithmetic as NN_DEFINE_NORM
 * ((x - mean) * r, times w, plus b, multiply-add contracted). */
#if defined(NN_X86_DISPATCH) && defined(NN_HAVE_HALF_IO)
#define NN_HAVE_NORM_HALF 1
#define NN_DEFINE_NORM_HALF(NAME, ROWSUM, ATTR, W, VT, SET1, LOAD, SUB, MUL, ADD, FMA, ST16, STB16) \
  ATTR static void NAME(const float *x, char *y, int64_t n, const float *w, const float *b,     \
                        double eps, int rms, int bf16) {                                        \
    const float mean = rms ? 0.0f : (float)(ROWSUM(x, n, 0, 0) / (double)n);                    \
    const float r = (float)(1.0 / sqrt(ROWSUM(x, n, mean, 1) / (double)n + eps));               \
    const VT vm = SET1(mean), vr = SET1(r);                                                     \
    int64_t i = 0;                                                                              \
    for (; i + W <= n; i += W) {                                                                \
      VT v = MUL(SUB(LOAD(x + i), vm), vr);                                                     \
      if (w != NULL && b != NULL)                                                               \
        v = FMA(v, LOAD(w + i), LOAD(b + i));                                                   \
      else if (w != NULL)                                                                       \
        v = MUL(v, LOAD(w + i));                                                                \
      else if (b != NULL)                                                                       \
        v = ADD(v, LOAD(b + i));                                                                \
      if (bf16)                                                                                 \
        STB16(y + 2 * i, v);                                                                    \
      else                                                                                      \
        ST16(y + 2 * i, v);                                                                     \
    }                                                                                           \
    for (; i < n; ++i) {                                                                        \
      float t = (x[i] - mean) * r;                                                              \
      if (w != NULL && b != NULL)                                                               \
        t = fmaf(t, w[i], b[i]);                                                                \
      else if (w != NULL)                                                                       \
        t = t * w[i];                                                                           \
      else if (b != NULL)                                                                       \
        t = t + b[i];                                                                           \
      const uint16_t h = bf16 ? cpu_f32_to_bf16(t) : cpu_f32_to_f16(t);                         \
      memcpy(y + 2 * i, &h, 2);                                                                 \
    }                                                                                           \
  }
#define NN_AVX2_HALF __attribute__((target("avx2,fma,f16c")))
#define NN_AVX512_HALF __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma,f16c")))
NN_DEFINE_NORM_HALF(nn_norm_half_avx2, nn_rowsum_f_avx2, NN_AVX2_HALF, 8, __m256,
                    _mm256_set1_ps, _mm256_loadu_ps, _mm256_sub_ps, _mm256_mul_ps, _mm256_add_ps,
                    _mm256_fmadd_ps, cpu_h16_store_float16_avx2, cpu_h16_store_bfloat16_avx2)
NN_DEFINE_NORM_HALF(nn_norm_half_avx512, nn_rowsum_f_avx512, NN_AVX512_HALF, 16, __m512,
                    _mm512_set1_ps, _mm512_loadu_ps, _mm512_sub_ps, _mm512_mul_ps, _mm512_add_ps,
                    _mm512_fmadd_ps, cpu_h16_store_float16_avx512,
                    cpu_h16_store_bfloat16_avx512)
#endif

static struct {
  nn_softmax_fn softmax_f;
  nn_norm_fn norm_f;
} g_nn_f32 = {nn_softmax_f, nn_norm_f};
static pthread_once_t g_nn_once = PTHREAD_ONCE_INIT;

/* 0 baseline, 1 AVX2+FMA, 2 AVX-512 (F, DQ, BW, VL) + FMA: what the float32 row functions of
 * this file and kernels_nn_grad.c are cloned for, detected once. */
static int g_nn_level = 0;
static pthread_once_t g_nn_level_once = PTHREAD_ONCE_INIT;

static void nn_detect_isa(void) {
#ifdef NN_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("fma"))
    g_nn_level = 2;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    g_nn_level = 1;
#endif
}

int cpu_nn_isa_level(void) {
  pthread_once(&g_nn_level_once, nn_detect_isa);
  return g_nn_level;
}

static void nn_pick_isa(void) {
#ifdef NN_X86_DISPATCH
  const int level = cpu_nn_isa_level();
  if (level == 2) {
    g_nn_f32.softmax_f = nn_softmax_f_avx512;
    g_nn_f32.norm_f = nn_norm_f_avx512;
  } else if (level == 1) {
    g_nn_f32.softmax_f = nn_softmax_f_avx2;
    g_nn_f32.norm_f = nn_norm_f_avx2;
  }
#endif
}

/* ---- softmax / log_softmax ------------------------------------------------------------------ */

typedef struct sm_plan {
  int log_sm;
  HWP_DType dt;
  char *in, *out;
  int64_t isz;
  int on, inn;
  int64_t oshape[HWP_MAX_NDIM], ostride[HWP_MAX_NDIM]; /* dims before the axis */
  int64_t ishape[HWP_MAX_NDIM], istride[HWP_MAX_NDIM]; /* dims after the axis */
  int64_t O, L, I, s;
  int64_t tw, ntiles; /* column mode: tile width over the inner dims */
  int failed;
} sm_plan;

static void sm_row(const sm_plan *P, const void *x, void *y, int64_t n) {
  if (P->dt == HWP_DTYPE_FLOAT64)
    nn_softmax_d(x, y, n, P->log_sm);
  else
    g_nn_f32.softmax_f(x, y, n, P->log_sm);
}

/* Innermost axis: one row per outer index. */
static void sm_rows_task(void *ctx, int64_t b, int64_t e) {
  sm_plan *P = ctx;
  const nn_io *io = nn_io_of(P->dt);
  const int native = P->dt == HWP_DTYPE_FLOAT32 || P->dt == HWP_DTYPE_FLOAT64;
  char *buf = NULL, *buf2 = NULL;
  if (!native || P->s != 1) {
    buf = cpu_scratch(io->ct_size * (size_t)P->L);
    buf2 = cpu_scratch(io->ct_size * (size_t)P->L);
    if (buf == NULL || buf2 == NULL) {
      __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED);
      b = e;
    }
  }
  for (int64_t o = b; o < e; ++o) {
    const char *x = P->in + cpu_unravel_offset(o, P->on, P->oshape, P->ostride) * P->isz;
    char *y = P->out + o * P->L * P->isz;
    if (native && P->s == 1) {
      sm_row(P, x, y, P->L);
    } else {
      io->gather(buf, x, P->L, P->s);
      if (native) {
        sm_row(P, buf, y, P->L);
      } else {
        sm_row(P, buf, buf2, P->L);
        io->scatter(y, buf2, P->L);
      }
    }
  }
  free(buf);
  free(buf2);
}

/* An outer axis: tiles of columns gathered into rows, computed, scattered back. */
static void sm_cols_task(void *ctx, int64_t b, int64_t e) {
  sm_plan *P = ctx;
  const nn_io *io = nn_io_of(P->dt);
  int64_t off[64];
  char *buf = cpu_scratch(io->ct_size * (size_t)(P->L * P->tw));
  char *buf2 = cpu_scratch(io->ct_size * (size_t)(P->L * P->tw));
  if (buf == NULL || buf2 == NULL) {
    __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED);
    b = e;
  }
  for (int64_t g = b; g < e; ++g) {
    int64_t o = g / P->ntiles, t = g - o * P->ntiles;
    int64_t i0 = t * P->tw, cnt = P->I - i0 < P->tw ? P->I - i0 : P->tw;
    const char *x = P->in + cpu_unravel_offset(o, P->on, P->oshape, P->ostride) * P->isz;
    for (int64_t c = 0; c < cnt; ++c)
      off[c] = cpu_unravel_offset(i0 + c, P->inn, P->ishape, P->istride);
    io->gather_tile(buf, x, P->L, P->s, off, cnt);
    for (int64_t c = 0; c < cnt; ++c)
      sm_row(P, buf + (size_t)(c * P->L) * io->ct_size, buf2 + (size_t)(c * P->L) * io->ct_size,
             P->L);
    io->scatter_tile(P->out + (o * P->L * P->I + i0) * P->isz, P->I, buf2, P->L, cnt);
  }
  free(buf);
  free(buf2);
}

static HWP_Status sm_run(void *payload) {
  sm_plan *P = payload;
  pthread_once(&g_nn_once, nn_pick_isa);
  if (P->I == 1) {
    cpu_parallel_for(P->O, P->L >= 16384 ? 1 : 16384 / P->L, sm_rows_task, P);
  } else {
    P->tw = 16384 / P->L;
    P->tw = P->tw < 1 ? 1 : P->tw > 64 ? 64 : P->tw;
    if (P->tw > P->I) P->tw = P->I;
    P->ntiles = (P->I + P->tw - 1) / P->tw;
    cpu_parallel_for(P->O * P->ntiles, 1, sm_cols_task, P);
  }
  if (P->failed)
    return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for row buffers",
                     P->log_sm ? "log_softmax" : "softmax");
  return HWP_OK;
}

/* Output checks shared by the nn kernels: same dtype and shape as x, contiguous; float x. */
static HWP_Status nn_check_xy(const char *op, const cpu_view *x, const cpu_view *y) {
  if (!cpu_is_float_dtype(x->dtype))
    return cpu_error(HWP_ERROR_NOT_SUPPORTED, "%s: dtype %s is not supported (float only)", op,
                     cpu_dtype_name(x->dtype));
  if (y->dtype != x->dtype || y->ndim != x->ndim)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: the output (%s, %d-d) must have the input's dtype and rank (%s, %d-d)",
                     op, cpu_dtype_name(y->dtype), (int)y->ndim, cpu_dtype_name(x->dtype),
                     (int)x->ndim);
  for (int k = 0; k < x->ndim; ++k)
    if (y->shape[k] != x->shape[k])
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output shape[%d] = %lld, input %lld", op,
                       k, (long long)y->shape[k], (long long)x->shape[k]);
  return cpu_rview_require_contiguous(op, y);
}

static HWP_Status sm_kernel(const HWP_KernelContext *ctx, int log_sm, const char *op) {
  HWP_Status st = cpu_check_context(ctx, op, 1, 1);
  if (st != HWP_OK) return st;
  cpu_view x, y;
  if ((st = cpu_view_load(op, "input 0", &ctx->inputs[0], &x)) != HWP_OK) return st;
  if ((st = cpu_view_load(op, "output 0", &ctx->outputs[0], &y)) != HWP_OK) return st;
  if ((st = nn_check_xy(op, &x, &y)) != HWP_OK) return st;
  int64_t axis = 0;
  if ((st = cpu_attr_axis(ctx, op, "axis", x.ndim, &axis)) != HWP_OK) return st;
  if (x.numel == 0) return HWP_OK;
  sm_plan *P = calloc(1, sizeof *P);
  if (P == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for the plan", op);
  P->log_sm = log_sm;
  P->dt = x.dtype;
  P->in = x.base;
  P->out = y.base;
  P->isz = (int64_t)x.itemsize;
  CPU_SPLIT_AXIS(P, &x, axis);
  st = cpu_submit_call(ctx, op, sm_run, free, P, (uint64_t)x.numel); /* takes P */
  return st;
}

static HWP_Status kernel_softmax(const HWP_KernelContext *ctx) {
  return sm_kernel(ctx, 0, "softmax");
}
static HWP_Status kernel_log_softmax(const HWP_KernelContext *ctx) {
  return sm_kernel(ctx, 1, "log_softmax");
}

/* ---- layer_norm / rms_norm ------------------------------------------------------------------- */

typedef struct ln_plan {
  int rms;
  HWP_DType dt;
  char *in, *out;
  int64_t isz;
  int rn, nn;
  int64_t rshape[HWP_MAX_NDIM], rstride[HWP_MAX_NDIM]; /* row (leading) dims */
  int64_t nshape[HWP_MAX_NDIM], nstride[HWP_MAX_NDIM]; /* normalized dims of x */
  int64_t R, N;
  double eps;
  int has_w, has_b;
  cpu_view w, b;
  /* prepared by ln_run */
  void *wv, *bv;  /* weight, bias as contiguous CT arrays (or NULL) */
  int64_t *noff;  /* offsets of a row's elements when it is not one strided run */
  int failed;
} ln_plan;

/* param[i] (C order over the view's dims) as a contiguous CT array. */
static void *ln_param(const nn_io *io, const cpu_view *v, int64_t n) {
  int64_t *off = malloc(sizeof(int64_t) * (size_t)n);
  void *dst = cpu_scratch(io->ct_size * (size_t)n);
  if (off != NULL && dst != NULL) {
    for (int64_t i = 0; i < n; ++i) off[i] = cpu_unravel_offset(i, v->ndim, v->shape, v->strides);
    io->gather_off(dst, v->base, off, n);
  } else {
    free(dst);
    dst = NULL;
  }
  free(off);
  return dst;
}

static void ln_rows_task(void *ctx, int64_t b, int64_t e) {
  ln_plan *P = ctx;
  const nn_io *io = nn_io_of(P->dt);
  const int native = P->dt == HWP_DTYPE_FLOAT32 || P->dt == HWP_DTYPE_FLOAT64;
  const int unit = P->noff == NULL && (P->nn == 0 || P->nstride[0] == 1);
#ifdef NN_HAVE_NORM_HALF
  /* the fused half output pass: at the level both the half io and the row math run at */
  const int half_level = !native && cpu_ew_simd_level() == cpu_nn_isa_level()
                             ? cpu_ew_simd_level() : 0;
#endif
  char *buf = NULL;
  if (!native || !unit) {
    buf = cpu_scratch(io->ct_size * (size_t)P->N);
    if (buf == NULL) {
      __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED);
      b = e;
    }
  }
  for (int64_t r = b; r < e; ++r) {
    const char *x = P->in + cpu_unravel_offset(r, P->rn, P->rshape, P->rstride) * P->isz;
    char *y = P->out + r * P->N * P->isz;
    const void *src = x;
    /* half rows normalize in place in buf (the output pass reads x[i] before it writes y[i]):
     * one row buffer less in L1 beside the float32 weight and bias. */
    void *dst = native ? (void *)y : (void *)buf;
    if (!native || !unit) {
      if (P->noff != NULL)
        io->gather_off(buf, x, P->noff, P->N);
      else
        io->gather(buf, x, P->N, P->nn == 0 ? 1 : P->nstride[0]);
      src = buf;
    }
#ifdef NN_HAVE_NORM_HALF
    if (half_level > 0) {
      (half_level == 2 ? nn_norm_half_avx512 : nn_norm_half_avx2)(
          (const float *)src, y, P->N, P->wv, P->bv, P->eps, P->rms,
          P->dt == HWP_DTYPE_BFLOAT16);
      continue;
    }
#endif
    if (P->dt == HWP_DTYPE_FLOAT64)
      nn_norm_d(src, dst, P->N, P->wv, P->bv, P->eps, P->rms);
    else
      g_nn_f32.norm_f(src, dst, P->N, P->wv, P->bv, P->eps, P->rms);
    if (!native) io->scatter(y, buf, P->N);
  }
  free(buf);
}

static HWP_Status ln_run(void *payload) {
  ln_plan *P = payload;
  pthread_once(&g_nn_once, nn_pick_isa);
  const nn_io *io = nn_io_of(P->dt);
  const char *op = P->rms ? "rms_norm" : "layer_norm";
  HWP_Status st = HWP_OK;
  if (P->has_w && (P->wv = ln_param(io, &P->w, P->N)) == NULL) goto oom;
  if (P->has_b && (P->bv = ln_param(io, &P->b, P->N)) == NULL) goto oom;
  if (P->nn > 1) { /* the normalized dims do not merge into one run: an offset table */
    if ((P->noff = malloc(sizeof(int64_t) * (size_t)P->N)) == NULL) goto oom;
    for (int64_t i = 0; i < P->N; ++i)
      P->noff[i] = cpu_unravel_offset(i, P->nn, P->nshape, P->nstride);
  }
  cpu_parallel_for(P->R, P->N >= 16384 ? 1 : 16384 / P->N, ln_rows_task, P);
  if (P->failed) goto oom;
  goto done;
oom:
  st = cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for row buffers", op);
done:
  free(P->wv);
  free(P->bv);
  free(P->noff);
  P->wv = P->bv = NULL;
  P->noff = NULL;
  return st;
}

static HWP_Status ln_kernel(const HWP_KernelContext *ctx, int rms, const char *op) {
  if (ctx == NULL || !HWP_HAS_FIELD(ctx, HWP_KernelContext, outputs))
    return cpu_check_context(ctx, op, 1, 1); /* reports the bad context */
  /* Optional inputs: the attrs say which are present; without them, by count (in order). */
  int n_in = ctx->num_inputs;
  int has_w = cpu_attr_flag(ctx, "has_weight", n_in >= 2);
  int has_b = rms ? 0 : cpu_attr_flag(ctx, "has_bias", n_in >= 3 || (n_in == 2 && !has_w));
  HWP_Status st = cpu_check_context(ctx, op, 1 + has_w + has_b, 1);
  if (st != HWP_OK) return st;
  cpu_view x, y;
  if ((st = cpu_view_load(op, "input 0", &ctx->inputs[0], &x)) != HWP_OK) return st;
  if ((st = cpu_view_load(op, "output 0", &ctx->outputs[0], &y)) != HWP_OK) return st;
  if ((st = nn_check_xy(op, &x, &y)) != HWP_OK) return st;
  int64_t nd = hwp_attr_int64(ctx, "normalized_ndim", 1);
  if (nd < 1 || nd > x.ndim)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: normalized_ndim = %lld must be in [1, %d] for a %d-d input", op,
                     (long long)nd, (int)x.ndim, (int)x.ndim);
  ln_plan *P = calloc(1, sizeof *P);
  if (P == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for the plan", op);
  P->rms = rms;
  P->eps = hwp_attr_float64(ctx, "epsilon", rms ? 1e-6 : 1e-5);
  P->has_w = has_w;
  P->has_b = has_b;
  const int lead = x.ndim - (int)nd;
  for (int i = 0; i < has_w + has_b; ++i) {
    const char *what = i == 0 && has_w ? "weight" : "bias";
    cpu_view *p = i == 0 && has_w ? &P->w : &P->b;
    if ((st = cpu_view_load(op, what, &ctx->inputs[1 + i], p)) != HWP_OK) goto fail;
    int ok = p->dtype == x.dtype && p->ndim == (int)nd;
    for (int k = 0; ok && k < (int)nd; ++k) ok = p->shape[k] == x.shape[lead + k];
    if (!ok) {
      st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: %s must be %s with the input's last %lld dims as its shape", op, what,
                     cpu_dtype_name(x.dtype), (long long)nd);
      goto fail;
    }
  }
  if (x.numel == 0) {
    free(P);
    return HWP_OK;
  }
  P->dt = x.dtype;
  P->in = x.base;
  P->out = y.base;
  P->isz = (int64_t)x.itemsize;
  P->R = 1;
  P->N = 1;
  for (int k = 0; k < x.ndim; ++k) {
    if (k < lead) {
      P->R *= x.shape[k];
      P->rshape[P->rn] = x.shape[k];
      P->rstride[P->rn++] = x.strides[k];
    } else {
      P->N *= x.shape[k];
      P->nshape[P->nn] = x.shape[k];
      P->nstride[P->nn++] = x.strides[k];
    }
  }
  P->rn = cpu_merge_dims(P->rn, P->rshape, P->rstride);
  P->nn = cpu_merge_dims(P->nn, P->nshape, P->nstride);
  return cpu_submit_call(ctx, op, ln_run, free, P, (uint64_t)x.numel); /* takes P */
fail:
  free(P);
  return st;
}

static HWP_Status kernel_layer_norm(const HWP_KernelContext *ctx) {
  return ln_kernel(ctx, 0, "layer_norm");
}
static HWP_Status kernel_rms_norm(const HWP_KernelContext *ctx) {
  return ln_kernel(ctx, 1, "rms_norm");
}

void cpu_register_nn_kernels(const HWP_HostApi *host) {
  static const struct {
    const char *op;
    HWP_KernelFn fn;
  } ops[] = {
      {"softmax", kernel_softmax},
      {"log_softmax", kernel_log_softmax},
      {"layer_norm", kernel_layer_norm},
      {"rms_norm", kernel_rms_norm},
  };
  /* ops.yaml: float dtypes only. */
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; ++o)
    for (HWP_DType d = HWP_DTYPE_FLOAT16; d <= HWP_DTYPE_FLOAT64; ++d)
      cpu_register_one(host, ops[o].op, d, ops[o].fn, HWP_KERNEL_ACCEPTS_STRIDED);
}
