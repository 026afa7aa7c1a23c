/* hwport CPU plugin — matmul and linear.
 *
 * x [B..., M, K] @ y [B..., K, N] -> out [B..., M, N] (contiguous); the inputs are strided views
 * already broadcast to the same batch dims (stride 0 allowed), transposes already applied.
 *   float32/float64: CBLAS sgemm/dgemm (OpenBLAS, when the build found it: blas.cmake defines
 *     HWPORT_CPU_HAVE_CBLAS). A matrix whose inner stride is 1 on either dim goes in as is (the
 *     transpose flag picks the layout); any other view is packed into a contiguous copy first.
 *   float16/bfloat16: converted to float32 (rows at vector width when their elements are
 *     contiguous), sgemm, rounded once into the output.
 *   integers: wrap-around (computed in uint32 for int8..int32, uint64 for int64).
 * Small batched float32/float64 products (attention's) run a direct register-tiled kernel,
 * parallel over batches. Without BLAS, and for integers and the other small batched products, a
 * packed, cache-blocked GEMM of our own runs (MC x KC panels of x, KC x NC panels of y, an
 * MR x NR register tile that the compiler vectorizes), parallel over output blocks or over
 * batches. OpenBLAS runs with cpu_parallel_threads() threads, and only one thread of this
 * plugin calls it at a time. linear (the composite) is matmul's GEMM plus its bias, in one
 * launch. */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "reduce_common.h"

#ifdef HWPORT_CPU_HAVE_CBLAS
#include <cblas.h>
#endif

#define MM_MC 64
#define MM_KC 256
#define MM_NC 256

/* ---- the fallback GEMM, per compute type ------------------------------------------------- */

/* Packs the block P(a, k) = x[a*sa + k*sk], a < na, k < kc, into panels of W lanes along a:
 * dst[panel][k][lane] (lanes past na are zero). */
typedef void (*mm_pack_fn)(void *dst, const char *p, int64_t sa, int64_t sk, int64_t na,
                           int64_t kc, int W);
/* Stores an m x n tile of the compute type (row stride ldc) into the output (row stride ldo). */
typedef void (*mm_store_fn)(char *out, int64_t ldo, const void *c, int64_t ldc, int64_t m,
                            int64_t n);

#define MM_DEFINE_PACK(NAME, CT, T, LOAD)                                                      \
  static void NAME(void *dstp, const char *p, int64_t sa, int64_t sk, int64_t na, int64_t kc,  \
                   int W) {                                                                    \
    CT *dst = (CT *)dstp;                                                                      \
    const CPU_UA(T) *x = (const CPU_UA(T) *)p;                                                 \
    for (int64_t a0 = 0; a0 < na; a0 += W) {                                                   \
      int64_t w = na - a0 < W ? na - a0 : W;                                                   \
      if (sa == 1) {                                                                           \
        for (int64_t k = 0; k < kc; ++k) {                                                     \
          const CPU_UA(T) *xk = x + a0 + k * sk;                                               \
          for (int64_t i = 0; i < w; ++i) dst[k * W + i] = LOAD(xk[i]);                        \
          for (int64_t i = w; i < W; ++i) dst[k * W + i] = 0;                                  \
        }                                                                                      \
      } else {                                                                                 \
        for (int64_t k = 0; k < kc; ++k) {                                                     \
          for (int64_t i = 0; i < w; ++i) dst[k * W + i] = LOAD(x[(a0 + i) * sa + k * sk]);    \
          for (int64_t i = w; i < W; ++i) dst[k * W + i] = 0;                                  \
        }                                                                                      \
      }                                                                                        \
      dst += kc * W;                                                                           \
    }                                                                                          \
  }

#define MM_ID(x) (x)
#define MM_LD_I32(x) ((uint32_t)(int32_t)(x))
#define MM_LD_U32(x) ((uint32_t)(x))
MM_DEFINE_PACK(mm_pack_f16, float, uint16_t, cpu_f16_to_f32)
MM_DEFINE_PACK(mm_pack_bf16, float, uint16_t, cpu_bf16_to_f32)
MM_DEFINE_PACK(mm_pack_f32, float, float, MM_ID)
MM_DEFINE_PACK(mm_pack_f64, double, double, MM_ID)
MM_DEFINE_PACK(mm_pack_i8, uint32_t, int8_t, MM_LD_I32)
MM_DEFINE_PACK(mm_pack_u8, uint32_t, uint8_t, MM_LD_U32)
MM_DEFINE_PACK(mm_pack_i16, uint32_t, int16_t, MM_LD_I32)
MM_DEFINE_PACK(mm_pack_i32, uint32_t, int32_t, MM_LD_I32)
MM_DEFINE_PACK(mm_pack_i64, uint64_t, int64_t, (uint64_t))

#define MM_DEFINE_STORE(NAME, CT, T, STORE)                                                    \
  static void NAME(char *out, int64_t ldo, const void *cp, int64_t ldc, int64_t m, int64_t n) { \
    const CT *c = (const CT *)cp;                                                              \
    for (int64_t i = 0; i < m; ++i) {                                                          \
      CPU_UA(T) *o = (CPU_UA(T) *)out + i * ldo;                                               \
      for (int64_t j = 0; j < n; ++j) o[j] = (T)STORE(c[i * ldc + j]);                         \
    }                                                                                          \
  }
