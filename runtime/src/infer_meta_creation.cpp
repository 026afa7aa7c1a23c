// The creation families (phi_ops/infer_meta.py creation, arange, eye and linspace).
#include <cmath>

#include "infer_meta.h"

namespace hwport::pipeline {

namespace {

constexpr size_t kMaxNdim = 16;  // infer_meta.MAX_NDIM (HWP_MAX_NDIM)

// Python's floor division of 128-bit ints (b != 0).
__int128 floor_div(__int128 a, __int128 b) {
  __int128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

// infer_meta.check_size: the contiguous span (zero dims counted as 1) in bytes fits int64.
bool fits_bytes(const Shape& shape, DType dtype) {
  int64_t span = static_cast<int64_t>(itemsize(dtype));
  for (int64_t d : shape)
    if (__builtin_mul_overflow(span, d > 0 ? d : 1, &span)) return false;
  return true;
}

bool infer_creation(const OpSpec& op, const std::vector<int64_t>& shape, DType dtype,
                    Shape* out) {
  if (shape.size() > kMaxNdim) return false;
  for (int64_t d : shape)
    if (d < 0) return false;  // "has a negative size"
  *out = shape;
  return fits_bytes(*out, dtype) && op.has_kernel_dtype(dtype);
}

bool infer_arange(const OpSpec& op, const Number& start, const Number* end, const Number& step,
                  bool has_dtype, DType dtype, ArangePlan* plan) {
  for (const Number* v : {&start, end, &step})
    if (v && !v->is_int && !std::isfinite(v->f)) return false;  // "must be finite"
  plan->start = end ? start : Number{};
  plan->end = end ? *end : start;
  plan->step = step;
  if (step.value() == 0) return false;  // "step must not be 0"
  const Number &s = plan->start, &e = plan->end;
  const bool ints = s.is_int && e.is_int && step.is_int;
  plan->out = has_dtype ? dtype : ints ? DType::Int64 : DType::Float32;
  if (ints) {
    const __int128 n = -floor_div(static_cast<__int128>(s.i) - e.i, step.i);
    plan->n = n > 0 ? static_cast<int64_t>(n) : 0;  // |n| <= 2**64: fits int64 unless huge
    if (n > INT64_MAX) return false;
  } else {
    // Python: an int - int difference is exact, then divided as a float
    const double diff = s.is_int && e.is_int
                            ? static_cast<double>(static_cast<__int128>(e.i) - s.i)
                            : e.value() - s.value();
    const double count = diff / step.value();
    if (!std::isfinite(count)) return false;  // "expected a finite number of elements"
    if (count > 4.0e18) return false;          // far beyond any device: Python's error
    plan->n = count > 0 ? static_cast<int64_t>(std::ceil(count)) : 0;
  }
  return fits_bytes({plan->n}, plan->out) && op.has_kernel_dtype(plan->out);
}

bool infer_eye(const OpSpec& op, int64_t n, const int64_t* m, DType dtype, Shape* out) {
  const int64_t cols = m ? *m : n;
  if (n < 0 || cols < 0) return false;  // "n and m must be >= 0"
  *out = {n, cols};
  return fits_bytes(*out, dtype) && op.has_kernel_dtype(dtype);
}

bool infer_linspace(const OpSpec& op, int64_t num, DType dtype, Shape* out) {
  if (num < 0) return false;  // "num must be >= 0"
  *out = {num};
  return fits_bytes(*out, DType::Float64) && op.has_kernel_dtype(dtype);
}

bool infer_like(const OpSpec& op, const MetaIn& x, bool has_dtype, DType dtype, DType* out) {
  *out = has_dtype ? dtype : x.dtype;
  return fits_bytes(*x.shape, *out) && op.has_kernel_dtype(x.dtype);
}

}  // namespace hwport::pipeline
