/* hwport CPU plugin — IEEE binary16 (float16) and bfloat16 conversions.
 *
 * Widening (to float) is exact. Narrowing rounds to nearest, ties to even, directly from the
 * source precision (no double rounding through float for float64 sources). NaN stays NaN (quiet,
 * sign and top payload bits kept); overflow gives infinity; underflow gives subnormals / zero.
 * Relies on the default floating-point environment (round-to-nearest), never on -ffast-math. */
#ifndef HWPORT_CPU_HALF_H
#define HWPORT_CPU_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t cpu_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float cpu_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint64_t cpu_f64_bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline double cpu_bits_f64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

/* ---- float16 ---------------------------------------------------------------------------- */

static inline float cpu_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) /* inf / NaN, payload kept */
    return cpu_bits_f32(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) { /* zero / subnormal: mant * 2^-24, exact in float */
    float f = (float)mant * 5.9604644775390625e-08f;
    return sign ? -f : f;
  }
  return cpu_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

static inline uint16_t cpu_f32_to_f16(float f) {
  uint32_t x = cpu_f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) { /* inf or NaN */
    if (ax == 0x7f800000u) return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: rounds to inf */
  if (ax < 0x38800000u) { /* below 2^-14: half subnormal (units of 2^-24) */
    /* Adding 0.5 puts the value where float's ulp is 2^-24: the add rounds (RNE) for us. */
    float t = cpu_bits_f32(ax) + 0.5f;
    return (uint16_t)(sign | (cpu_f32_bits(t) - 0x3f000000u));
  }
  uint32_t r = ax - (112u << 23); /* rebias 127 -> 15 */
  r += 0xfffu + ((r >> 13) & 1u);
  return (uint16_t)(sign | (r >> 13));
}

static inline uint16_t cpu_f64_to_f16(double d) {
  uint64_t x = cpu_f64_bits(d);
  uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
  uint64_t ax = x & 0x7fffffffffffffffull;
  if (ax >= 0x7ff0000000000000ull) {
    if (ax == 0x7ff0000000000000ull) return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | 0x7e00u | ((ax >> 42) & 0x3ffu));
  }
  if (ax >= 0x40effe0000000000ull) return (uint16_t)(sign | 0x7c00u); /* >= 65520 */
  if (ax < 0x3f10000000000000ull) { /* below 2^-14 */
    /* 2^28 has a double ulp of 2^-24, the half subnormal unit. */
    double t = cpu_bits_f64(ax) + 268435456.0;
    return (uint16_t)(sign | (uint16_t)(cpu_f64_bits(t) - 0x41b0000000000000ull));
  }
  uint64_t r = ax - (1008ull << 52); /* rebias 1023 -> 15 */
  r += ((1ull << 41) - 1u) + ((r >> 42) & 1u);
  return (uint16_t)(sign | (uint16_t)(r >> 42));
}

/* ---- bfloat16 --------------------------------------------------------------------------- */

static inline float cpu_bf16_to_f32(uint16_t b) { return cpu_bits_f32((uint32_t)b << 16); }

static inline uint16_t cpu_f32_to_bf16(float f) {
  uint32_t x = cpu_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static inline uint16_t cpu_f64_to_bf16(double d) {
  uint64_t x = cpu_f64_bits(d);
  uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
  uint64_t ax = x & 0x7fffffffffffffffull;
  if (ax >= 0x7ff0000000000000ull) {
    if (ax == 0x7ff0000000000000ull) return (uint16_t)(sign | 0x7f80u);
    return (uint16_t)(sign | 0x7fc0u | ((ax >> 45) & 0x7fu));
  }
  /* (2 - 2^-8) * 2^127: halfway between the largest bfloat16 and 2^128; ties go up to inf. */
  if (ax >= 0x47eff00000000000ull) return (uint16_t)(sign | 0x7f80u);
  if (ax < 0x3810000000000000ull) { /* below 2^-126: bfloat16 subnormal, units of 2^-133 */
    double t = cpu_bits_f64(ax) + 0x1p-81; /* 2^-81 has a double ulp of 2^-133 */
    return (uint16_t)(sign | (uint16_t)(cpu_f64_bits(t) - 0x3ae0000000000000ull));
  }
  uint64_t r = ax - (896ull << 52); /* rebias 1023 -> 127 */
  r += ((1ull << 44) - 1u) + ((r >> 45) & 1u);
  return (uint16_t)(sign | (uint16_t)(r >> 45));
}

#endif /* HWPORT_CPU_HALF_H */
