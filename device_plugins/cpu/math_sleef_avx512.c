/* hwport CPU plugin — the AVX-512 entry points of sleef_math.h (compiled with -mavx512f -mfma;
 * called only from loops chosen at load for a CPU that has AVX-512F and DQ). */
#ifdef HWPORT_CPU_HAVE_SLEEF /* else empty: a build without SLEEF compiles every file */
#define CPU_SLEEF_DEFINING_WRAPPERS 1
#include <immintrin.h>
#include <sleef.h>

#include "fast_vmathf.h"
#include "sleef_math.h"

/* 'e': 16 floats or 8 doubles in a zmm. */
#define CPU_SLEEF_ISA1(fn, ulp) CPU_SLEEF_WRAP1(e, 16, 8, __m512, __m512d, avx512f, fn, ulp)
#define CPU_SLEEF_ISA2(fn, ulp) CPU_SLEEF_WRAP2(e, 16, 8, __m512, __m512d, avx512f, fn, ulp)
CPU_SLEEF_UNARY(CPU_SLEEF_ISA1)

typedef int32_t cpu_v16si __attribute__((vector_size(64)));
/* sigmoid's p 2^n: vscalefps (rounds once into the subnormals; n = -inf never reaches it) */
#define CPU_V16_SCALEF(p, n, ni) _mm512_scalef_ps(p, n)
CPU_FAST_VMATHF(cpu_v16, __m512, cpu_v16si, _mm512_max_ps, CPU_V16_SCALEF)
#define CPU_V16_BIG(x)                                                                         \
  _mm512_cmp_ps_mask(_mm512_abs_ps(x), _mm512_set1_ps(CPU_FAST_TRIG_MAX), _CMP_NLE_UQ)
#define CPU_SLEEF_ISA1_D(fn, ulp) CPU_SLEEF_WRAP1_D(e, 8, __m512d, avx512f, fn, ulp)
CPU_SLEEF_UNARY_OWNF(CPU_SLEEF_ISA1_D)
#define CPU_V16_ODD(x)                                                                         \
  (_mm512_cmp_ps_mask(x, _mm512_set1_ps(0x1p-126f), _CMP_NGE_UQ) |                             \
   _mm512_cmp_ps_mask(x, _mm512_set1_ps(__builtin_inff()), _CMP_NLT_UQ))
CPU_OWN_WRAP_F(e, 16, __m512, cpu_v16, avx512f, CPU_V16_BIG, CPU_V16_ODD)

CPU_SLEEF_SQRT(e, 16, 8, __m512, __m512d, _mm512_sqrt_ps, _mm512_sqrt_pd)

__m512 _ZGVeN16v_cpu_vlog1p_f(__m512 x);
__m512d _ZGVeN8v_cpu_vlog1p_d(__m512d x);
__m512 _ZGVeN16v_cpu_vlog1p_f(__m512 x) { return cpu_v16_log1pf(x); }
__m512d _ZGVeN8v_cpu_vlog1p_d(__m512d x) {
  __m512d r = Sleef_log1pd8_u10avx512f(x);
  __mmask8 big = _mm512_cmp_pd_mask(x, _mm512_set1_pd(CPU_SLEEF_LOG1P_BIG_D), _CMP_GT_OQ);
  return big == 0 ? r : _mm512_mask_blend_pd(big, r, Sleef_logd8_u10avx512f(x));
}
CPU_SLEEF_BINARY(CPU_SLEEF_ISA2)

#endif
