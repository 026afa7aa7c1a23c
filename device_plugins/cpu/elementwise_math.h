/* hwport CPU plugin — the functions the generated elementwise table (elementwise_ops.h) calls,
 * for every compute type, and the integer/float helpers behind the ops whose C expression alone
 * does not give numpy's semantics for every dtype.
 *
 * Compute types: _Bool (bool), int8_t, uint8_t, int16_t, int32_t, int64_t (the integers, as
 * stored), float (float16, bfloat16, float32) and double (float64). ops.yaml's c_expr calls a
 * function f(...) as cpu_ew_f(...): a type-generic macro that picks f's float variant for float
 * (expf for exp: float32 math stays in float), f itself for double, and an exact version for
 * integers where one is meaningful (floor/ceil/round are identities, fabs wraps, pow is exact).
 *
 * Integer arithmetic never overflows a signed type: it is done in a wide unsigned type and
 * converted back (two's complement wrap-around, as numpy). */
#ifndef HWPORT_CPU_ELEMENTWISE_MATH_H
#define HWPORT_CPU_ELEMENTWISE_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fast_erff.h"
#include "fast_expf.h"
#ifdef HWPORT_CPU_HAVE_SLEEF
#include "sleef_math.h"
#endif

/* ---- integers --------------------------------------------------------------------------- */

/* sfx, signed type T, wide unsigned type W (arithmetic in W wraps, then converts back). */
#define CPU_EW_SIGNED_HELPERS(sfx, T, W)                                                       \
  static inline T cpu_ew_neg_##sfx(T x) { return (T)(0u - (W)x); }                            \
  static inline T cpu_ew_abs_##sfx(T x) { return x < 0 ? cpu_ew_neg_##sfx(x) : x; }           \
  static inline T cpu_ew_sub_##sfx(T x, T y) { return (T)((W)x - (W)y); }                      \
  static inline T cpu_ew_sign_##sfx(T x) { return (T)((x > 0) - (x < 0)); }                    \
  static inline T cpu_ew_max_##sfx(T x, T y) { return x >= y ? x : y; }                        \
  static inline T cpu_ew_min_##sfx(T x, T y) { return x <= y ? x : y; }                        \
  /* Python semantics: floor division, remainder with the divisor's sign; by zero: 0. */       \
  static inline T cpu_ew_floordiv_##sfx(T x, T y) {                                            \
    if (y == 0) return 0;                                                                      \
    if (y == -1) return cpu_ew_neg_##sfx(x); /* MIN / -1 wraps to MIN (and never traps) */     \
    T q = (T)(x / y), r = (T)(x % y);                                                          \
    return (r != 0 && ((r < 0) != (y < 0))) ? (T)(q - 1) : q;                                  \
  }                                                                                            \
  static inline T cpu_ew_mod_##sfx(T x, T y) {                                                 \
    if (y == 0 || y == -1) return 0;                                                           \
    T r = (T)(x % y);                                                                          \
    return (r != 0 && ((r < 0) != (y < 0))) ? (T)(r + y) : r;                                  \
  }                                                                                            \
  /* Exact power by squaring (wrapping); a negative exponent gives 1 / b**-e truncated:     */ \
  /* 1 for b == 1, +-1 for b == -1, 0 otherwise (0 ** -e included).                          */ \
  static inline T cpu_ew_ipow_##sfx(T b, T e) {                                                \
    if (e < 0) return b == 1 ? (T)1 : b == -1 ? (T)((e & 1) ? -1 : 1) : (T)0;                  \
    W r = 1, base = (W)b;                                                                      \
    for (W k = (W)e; k != 0; k >>= 1) {                                                        \
      if (k & 1u) r *= base;                                                                   \
      base *= base;                                                                            \
    }                                                                                          \
    return (T)r;                                                                               \
  }

