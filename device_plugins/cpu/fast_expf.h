/* hwport CPU plugin — a float32 exp that loops vectorize (used by the elementwise exp and by
 * the fused softmax family). */
#ifndef HWPORT_CPU_FAST_EXPF_H
#define HWPORT_CPU_FAST_EXPF_H

#include <stdint.h>

#include "half.h"

/* exp(x) in float32 without calls or branches, so loops over it vectorize: x = n ln2 + r
 * (Cody-Waite, |r| <= ln2/2), a degree-6 polynomial for e^r (Cephes expf, ~1 ulp), and 2^n
 * applied as two exact power-of-two factors so that gradual underflow and the top binade work.
 * exp(-inf) = 0, exp(+inf) = inf, NaN stays NaN. Always inlined: a loop that calls it (and
 * cpu_erff) more than once, as gelu_grad's does, otherwise gets an out-of-line scalar call and
 * does not vectorize (50x slower). */
static inline __attribute__((always_inline)) float cpu_expf(float x) {
  /* Clamp to [-104, 89] (exp(-104) rounds to 0, exp(89) overflows) with bit masks: a float
   * select here makes GCC thread jumps and give up if-conversion (trapping math). Below -104
   * the lane computes exp(0) and its result is masked to +0: computing the underflow itself
   * would cost a microcode assist per element (masked softmax rows are full of -inf). */
  uint32_t lo = 0u - (uint32_t)(x < -104.0f), hi = 0u - (uint32_t)(x > 89.0f);
  float xc = cpu_bits_f32((cpu_f32_bits(x) & ~(lo | hi)) | (cpu_f32_bits(89.0f) & hi));
  const float magic = 12582912.0f;      /* 1.5 * 2^23: adding it rounds to an integer */
  float t = xc * 1.44269504088896341f + magic;
  float n = t - magic;
  uint32_t ni = cpu_f32_bits(t) - cpu_f32_bits(magic); /* n as a two's-complement integer */
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  int32_t n1 = (int32_t)ni >> 1; /* n in [-150, 129]: n1, n - n1 in [-75, 65] */
  uint32_t n2 = ni - (uint32_t)n1;
  float s1 = cpu_bits_f32(((uint32_t)n1 + 127u) << 23);
  float s2 = cpu_bits_f32((n2 + 127u) << 23);
  return cpu_bits_f32(cpu_f32_bits(p * s1 * s2) & ~lo);
}

#endif /* HWPORT_CPU_FAST_EXPF_H */
