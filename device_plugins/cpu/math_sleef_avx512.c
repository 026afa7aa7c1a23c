/* hwport CPU plugin — the AVX-512 entry points of sleef_math.h (compiled with -mavx512f -mfma;
 * called only from loops chosen at load for a CPU that has AVX-512F and DQ). */
#ifdef HWPORT_CPU_HAVE_SLEEF /* else empty: a build without SLEEF compiles every file */
#define CPU_SLEEF_DEFINING_WRAPPERS 1
#include <immintrin.h>
#include <sleef.h>

#include "sleef_math.h"

/* 'e': 16 floats or 8 doubles in a zmm. */
#define CPU_SLEEF_AVX512_1(f, ulp)                                                             \
  __m512 _ZGVeN16v_cpu_v##f##_f(__m512 x);                                                     \
  __m512d _ZGVeN8v_cpu_v##f##_d(__m512d x);                                                    \
  __m512 _ZGVeN16v_cpu_v##f##_f(__m512 x) { return Sleef_##f##f16_##ulp##avx512f(x); }         \
  __m512d _ZGVeN8v_cpu_v##f##_d(__m512d x) { return Sleef_##f##d8_##ulp##avx512f(x); }
#define CPU_SLEEF_AVX512_2(f, ulp)                                                             \
  __m512 _ZGVeN16vv_cpu_v##f##_f(__m512 x, __m512 y);                                          \
  __m512d _ZGVeN8vv_cpu_v##f##_d(__m512d x, __m512d y);                                        \
  __m512 _ZGVeN16vv_cpu_v##f##_f(__m512 x, __m512 y) {                                         \
    return Sleef_##f##f16_##ulp##avx512f(x, y);                                                \
  }                                                                                            \
  __m512d _ZGVeN8vv_cpu_v##f##_d(__m512d x, __m512d y) {                                       \
    return Sleef_##f##d8_##ulp##avx512f(x, y);                                                 \
  }
CPU_SLEEF_UNARY(CPU_SLEEF_AVX512_1)

__m512 _ZGVeN16v_cpu_vsqrt_f(__m512 x);
__m512d _ZGVeN8v_cpu_vsqrt_d(__m512d x);
__m512 _ZGVeN16v_cpu_vsqrt_f(__m512 x) { return _mm512_sqrt_ps(x); }
__m512d _ZGVeN8v_cpu_vsqrt_d(__m512d x) { return _mm512_sqrt_pd(x); }

__m512 _ZGVeN16v_cpu_vlog1p_f(__m512 x);
__m512d _ZGVeN8v_cpu_vlog1p_d(__m512d x);
__m512 _ZGVeN16v_cpu_vlog1p_f(__m512 x) {
  __m512 r = Sleef_log1pf16_u10avx512f(x);
  __mmask16 big = _mm512_cmp_ps_mask(x, _mm512_set1_ps(CPU_SLEEF_LOG1P_BIG_F), _CMP_GT_OQ);
  return big == 0 ? r : _mm512_mask_blend_ps(big, r, Sleef_logf16_u10avx512f(x));
}
__m512d _ZGVeN8v_cpu_vlog1p_d(__m512d x) {
  __m512d r = Sleef_log1pd8_u10avx512f(x);
  __mmask8 big = _mm512_cmp_pd_mask(x, _mm512_set1_pd(CPU_SLEEF_LOG1P_BIG_D), _CMP_GT_OQ);
  return big == 0 ? r : _mm512_mask_blend_pd(big, r, Sleef_logd8_u10avx512f(x));
}
CPU_SLEEF_BINARY(CPU_SLEEF_AVX512_2)

#endif