MM_DEFINE_STORE(mm_store_f16, float, uint16_t, cpu_f32_to_f16)
MM_DEFINE_STORE(mm_store_bf16, float, uint16_t, cpu_f32_to_bf16)
MM_DEFINE_STORE(mm_store_f32, float, float, MM_ID)
MM_DEFINE_STORE(mm_store_f64, double, double, MM_ID)
MM_DEFINE_STORE(mm_store_i8, uint32_t, int8_t, MM_ID)
MM_DEFINE_STORE(mm_store_u8, uint32_t, uint8_t, MM_ID)
MM_DEFINE_STORE(mm_store_i16, uint32_t, int16_t, MM_ID)
MM_DEFINE_STORE(mm_store_i32, uint32_t, int32_t, MM_ID)
MM_DEFINE_STORE(mm_store_i64, uint64_t, int64_t, MM_ID)

/* One GEMM: C[M, N] (row stride ldc, output dtype) = A[M, K] @ B[K, N] (element strides). */
typedef struct mm_gemm {
  mm_pack_fn pack;
  mm_store_fn store;
  const char *a, *b;
  int64_t ars, acs, brs, bcs, isz; /* input strides in elements, input itemsize */
  char *c;
  int64_t ldc, osz, M, N, K;
  int64_t nmb, nnb; /* output blocks of MM_MC x MM_NC */
  int failed;       /* set (atomically) when a task had no memory */
} mm_gemm;

/* The register tile: acc[MR][NR] = sum over kc of a[k][0..MR) (x) b[k][0..NR); then the valid
 * mr x nr part is added to c. Fully unrolled inner loops keep acc in vector registers. */
#define MM_DEFINE_GEMM(SFX, CT, MR, NR)                                                        \
  static void mm_kernel_##SFX(int64_t kc, const CT *a, const CT *b, CT *c, int64_t ldc,       \
                              int64_t mr, int64_t nr) {                                        \
    CT acc[MR][NR];                                                                            \
    for (int i = 0; i < MR; ++i)                                                               \
      for (int j = 0; j < NR; ++j) acc[i][j] = 0;                                              \
    for (int64_t k = 0; k < kc; ++k, a += MR, b += NR)                                         \
      for (int i = 0; i < MR; ++i)                                                             \
        for (int j = 0; j < NR; ++j) acc[i][j] += a[i] * b[j];                                 \
    for (int64_t i = 0; i < mr; ++i)                                                           \
      for (int64_t j = 0; j < nr; ++j) c[i * ldc + j] += acc[i][j];                            \
  }                                                                                            \
  static void mm_blocks_##SFX(void *ctx, int64_t begin, int64_t end) {                         \
    mm_gemm *g = ctx;                                                                          \
    CT *ap = cpu_scratch(sizeof(CT) * (MM_MC + MR) * MM_KC);                                   \
    CT *bp = cpu_scratch(sizeof(CT) * MM_KC * (MM_NC + NR));                                   \
    CT *ct = cpu_scratch(sizeof(CT) * MM_MC * MM_NC);                                          \
    if (ap == NULL || bp == NULL || ct == NULL) {                                              \
      __atomic_store_n(&g->failed, 1, __ATOMIC_RELAXED);                                       \
      begin = end;                                                                             \
    }                                                                                          \
    for (int64_t blk = begin; blk < end; ++blk) {                                              \
      int64_t mb = blk / g->nnb, nb = blk - mb * g->nnb;                                       \
      int64_t m0 = mb * MM_MC, n0 = nb * MM_NC;                                                \
      int64_t mc = g->M - m0 < MM_MC ? g->M - m0 : MM_MC;                                      \
      int64_t nc = g->N - n0 < MM_NC ? g->N - n0 : MM_NC;                                      \
      memset(ct, 0, sizeof(CT) * MM_MC * MM_NC);                                               \
      for (int64_t k0 = 0; k0 < g->K; k0 += MM_KC) {                                           \
        int64_t kc = g->K - k0 < MM_KC ? g->K - k0 : MM_KC;                                    \
        g->pack(ap, g->a + (m0 * g->ars + k0 * g->acs) * g->isz, g->ars, g->acs, mc, kc, MR);  \
        g->pack(bp, g->b + (k0 * g->brs + n0 * g->bcs) * g->isz, g->bcs, g->brs, nc, kc, NR);  \
        for (int64_t jr = 0; jr < nc; jr += NR)                                                \
          for (int64_t ir = 0; ir < mc; ir += MR)                                              \
            mm_kernel_##SFX(kc, ap + ir * kc, bp + jr * kc, ct + ir * MM_NC + jr, MM_NC,       \
                            mc - ir < MR ? mc - ir : MR, nc - jr < NR ? nc - jr : NR);         \
      }                                                                                        \
      g->store(g->c + (m0 * g->ldc + n0) * g->osz, g->ldc, ct, MM_NC, mc, nc);                 \
    }                                                                                          \
    free(ap);                                                                                  \
    free(bp);                                                                                  \
    free(ct);                                                                                  \
  }

MM_DEFINE_GEMM(f, float, 4, 8)
MM_DEFINE_GEMM(d, double, 4, 4)
MM_DEFINE_GEMM(u32, uint32_t, 4, 8)
MM_DEFINE_GEMM(u64, uint64_t, 4, 4)

typedef struct mm_dtype_info {
  mm_pack_fn pack;
  mm_store_fn store;
  void (*blocks)(void *ctx, int64_t begin, int64_t end);
} mm_dtype_info;

