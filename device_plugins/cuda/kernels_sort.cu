/* hwport CUDA plugin — argsort (attr axis non-negative, attr descending; stable; NaN sorts last
 * ascending and first descending; -0.0 == 0.0; int64 output), input contiguous.
 *
 * A bottom-up merge sort of positions along the axis, every row at once: pass w merges runs of
 * w sorted positions pairwise into runs of 2w, one thread per element, which finds its place
 * as its rank in its own run plus a binary search in the other (ties: the left run first, so
 * the sort is stable). ceil(log2(L)) passes ping-pong between two workspace buffers of
 * rows * L int64; a last kernel writes them in the output's [outer, L, inner] layout.
 * Keys are compared in the dtype's compute type (int64 exactly). */
#include <string.h>

#include "dispatch.cuh"
#include "kernels.h"

namespace {

struct sort_params {
  const char *x;
  long long rows, L, inner;
  int al, desc;
};

/* Whether key a goes before key b: ascending with NaN greatest, or its reverse. */
template <class T>
CU_D bool before(T a, T b, int desc) {
  if constexpr (std::is_floating_point<T>::value) {
    const bool an = a != a, bn = b != b;
    return desc ? (an && !bn) || (!an && !bn && a > b) : (!an && bn) || (!an && !bn && a < b);
  } else {
    return desc ? a > b : a < b;
  }
}

template <int D>
CU_D typename cu_dt<D>::C key_at(const sort_params &p, long long row, long long j) {
  const long long base = (row / p.inner) * p.L * p.inner + row % p.inner;
  return cu_load<D>(p.x + (base + j * p.inner) * (long long)sizeof(typename cu_dt<D>::S), p.al);
}

#define CU_SORT_LOOP(e, n)                                                                     \
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < (n);               \
       e += (long long)gridDim.x * blockDim.x)

__global__ void k_iota(long long *a, long long n, long long L) {
  CU_SORT_LOOP(e, n) a[e] = e % L;
}

template <int D>
__global__ void __launch_bounds__(256) k_merge(sort_params p, const long long *src,
                                               long long *dst, long long w) {
  CU_SORT_LOOP(e, p.rows * p.L) {
    const long long row = e / p.L, j = e % p.L, start = (j / (2 * w)) * (2 * w);
    const long long *run = src + row * p.L;
    const long long mid = min(start + w, p.L), end = min(start + 2 * w, p.L);
    const auto key = key_at<D>(p, row, run[j]);
    long long lo, hi, pos;
    if (j < mid) { /* left run: count the right run's keys strictly before it */
      lo = mid;
      hi = end;
      while (lo < hi) {
        const long long m = (lo + hi) / 2;
        if (before(key_at<D>(p, row, run[m]), key, p.desc)) lo = m + 1;
        else hi = m;
      }
      pos = (j - start) + (lo - mid);
    } else { /* right run: count the left run's keys not after it (ties: left first) */
      lo = start;
      hi = mid;
      while (lo < hi) {
        const long long m = (lo + hi) / 2;
        if (!before(key, key_at<D>(p, row, run[m]), p.desc)) lo = m + 1;
        else hi = m;
      }
      pos = (j - mid) + (lo - start);
    }
    dst[row * p.L + start + pos] = run[j];
  }
}

__global__ void k_sort_out(const long long *src, char *out, long long rows, long long L,
                           long long inner, int al) {
  CU_SORT_LOOP(e, rows * L) {
    const long long row = e / L, j = e % L;
    const long long o = row / inner, r = row % inner;
    cu_st(out + ((o * L + j) * inner + r) * 8, al, src[e]);
  }
}

typedef void (*merge_fn)(const sort_params &, const cu_kctx &, const long long *, long long *,
                         long long);
template <int D>
struct sort_pick {
  static merge_fn get() {
    if constexpr (D == HWP_DTYPE_BOOL) {
      return nullptr; /* ops.yaml: numeric dtypes */
    } else {
      return [](const sort_params &p, const cu_kctx &k, const long long *src, long long *dst,
                long long w) {
        k_merge<D><<<cu_grid(&k, (uint64_t)(p.rows * p.L), 256), 256, 0, k.stream>>>(p, src,
                                                                                      dst, w);
      };
    }
  }
};

HWP_Status argsort_kernel(const HWP_KernelContext *ctx) {
  const char *op = "argsort";
  cu_kctx k;
  HWP_Status st = cu_kernel_begin(ctx, op, 1, 1, &k);
  if (st != HWP_OK) return st;
  const HWP_TensorView *x = &ctx->inputs[0], *y = &ctx->outputs[0];
  merge_fn fn = cu_pick<sort_pick>(x->dtype);
  if (fn == nullptr) return cu_unsupported_dtype(op, x->dtype);
  if ((st = cu_check_dtype(op, "the output", y, HWP_DTYPE_INT64)) != HWP_OK) return st;
  if (!cu_view_contiguous(x) || !cu_view_contiguous(y) || cu_view_numel(x) != cu_view_numel(y))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                    "%s: input and output must be contiguous with the same element count", op);
  int64_t axis = 0, desc = 0;
  if ((st = cu_attr_int(ctx, op, "axis", x->ndim > 0 ? x->ndim - 1 : 0, &axis)) != HWP_OK)
    return st;
  uint8_t b = 0;
  if (ctx->get_attr != nullptr &&
      ctx->get_attr(ctx, "descending", HWP_ATTR_BOOL, &b, nullptr) == HWP_OK)
    desc = b;
  if (axis < 0 || axis >= (x->ndim == 0 ? 1 : x->ndim))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: axis %lld out of range for %d dims", op,
                    (long long)axis, (int)x->ndim);
  sort_params p;
  memset(&p, 0, sizeof p);
  long long outer = 0;
  cu_split_axis(x, (int)axis, &outer, &p.inner);
  p.L = x->ndim == 0 ? 1 : x->shape[axis];
  p.rows = outer * p.inner;
  p.x = cu_view_ptr(x);
  p.al = cu_view_aligned(x);
  p.desc = (int)desc;
  const long long n = p.rows * p.L;
  if (n == 0) return cu_kernel_end(&k, op);
  cu_scratch ws;
  if ((st = cu_scratch_alloc(ctx, &k, op, (uint64_t)n * 16, &ws)) != HWP_OK) return st;
  long long *a = static_cast<long long *>(ws.ptr), *bb = a + n;
  const unsigned grid = cu_grid(&k, (uint64_t)n, 256);
  k_iota<<<grid, 256, 0, k.stream>>>(a, n, p.L);
  for (long long w = 1; w < p.L; w *= 2) {
    fn(p, k, a, bb, w);
    long long *t = a;
    a = bb;
    bb = t;
  }
  k_sort_out<<<grid, 256, 0, k.stream>>>(a, cu_view_ptr(y), p.rows, p.L, p.inner,
                                         cu_view_aligned(y));
  st = cu_kernel_end(&k, op);
  const HWP_Status freed = cu_scratch_free(&k, op, &ws);
  return st != HWP_OK ? st : freed;
}

}  // namespace

extern "C" HWP_Status cu_register_sort_kernels(const HWP_HostApi *host) {
  for (int d = 0; d < HWP_DTYPE_COUNT; ++d) {
    if (cu_pick<sort_pick>(d) == nullptr) continue;
    HWP_Status st = cu_register(host, "argsort", d, argsort_kernel, 0, nullptr);
    if (st != HWP_OK) return st;
  }
  return HWP_OK;
}
