/* hwport CUDA plugin — index and creation ops: arange, concat, pad, gather, take_along_axis,
 * scatter (phi_ops/ops.yaml kernel contracts; inputs arrive contiguous; index values are
 * checked by the host before a launch). Elements move as raw 1/2/4/8-byte words, so one
 * instantiation per element size serves every dtype; arange and scatter's add compute per
 * dtype (argsort: kernels_sort.cu).
 *
 * scatter: one thread per output element (o, t, r) scans the index: assign takes the update
 * of the last row j with index[j] == t (later rows win), add accumulates x and the updates of
 * every such row in index order (bool: or; integers: wrap-around; floats: in double, rounded
 * once), the CPU plugin's semantics; the work is numel(x) * len(index) comparisons. */
#include <string.h>

#include "dispatch.cuh"
#include "ew_math.cuh"
#include "fill_value.h"
#include "kernels.h"

namespace {

template <int SZ>
using raw_t = typename std::conditional<
    SZ == 1, uint8_t,
    typename std::conditional<
        SZ == 2, uint16_t,
        typename std::conditional<SZ == 4, uint32_t, uint64_t>::type>::type>::type;

/* A flat index over the output as (outer, mid, inner) with mid the axis. */
struct axis3 {
  long long outer, mid, inner;
};

CU_D void split3(long long i, long long mid, long long inner, long long *o, long long *m,
                 long long *n) {
  *n = i % inner;
  i /= inner;
  *m = i % mid;
  *o = i / mid;
}

/* Index value j of an int64 (isz64) or int32 index tensor. */
CU_D long long index_at(const char *index, long long j, int isz64) {
  return isz64 ? cu_ld<long long>(index + j * 8, 1) : (long long)cu_ld<int>(index + j * 4, 1);
}

#define CU_GRID_STRIDE(i, n)                                                                   \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);               \
       i += (long long)gridDim.x * blockDim.x)

/* ---- arange: out[i] = start + i * step ------------------------------------------------------ */

struct arange_params {
  char *out;
  long long n, istart, istep;
  double fstart, fstep;
  int al;
};

template <int D>
__global__ void __launch_bounds__(256) k_arange(arange_params p) {
  typedef typename cu_dt<D>::S S;
  CU_GRID_STRIDE(i, p.n) {
    S v;
    if constexpr (D <= HWP_DTYPE_INT64)
      v = (S)(long long)((unsigned long long)p.istart +
                         (unsigned long long)i * (unsigned long long)p.istep);
    else
      v = cu_dt<D>::st(__dadd_rn(p.fstart, __dmul_rn((double)i, p.fstep)));
    cu_st(p.out + i * (long long)sizeof(S), p.al, v);
  }
}

typedef void (*arange_fn)(const arange_params &, const cu_kctx &);
template <int D>
struct arange_pick {
  static arange_fn get() {
    if constexpr (D == HWP_DTYPE_BOOL) {
      return nullptr; /* ops.yaml: numeric dtypes */
    } else {
      return [](const arange_params &p, const cu_kctx &k) {
        k_arange<D><<<cu_grid(&k, (uint64_t)p.n, 256), 256, 0, k.stream>>>(p);
      };
    }
  }
};

/* A numeric attribute read both ways: INT64 (exact) and FLOAT64; absent gives `fallback`. */
void number_attr(const HWP_KernelContext *ctx, const char *name, double fallback, long long *iv,
                 double *fv) {
  int64_t i = 0;
  double f = fallback;
  const int have_i = ctx->get_attr(ctx, name, HWP_ATTR_INT64, &i, nullptr) == HWP_OK;
  const int have_f = ctx->get_attr(ctx, name, HWP_ATTR_FLOAT64, &f, nullptr) == HWP_OK;
  if (!have_f) f = have_i ? (double)i : fallback;
  if (!have_i) /* saturating, as cast */
    i = f != f ? 0 : f >= 9.2233720368547758e18 ? INT64_MAX
                  : f <= -9.2233720368547758e18 ? INT64_MIN : (int64_t)f;
  *iv = i;
  *fv = f;
}