static const mm_dtype_info *mm_info(HWP_DType dt) {
  static const mm_dtype_info table[HWP_DTYPE_COUNT] = {
      [HWP_DTYPE_INT8] = {mm_pack_i8, mm_store_i8, mm_blocks_u32},
      [HWP_DTYPE_UINT8] = {mm_pack_u8, mm_store_u8, mm_blocks_u32},
      [HWP_DTYPE_INT16] = {mm_pack_i16, mm_store_i16, mm_blocks_u32},
      [HWP_DTYPE_INT32] = {mm_pack_i32, mm_store_i32, mm_blocks_u32},
      [HWP_DTYPE_INT64] = {mm_pack_i64, mm_store_i64, mm_blocks_u64},
      [HWP_DTYPE_FLOAT16] = {mm_pack_f16, mm_store_f16, mm_blocks_f},
      [HWP_DTYPE_BFLOAT16] = {mm_pack_bf16, mm_store_bf16, mm_blocks_f},
      [HWP_DTYPE_FLOAT32] = {mm_pack_f32, mm_store_f32, mm_blocks_f},
      [HWP_DTYPE_FLOAT64] = {mm_pack_f64, mm_store_f64, mm_blocks_d},
  };
  return dt >= 0 && dt < HWP_DTYPE_COUNT && table[dt].pack != NULL ? &table[dt] : NULL;
}

/* Runs one GEMM with the fallback (parallel over output blocks unless nested). */
static HWP_Status mm_fallback(mm_gemm *g, const mm_dtype_info *info) {
  g->pack = info->pack;
  g->store = info->store;
  g->nmb = (g->M + MM_MC - 1) / MM_MC;
  g->nnb = (g->N + MM_NC - 1) / MM_NC;
  g->failed = 0;
  cpu_parallel_for(g->nmb * g->nnb, 1, info->blocks, g);
  if (g->failed) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "matmul: no memory for GEMM panels");
  return HWP_OK;
}

/* ---- CBLAS ------------------------------------------------------------------------------- */

#ifdef HWPORT_CPU_HAVE_CBLAS
static pthread_mutex_t g_blas_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_blas_once = PTHREAD_ONCE_INIT;
/* Products below this many multiply-adds run on one OpenBLAS thread: waking its helper threads
 * costs tens of µs on a loaded machine, more than they save there (an MLP step at batch 1-8). */
#define MM_BLAS_SERIAL_MACS (1 << 20)
static int g_blas_pool_threads = 1, g_blas_threads = 0; /* g_blas_threads under g_blas_mu */
static void blas_init_threads(void) {
  g_blas_pool_threads = cpu_parallel_threads() > 0 ? cpu_parallel_threads() : 1;
}

/* The thread count for an M x N x K product (caller holds g_blas_mu). */
static void blas_set_threads(int64_t M, int64_t N, int64_t K) {
#ifdef HWPORT_CPU_HAVE_OPENBLAS
  int want = (double)M * (double)N * (double)K < MM_BLAS_SERIAL_MACS ? 1 : g_blas_pool_threads;
  if (want != g_blas_threads) {
    openblas_set_num_threads(want);
    g_blas_threads = want;
  }
#else
  (void)M, (void)N, (void)K;
#endif
}

/* Whether a rows x cols matrix with element strides (rs, cs) at p can go to CBLAS (row major)
 * as is: *trans and *ld say how. */
static int blas_layout(const char *p, int64_t isz, int64_t rows, int64_t cols, int64_t rs,
                       int64_t cs, enum CBLAS_TRANSPOSE *trans, int *ld) {
  if ((uintptr_t)p % (uintptr_t)isz != 0) return 0;
  if (cs == 1 || cols == 1) {
    int64_t l = rows == 1 ? (cols > 1 ? cols : 1) : rs;
    if (l >= (cols > 1 ? cols : 1) && l <= INT_MAX) {
      *trans = CblasNoTrans;
      *ld = (int)l;
      return 1;
    }
  }
  if (rs == 1 || rows == 1) {
    int64_t l = cols == 1 ? (rows > 1 ? rows : 1) : cs;
    if (l >= (rows > 1 ? rows : 1) && l <= INT_MAX) {
      *trans = CblasTrans;
      *ld = (int)l;
      return 1;
    }
  }
  return 0;
}

/* A product with one row (M == 1) or one column (N == 1) as a matrix-vector product: sgemm
 * would pack the matrix first, a copy as costly as the product itself (gemv reads it once).
 * Operands as blas_layout describes them; c is contiguous. M == N == 1 is a gemv of length 1. */
static void blas_gemv(int dbl, int64_t M, int64_t N, int64_t K, const void *a,
                      enum CBLAS_TRANSPOSE ta, int lda, const void *b, enum CBLAS_TRANSPOSE tb,
                      int ldb, void *c) {
  const void *mat, *vec;
  enum CBLAS_TRANSPOSE op;
  int rows, cols, ld, inc;
  if (M == 1) { /* c[n] = sum_k a[k] b[k, n]: the matrix is b, read transposed */
    mat = b;
    vec = a;
    inc = ta == CblasNoTrans ? 1 : lda; /* a is a 1 x K row, or K x 1 stored with ld lda */
    op = tb == CblasNoTrans ? CblasTrans : CblasNoTrans;
    rows = (int)(tb == CblasNoTrans ? K : N);
    cols = (int)(tb == CblasNoTrans ? N : K);
    ld = ldb;
  } else { /* c[m] = sum_k a[m, k] b[k] */
    mat = a;
    vec = b;
    inc = tb == CblasNoTrans ? ldb : 1; /* b is a K x 1 column stored with ld ldb, or 1 x K */
    op = ta;
    rows = (int)(ta == CblasNoTrans ? M : K);
    cols = (int)(ta == CblasNoTrans ? K : M);
    ld = lda;
  }
  if (dbl)
    cblas_dgemv(CblasRowMajor, op, rows, cols, 1.0, mat, ld, vec, inc, 0.0, c, 1);
  else
    cblas_sgemv(CblasRowMajor, op, rows, cols, 1.0f, mat, ld, vec, inc, 0.0f, c, 1);
}
#endif

