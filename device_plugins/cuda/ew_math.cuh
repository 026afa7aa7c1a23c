/* hwport CUDA plugin — the device functions that phi_ops/ops.yaml's c_expr calls (as ew_<f>,
 * see phi_ops/codegen/gen_cuda_elementwise.py) and the overrides that give numpy's semantics
 * where the C expression alone does not: integer wrap-around (arithmetic in unsigned 64-bit),
 * Python floor division and remainder (numpy's npy_divmod for floats; 0 for a zero divisor of
 * an integer), NaN-propagating maximum/minimum, the sign of NaN, and bool (C++ bool: add is or,
 * multiply is and, bitwise_not is logical not). One template per function over the compute
 * type T (bool, the integers, float, double). Mirrors the OpenCL plugin's
 * elementwise_prelude.cl. */
#ifndef HWPORT_CUDA_EW_MATH_CUH
#define HWPORT_CUDA_EW_MATH_CUH

#include "dtype.cuh"

template <class T>
constexpr bool cu_is_bool = std::is_same<T, bool>::value;
template <class T>
constexpr bool cu_is_float = std::is_floating_point<T>::value;
template <class T>
constexpr bool cu_is_signed_int = std::is_integral<T>::value && std::is_signed<T>::value;

/* Float-only math: float calls the f-suffixed CUDA function, double the plain one. */
#define CU_EW_MATH1(NAME, FN)                                                                  \
  template <class T>                                                                           \
  CU_D T ew_##NAME(T x) {                                                                      \
    if constexpr (std::is_same<T, float>::value) return FN##f(x);                             \
    else return FN(x);                                                                         \
  }
CU_EW_MATH1(exp, exp)
CU_EW_MATH1(expm1, expm1)
CU_EW_MATH1(log, log)
CU_EW_MATH1(log1p, log1p)
CU_EW_MATH1(sqrt, sqrt)
CU_EW_MATH1(sin, sin)
CU_EW_MATH1(cos, cos)
CU_EW_MATH1(tanh, tanh)
CU_EW_MATH1(erf, erf)
#undef CU_EW_MATH1

/* Float: the function; integers and bool: the value itself. */
#define CU_EW_ROUNDING(NAME, FN)                                                               \
  template <class T>                                                                           \
  CU_D T ew_##NAME(T x) {                                                                      \
    if constexpr (std::is_same<T, float>::value) return FN##f(x);                             \
    else if constexpr (cu_is_float<T>) return FN(x);                                           \
    else return x;                                                                             \
  }
CU_EW_ROUNDING(floor, floor)
CU_EW_ROUNDING(ceil, ceil)
CU_EW_ROUNDING(nearbyint, rint) /* half to even */
#undef CU_EW_ROUNDING

typedef unsigned long long cu_u64;

