/* hwport CUDA plugin — the reductions sum, prod, max, min, mean (attr axis: the reduced dims,
 * non-negative, sorted, unique, never empty) and argmax, argmin (attr axis: one dim; int64
 * output, first occurrence wins, NaN counts as the extreme), over any strided input view.
 *
 * The kept dims and the reduced dims are collapsed separately (size-1 dims dropped, a dim merged
 * into the next one of its group when their strides allow). Each output element is reduced by
 * a group of threads: G = the reduced length rounded up to a power of two when it is at most
 * 32 (several outputs per warp, warp shuffles of width G), else a whole block of 256 threads
 * (warp shuffles, then shared memory). When there are few outputs for the GPU and long rows,
 * each row is split into chunks whose partial accumulators go to workspace, and a second
 * kernel (one block per output) finishes them.
 *
 * Accumulation: bool/integers in int64 (wrap-around), float16/bfloat16 in float, float32 and
 * float64 in double. max/min propagate NaN; over bool they are any/all. The result is stored as
 * outputs[0].dtype (int64 for sum/prod of bool/integers). */
#include <math.h>
#include <string.h>

#include "block_reduce.cuh"
#include "dispatch.cuh"
#include "kernels.h"

namespace {

/* RED_MEAN: the composite mean, natively: sum, the result divided by the reduced count. */
enum { RED_SUM, RED_PROD, RED_MAX, RED_MIN, RED_MEAN, RED_ARGMAX, RED_ARGMIN, RED_COUNT };
const char *const kRedNames[RED_COUNT] = {"sum", "prod", "max", "min", "mean", "argmax", "argmin"};

struct red_params {
  const char *x;
  char *out;
  void *ws; /* nout * chunks accumulators when chunks > 1 */
  long long nout, R, chunks, chunk;
  int kd, rd, al, odt, osz, group;
  long long kshape[HWP_MAX_NDIM], kst[HWP_MAX_NDIM]; /* kept dims, byte strides */
  long long rshape[HWP_MAX_NDIM], rst[HWP_MAX_NDIM]; /* reduced dims, byte strides */
};

/* The accumulator type of dtype D: int64 for bool/integers, float for float16/bfloat16,
 * double for float32 (as numpy's pairwise float32 sum is accurate, and the GPU reduction is
 * memory-bound) and float64. */
template <int D>
using acc_t = typename std::conditional<
    (D >= 8), double, typename std::conditional<(D >= 6), float, long long>::type>::type;

template <class A>
CU_D A wrap_add(A a, A b) {
  if constexpr (std::is_integral<A>::value)
    return (A)((unsigned long long)a + (unsigned long long)b);
  else return a + b;
}
template <class A>
CU_D A wrap_mul(A a, A b) {
  if constexpr (std::is_integral<A>::value)
    return (A)((unsigned long long)a * (unsigned long long)b);
  else return a * b;
}
template <class A>
CU_D bool is_nan(A a) {
  if constexpr (std::is_floating_point<A>::value) return a != a;
  else return false;
}
template <class A>
CU_D A lowest() {
  if constexpr (std::is_floating_point<A>::value) return -INFINITY;
  else return std::numeric_limits<A>::min();
}
template <class A>
CU_D A highest() {
  if constexpr (std::is_floating_point<A>::value) return INFINITY;
  else return std::numeric_limits<A>::max();
}

/* One reduction: Acc, init(), from(value, index), comb (a functor), store(). */
template <int D, int OP>
struct red_op {
  typedef acc_t<D> A;
  typedef A Acc;
  static CU_D Acc init() {
    return OP == RED_SUM || OP == RED_MEAN ? (A)0
           : OP == RED_PROD                ? (A)1
           : OP == RED_MAX                 ? lowest<A>()
                                           : highest<A>();
  }
  static CU_D Acc from(typename cu_dt<D>::C v, long long) { return (A)v; }
  struct comb {
    CU_D Acc operator()(Acc a, Acc b) const {
      if constexpr (OP == RED_SUM || OP == RED_MEAN) return wrap_add(a, b);
      else if constexpr (OP == RED_PROD) return wrap_mul(a, b);
      else if constexpr (OP == RED_MAX) return (a >= b || is_nan(a)) ? a : b;
      else return (a <= b || is_nan(a)) ? a : b;
    }
  };
  /* n: the reduced count (mean: 0 / 0 = NaN for an empty reduction) */
  static CU_D void store(char *p, int al, int odt, Acc a, long long n) {
    if constexpr (OP == RED_MEAN) cu_store_as(p, al, odt, (A)(a / (A)n));
    else cu_store_as(p, al, odt, a);
  }
};

template <class A>
struct arg_acc {
  A v;
  long long i; /* -1: empty; 16 bytes in all, shuffled as 4-byte words */
};

template <int D, int OP>
struct arg_op {
  typedef acc_t<D> A;
  typedef arg_acc<A> Acc;
  static CU_D Acc init() { return Acc{(A)0, -1}; }
  static CU_D Acc from(typename cu_dt<D>::C v, long long r) { return Acc{(A)v, r}; }
  struct comb {
    CU_D Acc operator()(Acc a, Acc b) const {
      if (a.i < 0) return b;
      if (b.i < 0) return a;
      const bool an = is_nan(a.v), bn = is_nan(b.v);
      if (an || bn) return (an && (!bn || a.i < b.i)) ? a : b;
      const bool better = OP == RED_ARGMAX ? b.v > a.v : b.v < a.v;
      return (better || (b.v == a.v && b.i < a.i)) ? b : a;
    }
  };
  static CU_D void store(char *p, int al, int, Acc a, long long) { cu_st(p, al, (long long)a.i); }
};

template <int D, int OP>
using red_t = typename std::conditional<(OP >= RED_ARGMAX), arg_op<D, OP>, red_op<D, OP>>::type;

CU_D long long offset_of(long long i, int nd, const long long *shape, const long long *st) {
  if (nd == 1) return i * st[0];
  long long off = 0;
  for (int d = nd - 1; d >= 0; --d) {
    off += (i % shape[d]) * st[d];
    i /= shape[d];
  }
  return off;
}

template <int D, int OP>
__global__ void __launch_bounds__(256) k_red(red_params p) {
  typedef red_t<D, OP> R;
  typedef typename R::Acc Acc;
  typename R::comb comb;
  __shared__ Acc smem[32];
  const int G = p.group;
  const int gpb = blockDim.x / G, gid = threadIdx.x / G, lane = threadIdx.x % G;
  const long long total = p.nout * p.chunks;
  for (long long w0 = (long long)blockIdx.x * gpb; w0 < total; w0 += (long long)gridDim.x * gpb) {
    const long long w = w0 + gid;
    Acc acc = R::init();
    if (w < total) {
      const long long o = w / p.chunks, c = w % p.chunks;
      const char *base = p.x + offset_of(o, p.kd, p.kshape, p.kst);
      const long long r1 = min(p.R, (c + 1) * p.chunk);
      for (long long r = c * p.chunk + lane; r < r1; r += G)
        acc = comb(acc, R::from(cu_load<D>(base + offset_of(r, p.rd, p.rshape, p.rst), p.al), r));
    }
    acc = G <= 32 ? cu_warp_reduce(acc, G, comb) : cu_block_reduce(acc, comb, smem);
    if (lane == 0 && w < total) {
      if (p.chunks == 1) R::store(p.out + w * p.osz, p.al, p.odt, acc, p.R);
      else static_cast<Acc *>(p.ws)[w] = acc;
    }
  }
}


/* The second pass: one block per output combines its `chunks` partial accumulators. */
template <int D, int OP>
__global__ void __launch_bounds__(256) k_red_finish(red_params p) {
  typedef red_t<D, OP> R;
  typedef typename R::Acc Acc;
  typename R::comb comb;
  __shared__ Acc smem[32];
  const Acc *ws = static_cast<const Acc *>(p.ws);
  for (long long o = blockIdx.x; o < p.nout; o += gridDim.x) {
    Acc acc = R::init();
    for (long long c = threadIdx.x; c < p.chunks; c += blockDim.x)
      acc = comb(acc, ws[o * p.chunks + c]);
    acc = cu_block_reduce(acc, comb, smem);
    if (threadIdx.x == 0) R::store(p.out + o * p.osz, p.al, p.odt, acc, p.R);
  }
}

template <int D, int OP>
void launch(const red_params &p, const cu_kctx &k) {
  const unsigned block = 256;
  const long long total = p.nout * p.chunks;
  const unsigned gpb = block / (unsigned)p.group;
  k_red<D, OP><<<cu_grid(&k, (uint64_t)((total + gpb - 1) / gpb), 1), block, 0, k.stream>>>(p);
  if (p.chunks > 1)
    k_red_finish<D, OP><<<cu_grid(&k, (uint64_t)p.nout, 1), block, 0, k.stream>>>(p);
}

typedef void (*launch_fn)(const red_params &, const cu_kctx &);

template <int OP>
struct red_pick {
  template <int D>
  struct at {
    static launch_fn get() { return launch<D, OP>; }
  };
};

launch_fn launcher(int op, HWP_DType dt) {
  switch (op) {
  case RED_SUM: return cu_pick<red_pick<RED_SUM>::at>(dt);
  case RED_PROD: return cu_pick<red_pick<RED_PROD>::at>(dt);
  case RED_MAX: return cu_pick<red_pick<RED_MAX>::at>(dt);
  case RED_MIN: return cu_pick<red_pick<RED_MIN>::at>(dt);
  case RED_MEAN: /* ops.yaml: the float dtypes */
    return dt >= HWP_DTYPE_FLOAT16 && dt <= HWP_DTYPE_FLOAT64
               ? cu_pick<red_pick<RED_MEAN>::at>(dt)
               : nullptr;
  case RED_ARGMAX: return cu_pick<red_pick<RED_ARGMAX>::at>(dt);
  default: return cu_pick<red_pick<RED_ARGMIN>::at>(dt);
  }
}

size_t acc_size(int op, HWP_DType dt) {
  const size_t a = dt >= HWP_DTYPE_FLOAT32 || dt <= HWP_DTYPE_INT64 ? 8 : 4;
  return op >= RED_ARGMAX ? sizeof(arg_acc<double>) : a; /* arg_acc is 16 bytes either way */
}

/* Merges a group's dims (in order) where strides allow; returns the new count. */
int merge_dims(int n, long long *shape, long long *st) {
  int m = 0;
  for (int d = 0; d < n; ++d) {
    if (m > 0 && st[m - 1] == st[d] * shape[d]) {
      shape[m - 1] *= shape[d];
      st[m - 1] = st[d];
      continue;
    }
    shape[m] = shape[d];
    st[m] = st[d];
    ++m;
  }
  return m;
}

/* The reduced dims of attr axis as a bit mask over x's dims. */
HWP_Status axis_mask(const HWP_KernelContext *ctx, const char *op, int arg, int ndim,
                     uint32_t *mask) {
  *mask = 0;
  if (!HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) || ctx->get_attr == NULL)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the kernel context has no get_attr", op);
  if (arg) {
    int64_t a = 0;
    if (ctx->get_attr(ctx, "axis", HWP_ATTR_INT64, &a, NULL) != HWP_OK)
      return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attr axis (one int) is missing", op);
    if (a < 0 || a >= (ndim == 0 ? 1 : ndim))
      return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: axis %lld out of range for %d dims", op,
                      (long long)a, ndim);
    if (ndim > 0) *mask = 1u << a;
    return HWP_OK;
  }
  const int64_t *axes = nullptr;
  int64_t count = 0;
  if (ctx->get_attr(ctx, "axis", HWP_ATTR_INT64_ARRAY, (void *)&axes, &count) != HWP_OK)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attr axis (a list of ints) is missing", op);
  for (int64_t i = 0; i < count; ++i) {
    if (axes[i] < 0 || axes[i] >= (ndim == 0 ? 1 : ndim))
      return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: axis %lld out of range for %d dims", op,
                      (long long)axes[i], ndim);
    if (ndim > 0) *mask |= 1u << axes[i];
  }
  return HWP_OK;
}