/* ---- the kernel ---------------------------------------------------------------------------- */

typedef struct mm_plan {
  HWP_DType dt;
  char *x, *y, *out;
  int64_t isz, osz, M, N, K, B;
  int64_t sxm, sxk, syk, syn; /* matrix strides (elements) */
  int nb;                     /* batch dims (size-1 ones dropped) */
  int64_t bshape[HWP_MAX_NDIM], bxs[HWP_MAX_NDIM], bys[HWP_MAX_NDIM];
  int blas_ok; /* M, N, K fit CBLAS's int */
  int failed;
} mm_plan;

static void mm_setup(const mm_plan *P, int64_t b, mm_gemm *g) {
  int64_t xo = 0, yo = 0, q = b;
  for (int k = P->nb - 1; k >= 0; --k) {
    int64_t qq = q / P->bshape[k], i = q - qq * P->bshape[k];
    xo += i * P->bxs[k];
    yo += i * P->bys[k];
    q = qq;
  }
  memset(g, 0, sizeof *g);
  g->a = P->x + xo * P->isz;
  g->b = P->y + yo * P->isz;
  g->ars = P->sxm;
  g->acs = P->sxk;
  g->brs = P->syk;
  g->bcs = P->syn;
  g->isz = P->isz;
  g->c = P->out + b * P->M * P->N * P->osz;
  g->ldc = P->N;
  g->osz = P->osz;
  g->M = P->M;
  g->N = P->N;
  g->K = P->K;
}

/* ---- small float products, direct ---------------------------------------------------------
 * A batch of attention-sized products (32 x 32 x 16) is too small for packing: the blocked
 * GEMM's panels (allocated, zeroed and freed per product) cost ten times the arithmetic. Here b
 * is copied once per product into a K x Np row-major buffer (Np: N rounded up to the tile width,
 * zero padded; this also turns a transposed view into rows), and a 4 x NR tile of c is
 * accumulated in registers over k, reading a's elements where they are (any strides). */
#define MM_SMALL_N 256
#define MM_SMALL_MR 4
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MM_SMALL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MM_SMALL_CLONES
#endif
#define MM_DEFINE_SMALL(SFX, T, NR)                                                            \
  /* c[0, mr) x [0, nr) = a[rows, K] @ bt[K, NR] (bt row stride ldb; a's row r at a[r]) */      \
  MM_SMALL_CLONES static void mm_tile_##SFX(const T *const *a, int64_t acs, const T *bt,       \
                                            int64_t ldb, int64_t K, char *c, int64_t ldc,      \
                                            int64_t mr, int64_t nr) {                          \
    T acc[MM_SMALL_MR][NR];                                                                    \
    for (int r = 0; r < MM_SMALL_MR; ++r)                                                      \
      for (int j = 0; j < NR; ++j) acc[r][j] = 0;                                              \
    for (int64_t k = 0; k < K; ++k) {                                                          \
      const T *br = bt + k * ldb;                                                              \
      const T x0 = a[0][k * acs], x1 = a[1][k * acs], x2 = a[2][k * acs], x3 = a[3][k * acs];  \
      for (int j = 0; j < NR; ++j) {                                                           \
        acc[0][j] += x0 * br[j];                                                               \
        acc[1][j] += x1 * br[j];                                                               \
        acc[2][j] += x2 * br[j];                                                               \
        acc[3][j] += x3 * br[j];                                                               \
      }                                                                                        \
    }                                                                                          \
    for (int64_t r = 0; r < mr; ++r) memcpy(c + r * ldc, acc[r], (size_t)nr * sizeof(T));      \
  }                                                                                            \
  /* c = a @ b for one product (mm_gemm's element strides); bt holds K * Np elements */        \
  static void mm_small_##SFX(const mm_gemm *g, T *bt) {                                        \
    const T *a = (const T *)g->a, *b = (const T *)g->b;                                        \
    int64_t np = (g->N + NR - 1) / NR * NR;                                                    \
    if (g->bcs == 1 && g->N % NR == 0) { /* whole tiles of contiguous rows: read in place */   \
      bt = (T *)b;                                                                             \
      np = g->brs;                                                                             \
    } else {                                                                                   \
      for (int64_t k = 0; k < g->K; ++k) {                                                     \
        T *row = bt + k * np;                                                                  \
        for (int64_t j = 0; j < g->N; ++j) row[j] = b[k * g->brs + j * g->bcs];                \
        for (int64_t j = g->N; j < np; ++j) row[j] = 0;                                        \
      }                                                                                        \
    }                                                                                          \
    const int64_t ldc = g->ldc * (int64_t)sizeof(T);                                           \
    for (int64_t i = 0; i < g->M; i += MM_SMALL_MR) {                                          \
      const int64_t mr = g->M - i < MM_SMALL_MR ? g->M - i : MM_SMALL_MR;                      \
      const T *rows[MM_SMALL_MR]; /* past the last row: the last row again (not stored) */     \
      for (int r = 0; r < MM_SMALL_MR; ++r) rows[r] = a + (i + (r < mr ? r : mr - 1)) * g->ars; \
      for (int64_t j = 0; j < g->N; j += NR)                                                   \
        mm_tile_##SFX(rows, g->acs, bt + j, np, g->K, g->c + i * ldc + j * (int64_t)sizeof(T), \
                      ldc, mr, g->N - j < NR ? g->N - j : NR);                                 \
    }                                                                                          \
  }
MM_DEFINE_SMALL(f, float, 32)
MM_DEFINE_SMALL(d, double, 16)

