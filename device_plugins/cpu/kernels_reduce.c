/* hwport CPU plugin — sum, prod, max, min, argmax, argmin, cumsum, cumprod, and mean (the
 * composite, natively: sum's code path, the sums divided by the reduced count before the store).
 *
 * Every kernel validates its views, snapshots what it needs into a malloc'd plan and enqueues
 * the plan with cpu_submit_call; the plan runs on the stream's worker thread and spreads over
 * the pool with cpu_parallel_for.
 *
 * Reductions (sum/prod/max/min): the input's dims split into kept dims (C order = the output's
 * contiguous order) and reduced dims; size-1 dims are dropped, reduced dims are made positive
 * (their order does not matter), sorted by stride and merged where contiguous; kept dims are
 * merged in order. Then one of two loops runs:
 *   rows:    the innermost reduced dim is walked as runs (a contiguous run of a multi-lane
 *            vectorized accumulation); one output at a time;
 *   columns: the innermost kept dim is contiguous and the reduced ones are not: a tile of
 *            outputs (whole rows up to RD_COL_TILE) accumulates input rows at once, vectorized
 *            across outputs, so the input streams in memory order.
 * Work spreads over outputs (or tiles); when there are fewer than 4 per thread, the reduced
 * range is also cut into chunks whose partial results are merged in order afterwards.
 * Accumulators: sum/prod of bool and integers in uint64 (wrap-around = int64 arithmetic),
 * float16/bfloat16 in float32, float32 and float64 in float64 (the result is rounded once;
 * float32 column sums first add eight rows pairwise in float32). max/min compare in the input
 * type (half types as float32; float32/float64 runs with explicit vector lanes); NaN
 * propagates; bool max/min are any/all. sum/prod store into whatever dtype the output view
 * has (int64 for bool/integers unless the host's `dtype` attribute chose another). */
#include "reduce_common.h"

#define RD_LANES 16       /* independent accumulators of a contiguous run */
#define RD_TILE 256       /* outputs per store block (rows); column tiles of argmax and scans */
#define RD_COL_TILE 16384 /* outputs per reduction column tile: whole input rows stream best */

enum { RD_SUM = 0, RD_PROD = 1, RD_MAX = 2, RD_MIN = 3, RD_MEAN = 4 /* sum, then / count */ };

typedef struct rd_ops {
  size_t acc_size;
  void (*init)(void *acc, int64_t n);                         /* acc[0..n) = identity */
  void (*row)(void *acc, const char *p, int64_t n, int64_t s); /* *acc op= x[0], x[s], .. */
  /* acc[i] op= row r's x[i] (stride 1), for each of `rows` rows `rs` bytes apart */
  void (*cols)(void *acc, const char *p, int64_t n, int64_t rows, int64_t rs);
  void (*merge)(void *acc, const void *other, int64_t n);      /* acc[i] op= other[i] */
  void (*store)(char *out, HWP_DType dt, const void *acc, int64_t n);
} rd_ops;

/* ---- per-dtype accumulator definitions ----------------------------------------------- */

/* sum/prod accumulator type, loader, and store kind (KI: via int64, KD: via double). */
#define RD_SACC_bool_ uint64_t
#define RD_SACC_int8 uint64_t
#define RD_SACC_uint8 uint64_t
#define RD_SACC_int16 uint64_t
#define RD_SACC_int32 uint64_t
#define RD_SACC_int64 uint64_t
#define RD_SACC_float16 float
#define RD_SACC_bfloat16 float
#define RD_SACC_float32 double
#define RD_SACC_float64 double
#define RD_SLD_bool_(x) ((uint64_t)((x) != 0))
#define RD_SLD_int8(x) ((uint64_t)(int64_t)(x))
#define RD_SLD_uint8(x) ((uint64_t)(x))
#define RD_SLD_int16(x) ((uint64_t)(int64_t)(x))
#define RD_SLD_int32(x) ((uint64_t)(int64_t)(x))
#define RD_SLD_int64(x) ((uint64_t)(x))
#define RD_SLD_float16(x) cpu_f16_to_f32(x)
#define RD_SLD_bfloat16(x) cpu_bf16_to_f32(x)
#define RD_SLD_float32(x) ((double)(x))
#define RD_SLD_float64(x) (x)
#define RD_SKIND_bool_ KI
#define RD_SKIND_int8 KI
#define RD_SKIND_uint8 KI
#define RD_SKIND_int16 KI
#define RD_SKIND_int32 KI
#define RD_SKIND_int64 KI
#define RD_SKIND_float16 KD
#define RD_SKIND_bfloat16 KD
#define RD_SKIND_float32 KD
#define RD_SKIND_float64 KD

/* max/min compare type, loader, storer, identities and combiner (F: NaN-propagating). */
#define RD_MACC_bool_ uint8_t
#define RD_MACC_int8 int8_t
#define RD_MACC_uint8 uint8_t
#define RD_MACC_int16 int16_t
#define RD_MACC_int32 int32_t
#define RD_MACC_int64 int64_t
#define RD_MACC_float16 float
#define RD_MACC_bfloat16 float
#define RD_MACC_float32 float
#define RD_MACC_float64 double
#define RD_MLD_bool_(x) ((uint8_t)((x) != 0))
#define RD_MLD_int8(x) (x)
#define RD_MLD_uint8(x) (x)
#define RD_MLD_int16(x) (x)
#define RD_MLD_int32(x) (x)
#define RD_MLD_int64(x) (x)
#define RD_MLD_float16(x) cpu_f16_to_f32(x)
#define RD_MLD_bfloat16(x) cpu_bf16_to_f32(x)
#define RD_MLD_float32(x) (x)
#define RD_MLD_float64(x) (x)
#define RD_MST_bool_(v) (v)
#define RD_MST_int8(v) (v)
#define RD_MST_uint8(v) (v)
#define RD_MST_int16(v) (v)
#define RD_MST_int32(v) (v)
#define RD_MST_int64(v) (v)
#define RD_MST_float16(v) cpu_f32_to_f16(v)
#define RD_MST_bfloat16(v) cpu_f32_to_bf16(v)
#define RD_MST_float32(v) (v)
#define RD_MST_float64(v) (v)
#define RD_MAXID_bool_ 0
#define RD_MAXID_int8 INT8_MIN
#define RD_MAXID_uint8 0
#define RD_MAXID_int16 INT16_MIN
#define RD_MAXID_int32 INT32_MIN
#define RD_MAXID_int64 INT64_MIN
#define RD_MAXID_float16 (-INFINITY)
#define RD_MAXID_bfloat16 (-INFINITY)
#define RD_MAXID_float32 (-INFINITY)
#define RD_MAXID_float64 (-INFINITY)
#define RD_MINID_bool_ 1
#define RD_MINID_int8 INT8_MAX
#define RD_MINID_uint8 UINT8_MAX
#define RD_MINID_int16 INT16_MAX
#define RD_MINID_int32 INT32_MAX
#define RD_MINID_int64 INT64_MAX
#define RD_MINID_float16 INFINITY
#define RD_MINID_bfloat16 INFINITY
#define RD_MINID_float32 INFINITY
#define RD_MINID_float64 INFINITY
#define RD_FKIND_bool_ I
#define RD_FKIND_int8 I
#define RD_FKIND_uint8 I
#define RD_FKIND_int16 I
#define RD_FKIND_int32 I
#define RD_FKIND_int64 I
#define RD_FKIND_float16 F
#define RD_FKIND_bfloat16 F
#define RD_FKIND_float32 F
#define RD_FKIND_float64 F

#define RD_ADD(a, v) ((a) + (v))
#define RD_MUL(a, v) ((a) * (v))
#define RD_MAX_I(a, v) ((v) > (a) ? (v) : (a))
#define RD_MIN_I(a, v) ((v) < (a) ? (v) : (a))
#define RD_MAX_F(a, v) ((((v) > (a)) | ((v) != (v))) ? (v) : (a))
#define RD_MIN_F(a, v) ((((v) < (a)) | ((v) != (v))) ? (v) : (a))
#define RD_PASTE3(a, b, c) RD_PASTE3_(a, b, c)
#define RD_PASTE3_(a, b, c) a##b##c