HWP_Status arange_kernel(const HWP_KernelContext *ctx) {
  const char *op = "arange";
  cu_kctx k;
  HWP_Status st = cu_kernel_begin(ctx, op, 0, 1, &k);
  if (st != HWP_OK) return st;
  const HWP_TensorView *y = &ctx->outputs[0];
  arange_fn fn = cu_pick<arange_pick>(y->dtype);
  if (fn == nullptr) return cu_unsupported_dtype(op, y->dtype);
  if (ctx->get_attr == nullptr)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the kernel context has no get_attr", op);
  arange_params p;
  memset(&p, 0, sizeof p);
  number_attr(ctx, "start", 0.0, &p.istart, &p.fstart);
  number_attr(ctx, "step", 1.0, &p.istep, &p.fstep);
  p.out = cu_view_ptr(y);
  p.n = cu_view_numel(y);
  p.al = cu_view_aligned(y);
  if (p.n > 0) fn(p, k);
  return cu_kernel_end(&k, op);
}

/* ---- raw element moves: concat, pad, gather, take_along_axis ------------------------------- */

/* concat: input [outer, len, inner] into the output [outer, total, inner] at axis offset `at`. */
template <int SZ>
__global__ void __launch_bounds__(256) k_concat(const char *x, char *y, long long n, long long len,
                                                long long total, long long at, long long inner,
                                                int al) {
  typedef raw_t<SZ> R;
  CU_GRID_STRIDE(i, n) {
    long long o, m, r;
    split3(i, len, inner, &o, &m, &r);
    cu_st(y + ((o * total + at + m) * inner + r) * SZ, al, cu_ld<R>(x + i * SZ, al));
  }
}

/* pad: every output element, from the input when inside it, else the value's bits. */
struct pad_params {
  const char *x;
  char *y;
  long long n, bits;
  int ndim, al;
  long long oshape[HWP_MAX_NDIM], ishape[HWP_MAX_NDIM], before[HWP_MAX_NDIM];
};

template <int SZ>
__global__ void __launch_bounds__(256) k_pad(pad_params p) {
  typedef raw_t<SZ> R;
  R value;
  memcpy(&value, &p.bits, SZ);
  CU_GRID_STRIDE(i, p.n) {
    long long r = i, src = 0, mul = 1;
    bool inside = true;
    for (int d = p.ndim - 1; d >= 0; --d) {
      const long long j = r % p.oshape[d] - p.before[d];
      r /= p.oshape[d];
      inside = inside && j >= 0 && j < p.ishape[d];
      src += j * mul;
      mul *= p.ishape[d];
    }
    cu_st(p.y + i * SZ, p.al, inside ? cu_ld<R>(p.x + src * SZ, p.al) : value);
  }
}

/* gather: out [outer, nidx, inner] = x [outer, index[j], inner], x of axis length `len`.
 * take_along_axis (along == 1): out[o, j, r] = x[o', index[o, j, r], r'] where a size-1 dim of x
 * broadcasts (o', r' from the per-dim strides below). */
struct gather_params {
  const char *x, *index;
  char *y;
  long long n, outer, mid, inner, len;
  int along, isz64, al, ndim, axis;
  long long oshape[HWP_MAX_NDIM], xstride[HWP_MAX_NDIM]; /* x strides in elements, 0: broadcast */
};