/* Small batched products: a batch per task, each GEMM serial (nested cpu_parallel_for). */
static void mm_batches_task(void *ctx, int64_t begin, int64_t end) {
  mm_plan *P = ctx;
  const mm_dtype_info *info = mm_info(P->dt);
  const int direct = (P->dt == HWP_DTYPE_FLOAT32 || P->dt == HWP_DTYPE_FLOAT64) &&
                     P->N <= MM_SMALL_N;
  void *bt = NULL; /* b's padded row-major copy, reused by every product */
  if (direct) {
    bt = cpu_scratch((size_t)(P->K * (P->N + 32) * P->isz));
    if (bt == NULL) {
      __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED);
      return;
    }
  }
  for (int64_t b = begin; b < end; ++b) {
    mm_gemm g;
    mm_setup(P, b, &g);
    if (direct && P->dt == HWP_DTYPE_FLOAT32)
      mm_small_f(&g, bt);
    else if (direct)
      mm_small_d(&g, bt);
    else if (mm_fallback(&g, info) != HWP_OK)
      __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED);
  }
  free(bt);
}

#ifdef HWPORT_CPU_HAVE_CBLAS
/* float16/bfloat16 operands with contiguous rows, and the output, converted a row at a time at
 * the loops' vector width (half_simd.h) instead of element by element: the conversions were
 * 40% of a bfloat16 1024^3 product. MM_HALF_ROWS(isa): load (rows of m halves at stride ld
 * elements -> float32 rows of m) and store (the reverse); dt picks float16 or bfloat16. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(HWPORT_CPU_NO_DISPATCH)
#define MM_HALF_SIMD 1
#include "half_simd.h"
#define MM_HALF_ROWS(isa, ATTRS)                                                               \
  ATTRS static void mm_half_load##isa(int bf16, float *d, const char *s, int64_t rows,         \
                                      int64_t m, int64_t ld) {                                 \
    for (int64_t r = 0; r < rows; ++r) {                                                       \
      if (bf16)                                                                                \
        cpu_half_load_bfloat16##isa(d + r * m, s + 2 * r * ld, 2, m);                          \
      else                                                                                     \
        cpu_half_load_float16##isa(d + r * m, s + 2 * r * ld, 2, m);                           \
    }                                                                                          \
  }                                                                                            \
  ATTRS static void mm_half_store##isa(int bf16, char *o, int64_t ldo, const float *c,         \
                                       int64_t rows, int64_t m) {                              \
    for (int64_t r = 0; r < rows; ++r) {                                                       \
      if (bf16)                                                                                \
        cpu_half_store_bfloat16##isa(o + 2 * r * ldo, c + r * m, m);                           \
      else                                                                                     \
        cpu_half_store_float16##isa(o + 2 * r * ldo, c + r * m, m);                            \
    }                                                                                          \
  }
MM_HALF_ROWS(_avx2, __attribute__((target("avx2,fma,f16c"))))
MM_HALF_ROWS(_avx512, __attribute__((target("avx512f,avx512dq,avx512bw,fma,f16c"))))

/* Converts the rows x m half matrix at s (row stride ld elements, unit column stride) into the
 * float32 rows at d; 0 when this CPU has no vector path (the caller packs). */
static int mm_half_load(HWP_DType dt, float *d, const char *s, int64_t rows, int64_t m,
                        int64_t ld) {
  const int bf16 = dt == HWP_DTYPE_BFLOAT16, lvl = cpu_ew_simd_level();
  if (lvl == 2)
    mm_half_load_avx512(bf16, d, s, rows, m, ld);
  else if (lvl == 1)
    mm_half_load_avx2(bf16, d, s, rows, m, ld);
  return lvl > 0;
}
static int mm_half_store(HWP_DType dt, char *o, int64_t ldo, const float *c, int64_t rows,
                         int64_t m) {
  const int bf16 = dt == HWP_DTYPE_BFLOAT16, lvl = cpu_ew_simd_level();
  if (lvl == 2)
    mm_half_store_avx512(bf16, o, ldo, c, rows, m);
  else if (lvl == 1)
    mm_half_store_avx2(bf16, o, ldo, c, rows, m);
  return lvl > 0;
}
#endif

/* The vector conversions where they apply (a half dtype, unit column stride), else 0. */
#ifdef MM_HALF_SIMD
#define MM_HALF_LOAD(native, d, s, rows, m, rs, cs)                                            \
  (!(native) && (cs) == 1 && mm_half_load(P->dt, (float *)(d), (s), (rows), (m), (rs)))
#define MM_HALF_STORE(native, o, ldo, c, rows, m)                                              \
  (!(native) && mm_half_store(P->dt, (o), (ldo), (const float *)(c), (rows), (m)))
#else
#define MM_HALF_LOAD(native, d, s, rows, m, rs, cs) 0
#define MM_HALF_STORE(native, o, ldo, c, rows, m) 0
#endif

/* One batch through sgemm/dgemm; operands CBLAS cannot take as they are (other strides,
 * misaligned, half types) are packed into contiguous float32/float64 copies first. */
/* The packed operands' buffers, kept between calls (under g_blas_mu) up to MM_KEEP_BYTES each:
 * a fresh multi-megabyte buffer per call costs its page faults every time (glibc hands such
 * blocks back to the system on free), 30% of a bfloat16 1024^3 product. Larger ones are
 * allocated per call. */
#define MM_KEEP_BYTES ((size_t)8 << 20)
static struct {
  void *p;
  size_t n;
} g_mm_keep[3];

/* A buffer of nbytes for operand slot (0: x, 1: y, 2: the output); *owned is what the caller
 * frees (NULL for a kept buffer). Call with g_blas_mu held. */