/* init/row/col/merge of one (op, dtype). */
#define RD_DEFINE(NAME, T, ACC, LOAD, COMB, IDENT)                                             \
  static void NAME##_init(void *accp, int64_t n) {                                             \
    ACC *acc = (ACC *)accp;                                                                    \
    for (int64_t i = 0; i < n; ++i) acc[i] = IDENT;                                            \
  }                                                                                            \
  static void NAME##_row(void *accp, const char *p, int64_t n, int64_t s) {                    \
    const CPU_UA(T) *x = (const CPU_UA(T) *)p;                                                 \
    ACC a = *(ACC *)accp;                                                                      \
    int64_t i = 0;                                                                             \
    if (s == 1 && n >= RD_LANES) {                                                             \
      ACC l[RD_LANES];                                                                         \
      for (int j = 0; j < RD_LANES; ++j) l[j] = IDENT;                                         \
      for (; i + RD_LANES <= n; i += RD_LANES)                                                 \
        for (int j = 0; j < RD_LANES; ++j) {                                                   \
          ACC v = LOAD(x[i + j]);                                                              \
          l[j] = COMB(l[j], v);                                                                \
        }                                                                                      \
      for (int j = 0; j < RD_LANES; ++j) a = COMB(a, l[j]);                                    \
      for (; i < n; ++i) {                                                                     \
        ACC v = LOAD(x[i]);                                                                    \
        a = COMB(a, v);                                                                        \
      }                                                                                        \
    } else {                                                                                   \
      for (; i < n; ++i) {                                                                     \
        ACC v = LOAD(x[i * s]);                                                                \
        a = COMB(a, v);                                                                        \
      }                                                                                        \
    }                                                                                          \
    *(ACC *)accp = a;                                                                          \
  }                                                                                            \
  static void NAME##_cols(void *accp, const char *p, int64_t n, int64_t rows, int64_t rs) {    \
    ACC *acc = (ACC *)accp;                                                                    \
    for (int64_t r = 0; r < rows; ++r, p += rs) {                                              \
      const CPU_UA(T) *x = (const CPU_UA(T) *)p;                                               \
      for (int64_t i = 0; i < n; ++i) {                                                        \
        ACC v = LOAD(x[i]);                                                                    \
        acc[i] = COMB(acc[i], v);                                                              \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  static void NAME##_merge(void *accp, const void *otherp, int64_t n) {                        \
    ACC *acc = (ACC *)accp;                                                                    \
    const ACC *o = (const ACC *)otherp;                                                        \
    for (int64_t i = 0; i < n; ++i) acc[i] = COMB(acc[i], o[i]);                               \
  }

/* sum/prod store into any output dtype (the host may pick it), through convert.h. A second
 * copy of the dtype list, expanded inside CPU_FOR_EACH_DTYPE's expansion. */
#define RD_FOR_EACH_OUT(X)                                                                     \
  X(BOOL, bool_, uint8_t) X(INT8, int8, int8_t) X(UINT8, uint8, uint8_t)                       \
  X(INT16, int16, int16_t) X(INT32, int32, int32_t) X(INT64, int64, int64_t)                   \
  X(FLOAT16, float16, uint16_t) X(BFLOAT16, bfloat16, uint16_t) X(FLOAT32, float32, float)     \
  X(FLOAT64, float64, double)
#define RD_STORE_CASE_KI(CODE, name, T)                                                        \
  case HWP_DTYPE_##CODE: {                                                                     \
    CPU_UA(T) *o = (CPU_UA(T) *)out;                                                           \
    for (int64_t i = 0; i < n; ++i) o[i] = CPU_CV_KI_##name((int64_t)acc[i]);                  \
    break;                                                                                     \
  }
#define RD_STORE_CASE_KD(CODE, name, T)                                                        \
  case HWP_DTYPE_##CODE: {                                                                     \
    CPU_UA(T) *o = (CPU_UA(T) *)out;                                                           \
    for (int64_t i = 0; i < n; ++i) o[i] = CPU_CV_KD_##name((double)acc[i]);                   \
    break;                                                                                     \
  }
#define RD_DEFINE_STORE_CONV(NAME, ACC, KIND)                                                  \
  static void NAME##_store(char *out, HWP_DType dt, const void *accp, int64_t n) {             \
    const ACC *acc = (const ACC *)accp;                                                        \
    switch (dt) {                                                                              \
      RD_FOR_EACH_OUT(RD_PASTE3(RD_STORE_CASE_, KIND, ))                                    \
    default: break;                                                                            \
    }                                                                                          \
  }
#define RD_DEFINE_STORE_NATIVE(NAME, T, ACC, STORE)                                            \
  static void NAME##_store(char *out, HWP_DType dt, const void *accp, int64_t n) {             \
    (void)dt;                                                                                  \
    const ACC *acc = (const ACC *)accp;                                                        \
    CPU_UA(T) *o = (CPU_UA(T) *)out;                                                           \
    for (int64_t i = 0; i < n; ++i) o[i] = STORE(acc[i]);                                      \
  }

