/* hwport CPU plugin — the scalar and SSE2 (baseline x86-64) entry points of sleef_math.h. */
#ifdef HWPORT_CPU_HAVE_SLEEF /* else empty: a build without SLEEF compiles every file */
#define CPU_SLEEF_DEFINING_WRAPPERS 1
#include <immintrin.h>
#include <sleef.h>

#include "fast_vmathf.h"
#include "sleef_math.h"

/* The x86-64 vector function ABI's SSE2 variants ('b': 4 floats or 2 doubles in an xmm). */
#define CPU_SLEEF_SCALAR1(fn, ulp)                                                             \
  float cpu_v##fn##_f(float x) { return Sleef_##fn##f_##ulp(x); }                              \
  double cpu_v##fn##_d(double x) { return Sleef_##fn##_##ulp(x); }                             \
  CPU_SLEEF_WRAP1(b, 4, 2, __m128, __m128d, sse2, fn, ulp)
#define CPU_SLEEF_SCALAR2(fn, ulp)                                                             \
  float cpu_v##fn##_f(float x, float y) { return Sleef_##fn##f_##ulp(x, y); }                  \
  double cpu_v##fn##_d(double x, double y) { return Sleef_##fn##_##ulp(x, y); }                \
  CPU_SLEEF_WRAP2(b, 4, 2, __m128, __m128d, sse2, fn, ulp)
CPU_SLEEF_UNARY(CPU_SLEEF_SCALAR1)
CPU_SLEEF_UNARY_OWNF(CPU_SLEEF_SCALAR1)

float cpu_vsqrt_f(float x) { return __builtin_sqrtf(x); }
double cpu_vsqrt_d(double x) { return __builtin_sqrt(x); }
CPU_SLEEF_SQRT(b, 4, 2, __m128, __m128d, _mm_sqrt_ps, _mm_sqrt_pd)

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
CPU_SLEEF_BINARY(CPU_SLEEF_SCALAR2)

/* sigmoid: fast_vmathf.h's over 4 lanes (SSE2 has no FMA: a multiply and an add each, still
 * within the AVX2/AVX-512 variants' error); the scalar function through lane 0 of it, so the
 * loops' scalar tails agree with their SSE2 bodies. */
typedef int32_t cpu_v4si __attribute__((vector_size(16)));
CPU_FAST_VMATHF(cpu_v4, __m128, cpu_v4si, _mm_max_ps, cpu_v4_exp_scale)
__m128 _ZGVbN4v_cpu_vsigmoid_f(__m128 x);
__m128 _ZGVbN4v_cpu_vsigmoid_f(__m128 x) { return cpu_v4_sigmoidf(x); }
float cpu_vsigmoid_f(float x) { return cpu_v4_sigmoidf(_mm_set1_ps(x))[0]; }

#endif