template <int SZ>
__global__ void __launch_bounds__(256) k_gather(gather_params p) {
  typedef raw_t<SZ> R;
  CU_GRID_STRIDE(i, p.n) {
    long long src;
    if (!p.along) {
      long long o, j, r;
      split3(i, p.mid, p.inner, &o, &j, &r);
      const long long ix = index_at(p.index, j, p.isz64);
      src = (o * p.len + ix) * p.inner + r;
    } else {
      const long long ix = index_at(p.index, i, p.isz64);
      long long rem = i;
      src = 0;
      for (int d = p.ndim - 1; d >= 0; --d) {
        const long long c = rem % p.oshape[d];
        rem /= p.oshape[d];
        src += (d == p.axis ? ix : c) * p.xstride[d];
      }
    }
    cu_st(p.y + i * SZ, p.al, cu_ld<R>(p.x + src * SZ, p.al));
  }
}

struct scatter_params {
  const char *x, *index, *upd;
  char *y;
  long long n, mid, inner, nidx; /* output [outer, mid, inner]; updates [outer, nidx, inner] */
  int isz64, al, add;
};

template <class S, class Fold>
CU_D S scatter_one(const scatter_params &p, long long i, Fold fold) {
  long long o, t, r;
  split3(i, p.mid, p.inner, &o, &t, &r);
  S v = cu_ld<S>(p.x + i * (long long)sizeof(S), p.al);
  for (long long j = 0; j < p.nidx; ++j) {
    const long long ix = index_at(p.index, j, p.isz64);
    if (ix == t)
      v = fold(v, cu_ld<S>(p.upd + ((o * p.nidx + j) * p.inner + r) * (long long)sizeof(S), p.al));
  }
  return v;
}

template <int D>
__global__ void __launch_bounds__(256) k_scatter(scatter_params p) {
  typedef typename cu_dt<D>::S S;
  CU_GRID_STRIDE(i, p.n) {
    S out;
    if (!p.add) {
      out = scatter_one<S>(p, i, [](S, S u) { return u; });
    } else if constexpr (D >= HWP_DTYPE_FLOAT16) {
      /* x and the updates in double, rounded once (fold raw values into a double). */
      long long o, t, r;
      split3(i, p.mid, p.inner, &o, &t, &r);
      double acc = (double)cu_load<D>(p.x + i * (long long)sizeof(S), p.al);
      for (long long j = 0; j < p.nidx; ++j) {
        const long long ix = index_at(p.index, j, p.isz64);
        if (ix == t)
          acc = __dadd_rn(acc, (double)cu_load<D>(
                                   p.upd + ((o * p.nidx + j) * p.inner + r) * (long long)sizeof(S),
                                   p.al));
      }
      out = cu_dt<D>::st(acc);
    } else {
      out = scatter_one<S>(p, i, [](S a, S u) {
        return cu_dt<D>::st(ew_add(cu_dt<D>::ld(a), cu_dt<D>::ld(u)));
      });
    }
    cu_st(p.y + i * (long long)sizeof(S), p.al, out);
  }
}

typedef void (*scatter_fn)(const scatter_params &, const cu_kctx &);
template <int D>
struct scatter_pick {
  static scatter_fn get() {
    return [](const scatter_params &p, const cu_kctx &k) {
      k_scatter<D><<<cu_grid(&k, (uint64_t)p.n, 256), 256, 0, k.stream>>>(p);
    };
  }
};

/* Launches the instantiation of `K` for element size `size`. */
#define CU_BY_SIZE(size, K, grid, ...)                                                         \
  switch (size) {                                                                              \
  case 1: K<1><<<grid, 256, 0, k.stream>>>(__VA_ARGS__); break;                               \
  case 2: K<2><<<grid, 256, 0, k.stream>>>(__VA_ARGS__); break;                               \
  case 4: K<4><<<grid, 256, 0, k.stream>>>(__VA_ARGS__); break;                               \
  default: K<8><<<grid, 256, 0, k.stream>>>(__VA_ARGS__); break;                              \
  }

HWP_Status axis_attr(const HWP_KernelContext *ctx, const char *op, int ndim, long long fallback,
                     int *axis) {
  int64_t a = fallback;
  HWP_Status st = cu_attr_int(ctx, op, "axis", fallback, &a);
  if (st != HWP_OK) return st;
  if (a < 0 || a >= (ndim == 0 ? 1 : ndim))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: axis %lld out of range for %d dims", op,
                    (long long)a, ndim);
  *axis = (int)a;
  return HWP_OK;
}