#define RD_OPS(NAME, ACC)                                                                      \
  { sizeof(ACC), NAME##_init, NAME##_row, NAME##_cols, NAME##_merge, NAME##_store }

#define RD_DEF_SUM(CODE, name, T)                                                              \
  RD_DEFINE(sum_##name, T, RD_SACC_##name, RD_SLD_##name, RD_ADD, 0)                           \
  RD_DEFINE_STORE_CONV(sum_##name, RD_SACC_##name, RD_SKIND_##name)
#define RD_DEF_PROD(CODE, name, T)                                                             \
  RD_DEFINE(prod_##name, T, RD_SACC_##name, RD_SLD_##name, RD_MUL, 1)                          \
  RD_DEFINE_STORE_CONV(prod_##name, RD_SACC_##name, RD_SKIND_##name)
#define RD_DEF_MAX(CODE, name, T)                                                              \
  RD_DEFINE(max_##name, T, RD_MACC_##name, RD_MLD_##name,                                      \
            RD_PASTE3(RD_MAX_, RD_FKIND_##name, ), RD_MAXID_##name)                            \
  RD_DEFINE_STORE_NATIVE(max_##name, T, RD_MACC_##name, RD_MST_##name)
#define RD_DEF_MIN(CODE, name, T)                                                              \
  RD_DEFINE(min_##name, T, RD_MACC_##name, RD_MLD_##name,                                      \
            RD_PASTE3(RD_MIN_, RD_FKIND_##name, ), RD_MINID_##name)                            \
  RD_DEFINE_STORE_NATIVE(min_##name, T, RD_MACC_##name, RD_MST_##name)

CPU_FOR_EACH_DTYPE(RD_DEF_SUM)
CPU_FOR_EACH_DTYPE(RD_DEF_PROD)
CPU_FOR_EACH_DTYPE(RD_DEF_MAX)
CPU_FOR_EACH_DTYPE(RD_DEF_MIN)

/* float32/float64 max/min runs: explicit vector lanes (cpu_extreme_*). */
#define RD_DEFINE_VEC_ROW(NAME, T, EXTREME, IS_MIN)                                            \
  static void NAME##_vrow(void *accp, const char *p, int64_t n, int64_t s) {                   \
    if (s != 1) {                                                                              \
      NAME##_row(accp, p, n, s);                                                               \
      return;                                                                                  \
    }                                                                                          \
    T a;                                                                                       \
    memcpy(&a, accp, sizeof a);                                                                \
    a = EXTREME(p, n, a, IS_MIN);                                                              \
    memcpy(accp, &a, sizeof a);                                                                \
  }
RD_DEFINE_VEC_ROW(max_float32, float, cpu_extreme_f32, 0)
RD_DEFINE_VEC_ROW(min_float32, float, cpu_extreme_f32, 1)
RD_DEFINE_VEC_ROW(max_float64, double, cpu_extreme_f64, 0)
RD_DEFINE_VEC_ROW(min_float64, double, cpu_extreme_f64, 1)
#define RD_MROW_bool_ _row
#define RD_MROW_int8 _row
#define RD_MROW_uint8 _row
#define RD_MROW_int16 _row
#define RD_MROW_int32 _row
#define RD_MROW_int64 _row
#define RD_MROW_float16 _row
#define RD_MROW_bfloat16 _row
#define RD_MROW_float32 _vrow
#define RD_MROW_float64 _vrow

#define RD_OPS_M(NAME, ACC, ROW)                                                               \
  { sizeof(ACC), NAME##_init, RD_PASTE3(NAME, ROW, ), NAME##_cols, NAME##_merge, NAME##_store }

/* float32 column sums: eight rows added pairwise in float32 (an error of a few float32 ulps of
 * their magnitude), then into the float64 accumulators: an eighth of the widening work. */
static void sum_float32_cols8(void *accp, const char *p, int64_t n, int64_t rows, int64_t rs) {
  double *acc = (double *)accp;
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8, p += 8 * rs) {
    const cpu_ua_float *x0 = (const cpu_ua_float *)p, *x1 = (const cpu_ua_float *)(p + rs);
    const cpu_ua_float *x2 = (const cpu_ua_float *)(p + 2 * rs);
    const cpu_ua_float *x3 = (const cpu_ua_float *)(p + 3 * rs);
    const cpu_ua_float *x4 = (const cpu_ua_float *)(p + 4 * rs);
    const cpu_ua_float *x5 = (const cpu_ua_float *)(p + 5 * rs);
    const cpu_ua_float *x6 = (const cpu_ua_float *)(p + 6 * rs);
    const cpu_ua_float *x7 = (const cpu_ua_float *)(p + 7 * rs);
    for (int64_t i = 0; i < n; ++i) {
      float lo = (x0[i] + x1[i]) + (x2[i] + x3[i]), hi = (x4[i] + x5[i]) + (x6[i] + x7[i]);
      acc[i] += (double)(lo + hi);
    }
  }
  if (r < rows) sum_float32_cols(accp, p, n, rows - r, rs);
}
/* float32 runs (and float16/bfloat16 ones), at the AVX2 / AVX-512 level chosen with the
 * elementwise one (cpu_ew_simd_level): every element widened and added in float64 (within one
 * float32 ulp of the exactly rounded sum), over 8 independent float64 vector accumulators, with
 * the input prefetched RD_SUM_PREFETCH elements ahead. Without the prefetch the widening loop
 * kept fewer lines in flight than a plain float32 loop and ran 10-15% below its memory bandwidth
 * (sum all [4096^2] f32: 1.03-1.30x torch); with it, it streams as fast. The tail is added
 * element by element. */
#define RD_SUM_BLOCK 64 /* elements a step (and the least run length for this loop) */
#define RD_SUM_PREFETCH 2048
#if defined(__x86_64__) && defined(__GNUC__) && !defined(HWPORT_CPU_NO_DISPATCH)
#define RD_SUM_F32_DISPATCH 1
#include <immintrin.h>
/* AVX-512: LOAD16(i) = the 16 floats of elements i.. as __m512; ESZ bytes an element. */
#define RD_SUM_LO512(v) _mm512_cvtps_pd(_mm512_castps512_ps256(v))
#define RD_SUM_HI512(v)                                                                        \
  _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))
#define RD_SUM_RUN512(NAME, ATTRS, ELT, LOAD16, SCALAR)                                        \
  ATTRS static double NAME(const ELT *x, int64_t n, double a) {                                \
    __m512d t0 = _mm512_setzero_pd(), t1 = t0, t2 = t0, t3 = t0, t4 = t0, t5 = t0, t6 = t0,    \
            t7 = t0;                                                                           \
    int64_t i = 0;                                                                             \
    for (; i + RD_SUM_BLOCK <= n; i += RD_SUM_BLOCK) {                                         \
      const char *pf = (const char *)(x + i + RD_SUM_PREFETCH);                                \
      for (size_t k = 0; k < RD_SUM_BLOCK * sizeof(ELT); k += 64)                              \
        _mm_prefetch(pf + k, _MM_HINT_T0);                                                     \
      const __m512 v0 = LOAD16(i), v1 = LOAD16(i + 16), v2 = LOAD16(i + 32),                   \
                   v3 = LOAD16(i + 48);                                                        \
      t0 = _mm512_add_pd(t0, RD_SUM_LO512(v0));                                                \
      t1 = _mm512_add_pd(t1, RD_SUM_HI512(v0));                                                \
      t2 = _mm512_add_pd(t2, RD_SUM_LO512(v1));                                                \
      t3 = _mm512_add_pd(t3, RD_SUM_HI512(v1));                                                \
      t4 = _mm512_add_pd(t4, RD_SUM_LO512(v2));                                                \
      t5 = _mm512_add_pd(t5, RD_SUM_HI512(v2));                                                \
      t6 = _mm512_add_pd(t6, RD_SUM_LO512(v3));                                                \
      t7 = _mm512_add_pd(t7, RD_SUM_HI512(v3));                                                \
    }                                                                                          \
    t0 = _mm512_add_pd(_mm512_add_pd(t0, t1), _mm512_add_pd(t2, t3));                          \
    t4 = _mm512_add_pd(_mm512_add_pd(t4, t5), _mm512_add_pd(t6, t7));                          \
    double l[8];                                                                               \
    _mm512_storeu_pd(l, _mm512_add_pd(t0, t4));                                                \
    a += ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));                    \
    for (; i < n; ++i) a += (double)SCALAR(x[i]);                                              \
    return a;                                                                                  \
  }
/* AVX2: LOAD8(i) = 8 floats as __m256. */
#define RD_SUM_LO256(v) _mm256_cvtps_pd(_mm256_castps256_ps128(v))
#define RD_SUM_HI256(v) _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))
#define RD_SUM_RUN256(NAME, ATTRS, ELT, LOAD8, SCALAR)                                         \
  ATTRS static double NAME(const ELT *x, int64_t n, double a) {                                \
    __m256d t0 = _mm256_setzero_pd(), t1 = t0, t2 = t0, t3 = t0, t4 = t0, t5 = t0, t6 = t0,    \
            t7 = t0;                                                                           \
    int64_t i = 0;                                                                             \
    for (; i + RD_SUM_BLOCK / 2 <= n; i += RD_SUM_BLOCK / 2) {                                 \
      const char *pf = (const char *)(x + i + RD_SUM_PREFETCH);                                \
      for (size_t k = 0; k < RD_SUM_BLOCK / 2 * sizeof(ELT); k += 64)                          \
        _mm_prefetch(pf + k, _MM_HINT_T0);                                                     \
      const __m256 v0 = LOAD8(i), v1 = LOAD8(i + 8), v2 = LOAD8(i + 16), v3 = LOAD8(i + 24);   \
      t0 = _mm256_add_pd(t0, RD_SUM_LO256(v0));                                                \
      t1 = _mm256_add_pd(t1, RD_SUM_HI256(v0));                                                \
      t2 = _mm256_add_pd(t2, RD_SUM_LO256(v1));                                                \
      t3 = _mm256_add_pd(t3, RD_SUM_HI256(v1));                                                \
      t4 = _mm256_add_pd(t4, RD_SUM_LO256(v2));                                                \
      t5 = _mm256_add_pd(t5, RD_SUM_HI256(v2));                                                \
      t6 = _mm256_add_pd(t6, RD_SUM_LO256(v3));                                                \
      t7 = _mm256_add_pd(t7, RD_SUM_HI256(v3));                                                \
    }                                                                                          \
    t0 = _mm256_add_pd(_mm256_add_pd(t0, t1), _mm256_add_pd(t2, t3));                          \
    t4 = _mm256_add_pd(_mm256_add_pd(t4, t5), _mm256_add_pd(t6, t7));                          \
    double l[4];                                                                               \
    _mm256_storeu_pd(l, _mm256_add_pd(t0, t4));                                                \
    a += (l[0] + l[2]) + (l[1] + l[3]);                                                        \
    for (; i < n; ++i) a += (double)SCALAR(x[i]);                                              \
    return a;                                                                                  \
  }
#define RD_ID(v) (v)
#define RD_LD_F32_16(j) _mm512_loadu_ps(x + (j))
#define RD_LD_F32_8(j) _mm256_loadu_ps(x + (j))
#define RD_LD_F16_16(j) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + (j))))
#define RD_LD_F16_8(j) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + (j))))
#define RD_LD_BF16_16(j)                                                                       \
  _mm512_castsi512_ps(_mm512_slli_epi32(                                                       \
      _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(x + (j)))), 16))
#define RD_LD_BF16_8(j)                                                                        \
  _mm256_castsi256_ps(                                                                         \
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + (j)))), 16))
#define RD_ATTR512 __attribute__((target("avx512f,avx512dq,avx512bw,f16c")))
#define RD_ATTR256 __attribute__((target("avx2,fma,f16c")))
RD_SUM_RUN512(rd_sum_f32_run_avx512, RD_ATTR512, cpu_ua_float, RD_LD_F32_16, RD_ID)
RD_SUM_RUN256(rd_sum_f32_run_avx2, RD_ATTR256, cpu_ua_float, RD_LD_F32_8, RD_ID)
typedef uint16_t rd_ua_u16 __attribute__((aligned(1)));
RD_SUM_RUN512(rd_sum_f16_run_avx512, RD_ATTR512, rd_ua_u16, RD_LD_F16_16, cpu_f16_to_f32)
RD_SUM_RUN256(rd_sum_f16_run_avx2, RD_ATTR256, rd_ua_u16, RD_LD_F16_8, cpu_f16_to_f32)
RD_SUM_RUN512(rd_sum_bf16_run_avx512, RD_ATTR512, rd_ua_u16, RD_LD_BF16_16, cpu_bf16_to_f32)
RD_SUM_RUN256(rd_sum_bf16_run_avx2, RD_ATTR256, rd_ua_u16, RD_LD_BF16_8, cpu_bf16_to_f32)
#endif

static void sum_float32_brow(void *accp, const char *p, int64_t n, int64_t s) {
#ifdef RD_SUM_F32_DISPATCH
  const int level = cpu_ew_simd_level();
  if (s == 1 && n >= RD_SUM_BLOCK && level > 0) {
    const cpu_ua_float *x = (const cpu_ua_float *)p;
    double *acc = (double *)accp;
    *acc = level == 2 ? rd_sum_f32_run_avx512(x, n, *acc) : rd_sum_f32_run_avx2(x, n, *acc);
    return;
  }
#endif
  sum_float32_row(accp, p, n, s);
}
/* float16/bfloat16 runs: the same loop, converted 8 or 16 lanes at a time (F16C, or a shift)
 * instead of one by one; the float32 accumulator gets the run's float64 total once. */
#define RD_SUM_HALF_BROW(name, short)                                                          \
  static void sum_##name##_brow(void *accp, const char *p, int64_t n, int64_t s) {             \
    RD_SUM_HALF_FAST(short)                                                                    \
    sum_##name##_row(accp, p, n, s);                                                           \
  }
