/* hwport CPU plugin — the AVX2+FMA entry points of sleef_math.h (compiled with -mavx2 -mfma;
 * called only from loops chosen at load for a CPU that has both). */
#ifdef HWPORT_CPU_HAVE_SLEEF /* else empty: a build without SLEEF compiles every file */
#define CPU_SLEEF_DEFINING_WRAPPERS 1
#include <immintrin.h>
#include <sleef.h>

#include "sleef_math.h"

/* 'd': 8 floats or 4 doubles in a ymm. */
#define CPU_SLEEF_AVX2_1(f, ulp)                                                               \
  __m256 _ZGVdN8v_cpu_v##f##_f(__m256 x);                                                      \
  __m256d _ZGVdN4v_cpu_v##f##_d(__m256d x);                                                    \
  __m256 _ZGVdN8v_cpu_v##f##_f(__m256 x) { return Sleef_##f##f8_##ulp##avx2(x); }              \
  __m256d _ZGVdN4v_cpu_v##f##_d(__m256d x) { return Sleef_##f##d4_##ulp##avx2(x); }
#define CPU_SLEEF_AVX2_2(f, ulp)                                                               \
  __m256 _ZGVdN8vv_cpu_v##f##_f(__m256 x, __m256 y);                                           \
  __m256d _ZGVdN4vv_cpu_v##f##_d(__m256d x, __m256d y);                                        \
  __m256 _ZGVdN8vv_cpu_v##f##_f(__m256 x, __m256 y) { return Sleef_##f##f8_##ulp##avx2(x, y); } \
  __m256d _ZGVdN4vv_cpu_v##f##_d(__m256d x, __m256d y) { return Sleef_##f##d4_##ulp##avx2(x, y); }
CPU_SLEEF_UNARY(CPU_SLEEF_AVX2_1)

__m256 _ZGVdN8v_cpu_vsqrt_f(__m256 x);
__m256d _ZGVdN4v_cpu_vsqrt_d(__m256d x);
__m256 _ZGVdN8v_cpu_vsqrt_f(__m256 x) { return _mm256_sqrt_ps(x); }
__m256d _ZGVdN4v_cpu_vsqrt_d(__m256d x) { return _mm256_sqrt_pd(x); }

__m256 _ZGVdN8v_cpu_vlog1p_f(__m256 x);
__m256d _ZGVdN4v_cpu_vlog1p_d(__m256d x);
__m256 _ZGVdN8v_cpu_vlog1p_f(__m256 x) {
  __m256 r = Sleef_log1pf8_u10avx2(x);
  __m256 big = _mm256_cmp_ps(x, _mm256_set1_ps(CPU_SLEEF_LOG1P_BIG_F), _CMP_GT_OQ);
  if (_mm256_movemask_ps(big) == 0) return r;
  return _mm256_blendv_ps(r, Sleef_logf8_u10avx2(x), big);
}
__m256d _ZGVdN4v_cpu_vlog1p_d(__m256d x) {
  __m256d r = Sleef_log1pd4_u10avx2(x);
  __m256d big = _mm256_cmp_pd(x, _mm256_set1_pd(CPU_SLEEF_LOG1P_BIG_D), _CMP_GT_OQ);
  if (_mm256_movemask_pd(big) == 0) return r;
  return _mm256_blendv_pd(r, Sleef_logd4_u10avx2(x), big);
}
CPU_SLEEF_BINARY(CPU_SLEEF_AVX2_2)

#endif