HWP_Status require_contiguous(const char *op, const HWP_KernelContext *ctx) {
  for (int i = 0; i < ctx->num_inputs; ++i)
    if (!cu_view_contiguous(&ctx->inputs[i]))
      return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: input %d must be contiguous", op, i);
  if (!cu_view_contiguous(&ctx->outputs[0]))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must be contiguous", op);
  return HWP_OK;
}

HWP_Status concat_kernel(const HWP_KernelContext *ctx) {
  const char *op = "concat";
  const int nin = ctx != nullptr && HWP_HAS_FIELD(ctx, HWP_KernelContext, num_inputs) &&
                          ctx->num_inputs > 0 ? ctx->num_inputs : 1;
  cu_kctx k;
  HWP_Status st = cu_kernel_begin(ctx, op, nin, 1, &k);
  if (st != HWP_OK || (st = require_contiguous(op, ctx)) != HWP_OK) return st;
  const HWP_TensorView *y = &ctx->outputs[0];
  int axis = 0;
  if ((st = axis_attr(ctx, op, y->ndim, 0, &axis)) != HWP_OK) return st;
  long long outer, inner, at = 0;
  cu_split_axis(y, axis, &outer, &inner);
  const long long total = y->ndim == 0 ? 1 : y->shape[axis];
  const int size = (int)hwp_dtype_size(y->dtype);
  for (int i = 0; i < nin; ++i) {
    const HWP_TensorView *x = &ctx->inputs[i];
    int ok = x->dtype == y->dtype && x->ndim == y->ndim;
    for (int d = 0; ok && d < y->ndim; ++d) ok = d == axis || x->shape[d] == y->shape[d];
    if (!ok)
      return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                      "concat: input %d must be %s with the output's shape except along axis %d",
                      i, cu_dtype_name(y->dtype), axis);
    const long long len = x->ndim == 0 ? 1 : x->shape[axis];
    if (at + len > total)
      return cu_error(HWP_ERROR_INVALID_ARGUMENT, "concat: the inputs exceed the output's axis");
    const long long n = outer * len * inner;
    const int al = cu_view_aligned(x) && cu_view_aligned(y);
    if (n > 0)
      CU_BY_SIZE(size, k_concat, cu_grid(&k, (uint64_t)n, 256), cu_view_ptr(x), cu_view_ptr(y),
                 n, len, total, at, inner, al);
    at += len;
  }
  return cu_kernel_end(&k, op);
}

HWP_Status pad_kernel(const HWP_KernelContext *ctx) {
  const char *op = "pad";
  cu_kctx k;
  HWP_Status st = cu_kernel_begin(ctx, op, 1, 1, &k);
  if (st != HWP_OK || (st = require_contiguous(op, ctx)) != HWP_OK) return st;
  const HWP_TensorView *x = &ctx->inputs[0], *y = &ctx->outputs[0];
  const int64_t *pads = nullptr;
  int64_t count = 0;
  if (ctx->get_attr == nullptr ||
      ctx->get_attr(ctx, "pad", HWP_ATTR_INT64_ARRAY, (void *)&pads, &count) != HWP_OK ||
      count != 2 * x->ndim)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "pad: attr pad must hold 2 * %d values",
                    (int)x->ndim);
  pad_params p;
  memset(&p, 0, sizeof p);
  int64_t bits = 0;
  if ((st = hwps_value_bits(ctx, "pad", "value", 0, x->dtype, &bits)) != HWP_OK) return st;
  int ok = y->dtype == x->dtype && y->ndim == x->ndim;
  for (int d = 0; ok && d < x->ndim; ++d) {
    ok = pads[2 * d] >= 0 && pads[2 * d + 1] >= 0 &&
         y->shape[d] == x->shape[d] + pads[2 * d] + pads[2 * d + 1];
    p.oshape[d] = y->shape[d];
    p.ishape[d] = x->shape[d];
    p.before[d] = pads[2 * d];
  }
  if (!ok)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                    "pad: the output must be the input padded by attr pad (non-negative)");
  p.x = cu_view_ptr(x);
  p.y = cu_view_ptr(y);
  p.n = cu_view_numel(y);
  p.bits = bits;
  p.ndim = x->ndim;
  p.al = cu_view_aligned(x) && cu_view_aligned(y);
  if (p.n > 0) CU_BY_SIZE((int)hwp_dtype_size(x->dtype), k_pad, cu_grid(&k, (uint64_t)p.n, 256), p);
  return cu_kernel_end(&k, op);
}