#ifdef RD_SUM_F32_DISPATCH
#define RD_SUM_HALF_FAST(short)                                                                \
  const int level = cpu_ew_simd_level();                                                       \
  if (s == 1 && n >= RD_SUM_BLOCK && level > 0) {                                              \
    const rd_ua_u16 *x = (const rd_ua_u16 *)p;                                                 \
    float *acc = (float *)accp;                                                                \
    double t = level == 2 ? rd_sum_##short##_run_avx512(x, n, 0.0)                             \
                          : rd_sum_##short##_run_avx2(x, n, 0.0);                              \
    *acc = (float)((double)*acc + t);                                                          \
    return;                                                                                    \
  }
#else
#define RD_SUM_HALF_FAST(short)
#endif
RD_SUM_HALF_BROW(float16, f16)
RD_SUM_HALF_BROW(bfloat16, bf16)
#define RD_SUM_ROW_bool_ _row
#define RD_SUM_ROW_int8 _row
#define RD_SUM_ROW_uint8 _row
#define RD_SUM_ROW_int16 _row
#define RD_SUM_ROW_int32 _row
#define RD_SUM_ROW_int64 _row
#define RD_SUM_ROW_float16 _brow
#define RD_SUM_ROW_bfloat16 _brow
#define RD_SUM_ROW_float32 _brow
#define RD_SUM_ROW_float64 _row

#define RD_SUM_COLS_bool_ _cols
#define RD_SUM_COLS_int8 _cols
#define RD_SUM_COLS_uint8 _cols
#define RD_SUM_COLS_int16 _cols
#define RD_SUM_COLS_int32 _cols
#define RD_SUM_COLS_int64 _cols
#define RD_SUM_COLS_float16 _cols
#define RD_SUM_COLS_bfloat16 _cols
#define RD_SUM_COLS_float32 _cols8
#define RD_SUM_COLS_float64 _cols
#define RD_OPS_S(NAME, ACC, ROW, COLS)                                                         \
  { sizeof(ACC), NAME##_init, RD_PASTE3(NAME, ROW, ), RD_PASTE3(NAME, COLS, ), NAME##_merge,     \
    NAME##_store }
#define RD_ENTRY_SUM(CODE, name, T)                                                            \
  RD_OPS_S(sum_##name, RD_SACC_##name, RD_SUM_ROW_##name, RD_SUM_COLS_##name),
#define RD_ENTRY_PROD(CODE, name, T) RD_OPS(prod_##name, RD_SACC_##name),
#define RD_ENTRY_MAX(CODE, name, T) RD_OPS_M(max_##name, RD_MACC_##name, RD_MROW_##name),
#define RD_ENTRY_MIN(CODE, name, T) RD_OPS_M(min_##name, RD_MACC_##name, RD_MROW_##name),
static const rd_ops g_rd_ops[4][HWP_DTYPE_COUNT] = {
    {CPU_FOR_EACH_DTYPE(RD_ENTRY_SUM)},
    {CPU_FOR_EACH_DTYPE(RD_ENTRY_PROD)},
    {CPU_FOR_EACH_DTYPE(RD_ENTRY_MAX)},
    {CPU_FOR_EACH_DTYPE(RD_ENTRY_MIN)},
};

/* ---- reduction plan and loops --------------------------------------------------------- */

typedef struct rd_plan {
  const rd_ops *ops;
  HWP_DType out_dtype;
  char *in, *out;
  int64_t isz, osz, asz;
  int kn, rn; /* rn >= 1 (a virtual size-1 dim when nothing is reduced) */
  int64_t kshape[HWP_MAX_NDIM], kstride[HWP_MAX_NDIM];
  int64_t rshape[HWP_MAX_NDIM], rstride[HWP_MAX_NDIM]; /* positive, innermost last */
  int64_t nout, nred;
  /* chosen by rd_run */
  int col;
  int64_t W, tw, ntiles, groups, chunks, chunk_len;
  char *partial;
  int failed; /* a task had no memory */
  int mean;   /* divide the sums by nred before storing */
} rd_plan;

static inline int64_t rd_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t rd_max(int64_t a, int64_t b) { return a > b ? a : b; }
/* ceil(a / b) for a >= 0, b > 0 (a + b - 1 would overflow for a huge input view) */
static inline int64_t rd_cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* Stores cnt accumulators at out; mean first divides them by the reduced count (in double; the
 * float accumulators of float16/bfloat16 are rounded back to float), 0 / 0 = NaN for an empty
 * reduction, as the decomposition sum / count. */
static void rd_store(const rd_plan *P, char *out, void *acc, int64_t cnt) {
  if (P->mean) {
    const double n = (double)P->nred;
    if (P->asz == (int64_t)sizeof(double)) {
      double *a = acc;
      for (int64_t i = 0; i < cnt; ++i) a[i] /= n;
    } else {
      float *a = acc;
      for (int64_t i = 0; i < cnt; ++i) a[i] = (float)((double)a[i] / n);
    }
  }
  P->ops->store(out, P->out_dtype, acc, cnt);
}

/* Walks the reduced elements [r0, r1) (flat C order of the reduced dims) from `base`, one
 * stretch along the innermost reduced dim at a time: with cnt == 0, acc op= each stretch
 * (ops->row); with cnt > 0, acc[0..cnt) op= cnt contiguous elements per reduced position, the
 * stretch's rows together (ops->cols). */
static void rd_walk(const rd_plan *P, const char *base, int64_t r0, int64_t r1, void *acc,
                    int64_t cnt) {
  const int rn = P->rn;
  const int64_t L = P->rshape[rn - 1], sL = P->rstride[rn - 1];
  int64_t idx[HWP_MAX_NDIM];
  int64_t q = r0 / L, j = r0 - q * L, off = 0;
  for (int k = rn - 2; k >= 0; --k) {
    int64_t qq = q / P->rshape[k];
    idx[k] = q - qq * P->rshape[k];
    off += idx[k] * P->rstride[k];
    q = qq;
  }
  int64_t left = r1 - r0;
  while (left > 0) {
    int64_t len = rd_min(L - j, left);
    const char *at = base + (off + j * sL) * P->isz;
    if (cnt > 0)
      P->ops->cols(acc, at, cnt, len, sL * P->isz);
    else
      P->ops->row(acc, at, len, sL);
    left -= len;
    j = 0;
    for (int k = rn - 2; k >= 0 && left > 0; --k) {
      off += P->rstride[k];
      if (++idx[k] < P->rshape[k]) break;
      off -= P->rstride[k] * P->rshape[k];
      idx[k] = 0;
    }
  }
}

/* Rows, one chunk: outputs [b, e), stored in blocks of RD_TILE. */
static void rd_rows_task(void *ctx, int64_t b, int64_t e) {
  const rd_plan *P = ctx;
  uint64_t acc[RD_TILE];
  int64_t idx[HWP_MAX_NDIM];
  int64_t q = b, off = 0;
  for (int k = P->kn - 1; k >= 0; --k) {
    int64_t qq = q / P->kshape[k];
    idx[k] = q - qq * P->kshape[k];
    off += idx[k] * P->kstride[k];
    q = qq;
  }
  for (int64_t o = b; o < e;) {
    int64_t cnt = rd_min(RD_TILE, e - o);
    P->ops->init(acc, cnt);
    for (int64_t i = 0; i < cnt; ++i) {
      rd_walk(P, P->in + off * P->isz, 0, P->nred, (char *)acc + i * P->asz, 0);
      for (int k = P->kn - 1; k >= 0; --k) {
        off += P->kstride[k];
        if (++idx[k] < P->kshape[k]) break;
        off -= P->kstride[k] * P->kshape[k];
        idx[k] = 0;
      }
    }
    rd_store(P, P->out + o * P->osz, acc, cnt);
    o += cnt;
  }
}

/* Group g (one output in row mode, a tile in column mode): input offset, first output, count. */
static void rd_group(const rd_plan *P, int64_t g, int64_t *in_off, int64_t *out_idx,
                     int64_t *cnt) {
  if (!P->col) {
    *in_off = cpu_unravel_offset(g, P->kn, P->kshape, P->kstride);
    *out_idx = g;
    *cnt = 1;
    return;
  }
  int64_t q = g / P->ntiles, t = g - q * P->ntiles;
  *in_off = cpu_unravel_offset(q, P->kn - 1, P->kshape, P->kstride) + t * P->tw;
  *out_idx = q * P->W + t * P->tw;
  *cnt = rd_min(P->tw, P->W - t * P->tw);
}

/* Tasks (group, chunk): column tiles, and every split reduction (partials merged later). */
static void rd_groups_task(void *ctx, int64_t b, int64_t e) {
  rd_plan *P = ctx;
  char *local = NULL;
  if (P->chunks == 1 && (local = cpu_scratch((size_t)(P->tw * P->asz))) == NULL) {
    __atomic_store_n(&P->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t t = b; t < e; ++t) {
    int64_t g = t / P->chunks, c = t - g * P->chunks;
    int64_t in_off, out_idx, cnt;
    rd_group(P, g, &in_off, &out_idx, &cnt);
    int64_t r0 = c * P->chunk_len, r1 = rd_min(P->nred, r0 + P->chunk_len);
    void *acc = P->chunks > 1 ? (void *)(P->partial + t * P->tw * P->asz) : (void *)local;
    P->ops->init(acc, cnt);
    if (r0 < r1) rd_walk(P, P->in + in_off * P->isz, r0, r1, acc, P->col ? cnt : 0);
    if (P->chunks == 1) rd_store(P, P->out + out_idx * P->osz, acc, cnt);
  }
  free(local);
}

static HWP_Status rd_run(void *payload) {
  rd_plan *P = payload;
  if (P->nout == 0) return HWP_OK;
  if (P->nred == 0) { /* empty reduction: the identity (sum 0, prod 1) */
    uint64_t acc[RD_TILE];
    for (int64_t o = 0; o < P->nout; o += RD_TILE) {
      int64_t cnt = rd_min(RD_TILE, P->nout - o);
      P->ops->init(acc, cnt);
      rd_store(P, P->out + o * P->osz, acc, cnt);
    }
    return HWP_OK;
  }
  const int64_t T = cpu_parallel_threads() > 0 ? cpu_parallel_threads() : 1;
  P->col = P->kn >= 1 && P->kstride[P->kn - 1] == 1 && P->rstride[P->rn - 1] != 1 &&
           P->kshape[P->kn - 1] >= 8;
  if (P->col) { /* tiles of up to RD_COL_TILE outputs, of even widths (multiples of 16) */
    P->W = P->kshape[P->kn - 1];
    int64_t Q = P->nout / P->W;
    P->ntiles = rd_cdiv(P->W, RD_COL_TILE);
    P->tw = rd_min(P->W, rd_cdiv(rd_cdiv(P->W, P->ntiles), 16) * 16);
    P->ntiles = rd_cdiv(P->W, P->tw);
    P->groups = Q * P->ntiles;
  } else {
    P->tw = 1;
    P->groups = P->nout;
  }
  /* Few groups and long reductions: cut the reduced range too (at least 16K inputs a task). */
  P->chunks = 1;
  int64_t min_chunk = P->col ? rd_max(1, 16384 / P->tw) : 16384;
  if (T > 1 && P->groups < 4 * T && P->nred >= 2 * min_chunk) {
    P->chunks = rd_min(rd_cdiv(4 * T, P->groups), P->nred / min_chunk);
    /* partial results: at most 16 MiB */
    P->chunks = rd_min(P->chunks, (16 << 20) / (P->groups * P->tw * P->asz));
    if (P->chunks < 1) P->chunks = 1;
  }
  P->chunk_len = rd_cdiv(P->nred, P->chunks);
  P->chunks = rd_cdiv(P->nred, P->chunk_len);
  int64_t per_group = P->nred * P->tw;
  if (!P->col && P->chunks == 1) {
    cpu_parallel_for(P->nout, rd_max(1, 32768 / P->nred), rd_rows_task, P);
    return HWP_OK;
  }
  if (P->chunks == 1) {
    cpu_parallel_for(P->groups, rd_max(1, 32768 / per_group), rd_groups_task, P);
    if (P->failed) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "reduction: no memory for a tile");
    return HWP_OK;
  }
  P->partial = cpu_scratch((size_t)(P->groups * P->chunks * P->tw * P->asz));
  if (P->partial == NULL)
    return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "reduction: no memory for partial results");
  cpu_parallel_for(P->groups * P->chunks, 1, rd_groups_task, P);
  for (int64_t g = 0; g < P->groups; ++g) {
    int64_t in_off, out_idx, cnt;
    rd_group(P, g, &in_off, &out_idx, &cnt);
    char *first = P->partial + g * P->chunks * P->tw * P->asz;
    for (int64_t c = 1; c < P->chunks; ++c)
      P->ops->merge(first, first + c * P->tw * P->asz, cnt);
    rd_store(P, P->out + out_idx * P->osz, first, cnt);
  }
  free(P->partial);
  P->partial = NULL;
  return HWP_OK;
}

/* Reads attr `axis` (INT64_ARRAY; an INT64 is taken as one axis; absent: every dim) into a
 * bit mask of reduced dims. */
static HWP_Status rd_axes(const HWP_KernelContext *ctx, const char *op, int32_t ndim,
                          uint32_t *mask) {
  const int64_t *axes = NULL;
  int64_t count = 0, one = 0;
  HWP_Status st = HWP_ERROR_NOT_FOUND;
  int have_get = HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) && ctx->get_attr != NULL;
  if (have_get) st = ctx->get_attr(ctx, "axis", HWP_ATTR_INT64_ARRAY, (void *)&axes, &count);
  if (st == HWP_ERROR_INVALID_ARGUMENT && have_get &&
      ctx->get_attr(ctx, "axis", HWP_ATTR_INT64, &one, NULL) == HWP_OK) {
    axes = &one;
    count = 1;
    st = HWP_OK;
  }
  if (st == HWP_ERROR_NOT_FOUND) {
    *mask = ndim >= 32 ? 0xffffffffu : (1u << ndim) - 1u;
    return HWP_OK;
  }
  if (st != HWP_OK)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: attribute 'axis' is not a list of ints (status %d)", op, (int)st);
  if (count > 0 && axes == NULL)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute 'axis' is NULL", op);
  uint32_t m = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (ndim == 0 && (axes[i] == 0 || axes[i] == -1)) continue; /* a 0-d input's one element */
    int64_t a = axes[i] < 0 ? axes[i] + ndim : axes[i];
    if (a < 0 || a >= ndim)
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: axis %lld is out of range for a %d-d input", op,
                       (long long)axes[i], (int)ndim);
    if (m & (1u << a))
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: axis %lld appears twice", op,
                       (long long)axes[i]);
    m |= 1u << a;
  }
  *mask = m;
  return HWP_OK;
}