template <class T>
CU_D T ew_neg(T x) {
  if constexpr (cu_is_float<T> || cu_is_bool<T>) return cu_is_bool<T> ? x : -x;
  else return (T)(0ull - (cu_u64)(long long)x);
}
template <class T>
CU_D T ew_add(T x, T y) {
  if constexpr (cu_is_bool<T>) return x || y;
  else if constexpr (cu_is_float<T>) return x + y;
  else return (T)((cu_u64)(long long)x + (cu_u64)(long long)y);
}
template <class T>
CU_D T ew_sub(T x, T y) {
  if constexpr (cu_is_bool<T>) return x != y;
  else if constexpr (cu_is_float<T>) return x - y;
  else return (T)((cu_u64)(long long)x - (cu_u64)(long long)y);
}
template <class T>
CU_D T ew_mul(T x, T y) {
  if constexpr (cu_is_bool<T>) return x && y;
  else if constexpr (cu_is_float<T>) return x * y;
  else return (T)((cu_u64)(long long)x * (cu_u64)(long long)y);
}
template <class T>
CU_D T ew_fabs(T x) {
  if constexpr (cu_is_float<T>) return std::is_same<T, float>::value ? fabsf(x) : fabs(x);
  else if constexpr (cu_is_signed_int<T>) return x < 0 ? ew_neg(x) : x;
  else return x;
}
template <class T>
CU_D T ew_sign(T x) {
  if constexpr (cu_is_float<T>) return x > 0 ? (T)1 : x < 0 ? (T)-1 : x == 0 ? (T)0 : x;
  else if constexpr (cu_is_bool<T>) return x;
  else return (T)((x > 0) - (x < 0));
}
template <class T>
CU_D bool ew_isnan(T x) {
  if constexpr (cu_is_float<T>) return isnan(x);
  else return false;
}
template <class T>
CU_D bool ew_isinf(T x) {
  if constexpr (cu_is_float<T>) return isinf(x);
  else return false;
}
/* y converts to x's type (a native expression's literal: relu is fmax_nan(x, 0)). */
template <class T, class U>
CU_D T ew_fmax_nan(T x, U yy) {
  const T y = (T)yy;
  if constexpr (cu_is_float<T>) return (x >= y || x != x) ? x : y;
  else return x >= y ? x : y;
}
template <class T, class U>
CU_D T ew_fmin_nan(T x, U yy) {
  const T y = (T)yy;
  if constexpr (cu_is_float<T>) return (x <= y || x != x) ? x : y;
  else return x <= y ? x : y;
}
template <class T>
CU_D T ew_bitnot(T x) {
  if constexpr (cu_is_bool<T>) return !x;
  else if constexpr (cu_is_float<T>) return x; /* not registered for floats */
  else return (T)~x;
}
template <class T>
CU_D T ew_pow(T b, T e) {
  if constexpr (cu_is_bool<T>) return b || !e;
  else if constexpr (std::is_same<T, float>::value) return powf(b, e);
  else if constexpr (cu_is_float<T>) return pow(b, e);
  else {
    if constexpr (cu_is_signed_int<T>)
      if (e < 0) return b == 1 ? (T)1 : b == -1 ? (T)((e & 1) ? -1 : 1) : (T)0;
    cu_u64 r = 1, base = (cu_u64)(long long)b;
    for (cu_u64 k = (cu_u64)(long long)e; k != 0; k >>= 1) {
      if (k & 1u) r *= base;
      base *= base;
    }
    return (T)r;
  }
}

/* numpy's npy_divmod (see the CPU plugin's elementwise_math.h). */
template <class T>
CU_D T cu_divmod(T a, T b, T *modulus) {
  T mod = fmod(a, b);
  if (b == 0) {
    *modulus = mod;
    return a / b;
  }
  T div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= (T)1;
    }
  } else {
    mod = copysign((T)0, b);
  }
  T fd;
  if (div != 0) {
    fd = floor(div);
    if (div - fd > (T)0.5) fd += (T)1;
  } else {
    fd = copysign((T)0, a / b);
  }
  *modulus = mod;
  return fd;
}
template <class T>
CU_D T ew_floordiv(T x, T y) {
  if constexpr (cu_is_bool<T>) return x && y;
  else if constexpr (cu_is_float<T>) {
    T m;
    return cu_divmod(x, y, &m);
  } else if constexpr (cu_is_signed_int<T>) {
    if (y == 0) return 0;
    if (y == -1) return ew_neg(x);
    T q = (T)(x / y), r = (T)(x % y);
    return (r != 0 && ((r < 0) != (y < 0))) ? (T)(q - 1) : q;
  } else {
    return y == 0 ? (T)0 : (T)(x / y);
  }
}
template <class T>
CU_D T ew_mod(T x, T y) {
  if constexpr (cu_is_bool<T>) return false;
  else if constexpr (cu_is_float<T>) {
    T m;
    (void)cu_divmod(x, y, &m);
    return m;
  } else if constexpr (cu_is_signed_int<T>) {
    if (y == 0 || y == -1) return 0;
    T r = (T)(x % y);
    return (r != 0 && ((r < 0) != (y < 0))) ? (T)(r + y) : r;
  } else {
    return y == 0 ? (T)0 : (T)(x % y);
  }
}

/* A native composite's attribute slot (device_plugins/common/native_attrs.h) as the compute
 * type T: the bits of a float or a double, else the integer value. */
template <class T>
CU_D T cu_attr_ct(int64_t v) {
  if constexpr (std::is_same<T, float>::value) return __int_as_float((int)(unsigned)v);
  else if constexpr (std::is_same<T, double>::value) return __longlong_as_double(v);
  else return (T)v;
}
#define EW_ATTR_CT(v) cu_attr_ct<ew_ct>(v)

#endif /* HWPORT_CUDA_EW_MATH_CUH */
