/* hwport CUDA plugin — the scans cumsum and cumprod (attr axis: one non-negative dim; output
 * int64 for bool/integers, else the input's dtype), inputs contiguous.
 *
 * One warp per row (the axis; row r starts at (r / inner) * L * inner + r % inner, stride
 * inner): the row goes in tiles of 32 elements, each tile an inclusive warp scan (shuffles up)
 * plus the carry of the tiles before it. Accumulation as the reductions: bool/integers in int64
 * (wrap-around), float16/bfloat16 in float, float32/float64 in double. */
#include <string.h>

#include "block_reduce.cuh"
#include "dispatch.cuh"
#include "kernels.h"

namespace {

struct scan_params {
  const char *x;
  char *y;
  long long rows, L, inner;
  int al, odt, osz, prod;
};

template <int D>
using scan_acc = typename std::conditional<
    (D >= 8), double, typename std::conditional<(D >= 6), float, long long>::type>::type;

template <class A>
CU_D A scan_op(A a, A b, int prod) {
  if constexpr (std::is_integral<A>::value)
    return prod ? (A)((unsigned long long)a * (unsigned long long)b)
                : (A)((unsigned long long)a + (unsigned long long)b);
  else return prod ? a * b : a + b;
}

template <int D>
__global__ void __launch_bounds__(256) k_scan(scan_params p) {
  typedef scan_acc<D> A;
  const long long isz = sizeof(typename cu_dt<D>::S);
  const int lane = threadIdx.x & 31, wpb = blockDim.x >> 5;
  const A ident = p.prod ? (A)1 : (A)0;
  for (long long r0 = (long long)blockIdx.x * wpb; r0 < p.rows; r0 += (long long)gridDim.x * wpb) {
    const long long row = r0 + (threadIdx.x >> 5);
    if (row >= p.rows) continue; /* the whole warp leaves together */
    const long long base = (row / p.inner) * p.L * p.inner + row % p.inner;
    A carry = ident;
    for (long long t = 0; t < p.L; t += 32) {
      const long long j = t + lane;
      A v = j < p.L ? (A)cu_load<D>(p.x + (base + j * p.inner) * isz, p.al) : ident;
      for (int s = 1; s < 32; s <<= 1) {
        const A o = __shfl_up_sync(CU_FULL_MASK, v, s);
        if (lane >= s) v = scan_op(o, v, p.prod);
      }
      v = scan_op(carry, v, p.prod);
      if (j < p.L) cu_store_as(p.y + (base + j * p.inner) * p.osz, p.al, p.odt, v);
      carry = __shfl_sync(CU_FULL_MASK, v, 31);
    }
  }
}

typedef void (*scan_fn)(const scan_params &, const cu_kctx &);

template <int D>
struct scan_pick {
  static scan_fn get() {
    return [](const scan_params &p, const cu_kctx &k) {
      k_scan<D><<<cu_grid(&k, (uint64_t)((p.rows + 7) / 8), 1), 256, 0, k.stream>>>(p);
    };
  }
};

HWP_Status scan_kernel(const HWP_KernelContext *ctx) {
  const int prod = ctx != nullptr && ctx->user_data != nullptr;
  const char *op = prod ? "cumprod" : "cumsum";
  cu_kctx k;
  HWP_Status st = cu_kernel_begin(ctx, op, 1, 1, &k);
  if (st != HWP_OK) return st;
  const HWP_TensorView *x = &ctx->inputs[0], *y = &ctx->outputs[0];
  scan_fn fn = cu_pick<scan_pick>(x->dtype);
  if (fn == nullptr) return cu_unsupported_dtype(op, x->dtype);
  int64_t axis = 0;
  if ((st = cu_attr_int(ctx, op, "axis", 0, &axis)) != HWP_OK) return st;
  if (axis < 0 || axis >= (x->ndim == 0 ? 1 : x->ndim))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: axis %lld out of range for %d dims", op,
                    (long long)axis, (int)x->ndim);
  if (!cu_view_contiguous(x) || !cu_view_contiguous(y) || cu_view_numel(y) != cu_view_numel(x))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                    "%s: input and output must be contiguous with the same element count", op);
  scan_params p;
  memset(&p, 0, sizeof p);
  cu_split_axis(x, (int)axis, &p.rows, &p.inner);
  p.L = x->ndim == 0 ? 1 : x->shape[axis];
  p.rows *= p.inner;
  if (p.rows == 0 || p.L == 0) return cu_kernel_end(&k, op);
  p.x = cu_view_ptr(x);
  p.y = cu_view_ptr(y);
  p.al = cu_view_aligned(x) && cu_view_aligned(y);
  p.odt = y->dtype;
  p.osz = (int)hwp_dtype_size(y->dtype);
  p.prod = prod;
  fn(p, k);
  return cu_kernel_end(&k, op);
}

}  // namespace

extern "C" HWP_Status cu_register_scan_kernels(const HWP_HostApi *host) {
  for (int d = 0; d < HWP_DTYPE_COUNT; ++d) {
    if (cu_pick<scan_pick>(d) == nullptr) continue;
    HWP_Status st = cu_register(host, "cumsum", d, scan_kernel, 0, nullptr);
    if (st == HWP_OK) st = cu_register(host, "cumprod", d, scan_kernel, 0, (void *)1);
    if (st != HWP_OK) return st;
  }
  return HWP_OK;
}