static HWP_Status rd_kernel(const HWP_KernelContext *ctx, int kind, const char *op) {
  HWP_Status st = cpu_check_context(ctx, op, 1, 1);
  if (st != HWP_OK) return st;
  cpu_view x, y;
  if ((st = cpu_view_load(op, "input 0", &ctx->inputs[0], &x)) != HWP_OK) return st;
  if ((st = cpu_view_load(op, "output 0", &ctx->outputs[0], &y)) != HWP_OK) return st;
  if ((st = cpu_rview_require_contiguous(op, &y)) != HWP_OK) return st;
  if ((kind == RD_MAX || kind == RD_MIN) && y.dtype != x.dtype)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output dtype %s differs from input %s",
                     op, cpu_dtype_name(y.dtype), cpu_dtype_name(x.dtype));
  uint32_t mask = 0;
  if ((st = rd_axes(ctx, op, x.ndim, &mask)) != HWP_OK) return st;

  rd_plan *P = calloc(1, sizeof *P);
  if (P == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for the plan", op);
  P->ops = &g_rd_ops[kind == RD_MEAN ? RD_SUM : kind][x.dtype];
  P->mean = kind == RD_MEAN;
  P->out_dtype = y.dtype;
  P->in = x.base;
  P->out = y.base;
  P->isz = (int64_t)x.itemsize;
  P->osz = (int64_t)y.itemsize;
  P->asz = (int64_t)P->ops->acc_size;
  P->nout = 1;
  P->nred = 1;
  for (int k = 0; k < x.ndim; ++k) {
    int64_t n = x.shape[k], s = x.strides[k];
    if (mask & (1u << k)) {
      P->nred *= n;
      if (n == 1) continue;
      if (s < 0 && x.numel > 0) { /* order does not matter: walk it forwards */
        P->in += (n - 1) * s * P->isz;
        s = -s;
      }
      int j = P->rn++; /* insertion by descending stride */
      while (j > 0 && P->rstride[j - 1] < s) {
        P->rshape[j] = P->rshape[j - 1];
        P->rstride[j] = P->rstride[j - 1];
        --j;
      }
      P->rshape[j] = n;
      P->rstride[j] = s;
    } else {
      P->nout *= n;
      P->kshape[P->kn] = n;
      P->kstride[P->kn] = s;
      ++P->kn;
    }
  }
  if (y.numel != P->nout) {
    long long nout = (long long)P->nout;
    free(P);
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: output has %lld elements, the kept dims of the input %lld", op,
                     (long long)y.numel, nout);
  }
  if ((kind == RD_MAX || kind == RD_MIN) && P->nred == 0 && P->nout > 0) {
    free(P);
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: reduction over zero elements", op);
  }
  if (P->nout == 0) {
    free(P);
    return HWP_OK;
  }
  P->kn = cpu_merge_dims(P->kn, P->kshape, P->kstride);
  P->rn = cpu_merge_dims(P->rn, P->rshape, P->rstride);
  if (P->rn == 0) {
    P->rn = 1;
    P->rshape[0] = 1;
    P->rstride[0] = 1;
  }
  uint64_t work = (uint64_t)(x.numel > P->nout ? x.numel : P->nout);
  st = cpu_submit_call(ctx, op, rd_run, free, P, work); /* takes P */
  return st;
}