/* gather (along == 0) and take_along_axis (along == 1). */
HWP_Status gather_kernel(const HWP_KernelContext *ctx) {
  const int along = ctx != nullptr && ctx->user_data != nullptr;
  const char *op = along ? "take_along_axis" : "gather";
  cu_kctx k;
  HWP_Status st = cu_kernel_begin(ctx, op, 2, 1, &k);
  if (st != HWP_OK || (st = require_contiguous(op, ctx)) != HWP_OK) return st;
  const HWP_TensorView *x = &ctx->inputs[0], *ix = &ctx->inputs[1], *y = &ctx->outputs[0];
  if (ix->dtype != HWP_DTYPE_INT32 && ix->dtype != HWP_DTYPE_INT64)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: index must be int32 or int64, got %s", op,
                    cu_dtype_name(ix->dtype));
  if ((st = cu_check_dtype(op, "the output", y, x->dtype)) != HWP_OK) return st;
  gather_params p;
  memset(&p, 0, sizeof p);
  int axis = 0;
  if ((st = axis_attr(ctx, op, x->ndim, 0, &axis)) != HWP_OK) return st;
  int ok = y->ndim == x->ndim;
  if (!along) {
    ok = ok && ix->ndim == 1 && (x->ndim == 0 || y->shape[axis] == ix->shape[0]);
    for (int d = 0; ok && d < x->ndim; ++d) ok = d == axis || y->shape[d] == x->shape[d];
    cu_split_axis(y, axis, &p.outer, &p.inner);
    p.mid = y->ndim == 0 ? 1 : y->shape[axis];
  } else {
    ok = ok && ix->ndim == y->ndim && y->ndim <= HWP_MAX_NDIM;
    long long acc = 1;
    for (int d = y->ndim - 1; ok && d >= 0; --d) {
      ok = ix->shape[d] == y->shape[d] &&
           (d == axis || x->shape[d] == y->shape[d] || x->shape[d] == 1);
      p.oshape[d] = y->shape[d];
      p.xstride[d] = (x->shape[d] == 1 && d != axis) ? 0 : acc;
      acc *= x->shape[d];
    }
  }
  if (!ok)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the shapes of x, index and the output do "
                    "not fit along axis %d", op, axis);
  p.x = cu_view_ptr(x);
  p.index = cu_view_ptr(ix);
  p.y = cu_view_ptr(y);
  p.n = cu_view_numel(y);
  p.len = x->ndim == 0 ? 1 : x->shape[axis];
  p.along = along;
  p.isz64 = ix->dtype == HWP_DTYPE_INT64;
  p.ndim = y->ndim;
  p.axis = axis;
  p.al = cu_view_aligned(x) && cu_view_aligned(y);
  if (!cu_view_aligned(ix))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the index view is misaligned", op);
  if (p.n > 0)
    CU_BY_SIZE((int)hwp_dtype_size(x->dtype), k_gather, cu_grid(&k, (uint64_t)p.n, 256), p);
  return cu_kernel_end(&k, op);
}

