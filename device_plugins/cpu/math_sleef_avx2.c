/* hwport CPU plugin — the AVX2+FMA entry points of sleef_math.h (compiled with -mavx2 -mfma;
 * called only from loops chosen at load for a CPU that has both). */
#ifdef HWPORT_CPU_HAVE_SLEEF /* else empty: a build without SLEEF compiles every file */
#define CPU_SLEEF_DEFINING_WRAPPERS 1
#include <immintrin.h>
#include <sleef.h>

#include "fast_vmathf.h"
#include "sleef_math.h"

/* 'd': 8 floats or 4 doubles in a ymm. */
#define CPU_SLEEF_ISA1(fn, ulp) CPU_SLEEF_WRAP1(d, 8, 4, __m256, __m256d, avx2, fn, ulp)
#define CPU_SLEEF_ISA2(fn, ulp) CPU_SLEEF_WRAP2(d, 8, 4, __m256, __m256d, avx2, fn, ulp)
CPU_SLEEF_UNARY(CPU_SLEEF_ISA1)

typedef int32_t cpu_v8si __attribute__((vector_size(32)));
CPU_FAST_VMATHF(cpu_v8, __m256, cpu_v8si, _mm256_max_ps, cpu_v8_exp_scale)
#define CPU_V8_BIG(x)                                                                          \
  _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x),                 \
                                   _mm256_set1_ps(CPU_FAST_TRIG_MAX), _CMP_NLE_UQ))
#define CPU_SLEEF_ISA1_D(fn, ulp) CPU_SLEEF_WRAP1_D(d, 4, __m256d, avx2, fn, ulp)
CPU_SLEEF_UNARY_OWNF(CPU_SLEEF_ISA1_D)
/* some lane below the smallest normal float, infinite or NaN (x < FLT_MIN or !(x < inf)) */
#define CPU_V8_ODD(x)                                                                          \
  _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(x, _mm256_set1_ps(0x1p-126f), _CMP_NGE_UQ),    \
                                  _mm256_cmp_ps(x, _mm256_set1_ps(__builtin_inff()), _CMP_NLT_UQ)))
CPU_OWN_WRAP_F(d, 8, __m256, cpu_v8, avx2, CPU_V8_BIG, CPU_V8_ODD)

CPU_SLEEF_SQRT(d, 8, 4, __m256, __m256d, _mm256_sqrt_ps, _mm256_sqrt_pd)

__m256 _ZGVdN8v_cpu_vlog1p_f(__m256 x);
__m256d _ZGVdN4v_cpu_vlog1p_d(__m256d x);
__m256 _ZGVdN8v_cpu_vlog1p_f(__m256 x) { return cpu_v8_log1pf(x); }
__m256d _ZGVdN4v_cpu_vlog1p_d(__m256d x) {
  __m256d r = Sleef_log1pd4_u10avx2(x);
  __m256d big = _mm256_cmp_pd(x, _mm256_set1_pd(CPU_SLEEF_LOG1P_BIG_D), _CMP_GT_OQ);
  if (_mm256_movemask_pd(big) == 0) return r;
  return _mm256_blendv_pd(r, Sleef_logd4_u10avx2(x), big);
}
CPU_SLEEF_BINARY(CPU_SLEEF_ISA2)

#endif