static void *mm_buffer(int slot, size_t nbytes, void **owned) {
  *owned = NULL;
  if (nbytes > MM_KEEP_BYTES) return *owned = cpu_scratch(nbytes);
  if (g_mm_keep[slot].n < nbytes) {
    free(g_mm_keep[slot].p);
    g_mm_keep[slot].p = cpu_scratch(nbytes);
    g_mm_keep[slot].n = g_mm_keep[slot].p != NULL ? nbytes : 0;
  }
  return g_mm_keep[slot].p;
}

static HWP_Status mm_blas(const mm_plan *P, int64_t b) {
  const mm_dtype_info *info = mm_info(P->dt);
  mm_gemm g;
  mm_setup(P, b, &g);
  const int dbl = P->dt == HWP_DTYPE_FLOAT64;
  const int native = P->dt == HWP_DTYPE_FLOAT32 || dbl;
  const int64_t esz = dbl ? 8 : 4, M = P->M, N = P->N, K = P->K;
  enum CBLAS_TRANSPOSE ta = CblasNoTrans, tb = CblasNoTrans;
  int lda = 0, ldb = 0;
  const void *ap = g.a, *bp = g.b;
  void *cp = g.c, *abuf = NULL, *bbuf = NULL, *cbuf = NULL, *own[3] = {NULL, NULL, NULL};
  HWP_Status st = HWP_OK;
  pthread_once(&g_blas_once, blas_init_threads);
  pthread_mutex_lock(&g_blas_mu); /* the kept buffers, then BLAS: one caller at a time */
  if (!native || !blas_layout(g.a, P->isz, M, K, g.ars, g.acs, &ta, &lda)) {
    if ((abuf = mm_buffer(0, (size_t)(M * K * esz), &own[0])) == NULL) goto oom;
    if (!MM_HALF_LOAD(native, abuf, g.a, M, K, g.ars, g.acs))
      info->pack(abuf, g.a, g.ars, g.acs, M, K, 1); /* one-lane panels = row major */
    ap = abuf;
    ta = CblasNoTrans;
    lda = (int)(K > 1 ? K : 1);
  }
  if (!native || !blas_layout(g.b, P->isz, K, N, g.brs, g.bcs, &tb, &ldb)) {
    if ((bbuf = mm_buffer(1, (size_t)(K * N * esz), &own[1])) == NULL) goto oom;
    if (!MM_HALF_LOAD(native, bbuf, g.b, K, N, g.brs, g.bcs))
      info->pack(bbuf, g.b, g.brs, g.bcs, K, N, 1);
    bp = bbuf;
    tb = CblasNoTrans;
    ldb = (int)(N > 1 ? N : 1);
  }
  if (!native || (uintptr_t)g.c % (uintptr_t)esz != 0) {
    if ((cbuf = mm_buffer(2, (size_t)(M * N * esz), &own[2])) == NULL) goto oom;
    cp = cbuf;
  }
  blas_set_threads(M, N, K);
  if (M == 1 || N == 1)
    blas_gemv(dbl, M, N, K, ap, ta, lda, bp, tb, ldb, cp);
  else if (dbl)
    cblas_dgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, 1.0, ap, lda, bp, ldb, 0.0, cp,
                (int)(N > 1 ? N : 1));
  else
    cblas_sgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, 1.0f, ap, lda, bp, ldb, 0.0f,
                cp, (int)(N > 1 ? N : 1));
  if (cbuf != NULL && !MM_HALF_STORE(native, g.c, N, cbuf, M, N))
    info->store(g.c, N, cbuf, N, M, N);
  goto done;
oom:
  st = cpu_error(HWP_ERROR_OUT_OF_MEMORY, "matmul: no memory to pack an operand for BLAS");
done:
  pthread_mutex_unlock(&g_blas_mu);
  free(own[0]);
  free(own[1]);
  free(own[2]);
  return st;
}
#endif

#ifdef HWPORT_CPU_HAVE_DNNL
/* Batch b through oneDNN (matmul_dnnl.c); 0 when it declines. */
static int mm_dnnl(const mm_plan *P, int64_t b) {
  mm_gemm g;
  mm_setup(P, b, &g);
  return cpu_dnnl_matmul(P->dt, P->M, P->N, P->K, g.a, g.ars, g.acs, g.b, g.brs, g.bcs, g.c);
}
#endif

static HWP_Status mm_run(void *payload) {
  mm_plan *P = payload;
  const mm_dtype_info *info = mm_info(P->dt);
  if (P->K == 0) { /* empty sums: zeros (all-zero bits for every dtype) */
    memset(P->out, 0, (size_t)(P->B * P->M * P->N * P->osz));
    return HWP_OK;
  }
  double flops = (double)P->M * (double)P->N * (double)P->K;
  if (P->B > 1 && flops <= 64.0 * 64.0 * 64.0) {
    int64_t grain = (int64_t)(262144.0 / flops) + 1;
    cpu_parallel_for(P->B, grain, mm_batches_task, P);
    if (P->failed) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "matmul: no memory for panels");
    return HWP_OK;
  }
  for (int64_t b = 0; b < P->B; ++b) {
    HWP_Status st;
#ifdef HWPORT_CPU_HAVE_DNNL
    if (mm_dnnl(P, b)) continue;
#endif
#ifdef HWPORT_CPU_HAVE_CBLAS
    if (P->blas_ok && cpu_is_float_dtype(P->dt)) {
      st = mm_blas(P, b);
    } else
#endif
    {
      mm_gemm g;
      mm_setup(P, b, &g);
      st = mm_fallback(&g, info);
    }
    if (st != HWP_OK) return st;
  }
  return HWP_OK;
}