static HWP_Status kernel_sum(const HWP_KernelContext *ctx) { return rd_kernel(ctx, RD_SUM, "sum"); }
static HWP_Status kernel_prod(const HWP_KernelContext *ctx) {
  return rd_kernel(ctx, RD_PROD, "prod");
}
static HWP_Status kernel_mean(const HWP_KernelContext *ctx) {
  return rd_kernel(ctx, RD_MEAN, "mean");
}
static HWP_Status kernel_max(const HWP_KernelContext *ctx) { return rd_kernel(ctx, RD_MAX, "max"); }
static HWP_Status kernel_min(const HWP_KernelContext *ctx) { return rd_kernel(ctx, RD_MIN, "min"); }

/* ---- argmax / argmin ----------------------------------------------------------------------
 * One axis (its stride may be negative or 0: the order matters, the first extreme wins). A
 * contiguous run finds the extreme with the vectorized reducer, then its first position; NaN
 * counts as the extreme (the first NaN wins). */

typedef struct am_ops {
  /* First extreme of x[0], x[s], .. x[(n-1)s]: its index and value (compare type). */
  void (*row)(const char *p, int64_t n, int64_t s, int64_t *idx, void *val);
  /* Column tile: for c < cnt, the first extreme of x[c], x[c + s], ..: into idx[c]. */
  void (*col)(const char *p, int64_t n, int64_t s, int64_t cnt, int64_t *idx);
  /* Whether value a beats value b (strictly: earlier wins ties). */
  int (*better)(const void *a, const void *b);
} am_ops;

#define AM_GT(v, b) (v) > (b)
#define AM_LT(v, b) (v) < (b)
#define AM_ISNAN_I(v) ((void)(v), 0)
#define AM_ISNAN_F(v) ((v) != (v))
#define AM_BETTER_I(CMP, v, b) (CMP(v, b))
#define AM_BETTER_F(CMP, v, b) ((CMP(v, b)) || ((v) != (v) && (b) == (b)))

