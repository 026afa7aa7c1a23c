/* hwport reference plugins — a native composite kernel's attributes as slots (native_attrs.h). */
#include "native_attrs.h"

#include <math.h>
#include <string.h>

#include "fill_value.h"
#include "plugin_support.h"

static int is_float(HWP_DType d) { return d >= HWP_DTYPE_FLOAT16 && d <= HWP_DTYPE_FLOAT64; }

/* The range of an integer dtype (bool: 0..1). */
static void int_range(HWP_DType d, int64_t *lo, int64_t *hi) {
  switch (d) {
  case HWP_DTYPE_BOOL: *lo = 0; *hi = 1; break;
  case HWP_DTYPE_INT8: *lo = INT8_MIN; *hi = INT8_MAX; break;
  case HWP_DTYPE_UINT8: *lo = 0; *hi = UINT8_MAX; break;
  case HWP_DTYPE_INT16: *lo = INT16_MIN; *hi = INT16_MAX; break;
  case HWP_DTYPE_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
  default: *lo = INT64_MIN; *hi = INT64_MAX; break;
  }
}

static int64_t float_slot(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (int64_t)u;
}

static int64_t double_slot(double d) {
  int64_t v;
  memcpy(&v, &d, sizeof v);
  return v;
}

/* A float (the compute type of float16/bfloat16/float32) or double value as dtype's slot. */
static int64_t real_slot(HWP_DType d, double v) {
  return d == HWP_DTYPE_FLOAT64 ? double_slot(v) : float_slot((float)v);
}

static float f16_bits_to_float(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v;
  if (e == 0)
    v = ldexpf((float)m, -24);
  else if (e == 31)
    v = m != 0 ? NAN : INFINITY;
  else
    v = ldexpf((float)(m | 0x400), e - 25);
  return (h & 0x8000u) ? -v : v;
}

/* A value of dtype d (fill's conversion) as d's slot. */
static HWP_Status value_slot(const HWP_KernelContext *ctx, const char *op, const char *name,
                             HWP_DType d, int64_t *slot) {
  int64_t iv = 0;
  if (!is_float(d) && ctx->get_attr(ctx, name, HWP_ATTR_INT64, &iv, NULL) == HWP_OK) {
    int64_t lo, hi;
    int_range(d, &lo, &hi);
    *slot = iv < lo ? lo : iv > hi ? hi : iv; /* clip bounds saturate */
    return HWP_OK;
  }
  int64_t bits = 0;
  HWP_Status st = hwps_value_bits(ctx, op, name, 1, d, &bits);
  if (st != HWP_OK) return st;
  switch (d) {
  case HWP_DTYPE_FLOAT16: *slot = float_slot(f16_bits_to_float((uint16_t)bits)); break;
  case HWP_DTYPE_BFLOAT16: *slot = (int64_t)((uint32_t)(uint16_t)bits << 16); break;
  case HWP_DTYPE_FLOAT32: *slot = (int64_t)(uint32_t)bits; break;
  default: *slot = bits; break; /* float64 bits; integers: the (saturated) value */
  }
  return HWP_OK;
}

HWP_Status hwps_native_attrs(const HWP_KernelContext *ctx, const char *op,
                             const hwps_attr_spec *specs, int n, HWP_DType dtype,
                             int64_t *slots) {
  if (n > HWPS_MAX_NATIVE_ATTRS)
    return hwps_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %d attributes (at most %d)", op, n,
                      HWPS_MAX_NATIVE_ATTRS);
  if (n > 0 && (!HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) || ctx->get_attr == NULL))
    return hwps_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the kernel context has no get_attr", op);
  for (int i = 0; i < n; ++i) {
    const hwps_attr_spec *a = &specs[i];
    double probe = 0;
    if (ctx->get_attr(ctx, a->name, HWP_ATTR_FLOAT64, &probe, NULL) == HWP_ERROR_NOT_FOUND) {
      if (a->absent == HWPS_ABSENT_REQUIRED)
        return hwps_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute '%s' is missing", op,
                          a->name);
      const int low = a->absent == HWPS_ABSENT_LOWEST;
      if (is_float(dtype)) {
        slots[i] = real_slot(dtype, low ? -INFINITY : INFINITY);
      } else {
        int64_t lo, hi;
        int_range(dtype, &lo, &hi);
        slots[i] = low ? lo : hi;
      }
      continue;
    }
    if (a->kind == HWPS_ATTR_FLAG) {
      uint8_t b = 0;
      if (ctx->get_attr(ctx, a->name, HWP_ATTR_BOOL, &b, NULL) != HWP_OK)
        return hwps_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute '%s' is not a bool", op,
                          a->name);
      slots[i] = b != 0;
    } else if (a->kind == HWPS_ATTR_SCALAR && is_float(dtype)) {
      double v = 0;
      int64_t iv = 0;
      if (ctx->get_attr(ctx, a->name, HWP_ATTR_FLOAT64, &v, NULL) != HWP_OK) {
        if (ctx->get_attr(ctx, a->name, HWP_ATTR_INT64, &iv, NULL) != HWP_OK)
          return hwps_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute '%s' is not a number",
                            op, a->name);
        v = (double)iv;
      }
      slots[i] = real_slot(dtype, v);
    } else { /* a value of the dtype (and a scalar of an integer dtype) */
      HWP_Status st = value_slot(ctx, op, a->name, dtype, &slots[i]);
      if (st != HWP_OK) return st;
    }
  }
  return HWP_OK;
}