/* The work a product reports to the stream (which runs work of at most a million elements on
 * the caller's thread, stream.c): its multiply-adds, except that a matrix-vector product (M or N
 * of 1) counts a third of them, its cost in elementwise-element terms: each multiply-add reads
 * one matrix element once (4 bytes of float32), where an elementwise element moves 12 (two
 * reads, one write). A 1 x 512 @ 512 x 2048 GEMV (0.15 ms) then runs inline instead of paying
 * the worker's wake-up and the synchronize's (about 40 us, a quarter of its time). */
static uint64_t mm_work(int64_t numel, int64_t M, int64_t N, int64_t K) {
  double work = (double)numel * (double)(K > 0 ? K : 1);
  if (M == 1 || N == 1) work /= 3.0;
  return work >= 1e18 ? UINT64_MAX : (uint64_t)work;
}

/* x [B.., M, K] @ y [K, N] broadcast over the batch (every batch stride of y 0), with x's rows
 * evenly spaced across its batches (a contiguous x, as a linear layer's input): one product
 * of B*M rows instead of B products of M rows. The output is contiguous, so its rows already
 * follow on; the bigger product splits over the pool and reaches the faster GEMM paths (8 x
 * [32, 64] @ [64, 192], a small transformer's projection, ran as 8 single-threaded products). */
static void mm_fold_batches(mm_plan *P) {
  if (P->nb == 0) return;
  int64_t row = P->M > 1 ? P->sxm : P->bxs[P->nb - 1]; /* one row: its stride is free */
  int64_t expect = P->M * row;
  for (int k = P->nb - 1; k >= 0; --k) {
    if (P->bys[k] != 0 || P->bxs[k] != expect) return;
    expect *= P->bshape[k];
  }
  P->sxm = row;
  P->M *= P->B;
  P->B = 1;
  P->nb = 0;
}

static HWP_Status kernel_matmul(const HWP_KernelContext *ctx) {
  static const char op[] = "matmul";
  HWP_Status st = cpu_check_context(ctx, op, 2, 1);
  if (st != HWP_OK) return st;
  cpu_view x, y, o;
  if ((st = cpu_view_load(op, "input 0", &ctx->inputs[0], &x)) != HWP_OK) return st;
  if ((st = cpu_view_load(op, "input 1", &ctx->inputs[1], &y)) != HWP_OK) return st;
  if ((st = cpu_view_load(op, "output 0", &ctx->outputs[0], &o)) != HWP_OK) return st;
  if ((st = cpu_rview_require_contiguous(op, &o)) != HWP_OK) return st;
  if (y.dtype != x.dtype || o.dtype != x.dtype)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "matmul: dtypes %s @ %s -> %s must all match",
                     cpu_dtype_name(x.dtype), cpu_dtype_name(y.dtype), cpu_dtype_name(o.dtype));
  if (mm_info(x.dtype) == NULL)
    return cpu_error(HWP_ERROR_NOT_SUPPORTED, "matmul: dtype %s is not supported",
                     cpu_dtype_name(x.dtype));
  const int nd = x.ndim;
  if (nd < 2 || y.ndim != nd || o.ndim != nd)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "matmul: expects x, y and the output of one rank >= 2, got %d, %d, %d",
                     (int)x.ndim, (int)y.ndim, (int)o.ndim);
  for (int k = 0; k < nd - 2; ++k)
    if (y.shape[k] != x.shape[k] || o.shape[k] != x.shape[k])
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "matmul: batch dim %d differs (x %lld, y %lld, output %lld); the host "
                       "broadcasts batch dims first", k, (long long)x.shape[k],
                       (long long)y.shape[k], (long long)o.shape[k]);
  const int64_t M = x.shape[nd - 2], K = x.shape[nd - 1], N = y.shape[nd - 1];
  if (y.shape[nd - 2] != K || o.shape[nd - 2] != M || o.shape[nd - 1] != N)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "matmul: shapes [.., %lld, %lld] @ [.., %lld, %lld] -> [.., %lld, %lld] do "
                     "not match", (long long)M, (long long)K, (long long)y.shape[nd - 2],
                     (long long)N, (long long)o.shape[nd - 2], (long long)o.shape[nd - 1]);
  if (o.numel == 0) return HWP_OK;
  mm_plan *P = calloc(1, sizeof *P);
  if (P == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "matmul: no memory for the plan");
  P->dt = x.dtype;
  P->x = x.base;
  P->y = y.base;
  P->out = o.base;
  P->isz = (int64_t)x.itemsize;
  P->osz = (int64_t)o.itemsize;
  P->M = M;
  P->N = N;
  P->K = K;
  P->B = o.numel / (M * N);
  P->sxm = x.strides[nd - 2];
  P->sxk = x.strides[nd - 1];
  P->syk = y.strides[nd - 2];
  P->syn = y.strides[nd - 1];
  for (int k = 0; k < nd - 2; ++k) {
    if (x.shape[k] == 1) continue;
    P->bshape[P->nb] = x.shape[k];
    P->bxs[P->nb] = x.strides[k];
    P->bys[P->nb] = y.strides[k];
    ++P->nb;
  }
  mm_fold_batches(P);
  P->blas_ok = P->M <= INT_MAX && N <= INT_MAX && K <= INT_MAX;
  st = cpu_submit_call(ctx, op, mm_run, free, P, mm_work(o.numel, M, N, K)); /* takes P */
  return st;
}

/* ---- linear: x [..., K] @ weight [K, N] (+ bias [N]) ----------------------------------------
 * matmul's GEMM, then the bias added to each row of its (rounded) result: the decomposition's
 * two steps, so the bytes are its bytes, in one launch and with no intermediate tensor.
 * float32/float64 (the other dtypes decompose); contiguous operands. */