HWP_Status red_kernel(const HWP_KernelContext *ctx) {
  const int op = (int)(intptr_t)(ctx != nullptr ? ctx->user_data : nullptr);
  const char *name = kRedNames[op >= 0 && op < RED_COUNT ? op : 0];
  cu_kctx k;
  HWP_Status st = cu_kernel_begin(ctx, name, 1, 1, &k);
  if (st != HWP_OK) return st;
  const HWP_TensorView *x = &ctx->inputs[0], *y = &ctx->outputs[0];
  launch_fn fn = launcher(op, x->dtype);
  if (fn == nullptr)
    return cu_unsupported_dtype(name, x->dtype);
  if (op >= RED_ARGMAX && (st = cu_check_dtype(name, "the output", y, HWP_DTYPE_INT64)) != HWP_OK)
    return st;
  uint32_t mask = 0;
  if ((st = axis_mask(ctx, name, op >= RED_ARGMAX, x->ndim, &mask)) != HWP_OK) return st;
  red_params p;
  memset(&p, 0, sizeof p);
  const long long isz = (long long)hwp_dtype_size(x->dtype);
  p.nout = 1;
  p.R = 1;
  long long acc = 1;
  long long est[HWP_MAX_NDIM];
  for (int d = x->ndim - 1; d >= 0; --d) {
    est[d] = x->strides ? (long long)x->strides[d] : acc;
    acc *= x->shape[d];
  }
  for (int d = 0; d < x->ndim; ++d) {
    const long long n = x->shape[d];
    if (mask & (1u << d)) {
      p.R *= n;
      if (n != 1) { p.rshape[p.rd] = n; p.rst[p.rd++] = est[d] * isz; }
    } else {
      p.nout *= n;
      if (n != 1) { p.kshape[p.kd] = n; p.kst[p.kd++] = est[d] * isz; }
    }
  }
  if (cu_view_numel(y) != p.nout)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output has %lld elements, expected %lld",
                    name, (long long)cu_view_numel(y), p.nout);
  if (!cu_view_contiguous(y))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must be contiguous", name);
  if (op >= RED_ARGMAX && p.R == 0)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the reduced axis is empty", name);
  p.kd = merge_dims(p.kd, p.kshape, p.kst);
  if (op < RED_ARGMAX) p.rd = merge_dims(p.rd, p.rshape, p.rst); /* arg: r is the axis index */
  p.x = cu_view_ptr(x);
  p.out = cu_view_ptr(y);
  p.odt = y->dtype;
  p.osz = (int)hwp_dtype_size(y->dtype);
  p.al = cu_view_aligned(x) && cu_view_aligned(y);
  if (p.nout == 0) return cu_kernel_end(&k, name);
  p.chunks = 1;
  cu_scratch ws = {nullptr, 0}; /* the chunks' partial accumulators, when split */
  if (p.R <= 32) {
    p.group = 1;
    while (p.group < p.R) p.group <<= 1;
  } else {
    p.group = 256;
    const long long want = 4LL * k.sm_count; /* blocks that fill the GPU */
    if (p.nout < want && p.R >= 8192) {
      long long chunks = (want + p.nout - 1) / p.nout;
      if (chunks > p.R / 4096) chunks = p.R / 4096;
      if (chunks > 1 && cu_scratch_alloc(ctx, &k, name,
                                         (uint64_t)(p.nout * chunks) * acc_size(op, x->dtype),
                                         &ws) == HWP_OK) {
        p.chunks = chunks;
        p.ws = ws.ptr;
      }
    }
  }
  p.chunk = (p.R + p.chunks - 1) / p.chunks;
  fn(p, k);
  st = cu_kernel_end(&k, name);
  const HWP_Status freed = cu_scratch_free(&k, name, &ws);
  return st != HWP_OK ? st : freed;
}

}  // namespace

extern "C" HWP_Status cu_register_reduce_kernels(const HWP_HostApi *host) {
  for (int op = 0; op < RED_COUNT; ++op)
    for (int d = 0; d < HWP_DTYPE_COUNT; ++d) {
      if (launcher(op, d) == nullptr) continue;
      HWP_Status st = cu_register(host, kRedNames[op], d, red_kernel, HWP_KERNEL_ACCEPTS_STRIDED,
                                  (void *)(intptr_t)op);
      if (st != HWP_OK) return st;
    }
  return HWP_OK;
}