#define CPU_EW_UNSIGNED_HELPERS(sfx, T, W)                                                     \
  static inline T cpu_ew_neg_##sfx(T x) { return (T)(0u - (W)x); }                            \
  static inline T cpu_ew_abs_##sfx(T x) { return x; }                                          \
  static inline T cpu_ew_sub_##sfx(T x, T y) { return (T)((W)x - (W)y); }                      \
  static inline T cpu_ew_sign_##sfx(T x) { return (T)(x > 0); }                                \
  static inline T cpu_ew_max_##sfx(T x, T y) { return x >= y ? x : y; }                        \
  static inline T cpu_ew_min_##sfx(T x, T y) { return x <= y ? x : y; }                        \
  static inline T cpu_ew_floordiv_##sfx(T x, T y) { return y == 0 ? (T)0 : (T)(x / y); }       \
  static inline T cpu_ew_mod_##sfx(T x, T y) { return y == 0 ? (T)0 : (T)(x % y); }            \
  static inline T cpu_ew_ipow_##sfx(T b, T e) {                                                \
    W r = 1, base = (W)b;                                                                      \
    for (W k = (W)e; k != 0; k >>= 1) {                                                        \
      if (k & 1u) r *= base;                                                                   \
      base *= base;                                                                            \
    }                                                                                          \
    return (T)r;                                                                               \
  }

CPU_EW_SIGNED_HELPERS(i8, int8_t, uint32_t)
CPU_EW_SIGNED_HELPERS(i16, int16_t, uint32_t)
CPU_EW_SIGNED_HELPERS(i32, int32_t, uint32_t)
CPU_EW_SIGNED_HELPERS(i64, int64_t, uint64_t)
CPU_EW_UNSIGNED_HELPERS(u8, uint8_t, uint32_t)

/* bool as the 0/1 integer it is (numpy has no bool subtract, floor_divide, remainder or power;
 * these exist so that the dispatch below covers every compute type). */
static inline _Bool cpu_ew_neg_b(_Bool x) { return x; }
static inline _Bool cpu_ew_abs_b(_Bool x) { return x; }
static inline _Bool cpu_ew_sub_b(_Bool x, _Bool y) { return x ^ y; }
static inline _Bool cpu_ew_sign_b(_Bool x) { return x; }
static inline _Bool cpu_ew_max_b(_Bool x, _Bool y) { return x | y; }
static inline _Bool cpu_ew_min_b(_Bool x, _Bool y) { return x & y; }
static inline _Bool cpu_ew_floordiv_b(_Bool x, _Bool y) { return x & y; }
static inline _Bool cpu_ew_mod_b(_Bool x, _Bool y) { (void)x; (void)y; return 0; }
static inline _Bool cpu_ew_ipow_b(_Bool x, _Bool y) { return x | !y; }

/* ---- floats (S: the math.h suffix, f for float, empty for double) ------------------------- */

#ifdef HWPORT_CPU_HAVE_SLEEF
#define CPU_EW_POW_f(x, y) cpu_vpow_f(x, y)
#define CPU_EW_POW_d(x, y) cpu_vpow_d(x, y)
#else
#define CPU_EW_POW_f(x, y) powf(x, y)
#define CPU_EW_POW_d(x, y) pow(x, y)
#endif

/* c ? x : y through a bit mask: GCC turns a float select into a branch under trapping math
 * (fast_expf.h), and clip's on random data mispredicts about every other element (3.5 ns per
 * element, 70x PyTorch); the mask form vectorizes. */
static inline float cpu_ew_pick_f(int c, float x, float y) {
  uint32_t m = 0u - (uint32_t)(c != 0);
  return cpu_bits_f32((cpu_f32_bits(x) & m) | (cpu_f32_bits(y) & ~m));
}
static inline double cpu_ew_pick_d(int c, double x, double y) {
  uint64_t m = 0u - (uint64_t)(c != 0);
  return cpu_bits_f64((cpu_f64_bits(x) & m) | (cpu_f64_bits(y) & ~m));
}

