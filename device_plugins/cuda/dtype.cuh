/* hwport CUDA plugin — device-side dtype traits, loads and stores at any alignment, and the
 * conversions every kernel family shares (CUDA C++; not part of any ABI).
 *
 * cu_dt<D> for HWP_DType code D: S = storage type, C = compute type (bool as C++ bool, integers
 * as themselves, float16/bfloat16/float32 as float, float64 as double), ld(S) -> C, st(value)
 * -> S. float16 rounds to nearest even (__float2half_rn); bfloat16 too, NaN kept quiet with
 * its sign (as ml_dtypes does). Views carry no alignment promise: cu_ld/cu_st take al == 0 for a
 * misaligned view and then move the element byte by byte. */
#ifndef HWPORT_CUDA_DTYPE_CUH
#define HWPORT_CUDA_DTYPE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <cstring>
#include <limits>
#include <type_traits>

#define CU_HD __host__ __device__ __forceinline__
#define CU_D __device__ __forceinline__

template <class S>
CU_D S cu_ld(const char *p, int al) {
  if (al) return *reinterpret_cast<const S *>(p);
  S v;
  char *q = reinterpret_cast<char *>(&v);
#pragma unroll
  for (int k = 0; k < (int)sizeof(S); ++k) q[k] = p[k];
  return v;
}
template <class S>
CU_D void cu_st(char *p, int al, S v) {
  if (al) {
    *reinterpret_cast<S *>(p) = v;
    return;
  }
  const char *q = reinterpret_cast<const char *>(&v);
#pragma unroll
  for (int k = 0; k < (int)sizeof(S); ++k) p[k] = q[k];
}

CU_HD float cu_f16_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }
CU_HD uint16_t cu_f32_to_f16(float f) { return __half_as_ushort(__float2half_rn(f)); }
CU_HD float cu_bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
CU_HD uint16_t cu_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}
/* Rounded to odd (exact when it fits): a later rounding to 8 or 11 bits is then the single
 * correct rounding of the wider value (int32/int64/double -> float16/bfloat16 round once). */
CU_D float cu_rto_from_double(double d) {
  if (isnan(d) || isinf(d)) return (float)d;
  float f = __double2float_rz(d);
  if ((double)f != d) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f;
}
CU_D float cu_rto_from_int64(long long v) {
  float f = __ll2float_rz(v);
  long long back = f >= 9.2233720368547758e18f ? 0x7fffffffffffffffll : __float2ll_rz(f);
  if (back != v) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f;
}

/* Float -> integer: truncation toward zero, NaN -> 0, saturating (the CPU plugin's rule). */
template <class I, class F>
CU_D I cu_sat(F v) {
  if (v != v) return 0;
  const F lo = (F)std::numeric_limits<I>::min(), hi = (F)std::numeric_limits<I>::max();
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi) return std::numeric_limits<I>::max();
  return (I)v;
}

template <int D>
struct cu_dt;
#define CU_INT_DT(CODE, T)                                                                     \
  template <>                                                                                  \
  struct cu_dt<CODE> {                                                                         \
    typedef T S;                                                                               \
    typedef T C;                                                                               \
    static CU_D C ld(S s) { return s; }                                                        \
    template <class V>                                                                         \
    static CU_D S st(V v) {                                                                    \
      if constexpr (std::is_floating_point<V>::value) return cu_sat<T>(v);                     \
      else return (S)v;                                                                        \
    }                                                                                          \
  };
CU_INT_DT(1, int8_t)
CU_INT_DT(2, uint8_t)
CU_INT_DT(3, int16_t)
CU_INT_DT(4, int32_t)
CU_INT_DT(5, long long)
#undef CU_INT_DT
/* bool computes as C++ bool, so that ew_math.cuh can give it its own semantics (bitwise_not
 * is logical not, add is or, ...). */
template <>
struct cu_dt<0> {
  typedef uint8_t S;
  typedef bool C;
  static CU_D C ld(S s) { return s != 0; }
  template <class V>
  static CU_D S st(V v) { return v != 0; }
};
template <>
struct cu_dt<6> {
  typedef uint16_t S;
  typedef float C;
  static CU_D C ld(S s) { return cu_f16_to_f32(s); }
  template <class V>
  static CU_D S st(V v) {
    if constexpr (std::is_same<V, double>::value) return __half_as_ushort(__double2half(v));
    else if constexpr (std::is_integral<V>::value && sizeof(V) >= 4)
      return cu_f32_to_f16(cu_rto_from_int64((long long)v));
    else return cu_f32_to_f16((float)v);
  }
};
template <>
struct cu_dt<7> {
  typedef uint16_t S;
  typedef float C;
  static CU_D C ld(S s) { return cu_bf16_to_f32(s); }
  template <class V>
  static CU_D S st(V v) {
    if constexpr (std::is_same<V, double>::value) return cu_f32_to_bf16(cu_rto_from_double(v));
    else if constexpr (std::is_integral<V>::value && sizeof(V) >= 4)
      return cu_f32_to_bf16(cu_rto_from_int64((long long)v));
    else return cu_f32_to_bf16((float)v);
  }
};
template <>
struct cu_dt<8> {
  typedef float S;
  typedef float C;
  static CU_D C ld(S s) { return s; }
  template <class V>
  static CU_D S st(V v) { return (S)v; }
};
template <>
struct cu_dt<9> {
  typedef double S;
  typedef double C;
  static CU_D C ld(S s) { return s; }
  template <class V>
  static CU_D S st(V v) { return (S)v; }
};

/* Stores value v (any compute/accumulator type) as dtype `odt` (a runtime code). */
template <class V>
CU_D void cu_store_as(char *p, int al, int odt, V v) {
  switch (odt) {
  case 0: cu_st(p, al, cu_dt<0>::st(v)); break;
  case 1: cu_st(p, al, cu_dt<1>::st(v)); break;
  case 2: cu_st(p, al, cu_dt<2>::st(v)); break;
  case 3: cu_st(p, al, cu_dt<3>::st(v)); break;
  case 4: cu_st(p, al, cu_dt<4>::st(v)); break;
  case 5: cu_st(p, al, cu_dt<5>::st(v)); break;
  case 6: cu_st(p, al, cu_dt<6>::st(v)); break;
  case 7: cu_st(p, al, cu_dt<7>::st(v)); break;
  case 8: cu_st(p, al, cu_dt<8>::st(v)); break;
  case 9: cu_st(p, al, cu_dt<9>::st(v)); break;
  default: break;
  }
}

/* Loads one element of dtype D at p as its compute type. */
template <int D>
CU_D typename cu_dt<D>::C cu_load(const char *p, int al) {
  return cu_dt<D>::ld(cu_ld<typename cu_dt<D>::S>(p, al));
}

#endif /* HWPORT_CUDA_DTYPE_CUH */