typedef struct lin_plan {
  mm_plan mm; /* first: mm_run takes the plan */
  const char *bias;
} lin_plan;

#define LIN_DEFINE_BIAS(SFX, T)                                                                \
  static void lin_bias_##SFX(void *ctx, int64_t begin, int64_t end) {                          \
    const lin_plan *L = ctx;                                                                   \
    const T *b = (const T *)L->bias;                                                           \
    for (int64_t i = begin; i < end; ++i) {                                                    \
      T *row = (T *)L->mm.out + i * L->mm.N;                                                   \
      for (int64_t j = 0; j < L->mm.N; ++j) row[j] += b[j];                                    \
    }                                                                                          \
  }
LIN_DEFINE_BIAS(f, float)
LIN_DEFINE_BIAS(d, double)

static HWP_Status lin_run(void *payload) {
  lin_plan *L = payload;
  HWP_Status st = mm_run(&L->mm);
  if (st != HWP_OK || L->bias == NULL) return st;
  cpu_parallel_for(L->mm.M, 32768 / L->mm.N + 1,
                   L->mm.dt == HWP_DTYPE_FLOAT64 ? lin_bias_d : lin_bias_f, L);
  return HWP_OK;
}

static HWP_Status kernel_linear(const HWP_KernelContext *ctx) {
  static const char op[] = "linear";
  if (ctx == NULL || !HWP_HAS_FIELD(ctx, HWP_KernelContext, outputs))
    return cpu_check_context(ctx, op, 2, 1); /* reports the bad context */
  uint8_t has_bias = ctx->num_inputs >= 3;
  if (HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) && ctx->get_attr != NULL)
    (void)ctx->get_attr(ctx, "has_bias", HWP_ATTR_BOOL, &has_bias, NULL);
  HWP_Status st = cpu_check_context(ctx, op, has_bias ? 3 : 2, 1);
  if (st != HWP_OK) return st;
  cpu_view x, w, b, o;
  if ((st = cpu_view_load(op, "x", &ctx->inputs[0], &x)) != HWP_OK) return st;
  if ((st = cpu_view_load(op, "weight", &ctx->inputs[1], &w)) != HWP_OK) return st;
  if (has_bias && (st = cpu_view_load(op, "bias", &ctx->inputs[2], &b)) != HWP_OK) return st;
  if ((st = cpu_view_load(op, "output 0", &ctx->outputs[0], &o)) != HWP_OK) return st;
  if (x.dtype != HWP_DTYPE_FLOAT32 && x.dtype != HWP_DTYPE_FLOAT64)
    return cpu_error(HWP_ERROR_NOT_SUPPORTED, "%s: dtype %s is not supported (float32, float64)",
                     op, cpu_dtype_name(x.dtype));
  if (w.dtype != x.dtype || o.dtype != x.dtype || (has_bias && b.dtype != x.dtype))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: x, weight, bias and the output must have "
                     "one dtype", op);
  if (x.ndim < 1 || w.ndim != 2 || o.ndim != x.ndim || (has_bias && b.ndim != 1))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: expects x [..., K], weight [K, N], bias "
                     "[N] and an output [..., N]", op);
  const int64_t K = w.shape[0], N = w.shape[1];
  if (x.shape[x.ndim - 1] != K || o.shape[o.ndim - 1] != N || (has_bias && b.shape[0] != N))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: x [..., %lld] @ weight [%lld, %lld] -> "
                     "output [..., %lld] do not match", op, (long long)x.shape[x.ndim - 1],
                     (long long)K, (long long)N, (long long)o.shape[o.ndim - 1]);
  const cpu_view *all[] = {&x, &w, &o, &b};
  for (int k = 0; k < (has_bias ? 4 : 3); ++k)
    if ((st = cpu_rview_require_contiguous(op, all[k])) != HWP_OK) return st;
  if (o.numel == 0) return HWP_OK;
  lin_plan *L = calloc(1, sizeof *L);
  if (L == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for the plan", op);
  mm_plan *P = &L->mm;
  P->dt = x.dtype;
  P->x = x.base;
  P->y = w.base;
  P->out = o.base;
  P->isz = P->osz = (int64_t)x.itemsize;
  P->M = o.numel / N;
  P->N = N;
  P->K = K;
  P->B = 1;
  P->sxm = K;
  P->sxk = 1;
  P->syk = N;
  P->syn = 1;
  P->blas_ok = P->M <= INT_MAX && N <= INT_MAX && K <= INT_MAX;
  L->bias = has_bias ? b.base : NULL;
  return cpu_submit_call(ctx, op, lin_run, free, L,
                         mm_work(o.numel, P->M, N, K)); /* takes L */
}

void cpu_register_linalg_kernels(const HWP_HostApi *host) {
  cpu_register_one(host, "linear", HWP_DTYPE_FLOAT32, kernel_linear, 0);
  cpu_register_one(host, "linear", HWP_DTYPE_FLOAT64, kernel_linear, 0);
  /* ops.yaml: matmul is defined for the numeric dtypes (all but bool). */
  for (HWP_DType d = HWP_DTYPE_INT8; d < HWP_DTYPE_COUNT; ++d)
    cpu_register_one(host, "matmul", d, kernel_matmul, HWP_KERNEL_ACCEPTS_STRIDED);
  cpu_register_nn_kernels(host); /* the fused composite kernels of kernels_nn.c */
  cpu_register_nn_grad_kernels(host); /* their backward kernels (kernels_nn_grad.c) */
  cpu_register_loss_kernels(host);    /* cross_entropy and its VJP (kernels_loss.c) */
}