#define CPU_EW_FLOAT_HELPERS(sfx, F, S)                                                        \
  static inline F cpu_ew_neg_##sfx(F x) { return -x; }                                         \
  static inline F cpu_ew_abs_##sfx(F x) { return fabs##S(x); }                                 \
  static inline F cpu_ew_sub_##sfx(F x, F y) { return x - y; }                                 \
  static inline F cpu_ew_ipow_##sfx(F x, F y) { return CPU_EW_POW_##sfx(x, y); }               \
  /* numpy: -1, 0 or 1; NaN stays NaN; -0.0 gives +0.0. */                                   \
  static inline F cpu_ew_sign_##sfx(F x) {                                                     \
    return x > 0 ? (F)1 : x < 0 ? (F)-1 : x == 0 ? (F)0 : x;                                   \
  }                                                                                            \
  /* numpy maximum/minimum: NaN in either input gives NaN. */                                 \
  static inline F cpu_ew_max_##sfx(F x, F y) {                                                 \
    return cpu_ew_pick_##sfx((x >= y) | (x != x), x, y);                                       \
  }                                                                                            \
  static inline F cpu_ew_min_##sfx(F x, F y) {                                                 \
    return cpu_ew_pick_##sfx((x <= y) | (x != x), x, y);                                       \
  }                                                                                            \
  /* numpy's npy_divmod: fmod, sign-corrected to the divisor, quotient snapped to an        */ \
  /* integer; division by zero gives a / b (floor_divide) and NaN (remainder).               */ \
  static inline F cpu_ew_divmod_##sfx(F a, F b, F *modulus) {                                  \
    F mod = fmod##S(a, b);                                                                     \
    if (b == 0) {                                                                              \
      *modulus = mod;                                                                          \
      return a / b;                                                                            \
    }                                                                                          \
    F div = (a - mod) / b;                                                                     \
    if (mod != 0) {                                                                            \
      if (isless(b, (F)0) != isless(mod, (F)0)) {                                              \
        mod += b;                                                                              \
        div -= (F)1;                                                                           \
      }                                                                                        \
    } else {                                                                                   \
      mod = copysign##S((F)0, b);                                                              \
    }                                                                                          \
    F floordiv;                                                                                \
    if (div != 0) {                                                                            \
      floordiv = floor##S(div);                                                                \
      if (isgreater(div - floordiv, (F)0.5)) floordiv += (F)1;                                 \
    } else {                                                                                   \
      floordiv = copysign##S((F)0, a / b);                                                     \
    }                                                                                          \
    *modulus = mod;                                                                            \
    return floordiv;                                                                           \
  }                                                                                            \
  static inline F cpu_ew_floordiv_##sfx(F a, F b) {                                            \
    F mod;                                                                                     \
    return cpu_ew_divmod_##sfx(a, b, &mod);                                                    \
  }                                                                                            \
  static inline F cpu_ew_mod_##sfx(F a, F b) {                                                 \
    F mod;                                                                                     \
    (void)cpu_ew_divmod_##sfx(a, b, &mod);                                                     \
    return mod;                                                                                \
  }

CPU_EW_FLOAT_HELPERS(f, float, f)
CPU_EW_FLOAT_HELPERS(d, double, )

/* ---- type-generic dispatch -------------------------------------------------------------- */

