/* hwport OpenCL plugin — ocl_expf: exp in float without calls or branches, so the device
 * compiler vectorizes it across work-items (PoCL's built-in exp does not). The same algorithm
 * as the CPU plugin's cpu_expf (fast_expf.h): x = n ln2 + r (Cody-Waite, |r| <= ln2/2), a
 * degree-6 polynomial for e^r (Cephes expf, ~1 ulp), and 2^n applied as two exact power-of-two
 * factors so that gradual underflow and the top binade work. exp(-inf) = 0, exp(+inf) = inf,
 * NaN stays NaN. Embedded after a prelude into the programs that use it. */
static inline float ocl_expf(float x) {
  float xc = fmin(fmax(x, -104.0f), 89.0f); /* NaN: fmin/fmax return the other operand */
  xc = isnan(x) ? x : xc;
  const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  float t = xc * 1.44269504088896341f + magic;
  float n = t - magic;
  uint ni = as_uint(t) - as_uint(magic); /* n as a two's-complement integer */
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  int n1 = (int)ni >> 1; /* n in [-150, 129]: n1, n - n1 in [-75, 65] */
  uint n2 = ni - (uint)n1;
  float s1 = as_float(((uint)n1 + 127u) << 23);
  float s2 = as_float((n2 + 127u) << 23);
  return p * s1 * s2;
}
