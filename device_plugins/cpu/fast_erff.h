/* hwport CPU plugin — a float32 erf that loops vectorize (the elementwise erf, and so gelu's
 * exact form; float16/bfloat16 compute in float32 and use it too). */
#ifndef HWPORT_CPU_FAST_ERFF_H
#define HWPORT_CPU_FAST_ERFF_H

#include <stdint.h>

#include "fast_expf.h"
#include "half.h"

/* erf(x) in float32 without calls or branches (SLEEF's vector erff is ~2x slower than torch's):
 * with a = |x|, both forms are computed and one is selected by a bit mask, then x's sign put on.
 *  - a < 0.875: erf(a) = a + a * q(a^2), q of degree 5 (erf(a)/a - 1, which keeps the final
 *    rounding of the sum the dominant error);
 *  - a >= 0.875: erf(a) = 1 - exp(r(a)), r of degree 7 approximating log(erfc(a)) on
 *    [0.875, 4]; a is clamped to 4, where erfc(4) = 1.5e-8 already rounds 1 - erfc to 1.
 * Both polynomials were fitted here (weighted least squares iterated towards minimax, against
 * float64 math.erf/erfc); fit error <= 1e-8 relative in erf. Measured against float64 erf over
 * a dense grid: <= 2 ulp (benchmarks/ulp_math.py); erf(+-inf) = +-1, NaN stays NaN, -0 -> -0,
 * subnormals -> 2/sqrt(pi) x (gradual underflow kept). */
static inline float cpu_erff(float x) {
  uint32_t sign = cpu_f32_bits(x) & 0x80000000u;
  float a = cpu_bits_f32(cpu_f32_bits(x) & 0x7fffffffu);
  /* masks, not float selects: GCC keeps these if-converted under trapping math (fast_expf.h) */
  uint32_t big = 0u - (uint32_t)(a > 4.0f);
  float ac = cpu_bits_f32((cpu_f32_bits(a) & ~big) | (cpu_f32_bits(4.0f) & big));
  float t = a * a;
  float q = -6.203530520e-04f;
  q = q * t + 5.032239864e-03f;
  q = q * t + -2.679150833e-02f;
  q = q * t + 1.128245686e-01f;
  q = q * t + -3.761255068e-01f;
  q = q * t + 1.283791576e-01f;
  float small = a + a * q;
  float r = -2.045175206e-05f;
  r = r * ac + 4.270871719e-04f;
  r = r * ac + -4.135663610e-03f;
  r = r * ac + 2.502718757e-02f;
  r = r * ac + -1.081390932e-01f;
  r = r * ac + -6.334734208e-01f;
  r = r * ac + -1.129453184e+00f;
  r = r * ac + 1.620291901e-04f;
  float large = 1.0f - cpu_expf(r);
  /* NaN compares false: it takes the large form, where it stays NaN */
  uint32_t lo = 0u - (uint32_t)(a < 0.875f);
  uint32_t bits = (cpu_f32_bits(small) & lo) | (cpu_f32_bits(large) & ~lo);
  return cpu_bits_f32(bits | sign);
}

/* The same as a function with simd clones (math_erff.c) where GCC makes them (x86-64), for the
 * elementwise loops; elsewhere the inline function. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CPU_ERFF_SIMD_CLONES 1
__attribute__((simd("notinbranch"), const, nothrow)) float cpu_verff_f(float x);
#define cpu_erff_vec(x) cpu_verff_f(x)
#else
#define CPU_ERFF_SIMD_CLONES 0
#define cpu_erff_vec(x) cpu_erff(x)
#endif

#endif /* HWPORT_CPU_FAST_ERFF_H */
