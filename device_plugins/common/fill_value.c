/* hwport reference plugins — a numeric attribute as storage bits (fill_value.h). */
#include "fill_value.h"

#include <math.h>
#include <string.h>

#include "plugin_support.h"

/* double -> a narrow binary float with M mantissa bits, exponent bias B and all-ones exponent
 * E_ALL, rounded to nearest even (float16: 10, 15, 31; bfloat16: 7, 127, 255). */
static uint16_t f64_to_narrow(double v, int M, int B, int E_ALL) {
  uint16_t sign = signbit(v) ? 0x8000u : 0;
  uint16_t inf = (uint16_t)(E_ALL << M);
  if (isnan(v)) return (uint16_t)(sign | inf | (1u << (M - 1)));
  if (isinf(v)) return (uint16_t)(sign | inf);
  double a = fabs(v);
  if (a == 0) return sign;
  int e;
  double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  int be = e - 1 + B;
  if (be <= 0) { /* subnormal (or rounds up to the smallest normal) */
    double q = nearbyint(ldexp(a, B - 1 + M));
    return (uint16_t)(sign | (uint16_t)q);
  }
  double q = nearbyint(ldexp(m, M + 1));
  if (q == ldexp(1.0, M + 1)) {
    q = ldexp(1.0, M);
    ++be;
  }
  if (be >= E_ALL) return (uint16_t)(sign | inf);
  return (uint16_t)(sign | (uint16_t)(be << M) | (uint16_t)((uint32_t)q - (1u << M)));
}

HWP_Status hwps_value_bits(const HWP_KernelContext *ctx, const char *op, const char *name,
                           int required, HWP_DType dtype, int64_t *bits) {
  double fv = 0;
  int64_t iv = 0;
  int have_i = 0, have_f = 0;
  if (!HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) || ctx->get_attr == NULL)
    return hwps_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the kernel context has no get_attr", op);
  if (dtype >= HWP_DTYPE_FLOAT16 && dtype <= HWP_DTYPE_FLOAT64) {
    have_f = ctx->get_attr(ctx, name, HWP_ATTR_FLOAT64, &fv, NULL) == HWP_OK;
    if (!have_f) have_i = ctx->get_attr(ctx, name, HWP_ATTR_INT64, &iv, NULL) == HWP_OK;
    if (have_i) fv = (double)iv;
  } else {
    have_i = ctx->get_attr(ctx, name, HWP_ATTR_INT64, &iv, NULL) == HWP_OK;
    if (!have_i) have_f = ctx->get_attr(ctx, name, HWP_ATTR_FLOAT64, &fv, NULL) == HWP_OK;
    if (have_f) { /* cast semantics: truncation, NaN -> 0, saturating to the dtype */
      double lo = -9.2233720368547758e18, hi = 9.2233720368547758e18;
      switch (dtype) {
      case HWP_DTYPE_INT8: lo = -128; hi = 127; break;
      case HWP_DTYPE_UINT8: lo = 0; hi = 255; break;
      case HWP_DTYPE_INT16: lo = -32768; hi = 32767; break;
      case HWP_DTYPE_INT32: lo = -2147483648.0; hi = 2147483647.0; break;
      default: break;
      }
      if (dtype == HWP_DTYPE_BOOL) iv = fv != 0;
      else if (isnan(fv)) iv = 0;
      else if (fv >= hi) iv = hi >= 9.2e18 ? INT64_MAX : (int64_t)hi;
      else if (fv <= lo) iv = (int64_t)lo;
      else iv = (int64_t)fv;
    }
  }
  if (!have_i && !have_f) {
    double absent = 0; /* an optional attribute that is absent means 0 */
    if (required ||
        ctx->get_attr(ctx, name, HWP_ATTR_FLOAT64, &absent, NULL) != HWP_ERROR_NOT_FOUND)
      return hwps_error(HWP_ERROR_INVALID_ARGUMENT,
                        "%s: attribute '%s' is missing or not a number", op, name);
  }
  switch (dtype) {
  case HWP_DTYPE_BOOL: *bits = iv != 0; break;
  case HWP_DTYPE_FLOAT16: *bits = f64_to_narrow(fv, 10, 15, 31); break;
  case HWP_DTYPE_BFLOAT16: *bits = f64_to_narrow(fv, 7, 127, 255); break;
  case HWP_DTYPE_FLOAT32: {
    float f = (float)fv;
    uint32_t u;
    memcpy(&u, &f, 4);
    *bits = (int64_t)u;
    break;
  }
  case HWP_DTYPE_FLOAT64: memcpy(bits, &fv, 8); break;
  default: *bits = iv; break;
  }
  return HWP_OK;
}
