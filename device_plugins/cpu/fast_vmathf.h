/* hwport CPU plugin — float32 sin, cos, expm1, log1p, log, tanh and sigmoid over whole vectors
 * (GCC vector extensions), the AVX2 and AVX-512 variants behind the generated loops' cpu_vsin_f /
 * cpu_vcos_f / cpu_vexpm1_f / cpu_vlog1p_f / cpu_vlog_f / cpu_vtanh_f / cpu_vsigmoid_f
 * (math_sleef_avx2.c, math_sleef_avx512.c; the scalar and SSE2 variants stay SLEEF's, except
 * sigmoid's, math_sleef_scalar.c). Debian's SLEEF 3.5 functions are 2.5x (sin, cos), 4x (expm1),
 * 1.8x (log1p, log u10) and 1.4x (tanh u35) slower than these in a loop over L2-resident data,
 * and slower than torch's; sigmoid is 1.7x faster than the generic expression over cpu_expf.
 *
 * CPU_FAST_VMATHF(P, VF, VI, MAXF, SCALEF) defines, for the float vector type VF and the int32
 * vector type VI of the same width (compiled with FMA, which the reductions' last steps rely on,
 * except the SSE2 sigmoid), static functions P##_sinf, P##_cosf (valid for |x| <=
 * CPU_FAST_TRIG_MAX: the caller sends wider vectors to SLEEF), P##_expm1f, P##_log1pf,
 * P##_logf, P##_tanhf and P##_sigmoidf (every input). sigmoid takes two of the instruction set's
 * operations: MAXF(a, b), max with b returned where either is NaN (the maxps instructions), and
 * SCALEF(p, n, ni), p 2^n rounded once (AVX-512: vscalefps on n; else P##_exp_scale on ni).
 *
 * sin/cos: q = nearest integer to x * 2/pi, r = x - q pi/2 with pi/2 in four parts (Cody-Waite:
 * the first two, of 8 and 12 significant bits, multiply q < 2^12 exactly; the last two go through
 * FMA), Cephes' minimax polynomials for sin and cos on [-pi/4, pi/4], the quadrant q mod 4 picking
 * one and the sign. expm1: x = n ln2 + r (|r| <= ln2/2), e^r - 1 = r + r^2 P(r) (P of degree 5
 * fitted here, 1e-8 relative), then 2^n (e^r - 1) + 2^n - 1 computed as 2 (h em + (h - 1/2))
 * with h = 2^(n-1) so that n = 128 (the top binade) does not overflow h; x clamped to [-18, 89]
 * (expm1(-18) rounds to -1, e^89 overflows) and |x| < 2^-25 returned as is (-0 and subnormals;
 * sin likewise below 2^-12).
 * log1p: u = 1 + x = 2^k m (m in [sqrt(1/2), sqrt(2))), log(m) by Cephes' logf polynomial,
 * plus k ln2 (two parts) and the rounding 1 + x lost, (x - (u - 1)) / u; |x| < 2^-24 as is,
 * inf, -1 (-inf) and x < -1 (NaN) selected at the end. log: the same without the 1 + x
 * (P##_logf_normal for positive normal finite lanes; P##_logf also scales subnormals by 2^23 and
 * selects 0, inf, negatives and NaN). tanh: Cephes' odd polynomial below |x| = 0.625, else
 * 1 - 2 / (e^2|x| + 1) by the exp core (the Cody-Waite reduction and P##_exp_poly, a degree-6
 * minimax e^r); the sign put back last (-0 stays -0). sigmoid: e = e^-|x| by the same core,
 * 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0: 0 and 1 exactly where it saturates, subnormal
 * results rounded once, NaN kept.
 * Measured (C harness over every 13th/17th float, sigmoid and tanh every 3rd;
 * tests/device_plugins/test_cpu_vmath.py): sin/cos <= 1.55 ulp away from their zeros (there
 * absolute error <= 1e-11 for |x| <= 4000), expm1 <= 1.44 ulp, log1p <= 0.83 ulp, log <= 0.81
 * ulp, tanh <= 1.35 ulp, sigmoid <= 2.40 ulp (SSE2, no FMA: 2.43), as the expression over
 * cpu_expf it replaces (2.40, at the same x). */
