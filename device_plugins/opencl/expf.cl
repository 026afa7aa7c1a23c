/* hwport OpenCL plugin — ocl_expf: exp in float without calls or branches, so the device
 * compiler vectorizes it across work-items (PoCL's built-in exp does not). The same algorithm
 * as the CPU plugin's cpu_expf (fast_expf.h): x = n ln2 + r (Cody-Waite, |r| <= ln2/2), a
 * degree-6 polynomial for e^r (Cephes expf, ~1 ulp), and 2^n applied as two exact power-of-two
 * factors so that gradual underflow and the top binade work. exp(-inf) = 0, exp(+inf) = inf,
 * NaN stays NaN. Embedded after a prelude into the programs that use it.
 *
 * OCL_DEF_EXPF(name, F, U, I) defines it for F = float or floatN (U, I: the uint/int type of
 * the same width); ocl_expf is the scalar one, programs with explicit vectors add their own.
 * (Two levels so that macro arguments expand before the as_ pasting.) */
#define OCL_DEF_EXPF(NAME, F, U, I) OCL_DEF_EXPF_(NAME, F, U, I)
#define OCL_DEF_EXPF_(NAME, F, U, I)                                                           \
  static inline F NAME(F x) {                                                                  \
    F xc = fmin(fmax(x, (F)(-104.0f)), (F)(89.0f)); /* NaN: fmin/fmax return the other */     \
    xc = isnan(x) ? x : xc;                                                                    \
    const F magic = (F)(12582912.0f); /* 1.5 * 2^23: adding it rounds to an integer */        \
    F t = xc * 1.44269504088896341f + magic;                                                   \
    F n = t - magic;                                                                           \
    U ni = as_##U(t) - as_##U(magic); /* n as a two's-complement integer */                   \
    F r = xc - n * 0.693359375f;                                                               \
    r = r - n * -2.12194440e-4f;                                                               \
    F p = (F)(1.9875691500e-4f);                                                               \
    p = p * r + 1.3981999507e-3f;                                                              \
    p = p * r + 8.3334519073e-3f;                                                              \
    p = p * r + 4.1665795894e-2f;                                                              \
    p = p * r + 1.6666665459e-1f;                                                              \
    p = p * r + 5.0000001201e-1f;                                                              \
    p = p * (r * r) + r + 1.0f;                                                                \
    I n1 = as_##I(ni) >> 1; /* n in [-150, 129]: n1, n - n1 in [-75, 65] */                   \
    U n2 = ni - as_##U(n1);                                                                    \
    F s1 = as_##F((as_##U(n1) + 127u) << 23);                                                  \
    F s2 = as_##F((n2 + 127u) << 23);                                                          \
    return p * s1 * s2;                                                                        \
  }
OCL_DEF_EXPF(ocl_expf, float, uint, int)