/* The helper of family `fn` for x's compute type (every family has all eight). */
#define CPU_EW_BY_TYPE(fn, x, ...)                                                             \
  _Generic((x), _Bool: fn##_b, int8_t: fn##_i8, uint8_t: fn##_u8, int16_t: fn##_i16,          \
           int32_t: fn##_i32, int64_t: fn##_i64, float: fn##_f, double: fn##_d)(__VA_ARGS__)

/* Float math: the float variant for float, the double one otherwise (integers included). */
#define CPU_EW_MATH1(fn, x) _Generic((x), float: fn##f(x), default: fn(x))
#define CPU_EW_MATH2(fn, x, y) _Generic((x), float: fn##f(x, y), default: fn(x, y))
/* Rounding functions: exact identities on integers and bool. */
#define CPU_EW_ROUNDING(fn, x) _Generic((x), float: fn##f(x), double: fn(x), default: (x))

/* float exp goes through the branch-free cpu_expf (~1.4 ulp), which vectorizes; libm's expf
 * does not, and exp bounds softmax/sigmoid/gelu throughput. float erf likewise goes through
 * cpu_erff (fast_erff.h, <= 2 ulp, inlined), 3x faster than SLEEF's vector erff. With SLEEF, the
 * functions of sleef_math.h go to its vector math (1 ulp) for float and double (integers:
 * libm's double). */
#ifdef HWPORT_CPU_HAVE_SLEEF
#define CPU_EW_VMATH1(fn, x)                                                                   \
  _Generic((x), float: cpu_v##fn##_f(x), double: cpu_v##fn##_d(x), default: fn(x))
#define cpu_ew_exp(x) _Generic((x), float: cpu_expf(x), double: cpu_vexp_d(x), default: exp(x))
#define cpu_ew_erf(x)                                                                          \
  _Generic((x), float: cpu_erff(x), double: cpu_verf_d(x), default: erf(x))
#else
#define CPU_EW_VMATH1(fn, x) CPU_EW_MATH1(fn, x)
#define cpu_ew_exp(x) _Generic((x), float: cpu_expf(x), default: exp(x))
#define cpu_ew_erf(x) _Generic((x), float: cpu_erff(x), default: erf(x))
#endif
/* sigmoid (kernels_elementwise.c's sigmoid and silu): float32 through fast_vmathf.h's sigmoidf
 * with SLEEF, other types by ops.yaml's native expression (the generated CPU_EW_NATIVE_sigmoid,
 * defined by elementwise_ops.h, included after this header and before any use). */
#ifdef HWPORT_CPU_HAVE_SLEEF
#define cpu_ew_sigmoid(x) _Generic((x), float: cpu_vsigmoid_f(x), default: CPU_EW_NATIVE_sigmoid(x))
#else
#define cpu_ew_sigmoid(x) CPU_EW_NATIVE_sigmoid(x)
#endif
#define cpu_ew_exp2(x) CPU_EW_MATH1(exp2, x)
#define cpu_ew_expm1(x) CPU_EW_VMATH1(expm1, x)
#define cpu_ew_log(x) CPU_EW_VMATH1(log, x)
#define cpu_ew_log2(x) CPU_EW_VMATH1(log2, x)
#define cpu_ew_log10(x) CPU_EW_MATH1(log10, x)
#define cpu_ew_log1p(x) CPU_EW_VMATH1(log1p, x)
#define cpu_ew_sqrt(x) CPU_EW_VMATH1(sqrt, x)
#define cpu_ew_cbrt(x) CPU_EW_MATH1(cbrt, x)
#define cpu_ew_sin(x) CPU_EW_VMATH1(sin, x)
#define cpu_ew_cos(x) CPU_EW_VMATH1(cos, x)
#define cpu_ew_tan(x) CPU_EW_VMATH1(tan, x)
#define cpu_ew_asin(x) CPU_EW_MATH1(asin, x)
#define cpu_ew_acos(x) CPU_EW_MATH1(acos, x)
#define cpu_ew_atan(x) CPU_EW_MATH1(atan, x)
#define cpu_ew_sinh(x) CPU_EW_MATH1(sinh, x)
#define cpu_ew_cosh(x) CPU_EW_MATH1(cosh, x)
#define cpu_ew_tanh(x) CPU_EW_VMATH1(tanh, x)
#define cpu_ew_asinh(x) CPU_EW_MATH1(asinh, x)
#define cpu_ew_acosh(x) CPU_EW_MATH1(acosh, x)
#define cpu_ew_atanh(x) CPU_EW_MATH1(atanh, x)
#define cpu_ew_erfc(x) CPU_EW_MATH1(erfc, x)
#define cpu_ew_tgamma(x) CPU_EW_MATH1(tgamma, x)
#define cpu_ew_lgamma(x) CPU_EW_MATH1(lgamma, x)
#define cpu_ew_atan2(x, y) CPU_EW_MATH2(atan2, x, y)
#define cpu_ew_hypot(x, y) CPU_EW_MATH2(hypot, x, y)
#define cpu_ew_fmod(x, y) CPU_EW_MATH2(fmod, x, y)
#define cpu_ew_copysign(x, y) CPU_EW_MATH2(copysign, x, y)
#define cpu_ew_fmax(x, y) CPU_EW_MATH2(fmax, x, y)
#define cpu_ew_fmin(x, y) CPU_EW_MATH2(fmin, x, y)

#define cpu_ew_floor(x) CPU_EW_ROUNDING(floor, x)
#define cpu_ew_ceil(x) CPU_EW_ROUNDING(ceil, x)
#define cpu_ew_trunc(x) CPU_EW_ROUNDING(trunc, x)
#define cpu_ew_rint(x) CPU_EW_ROUNDING(rint, x)
#define cpu_ew_nearbyint(x) CPU_EW_ROUNDING(nearbyint, x) /* half to even (default mode) */
#define cpu_ew_round(x) CPU_EW_ROUNDING(round, x)         /* C's round: half away from 0 */

#define cpu_ew_fabs(x) CPU_EW_BY_TYPE(cpu_ew_abs, x, x)
#define cpu_ew_isnan(x)                                                                        \
  _Generic((x), float: isnan((float)(x)), double: isnan((double)(x)), default: 0)
#define cpu_ew_isinf(x)                                                                        \
  _Generic((x), float: isinf((float)(x)), double: isinf((double)(x)), default: 0)
#define cpu_ew_isfinite(x)                                                                     \
  _Generic((x), float: isfinite((float)(x)), double: isfinite((double)(x)), default: 1)
#define cpu_ew_pow(x, y) CPU_EW_BY_TYPE(cpu_ew_ipow, x, x, y)
#define cpu_ew_fmax_nan(x, y) CPU_EW_BY_TYPE(cpu_ew_max, x, x, y)
#define cpu_ew_fmin_nan(x, y) CPU_EW_BY_TYPE(cpu_ew_min, x, x, y)
#define cpu_ew_sign(x) CPU_EW_BY_TYPE(cpu_ew_sign, x, x)
#define cpu_ew_neg(x) CPU_EW_BY_TYPE(cpu_ew_neg, x, x)
#define cpu_ew_sub(x, y) CPU_EW_BY_TYPE(cpu_ew_sub, x, x, y)
#define cpu_ew_floor_divide(x, y) CPU_EW_BY_TYPE(cpu_ew_floordiv, x, x, y)
#define cpu_ew_remainder(x, y) CPU_EW_BY_TYPE(cpu_ew_mod, x, x, y)
#define cpu_ew_bitwise_not(x) _Generic((x), _Bool: !(x), default: ~(int64_t)(x))

/* A native composite's attribute slot (device_plugins/common/native_attrs.h) as the loop's
 * compute type ew_ct: the bits of a float or a double, else the integer value. */
static inline float cpu_ew_slot_f(int64_t v) {
  uint32_t u = (uint32_t)v;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline double cpu_ew_slot_d(int64_t v) {
  double d;
  memcpy(&d, &v, sizeof d);
  return d;
}
#define EW_ATTR_CT(v)                                                                          \
  _Generic((ew_ct)0, float: cpu_ew_slot_f(v), double: cpu_ew_slot_d(v), default: (ew_ct)(v))

#endif /* HWPORT_CPU_ELEMENTWISE_MATH_H */