#ifndef HWPORT_CPU_FAST_VMATHF_H
#define HWPORT_CPU_FAST_VMATHF_H

#include <stdint.h>

#define CPU_FAST_TRIG_MAX 4000.0f

/* bitwise select: m (all ones or zero per lane) ? a : b */
#define CPU_VSEL(VF, VI, m, a, b) ((VF)(((VI)(a) & (m)) | ((VI)(b) & ~(m))))

#define CPU_FAST_VMATHF(P, VF, VI, MAXF, SCALEF)                                               \
  static inline VF P##_sincosf(VF x, int cosine) {                                             \
    const VF magic = (VF){0} + 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */   \
    VF t = x * 0.636619772f + magic;                                                           \
    VF q = t - magic;                                                                          \
    VI qi = (VI)t - (VI)magic;                                                                 \
    VF r = x - q * 1.5703125f;                                                                 \
    r = r - q * 4.838705062866211e-4f;                                                         \
    r = r - q * -4.371138828673793e-8f;                                                        \
    r = r - q * -1.715124510005882e-15f;                                                       \
    VF z = r * r;                                                                              \
    VF s = -1.9515295891e-4f * z + 8.3321608736e-3f;                                           \
    s = s * z + -1.6666654611e-1f;                                                             \
    s = (s * z) * r + r;                                                                       \
    VF c = 2.443315711809948e-5f * z + -1.388731625493765e-3f;                                 \
    c = c * z + 4.166664568298827e-2f;                                                         \
    c = (c * z) * z + (z * -0.5f + 1.0f);                                                      \
    /* cos(r + q pi/2): q mod 4 = 0: cos r, 1: -sin r, 2: -cos r, 3: sin r; sin: one ahead */  \
    VI k = cosine ? qi + 1 : qi;                                                               \
    VI even = (k & 1) - 1; /* all ones where k is even: the sine polynomial */                 \
    VF v = CPU_VSEL(VF, VI, even, s, c);                                                       \
    v = (VF)((VI)v ^ (((k & 2) != 0) & INT32_MIN));                                            \
    if (cosine) return v;                                                                      \
    VI tiny = ((VI)x & 0x7fffffff) < 0x39800000; /* |x| < 2^-12: sin x rounds to x (-0 kept) */\
    return CPU_VSEL(VF, VI, tiny, x, v);                                                       \
  }                                                                                            \
  static inline VF P##_sinf(VF x) { return P##_sincosf(x, 0); }                                \
  static inline VF P##_cosf(VF x) { return P##_sincosf(x, 1); }                                \
  /* x = n ln2 + r, |r| <= ln2/2 (Cody-Waite, ln2 in two parts): returns r, sets *nf = n and \
   * *ni = n as an int */                                                                      \
  static inline VF P##_exp_reduce_n(VF x, VF *nf, VI *ni) {                                    \
    const VF magic = (VF){0} + 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */   \
    VF t = x * 1.44269504088896341f + magic;                                                   \
    VF n = t - magic;                                                                          \
    *nf = n;                                                                                   \
    *ni = (VI)t - (VI)magic;                                                                   \
    VF r = x - n * 0.693359375f;                                                               \
    return r - n * -2.12194440e-4f;                                                            \
  }                                                                                            \
  static inline VF P##_exp_reduce(VF x, VI *ni) {                                              \
    VF n;                                                                                      \
    return P##_exp_reduce_n(x, &n, ni);                                                        \
  }                                                                                            \
  /* e^r for the reduction's r: 1 + r + ... + c6 r^6 by Horner, minimax for the relative     \
   * error (fitted here: 2.0e-9, 0.84 ulp in float32 with FMA; Cephes' expf uses degree 7) */ \
  static inline VF P##_exp_poly(VF r) {                                                        \
    VF q = 1.3843536144e-3f * r + 8.3741303533e-3f;                                            \
    q = q * r + 4.1668001562e-2f;                                                              \
    q = q * r + 1.6666431725e-1f;                                                              \
    q = q * r + 4.9999994040e-1f;                                                              \
    q = q * r + 1.0f;                                                                          \
    return q * r + 1.0f;                                                                       \
  }                                                                                            \
  static inline VF P##_expm1f(VF x) {                                                          \
    const VF zero = (VF){0};                                                                   \
    VI lo = x < -18.0f, hi = x > 89.0f, ni;                                                    \
    VF xc = CPU_VSEL(VF, VI, lo, zero - 18.0f, CPU_VSEL(VF, VI, hi, zero + 89.0f, x));         \
    VF r = P##_exp_reduce(xc, &ni);                                                            \
    VF p = 1.985809213e-04f * r + 1.393448794e-03f;                                            \
    p = p * r + 8.333361708e-03f;                                                              \
    p = p * r + 4.166645929e-02f;                                                              \
    p = p * r + 1.666666716e-01f;                                                              \
    p = p * r + 0.5f;                                                                          \
    VF em = (p * r) * r + r;                                                                   \
    VF h = (VF)((ni + 126) << 23);                                                             \
    VF res = (h * em + (h - 0.5f)) * 2.0f;                                                     \
    VI tiny = ((VI)x & 0x7fffffff) < 0x33000000; /* |x| < 2^-25, NaN excluded */               \
    return CPU_VSEL(VF, VI, tiny, x, res);                                                     \
  }                                                                                            \
  /* log(u 2^-scale) + c for u normal, positive and finite (c: a small correction) */          \
  static inline VF P##_logf_core(VI ui, VI scale, VF c) {                                      \
    VI k = (ui - 0x3f3504f3) >> 23; /* u = 2^k m, m in [sqrt(1/2), sqrt(2)) */                 \
    VF f = (VF)(ui - (k << 23)) - 1.0f;                                                        \
    VF kf = __builtin_convertvector(k - scale, VF);                                            \
    VF z = f * f;                                                                              \
    VF p = 7.0376836292e-2f * f + -1.1514610310e-1f;                                           \
    p = p * f + 1.1676998740e-1f;                                                              \
    p = p * f + -1.2420140846e-1f;                                                             \
    p = p * f + 1.4249322787e-1f;                                                              \
    p = p * f + -1.6668057665e-1f;                                                             \
    p = p * f + 2.0000714765e-1f;                                                              \
    p = p * f + -2.4999993993e-1f;                                                             \
    p = p * f + 3.3333331174e-1f;                                                              \
    VF y = (f * z) * p + (kf * -2.12194440e-4f + c);                                           \
    y = z * -0.5f + y;                                                                         \
    return kf * 0.693359375f + (f + y);                                                        \
  }                                                                                            \
  static inline VF P##_log1pf(VF x) {                                                          \
    const VF zero = (VF){0};                                                                   \
    VF u = x + 1.0f;                                                                           \
    VF c = (x - (u - 1.0f)) / u; /* what rounding 1 + x lost, relative to u */                 \
    VF r = P##_logf_core((VI)u, (VI){0}, c);                                                   \
    VI tiny = ((VI)x & 0x7fffffff) < 0x33800000; /* |x| < 2^-24: x itself (-0, subnormals) */  \
    VI inf = x == zero + __builtin_inff();                                                     \
    VI bad = u <= 0.0f; /* x = -1: -inf; x < -1: NaN */                                        \
    VF ninf = zero - __builtin_inff(), nan = zero + __builtin_nanf("");                        \
    VF special = CPU_VSEL(VF, VI, u == 0.0f, ninf, nan);                                       \
    r = CPU_VSEL(VF, VI, tiny | inf, x, r);                                                    \
    return CPU_VSEL(VF, VI, bad, special, r);                                                  \
  }                                                                                            \
  /* positive normal finite lanes only */                                                      \
  static inline VF P##_logf_normal(VF x) {                                                     \
    return P##_logf_core((VI)x, (VI){0}, (VF){0});                                             \
  }                                                                                            \
  /* every input (the wrappers take P##_logf_normal when no lane needs more) */                \
  static inline VF P##_logf(VF x) {                                                            \
    const VF zero = (VF){0};                                                                   \
    VI xi = (VI)x;                                                                             \
    VI sub = (xi > 0) & (xi < 0x00800000); /* subnormal: scaled by 2^23 into the normals */    \
    VF r = P##_logf_core((VI)CPU_VSEL(VF, VI, sub, x * 8388608.0f, x), sub & 23, zero);        \
    VF inf = zero + __builtin_inff(), nan = zero + __builtin_nanf("");                         \
    r = CPU_VSEL(VF, VI, x == inf, x, r);                                                      \
    r = CPU_VSEL(VF, VI, x == zero, zero - inf, r); /* log(+-0) = -inf */                      \
    return CPU_VSEL(VF, VI, ~(x >= zero), nan, r);  /* x < 0 and NaN: NaN */                   \
  }                                                                                            \
  static inline VF P##_tanhf(VF x) {                                                           \
    VI sign = (VI)x & INT32_MIN;                                                               \
    VF ax = (VF)((VI)x ^ sign);                                                                \
    VF s = x * x; /* |x| < 0.625: Cephes' odd polynomial */                                    \
    VF p = -5.70498872745e-3f * s + 2.06390887954e-2f;                                         \
    p = p * s + -5.37397155531e-2f;                                                            \
    p = p * s + 1.33314422036e-1f;                                                             \
    p = p * s + -3.33332819422e-1f;                                                            \
    VF small = (p * s) * ax + ax;                                                              \
    /* else 1 - 2 / (e + 1), e = e^(2|x|) with 2|x| clamped to 20 (tanh rounds to 1 from       \
     * 9.02 on): Cephes' expf with n in [1, 29], 2^n added to the exponent bits */             \
    VI ni;                                                                                     \
    VF r = P##_exp_reduce(CPU_VSEL(VF, VI, ax > 10.0f, (VF){0} + 20.0f, ax + ax), &ni);        \
    VF e = (VF)((VI)P##_exp_poly(r) + (ni << 23));                                             \
    VF big = 1.0f - 2.0f / (e + 1.0f);                                                         \
    VF res = CPU_VSEL(VF, VI, ax < 0.625f, small, big);                                        \
    res = CPU_VSEL(VF, VI, x != x, x, res); /* NaN: the exponent bits above are garbage */     \
    return (VF)((VI)res | sign);            /* -0 stays -0 */                                  \
  }                                                                                            \
  /* p 2^n for the exp reduction's n (ni as an int) in [-152, 0] and p = e^r, rounding once  \
   * into the subnormals: p 2^(n+64) 2^-64 (the AVX-512 file passes vscalefps instead) */     \
  static inline VF P##_exp_scale(VF p, VF n, VI ni) {                                          \
    (void)n;                                                                                   \
    return p * (VF)((ni + 64 + 127) << 23) * 0x1p-64f;                                         \
  }                                                                                            \
  /* 1 / (1 + e^-x): e = e^-|x| = p 2^n (-|x| clamped to -105, where e rounds to 0, by       \
   * MAXF(-105, z), which keeps a NaN z), then 1 / (1 + e) for x >= 0 and e / (1 + e) for    \
   * x < 0 (no cancellation); a NaN x makes p NaN and so the result. */                       \
  static inline VF P##_sigmoidf(VF x) {                                                        \
    const VF zero = (VF){0};                                                                   \
    VF n;                                                                                      \
    VI ni;                                                                                     \
    VF r = P##_exp_reduce_n(MAXF(zero - 105.0f, (VF)((VI)x | INT32_MIN)), &n, &ni); /* -|x| */ \
    VF e = SCALEF(P##_exp_poly(r), n, ni);                                                     \
    return CPU_VSEL(VF, VI, (VI)x < 0, e, zero + 1.0f) / (e + 1.0f);                           \
  }

#endif /* HWPORT_CPU_FAST_VMATHF_H */
