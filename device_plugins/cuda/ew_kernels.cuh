/* hwport CUDA plugin — the one template behind every elementwise kernel (CUDA C++).
 *
 * An op is a struct (cu_ew_unary, cu_ew_binary, cu_ew_where, cu_ew_cast, cu_ew_copy,
 * cu_ew_fill) with its number of inputs, their storage types S0..S2, the output storage type SO
 * and `f`, which maps raw input values to the raw output value. Two kernels run any op:
 *   cu_ew_vec      every operand contiguous and aligned to 4 elements: each thread moves 4
 *                  elements per operand with one vector load/store, grid-stride
 *   cu_ew_strided  any strided view (strides 0 and negative included, misaligned when al == 0):
 *                  the element's byte offsets come from its index over the collapsed shape
 * The generated per-dtype tables (cuda_ew_<dtype>.cu, phi_ops/codegen/gen_cuda_elementwise.py)
 * instantiate cu_ew_launch<op> for exactly the (op, dtype) pairs the plugin registers. */
#ifndef HWPORT_CUDA_EW_KERNELS_CUH
#define HWPORT_CUDA_EW_KERNELS_CUH

#include "ew_math.cuh"
#include "kernels.h"
#include "native_attrs.h"

enum { CU_EW_UNARY = 1, CU_EW_BINARY = 2, CU_EW_WHERE = 3, CU_EW_CAST = 4, CU_EW_COPY = 5,
       CU_EW_FILL = 6 };

typedef struct cu_ew_params {
  char *out;
  const char *in[3];
  long long n;
  int ndim; /* of the collapsed shape */
  int al;   /* every operand aligned to its itemsize */
  int odt;  /* the output dtype (cast) */
  long long bits; /* fill: the value's storage bits */
  int64_t attrs[HWPS_MAX_NATIVE_ATTRS]; /* a native composite's attribute slots */
  long long shape[HWP_MAX_NDIM];
  long long st[3][HWP_MAX_NDIM]; /* input byte strides */
} cu_ew_params;

typedef HWP_Status (*cu_ew_launch_fn)(const cu_ew_params *p, const cu_kctx *k, int vec);

typedef struct cu_ew_entry {
  const char *name;
  int kind;     /* CU_EW_* */
  int out_bool; /* unary/binary: the output is bool */
  cu_ew_launch_fn launch;
  int nattrs; /* a native composite's attributes (read into cu_ew_params.attrs) */
  hwps_attr_spec attrs[HWPS_MAX_NATIVE_ATTRS];
} cu_ew_entry;

#define CU_EW_VEC 4

template <class S, int N>
struct alignas(sizeof(S) * N) cu_vec {
  S v[N];
};

template <int D, class F, int OB>
struct cu_ew_unary {
  static constexpr int nin = 1;
  typedef typename cu_dt<D>::S S0;
  typedef uint8_t S1;
  typedef uint8_t S2;
  typedef typename cu_dt<OB ? 0 : D>::S SO;
  static CU_D SO f(S0 a, S1, S2, const cu_ew_params &p) {
    return cu_dt<OB ? 0 : D>::st(F()(cu_dt<D>::ld(a), p.attrs));
  }
};
template <int D, class F, int OB>
struct cu_ew_binary {
  static constexpr int nin = 2;
  typedef typename cu_dt<D>::S S0;
  typedef typename cu_dt<D>::S S1;
  typedef uint8_t S2;
  typedef typename cu_dt<OB ? 0 : D>::S SO;
  static CU_D SO f(S0 a, S1 b, S2, const cu_ew_params &p) {
    return cu_dt<OB ? 0 : D>::st(F()(cu_dt<D>::ld(a), cu_dt<D>::ld(b), p.attrs));
  }
};
template <int D>
struct cu_ew_where {
  static constexpr int nin = 3;
  typedef uint8_t S0;
  typedef typename cu_dt<D>::S S1;
  typedef typename cu_dt<D>::S S2;
  typedef typename cu_dt<D>::S SO;
  static CU_D SO f(S0 c, S1 x, S2 y, const cu_ew_params &) { return c ? x : y; }
};
template <int D>
struct cu_ew_copy {
  static constexpr int nin = 1;
  typedef typename cu_dt<D>::S S0;
  typedef uint8_t S1;
  typedef uint8_t S2;
  typedef S0 SO;
  static CU_D SO f(S0 a, S1, S2, const cu_ew_params &) { return a; }
};
template <int D>
struct cu_ew_fill {
  static constexpr int nin = 0;
  typedef uint8_t S0;
  typedef uint8_t S1;
  typedef uint8_t S2;
  typedef typename cu_dt<D>::S SO;
  static CU_D SO f(S0, S1, S2, const cu_ew_params &p) {
    SO v;
    memcpy(&v, &p.bits, sizeof v);
    return v;
  }
};
template <int DI, int DO>
struct cu_ew_cast {
  static constexpr int nin = 1;
  typedef typename cu_dt<DI>::S S0;
  typedef uint8_t S1;
  typedef uint8_t S2;
  typedef typename cu_dt<DO>::S SO;
  static CU_D SO f(S0 a, S1, S2, const cu_ew_params &) { return cu_dt<DO>::st(cu_dt<DI>::ld(a)); }
};

