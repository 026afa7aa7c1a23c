/* hwport CPU plugin — the scalar and SSE2 (baseline x86-64) entry points of sleef_math.h. */
#ifdef HWPORT_CPU_HAVE_SLEEF /* else empty: a build without SLEEF compiles every file */
#define CPU_SLEEF_DEFINING_WRAPPERS 1
#include <immintrin.h>
#include <sleef.h>

#include "sleef_math.h"

/* The x86-64 vector function ABI's SSE2 variants ('b': 4 floats or 2 doubles in an xmm). */
#define CPU_SLEEF_SSE2_1(f, ulp)                                                               \
  float cpu_v##f##_f(float x) { return Sleef_##f##f_##ulp(x); }                                \
  double cpu_v##f##_d(double x) { return Sleef_##f##_##ulp(x); }                               \
  __m128 _ZGVbN4v_cpu_v##f##_f(__m128 x);                                                      \
  __m128d _ZGVbN2v_cpu_v##f##_d(__m128d x);                                                    \
  __m128 _ZGVbN4v_cpu_v##f##_f(__m128 x) { return Sleef_##f##f4_##ulp##sse2(x); }              \
  __m128d _ZGVbN2v_cpu_v##f##_d(__m128d x) { return Sleef_##f##d2_##ulp##sse2(x); }
#define CPU_SLEEF_SSE2_2(f, ulp)                                                               \
  float cpu_v##f##_f(float x, float y) { return Sleef_##f##f_##ulp(x, y); }                    \
  double cpu_v##f##_d(double x, double y) { return Sleef_##f##_##ulp(x, y); }                  \
  __m128 _ZGVbN4vv_cpu_v##f##_f(__m128 x, __m128 y);                                           \
  __m128d _ZGVbN2vv_cpu_v##f##_d(__m128d x, __m128d y);                                        \
  __m128 _ZGVbN4vv_cpu_v##f##_f(__m128 x, __m128 y) { return Sleef_##f##f4_##ulp##sse2(x, y); } \
  __m128d _ZGVbN2vv_cpu_v##f##_d(__m128d x, __m128d y) { return Sleef_##f##d2_##ulp##sse2(x, y); }
CPU_SLEEF_UNARY(CPU_SLEEF_SSE2_1)

float cpu_vsqrt_f(float x) { return __builtin_sqrtf(x); }
double cpu_vsqrt_d(double x) { return __builtin_sqrt(x); }
__m128 _ZGVbN4v_cpu_vsqrt_f(__m128 x);
__m128d _ZGVbN2v_cpu_vsqrt_d(__m128d x);
__m128 _ZGVbN4v_cpu_vsqrt_f(__m128 x) { return _mm_sqrt_ps(x); }
__m128d _ZGVbN2v_cpu_vsqrt_d(__m128d x) { return _mm_sqrt_pd(x); }

float cpu_vlog1p_f(float x) {
  return x > CPU_SLEEF_LOG1P_BIG_F ? Sleef_logf_u10(x) : Sleef_log1pf_u10(x);
}
double cpu_vlog1p_d(double x) {
  return x > CPU_SLEEF_LOG1P_BIG_D ? Sleef_log_u10(x) : Sleef_log1p_u10(x);
}
__m128 _ZGVbN4v_cpu_vlog1p_f(__m128 x);
__m128d _ZGVbN2v_cpu_vlog1p_d(__m128d x);
__m128 _ZGVbN4v_cpu_vlog1p_f(__m128 x) {
  __m128 r = Sleef_log1pf4_u10sse2(x), big = _mm_cmpgt_ps(x, _mm_set1_ps(CPU_SLEEF_LOG1P_BIG_F));
  if (_mm_movemask_ps(big) == 0) return r;
  return _mm_or_ps(_mm_and_ps(big, Sleef_logf4_u10sse2(x)), _mm_andnot_ps(big, r));
}
__m128d _ZGVbN2v_cpu_vlog1p_d(__m128d x) {
  __m128d r = Sleef_log1pd2_u10sse2(x), big = _mm_cmpgt_pd(x, _mm_set1_pd(CPU_SLEEF_LOG1P_BIG_D));
  if (_mm_movemask_pd(big) == 0) return r;
  return _mm_or_pd(_mm_and_pd(big, Sleef_logd2_u10sse2(x)), _mm_andnot_pd(big, r));
}
CPU_SLEEF_BINARY(CPU_SLEEF_SSE2_2)

#endif