#define AM_DEFINE(NAME, T, CT, LOAD, RDROW, IDENT, FK, CMP)                                    \
  static int NAME##_better(const void *ap, const void *bp) {                                   \
    CT a, b;                                                                                   \
    memcpy(&a, ap, sizeof a);                                                                  \
    memcpy(&b, bp, sizeof b);                                                                  \
    return RD_PASTE3(AM_BETTER_, FK, )(CMP, a, b);                                             \
  }                                                                                            \
  static void NAME##_row(const char *p, int64_t n, int64_t s, int64_t *idx, void *val) {       \
    const CPU_UA(T) *x = (const CPU_UA(T) *)p;                                                 \
    CT best = LOAD(x[0]);                                                                      \
    int64_t bi = 0;                                                                            \
    if (s == 1 && n >= RD_LANES) { /* the extreme (vectorized), then its first position */   \
      CT m = IDENT;                                                                            \
      int64_t i;                                                                               \
      RDROW(&m, p, n, 1);                                                                      \
      if (RD_PASTE3(AM_ISNAN_, FK, )(m)) { /* the first NaN */                                \
        for (i = 0; i < n; ++i) {                                                              \
          CT v = LOAD(x[i]);                                                                   \
          if (RD_PASTE3(AM_ISNAN_, FK, )(v)) break;                                            \
        }                                                                                      \
      } else {                                                                                 \
        for (i = 0; i < n; ++i) {                                                              \
          CT v = LOAD(x[i]);                                                                   \
          if (v == m) break;                                                                   \
        }                                                                                      \
      }                                                                                        \
      bi = i < n ? i : 0;                                                                      \
      best = m;                                                                                \
    } else {                                                                                   \
      for (int64_t i = 1; i < n; ++i) {                                                        \
        CT v = LOAD(x[i * s]);                                                                 \
        if (RD_PASTE3(AM_BETTER_, FK, )(CMP, v, best)) {                                       \
          best = v;                                                                            \
          bi = i;                                                                              \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    *idx = bi;                                                                                 \
    memcpy(val, &best, sizeof best);                                                           \
  }                                                                                            \
  static void NAME##_col(const char *p, int64_t n, int64_t s, int64_t cnt, int64_t *idx) {     \
    const CPU_UA(T) *x = (const CPU_UA(T) *)p;                                                 \
    CT best[RD_TILE];                                                                          \
    for (int64_t c = 0; c < cnt; ++c) {                                                        \
      best[c] = LOAD(x[c]);                                                                    \
      idx[c] = 0;                                                                              \
    }                                                                                          \
    for (int64_t r = 1; r < n; ++r) {                                                          \
      const CPU_UA(T) *xr = x + r * s;                                                         \
      for (int64_t c = 0; c < cnt; ++c) {                                                      \
        CT v = LOAD(xr[c]);                                                                    \
        int take = RD_PASTE3(AM_BETTER_, FK, )(CMP, v, best[c]);                               \
        best[c] = take ? v : best[c];                                                          \
        idx[c] = take ? r : idx[c];                                                            \
      }                                                                                        \
    }                                                                                          \
  }

#define AM_DEF_MAX(CODE, name, T)                                                              \
  AM_DEFINE(amax_##name, T, RD_MACC_##name, RD_MLD_##name,                                     \
            RD_PASTE3(max_##name, RD_MROW_##name, ), RD_MAXID_##name, RD_FKIND_##name, AM_GT)
#define AM_DEF_MIN(CODE, name, T)                                                              \
  AM_DEFINE(amin_##name, T, RD_MACC_##name, RD_MLD_##name,                                     \
            RD_PASTE3(min_##name, RD_MROW_##name, ), RD_MINID_##name, RD_FKIND_##name, AM_LT)
CPU_FOR_EACH_DTYPE(AM_DEF_MAX)
CPU_FOR_EACH_DTYPE(AM_DEF_MIN)
#define AM_ENTRY_MAX(CODE, name, T) {amax_##name##_row, amax_##name##_col, amax_##name##_better},
#define AM_ENTRY_MIN(CODE, name, T) {amin_##name##_row, amin_##name##_col, amin_##name##_better},
static const am_ops g_am_ops[2][HWP_DTYPE_COUNT] = {
    {CPU_FOR_EACH_DTYPE(AM_ENTRY_MAX)},
    {CPU_FOR_EACH_DTYPE(AM_ENTRY_MIN)},
};

typedef struct am_plan {
  const am_ops *ops;
  char *in;
  char *out; /* int64, contiguous */
  int64_t isz;
  int kn;
  int64_t kshape[HWP_MAX_NDIM], kstride[HWP_MAX_NDIM];
  int64_t L, s, nout;
  /* chosen by am_run */
  int col;
  int64_t W, tw, ntiles, chunks, chunk_len;
  int64_t *pidx;
  uint64_t *pval;
} am_plan;

static void am_rows_task(void *ctx, int64_t b, int64_t e) {
  const am_plan *P = ctx;
  int64_t *out = (int64_t *)P->out;
  for (int64_t o = b; o < e; ++o) {
    int64_t off = cpu_unravel_offset(o, P->kn, P->kshape, P->kstride), idx;
    uint64_t val;
    P->ops->row(P->in + off * P->isz, P->L, P->s, &idx, &val);
    memcpy(out + o, &idx, sizeof idx); /* the output may sit at any byte offset */
  }
}

static void am_split_task(void *ctx, int64_t b, int64_t e) {
  const am_plan *P = ctx;
  for (int64_t t = b; t < e; ++t) {
    int64_t o = t / P->chunks, c = t - o * P->chunks;
    int64_t off = cpu_unravel_offset(o, P->kn, P->kshape, P->kstride);
    int64_t r0 = c * P->chunk_len, n = rd_min(P->L - r0, P->chunk_len);
    P->ops->row(P->in + (off + r0 * P->s) * P->isz, n, P->s, &P->pidx[t], &P->pval[t]);
    P->pidx[t] += r0;
  }
}

static void am_cols_task(void *ctx, int64_t b, int64_t e) {
  const am_plan *P = ctx;
  int64_t idx[RD_TILE];
  for (int64_t g = b; g < e; ++g) {
    int64_t q = g / P->ntiles, t = g - q * P->ntiles;
    int64_t off = cpu_unravel_offset(q, P->kn - 1, P->kshape, P->kstride) + t * P->tw;
    int64_t cnt = rd_min(P->tw, P->W - t * P->tw);
    P->ops->col(P->in + off * P->isz, P->L, P->s, cnt, idx);
    memcpy(P->out + (q * P->W + t * P->tw) * 8, idx, (size_t)cnt * 8);
  }
}

static HWP_Status am_run(void *payload) {
  am_plan *P = payload;
  const int64_t T = cpu_parallel_threads() > 0 ? cpu_parallel_threads() : 1;
  P->col = P->kn >= 1 && P->kstride[P->kn - 1] == 1 && P->s != 1 && P->s != -1 &&
           P->kshape[P->kn - 1] >= 8;
  if (P->col) {
    P->W = P->kshape[P->kn - 1];
    int64_t Q = P->nout / P->W;
    P->tw = RD_TILE;
    while (P->tw > 16 && Q * rd_cdiv(P->W, P->tw) < 4 * T) P->tw /= 2;
    P->ntiles = rd_cdiv(P->W, P->tw);
    cpu_parallel_for(Q * P->ntiles, rd_max(1, 32768 / (P->L * P->tw)), am_cols_task, P);
    return HWP_OK;
  }
  if (T > 1 && P->nout < 2 * T && P->L >= 65536) {
    P->chunks = rd_min(rd_cdiv(4 * T, P->nout), P->L / 16384);
    P->chunk_len = rd_cdiv(P->L, P->chunks);
    P->chunks = rd_cdiv(P->L, P->chunk_len);
    int64_t n = P->nout * P->chunks;
    P->pidx = malloc((size_t)n * sizeof(int64_t));
    P->pval = malloc((size_t)n * sizeof(uint64_t));
    if (P->pidx == NULL || P->pval == NULL) {
      free(P->pidx);
      free(P->pval);
      return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "argmax/argmin: no memory for partials");
    }
    cpu_parallel_for(n, 1, am_split_task, P);
    for (int64_t o = 0; o < P->nout; ++o) {
      int64_t best = o * P->chunks;
      for (int64_t c = 1; c < P->chunks; ++c)
        if (P->ops->better(&P->pval[o * P->chunks + c], &P->pval[best])) best = o * P->chunks + c;
      memcpy(P->out + o * 8, &P->pidx[best], 8);
    }
    free(P->pidx);
    free(P->pval);
    return HWP_OK;
  }
  cpu_parallel_for(P->nout, rd_max(1, 32768 / P->L), am_rows_task, P);
  return HWP_OK;
}

static HWP_Status am_kernel(const HWP_KernelContext *ctx, int which, const char *op) {
  HWP_Status st = cpu_check_context(ctx, op, 1, 1);
  if (st != HWP_OK) return st;
  cpu_view x, y;
  if ((st = cpu_view_load(op, "input 0", &ctx->inputs[0], &x)) != HWP_OK) return st;
  if ((st = cpu_view_load(op, "output 0", &ctx->outputs[0], &y)) != HWP_OK) return st;
  if ((st = cpu_rview_require_contiguous(op, &y)) != HWP_OK) return st;
  if (y.dtype != HWP_DTYPE_INT64)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output dtype must be int64, got %s", op,
                     cpu_dtype_name(y.dtype));
  int64_t axis = 0;
  if ((st = cpu_attr_axis(ctx, op, "axis", x.ndim, &axis)) != HWP_OK) return st;
  am_plan *P = calloc(1, sizeof *P);
  if (P == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for the plan", op);
  P->ops = &g_am_ops[which][x.dtype];
  P->in = x.base;
  P->out = y.base;
  P->isz = (int64_t)x.itemsize;
  P->L = x.ndim > 0 ? x.shape[axis] : 1;
  P->s = x.ndim > 0 ? x.strides[axis] : 1;
  P->nout = 1;
  for (int k = 0; k < x.ndim; ++k) {
    if (k == axis) continue;
    P->nout *= x.shape[k];
    P->kshape[P->kn] = x.shape[k];
    P->kstride[P->kn] = x.strides[k];
    ++P->kn;
  }
  if (y.numel != P->nout) {
    long long nout = (long long)P->nout;
    free(P);
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output has %lld elements, expected %lld",
                     op, (long long)y.numel, nout);
  }
  if (P->nout == 0) {
    free(P);
    return HWP_OK;
  }
  if (P->L == 0) {
    free(P);
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: reduction over an empty axis", op);
  }
  P->kn = cpu_merge_dims(P->kn, P->kshape, P->kstride);
  st = cpu_submit_call(ctx, op, am_run, free, P, (uint64_t)x.numel); /* takes P */
  return st;
}

static HWP_Status kernel_argmax(const HWP_KernelContext *ctx) {
  return am_kernel(ctx, 0, "argmax");
}
static HWP_Status kernel_argmin(const HWP_KernelContext *ctx) {
  return am_kernel(ctx, 1, "argmin");
}

/* ---- cumsum / cumprod ----------------------------------------------------------------------
 * Same accumulators as sum/prod; the output is int64 for bool/integers, else the input dtype.
 * A scan along a contiguous-output axis runs row by row (long rows split in chunks: totals,
 * prefix of totals, rescan); along an outer axis a tile of columns scans together. */

typedef struct cs_ops {
  /* acc op= x[i*s], out[i] = acc, for i < n (out contiguous, the output dtype). */
  void (*scan)(void *acc, const char *p, int64_t n, int64_t s, char *out);
  /* For c < cnt: acc[c] op= x[off[c]] (off NULL: x[c]); out[c] = acc[c]. */
  void (*step)(void *acc, const char *p, const int64_t *off, int64_t cnt, char *out);
} cs_ops;

#define CS_ST_bool_(v) ((int64_t)(v))
#define CS_ST_int8(v) ((int64_t)(v))
#define CS_ST_uint8(v) ((int64_t)(v))
#define CS_ST_int16(v) ((int64_t)(v))
#define CS_ST_int32(v) ((int64_t)(v))
#define CS_ST_int64(v) ((int64_t)(v))
#define CS_ST_float16(v) cpu_f32_to_f16(v)
#define CS_ST_bfloat16(v) cpu_f32_to_bf16(v)
#define CS_ST_float32(v) ((float)(v))
#define CS_ST_float64(v) (v)
#define CS_OT_bool_ int64_t
#define CS_OT_int8 int64_t
#define CS_OT_uint8 int64_t
#define CS_OT_int16 int64_t
#define CS_OT_int32 int64_t
#define CS_OT_int64 int64_t
#define CS_OT_float16 uint16_t
#define CS_OT_bfloat16 uint16_t
#define CS_OT_float32 float
#define CS_OT_float64 double
#define CS_ODT_bool_ HWP_DTYPE_INT64
#define CS_ODT_int8 HWP_DTYPE_INT64
#define CS_ODT_uint8 HWP_DTYPE_INT64
#define CS_ODT_int16 HWP_DTYPE_INT64
#define CS_ODT_int32 HWP_DTYPE_INT64
#define CS_ODT_int64 HWP_DTYPE_INT64
#define CS_ODT_float16 HWP_DTYPE_FLOAT16
#define CS_ODT_bfloat16 HWP_DTYPE_BFLOAT16
#define CS_ODT_float32 HWP_DTYPE_FLOAT32
#define CS_ODT_float64 HWP_DTYPE_FLOAT64

#define CS_DEFINE(NAME, T, ACC, LOAD, COMB, OT, STORE)                                         \
  static void NAME##_scan(void *accp, const char *p, int64_t n, int64_t s, char *outp) {       \
    const CPU_UA(T) *x = (const CPU_UA(T) *)p;                                                 \
    CPU_UA(OT) *o = (CPU_UA(OT) *)outp;                                                        \
    ACC a = *(ACC *)accp;                                                                      \
    for (int64_t i = 0; i < n; ++i) {                                                          \
      ACC v = LOAD(x[i * s]);                                                                  \
      a = COMB(a, v);                                                                          \
      o[i] = STORE(a);                                                                         \
    }                                                                                          \
    *(ACC *)accp = a;                                                                          \
  }                                                                                            \
  static void NAME##_step(void *accp, const char *p, const int64_t *off, int64_t cnt,          \
                          char *outp) {                                                        \
    ACC *acc = (ACC *)accp;                                                                    \
    const CPU_UA(T) *x = (const CPU_UA(T) *)p;                                                 \
    CPU_UA(OT) *o = (CPU_UA(OT) *)outp;                                                        \
    if (off == NULL) {                                                                         \
      for (int64_t c = 0; c < cnt; ++c) {                                                      \
        ACC v = LOAD(x[c]);                                                                    \
        acc[c] = COMB(acc[c], v);                                                              \
        o[c] = STORE(acc[c]);                                                                  \
      }                                                                                        \
    } else {                                                                                   \
      for (int64_t c = 0; c < cnt; ++c) {                                                      \
        ACC v = LOAD(x[off[c]]);                                                               \
        acc[c] = COMB(acc[c], v);                                                              \
        o[c] = STORE(acc[c]);                                                                  \
      }                                                                                        \
    }                                                                                          \
  }
#define CS_DEF_SUM(CODE, name, T)                                                              \
  CS_DEFINE(csum_##name, T, RD_SACC_##name, RD_SLD_##name, RD_ADD, CS_OT_##name, CS_ST_##name)
#define CS_DEF_PROD(CODE, name, T)                                                             \
  CS_DEFINE(cprod_##name, T, RD_SACC_##name, RD_SLD_##name, RD_MUL, CS_OT_##name, CS_ST_##name)
CPU_FOR_EACH_DTYPE(CS_DEF_SUM)
CPU_FOR_EACH_DTYPE(CS_DEF_PROD)
#define CS_ENTRY_SUM(CODE, name, T) {csum_##name##_scan, csum_##name##_step},
#define CS_ENTRY_PROD(CODE, name, T) {cprod_##name##_scan, cprod_##name##_step},
#define CS_ENTRY_ODT(CODE, name, T) CS_ODT_##name,
static const cs_ops g_cs_ops[2][HWP_DTYPE_COUNT] = {
    {CPU_FOR_EACH_DTYPE(CS_ENTRY_SUM)},
    {CPU_FOR_EACH_DTYPE(CS_ENTRY_PROD)},
};
static const HWP_DType g_cs_out_dtype[HWP_DTYPE_COUNT] = {CPU_FOR_EACH_DTYPE(CS_ENTRY_ODT)};

typedef struct cs_plan {
  const cs_ops *ops;
  const rd_ops *rops; /* identity, totals and merges (same accumulator) */
  char *in, *out;
  int64_t isz, osz, asz;
  int on, inn;
  int64_t oshape[HWP_MAX_NDIM], ostride[HWP_MAX_NDIM]; /* dims before the axis */
  int64_t ishape[HWP_MAX_NDIM], istride[HWP_MAX_NDIM]; /* dims after the axis */
  int64_t O, L, I, s;
  /* chosen by cs_run */
  int64_t tw, ntiles, chunks, chunk_len;
  char *partial;
} cs_plan;

static void cs_rows_task(void *ctx, int64_t b, int64_t e) {
  const cs_plan *P = ctx;
  uint64_t acc;
  for (int64_t o = b; o < e; ++o) {
    int64_t off = cpu_unravel_offset(o, P->on, P->oshape, P->ostride);
    P->rops->init(&acc, 1);
    P->ops->scan(&acc, P->in + off * P->isz, P->L, P->s, P->out + o * P->L * P->osz);
  }
}

/* Long rows, pass 1 (totals of each chunk, into partial) or 3 (rescan from the prefix). */
static void cs_chunks_task(void *ctx, int64_t b, int64_t e, int rescan) {
  const cs_plan *P = ctx;
  for (int64_t t = b; t < e; ++t) {
    int64_t o = t / P->chunks, c = t - o * P->chunks;
    int64_t off = cpu_unravel_offset(o, P->on, P->oshape, P->ostride);
    int64_t r0 = c * P->chunk_len, n = rd_min(P->L - r0, P->chunk_len);
    const char *src = P->in + (off + r0 * P->s) * P->isz;
    void *acc = P->partial + t * P->asz;
    if (rescan) {
      P->ops->scan(acc, src, n, P->s, P->out + (o * P->L + r0) * P->osz);
    } else {
      P->rops->init(acc, 1);
      P->rops->row(acc, src, n, P->s);
    }
  }
}
static void cs_totals_task(void *ctx, int64_t b, int64_t e) { cs_chunks_task(ctx, b, e, 0); }
static void cs_rescan_task(void *ctx, int64_t b, int64_t e) { cs_chunks_task(ctx, b, e, 1); }

static void cs_cols_task(void *ctx, int64_t b, int64_t e) {
  const cs_plan *P = ctx;
  uint64_t acc[RD_TILE];
  int64_t offs[RD_TILE];
  const int contiguous = P->inn == 1 && P->istride[0] == 1;
  for (int64_t g = b; g < e; ++g) {
    int64_t o = g / P->ntiles, t = g - o * P->ntiles;
    int64_t i0 = t * P->tw, cnt = rd_min(P->tw, P->I - i0);
    int64_t base = cpu_unravel_offset(o, P->on, P->oshape, P->ostride);
    if (contiguous) {
      base += i0;
    } else {
      for (int64_t c = 0; c < cnt; ++c)
        offs[c] = cpu_unravel_offset(i0 + c, P->inn, P->ishape, P->istride);
    }
    P->rops->init(acc, cnt);
    for (int64_t l = 0; l < P->L; ++l)
      P->ops->step(acc, P->in + (base + l * P->s) * P->isz, contiguous ? NULL : offs, cnt,
                   P->out + ((o * P->L + l) * P->I + i0) * P->osz);
  }
}

static HWP_Status cs_run(void *payload) {
  cs_plan *P = payload;
  const int64_t T = cpu_parallel_threads() > 0 ? cpu_parallel_threads() : 1;
  if (P->I > 1) {
    P->tw = RD_TILE;
    while (P->tw > 16 && P->O * rd_cdiv(P->I, P->tw) < 4 * T) P->tw /= 2;
    P->ntiles = rd_cdiv(P->I, P->tw);
    cpu_parallel_for(P->O * P->ntiles, rd_max(1, 32768 / (P->L * P->tw)), cs_cols_task, P);
    return HWP_OK;
  }
  if (T > 1 && P->O < 2 * T && P->L >= 131072) {
    P->chunks = rd_min(rd_cdiv(4 * T, P->O), P->L / 32768);
    P->chunk_len = rd_cdiv(P->L, P->chunks);
    P->chunks = rd_cdiv(P->L, P->chunk_len);
    int64_t n = P->O * P->chunks;
    P->partial = cpu_scratch((size_t)(n * P->asz));
    if (P->partial == NULL)
      return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "cumsum/cumprod: no memory for partials");
    cpu_parallel_for(n, 1, cs_totals_task, P);
    for (int64_t o = 0; o < P->O; ++o) { /* exclusive prefix of the chunk totals */
      uint64_t run;
      P->rops->init(&run, 1);
      for (int64_t c = 0; c < P->chunks; ++c) {
        char *slot = P->partial + (o * P->chunks + c) * P->asz;
        uint64_t total;
        memcpy(&total, slot, (size_t)P->asz);
        memcpy(slot, &run, (size_t)P->asz);
        P->rops->merge(&run, &total, 1);
      }
    }
    cpu_parallel_for(n, 1, cs_rescan_task, P);
    free(P->partial);
    P->partial = NULL;
    return HWP_OK;
  }
  cpu_parallel_for(P->O, rd_max(1, 32768 / P->L), cs_rows_task, P);
  return HWP_OK;
}

static HWP_Status cs_kernel(const HWP_KernelContext *ctx, int prod, const char *op) {
  HWP_Status st = cpu_check_context(ctx, op, 1, 1);
  if (st != HWP_OK) return st;
  cpu_view x, y;
  if ((st = cpu_view_load(op, "input 0", &ctx->inputs[0], &x)) != HWP_OK) return st;
  if ((st = cpu_view_load(op, "output 0", &ctx->outputs[0], &y)) != HWP_OK) return st;
  if ((st = cpu_rview_require_contiguous(op, &y)) != HWP_OK) return st;
  if (y.dtype != g_cs_out_dtype[x.dtype])
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output dtype %s, expected %s for %s", op,
                     cpu_dtype_name(y.dtype), cpu_dtype_name(g_cs_out_dtype[x.dtype]),
                     cpu_dtype_name(x.dtype));
  if (y.numel != x.numel)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output has %lld elements, input %lld", op,
                     (long long)y.numel, (long long)x.numel);
  int64_t axis = 0;
  if ((st = cpu_attr_axis(ctx, op, "axis", x.ndim, &axis)) != HWP_OK) return st;
  if (x.numel == 0) return HWP_OK;
  cs_plan *P = calloc(1, sizeof *P);
  if (P == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for the plan", op);
  P->ops = &g_cs_ops[prod][x.dtype];
  P->rops = &g_rd_ops[prod ? RD_PROD : RD_SUM][x.dtype];
  P->in = x.base;
  P->out = y.base;
  P->isz = (int64_t)x.itemsize;
  P->osz = (int64_t)y.itemsize;
  P->asz = (int64_t)P->rops->acc_size;
  CPU_SPLIT_AXIS(P, &x, axis);
  st = cpu_submit_call(ctx, op, cs_run, free, P, (uint64_t)x.numel); /* takes P */
  return st;
}

static HWP_Status kernel_cumsum(const HWP_KernelContext *ctx) {
  return cs_kernel(ctx, 0, "cumsum");
}
static HWP_Status kernel_cumprod(const HWP_KernelContext *ctx) {
  return cs_kernel(ctx, 1, "cumprod");
}

void cpu_register_reduction_kernels(const HWP_HostApi *host) {
  static const struct {
    const char *op;
    HWP_KernelFn fn;
  } ops[] = {
      {"sum", kernel_sum},       {"prod", kernel_prod},     {"max", kernel_max},
      {"min", kernel_min},       {"argmax", kernel_argmax}, {"argmin", kernel_argmin},
      {"cumsum", kernel_cumsum}, {"cumprod", kernel_cumprod},
  };
  /* ops.yaml: every one of these is defined for all dtypes. */
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; ++o)
    for (HWP_DType d = 0; d < HWP_DTYPE_COUNT; ++d)
      cpu_register_one(host, ops[o].op, d, ops[o].fn, HWP_KERNEL_ACCEPTS_STRIDED);
  /* mean, a composite the plugin runs natively (ops.yaml `native`): the float dtypes. */
  for (HWP_DType d = HWP_DTYPE_FLOAT16; d <= HWP_DTYPE_FLOAT64; ++d)
    cpu_register_one(host, "mean", d, kernel_mean, HWP_KERNEL_ACCEPTS_STRIDED);
}