template <class Op>
__global__ void __launch_bounds__(256) cu_ew_vec(cu_ew_params p) {
  typedef typename Op::S0 S0;
  typedef typename Op::S1 S1;
  typedef typename Op::S2 S2;
  typedef typename Op::SO SO;
  constexpr int V = CU_EW_VEC;
  const long long nv = p.n / V;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long v = t; v < nv; v += step) {
    cu_vec<S0, V> a{};
    cu_vec<S1, V> b{};
    cu_vec<S2, V> c{};
    if constexpr (Op::nin > 0) a = reinterpret_cast<const cu_vec<S0, V> *>(p.in[0])[v];
    if constexpr (Op::nin > 1) b = reinterpret_cast<const cu_vec<S1, V> *>(p.in[1])[v];
    if constexpr (Op::nin > 2) c = reinterpret_cast<const cu_vec<S2, V> *>(p.in[2])[v];
    cu_vec<SO, V> o;
#pragma unroll
    for (int j = 0; j < V; ++j) o.v[j] = Op::f(a.v[j], b.v[j], c.v[j], p);
    reinterpret_cast<cu_vec<SO, V> *>(p.out)[v] = o;
  }
  for (long long i = nv * V + t; i < p.n; i += step) {
    S0 a{};
    S1 b{};
    S2 c{};
    if constexpr (Op::nin > 0) a = reinterpret_cast<const S0 *>(p.in[0])[i];
    if constexpr (Op::nin > 1) b = reinterpret_cast<const S1 *>(p.in[1])[i];
    if constexpr (Op::nin > 2) c = reinterpret_cast<const S2 *>(p.in[2])[i];
    reinterpret_cast<SO *>(p.out)[i] = Op::f(a, b, c, p);
  }
}

template <class Op>
__global__ void __launch_bounds__(256) cu_ew_strided(cu_ew_params p) {
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += step) {
    long long r = i, o0 = 0, o1 = 0, o2 = 0;
    for (int d = p.ndim - 1; d >= 0; --d) {
      const long long sh = p.shape[d], idx = r % sh;
      r /= sh;
      o0 += idx * p.st[0][d];
      if constexpr (Op::nin > 1) o1 += idx * p.st[1][d];
      if constexpr (Op::nin > 2) o2 += idx * p.st[2][d];
    }
    typename Op::S0 a{};
    typename Op::S1 b{};
    typename Op::S2 c{};
    if constexpr (Op::nin > 0) a = cu_ld<typename Op::S0>(p.in[0] + o0, p.al);
    if constexpr (Op::nin > 1) b = cu_ld<typename Op::S1>(p.in[1] + o1, p.al);
    if constexpr (Op::nin > 2) c = cu_ld<typename Op::S2>(p.in[2] + o2, p.al);
    cu_st(p.out + i * (long long)sizeof(typename Op::SO), p.al, Op::f(a, b, c, p));
  }
}

template <class Op>
HWP_Status cu_ew_launch(const cu_ew_params *p, const cu_kctx *k, int vec) {
  if (vec)
    cu_ew_vec<Op><<<cu_grid(k, (uint64_t)(p->n + CU_EW_VEC - 1) / CU_EW_VEC, 256), 256, 0,
                    k->stream>>>(*p);
  else
    cu_ew_strided<Op><<<cu_grid(k, (uint64_t)p->n, 256), 256, 0, k->stream>>>(*p);
  return HWP_OK;
}

/* cast: one instantiation per target dtype, picked by p->odt. */
template <int DI>
HWP_Status cu_ew_launch_cast(const cu_ew_params *p, const cu_kctx *k, int vec) {
  switch (p->odt) {
  case 0: return cu_ew_launch<cu_ew_cast<DI, 0>>(p, k, vec);
  case 1: return cu_ew_launch<cu_ew_cast<DI, 1>>(p, k, vec);
  case 2: return cu_ew_launch<cu_ew_cast<DI, 2>>(p, k, vec);
  case 3: return cu_ew_launch<cu_ew_cast<DI, 3>>(p, k, vec);
  case 4: return cu_ew_launch<cu_ew_cast<DI, 4>>(p, k, vec);
  case 5: return cu_ew_launch<cu_ew_cast<DI, 5>>(p, k, vec);
  case 6: return cu_ew_launch<cu_ew_cast<DI, 6>>(p, k, vec);
  case 7: return cu_ew_launch<cu_ew_cast<DI, 7>>(p, k, vec);
  case 8: return cu_ew_launch<cu_ew_cast<DI, 8>>(p, k, vec);
  case 9: return cu_ew_launch<cu_ew_cast<DI, 9>>(p, k, vec);
  default: return cu_error(HWP_ERROR_INVALID_ARGUMENT, "cast: unknown target dtype %d", p->odt);
  }
}

#endif /* HWPORT_CUDA_EW_KERNELS_CUH */