HWP_Status scatter_kernel(const HWP_KernelContext *ctx) {
  const char *op = "scatter";
  cu_kctx k;
  HWP_Status st = cu_kernel_begin(ctx, op, 3, 1, &k);
  if (st != HWP_OK || (st = require_contiguous(op, ctx)) != HWP_OK) return st;
  const HWP_TensorView *x = &ctx->inputs[0], *ix = &ctx->inputs[1], *u = &ctx->inputs[2];
  const HWP_TensorView *y = &ctx->outputs[0];
  scatter_fn fn = cu_pick<scatter_pick>(x->dtype);
  if (fn == nullptr) return cu_unsupported_dtype(op, x->dtype);
  if (ix->dtype != HWP_DTYPE_INT32 && ix->dtype != HWP_DTYPE_INT64)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: index must be int32 or int64, got %s", op,
                    cu_dtype_name(ix->dtype));
  if ((st = cu_check_dtype(op, "updates", u, x->dtype)) != HWP_OK ||
      (st = cu_check_dtype(op, "the output", y, x->dtype)) != HWP_OK)
    return st;
  int axis = 0;
  if ((st = axis_attr(ctx, op, x->ndim, 0, &axis)) != HWP_OK) return st;
  const char *reduce = "assign";
  if (ctx->get_attr(ctx, "reduce", HWP_ATTR_STRING, (void *)&reduce, nullptr) ==
      HWP_ERROR_INVALID_ARGUMENT)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attr reduce must be a string", op);
  if (strcmp(reduce, "assign") != 0 && strcmp(reduce, "add") != 0)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: reduce must be 'assign' or 'add', got '%s'",
                    op, reduce);
  int ok = x->ndim >= 1 && ix->ndim == 1 && u->ndim == x->ndim && y->ndim == x->ndim;
  for (int d = 0; ok && d < x->ndim; ++d)
    ok = y->shape[d] == x->shape[d] && u->shape[d] == (d == axis ? ix->shape[0] : x->shape[d]);
  if (!ok)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: updates must be shaped like x with dim %d "
                    "= len(index), the output like x", op, axis);
  scatter_params p;
  memset(&p, 0, sizeof p);
  long long outer = 0;
  cu_split_axis(x, axis, &outer, &p.inner);
  p.mid = x->shape[axis];
  p.nidx = ix->shape[0];
  p.x = cu_view_ptr(x);
  p.index = cu_view_ptr(ix);
  p.upd = cu_view_ptr(u);
  p.y = cu_view_ptr(y);
  p.n = cu_view_numel(y);
  p.isz64 = ix->dtype == HWP_DTYPE_INT64;
  p.add = strcmp(reduce, "add") == 0;
  p.al = cu_view_aligned(x) && cu_view_aligned(u) && cu_view_aligned(y);
  if (!cu_view_aligned(ix))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the index view is misaligned", op);
  if (p.n > 0) fn(p, k);
  return cu_kernel_end(&k, op);
}

}  // namespace

extern "C" HWP_Status cu_register_index_kernels(const HWP_HostApi *host) {
  for (int d = 0; d < HWP_DTYPE_COUNT; ++d) {
    if (!((CU_DTYPE_MASK >> d) & 1u)) continue;
    HWP_Status st = HWP_OK;
    if (cu_pick<arange_pick>(d) != nullptr)
      st = cu_register(host, "arange", d, arange_kernel, 0, nullptr);
    if (st == HWP_OK) st = cu_register(host, "concat", d, concat_kernel, 0, nullptr);
    if (st == HWP_OK) st = cu_register(host, "pad", d, pad_kernel, 0, nullptr);
    if (st == HWP_OK) st = cu_register(host, "gather", d, gather_kernel, 0, nullptr);
    if (st == HWP_OK) st = cu_register(host, "take_along_axis", d, gather_kernel, 0, (void *)1);
    if (st == HWP_OK) st = cu_register(host, "scatter", d, scatter_kernel, 0, nullptr);
    if (st != HWP_OK) return st;
  }
  return HWP_OK;
}
