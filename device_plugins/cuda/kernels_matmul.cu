/* hwport CUDA plugin — matmul: x [B..., M, K] @ y [B..., K, N] -> [B..., M, N], inputs arriving
 * contiguous (batch dims already broadcast, transposes already applied by the host).
 *
 * float16/bfloat16/float32/float64 go to cuBLAS (cublasGemmStridedBatchedEx through dlopen,
 * cublas_loader.c; float accumulation for the 16-bit types and float32, no TF32; double for
 * float64) when it loads and the operands suit it (aligned, dims below 2^31). Otherwise, and
 * for int32/int64 (wrap-around, int64 accumulation), a tiled kernel: 32x32 output tiles, 16x16
 * threads with 2x2 outputs each, K in steps of 32 staged through shared memory.
 * HWPORT_CUDA_MATMUL=tiled forces the tiled kernel (to test it, or to compare). */
#include <stdlib.h>
#include <string.h>

#include "cublas_loader.h"
#include "dispatch.cuh"
#include "kernels.h"

namespace {

constexpr int TILE = 32;

struct mm_params {
  const char *x, *y;
  char *out;
  long long batch, M, N, K;
  int al;
};

template <int D>
using mm_acc = typename std::conditional<
    D == 9, double, typename std::conditional<(D >= 6), float, long long>::type>::type;

template <class A>
CU_D A mm_fma(A acc, A a, A b) {
  if constexpr (std::is_integral<A>::value)
    return (A)((unsigned long long)acc + (unsigned long long)a * (unsigned long long)b);
  else return acc + a * b;
}

template <int D>
__global__ void __launch_bounds__(256) k_matmul(mm_params p) {
  typedef mm_acc<D> A;
  typedef typename cu_dt<D>::S S;
  const long long isz = sizeof(S);
  __shared__ A xs[TILE][TILE + 1];
  __shared__ A ys[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y; /* 16 x 16 */
  const long long tiles_n = (p.N + TILE - 1) / TILE, tiles_m = (p.M + TILE - 1) / TILE;
  const long long tiles = tiles_n * tiles_m * p.batch;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    const long long b = t / (tiles_n * tiles_m), tm = (t / tiles_n) % tiles_m, tn = t % tiles_n;
    const char *xb = p.x + b * p.M * p.K * isz, *yb = p.y + b * p.K * p.N * isz;
    A acc[2][2] = {{0, 0}, {0, 0}};
    for (long long k0 = 0; k0 < p.K; k0 += TILE) {
      for (int i = ty; i < TILE; i += 16)
        for (int j = tx; j < TILE; j += 16) {
          const long long r = tm * TILE + i, c = k0 + j;
          xs[i][j] = r < p.M && c < p.K ? (A)cu_load<D>(xb + (r * p.K + c) * isz, p.al) : (A)0;
          const long long r2 = k0 + i, c2 = tn * TILE + j;
          ys[i][j] = r2 < p.K && c2 < p.N ? (A)cu_load<D>(yb + (r2 * p.N + c2) * isz, p.al) : (A)0;
        }
      __syncthreads();
#pragma unroll 8
      for (int kk = 0; kk < TILE; ++kk)
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int j = 0; j < 2; ++j)
            acc[i][j] = mm_fma(acc[i][j], xs[ty + 16 * i][kk], ys[kk][tx + 16 * j]);
      __syncthreads();
    }
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        const long long r = tm * TILE + ty + 16 * i, c = tn * TILE + tx + 16 * j;
        if (r < p.M && c < p.N)
          cu_st(p.out + ((b * p.M + r) * p.N + c) * isz, p.al, cu_dt<D>::st(acc[i][j]));
      }
  }
}

typedef void (*mm_launch_fn)(const mm_params &, const cu_kctx &);

template <int D>
void mm_launch(const mm_params &p, const cu_kctx &k) {
  const uint64_t tiles =
      (uint64_t)((p.M + TILE - 1) / TILE) * (uint64_t)((p.N + TILE - 1) / TILE) * p.batch;
  k_matmul<D><<<cu_grid(&k, tiles, 1), dim3(16, 16), 0, k.stream>>>(p);
}

template <int D>
struct mm_pick {
  static mm_launch_fn get() {
    if constexpr (D != HWP_DTYPE_BOOL) return mm_launch<D>;
    else return nullptr; /* ops.yaml: numeric dtypes */
  }
};

mm_launch_fn mm_launcher(HWP_DType dt) { return cu_pick<mm_pick>(dt); }

/* cuBLAS for the float dtypes; NOT_SUPPORTED when it does not apply (the caller tiles). */
HWP_Status mm_cublas(const mm_params &p, const cu_kctx &k, HWP_DType dt) {
  const char *force = getenv("HWPORT_CUDA_MATMUL");
  if (force != nullptr && strcmp(force, "tiled") == 0) return HWP_ERROR_NOT_SUPPORTED;
  int type;
  switch (dt) {
  case HWP_DTYPE_FLOAT16: type = CU_BLAS_R_16F; break;
  case HWP_DTYPE_BFLOAT16: type = CU_BLAS_R_16BF; break;
  case HWP_DTYPE_FLOAT32: type = CU_BLAS_R_32F; break;
  case HWP_DTYPE_FLOAT64: type = CU_BLAS_R_64F; break;
  default: return HWP_ERROR_NOT_SUPPORTED;
  }
  const long long lim = 0x7fffffffLL;
  if (!p.al || p.M > lim || p.N > lim || p.K > lim || p.batch > lim) return HWP_ERROR_NOT_SUPPORTED;
  const float f1 = 1.0f, f0 = 0.0f;
  const double d1 = 1.0, d0 = 0.0;
  const int dbl = dt == HWP_DTYPE_FLOAT64;
  /* Row-major C = X Y is column-major C^T = Y^T X^T: cuBLAS sees y as an N x K matrix (ld N)
   * and x as K x M (ld K). */
  return cu_cublas_gemm(k.device, k.stream, CU_BLAS_OP_N, CU_BLAS_OP_N, (int)p.N, (int)p.M,
                        (int)p.K, dbl ? (const void *)&d1 : (const void *)&f1, p.y, type,
                        (int)(p.N > 0 ? p.N : 1), p.K * p.N, p.x, type,
                        (int)(p.K > 0 ? p.K : 1), p.M * p.K,
                        dbl ? (const void *)&d0 : (const void *)&f0, p.out, type,
                        (int)(p.N > 0 ? p.N : 1), p.M * p.N, (int)p.batch,
                        dbl ? CU_BLAS_COMPUTE_64F : CU_BLAS_COMPUTE_32F);
}

HWP_Status matmul_kernel(const HWP_KernelContext *ctx) {
  const char *op = "matmul";
  cu_kctx k;
  HWP_Status st = cu_kernel_begin(ctx, op, 2, 1, &k);
  if (st != HWP_OK) return st;
  const HWP_TensorView *x = &ctx->inputs[0], *y = &ctx->inputs[1], *o = &ctx->outputs[0];
  const HWP_DType dt = x->dtype;
  mm_launch_fn fn = mm_launcher(dt);
  if (fn == nullptr) return cu_unsupported_dtype(op, dt);
  if ((st = cu_check_dtype(op, "y", y, dt)) != HWP_OK ||
      (st = cu_check_dtype(op, "the output", o, dt)) != HWP_OK)
    return st;
  const int nd = x->ndim;
  int ok = nd >= 2 && y->ndim == nd && o->ndim == nd;
  for (int d = 0; ok && d < nd - 2; ++d)
    ok = y->shape[d] == x->shape[d] && o->shape[d] == x->shape[d];
  ok = ok && y->shape[nd - 2] == x->shape[nd - 1] && o->shape[nd - 2] == x->shape[nd - 2] &&
       o->shape[nd - 1] == y->shape[nd - 1];
  if (!ok)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                    "matmul: expected x [B..., M, K], y [B..., K, N], out [B..., M, N] of one "
                    "rank >= 2 with equal batch dims");
  if (!cu_view_contiguous(x) || !cu_view_contiguous(y) || !cu_view_contiguous(o))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "matmul: the operands must be contiguous");
  mm_params p;
  memset(&p, 0, sizeof p);
  p.batch = 1;
  for (int d = 0; d < nd - 2; ++d) p.batch *= x->shape[d];
  p.M = x->shape[nd - 2];
  p.K = x->shape[nd - 1];
  p.N = y->shape[nd - 1];
  p.x = cu_view_ptr(x);
  p.y = cu_view_ptr(y);
  p.out = cu_view_ptr(o);
  p.al = cu_view_aligned(x) && cu_view_aligned(y) && cu_view_aligned(o);
  if (p.batch * p.M * p.N == 0) return cu_kernel_end(&k, op);
  st = mm_cublas(p, k, dt);
  if (st == HWP_ERROR_NOT_SUPPORTED) {
    fn(p, k);
    st = HWP_OK;
  }
  if (st != HWP_OK) return st;
  return cu_kernel_end(&k, op);
}

}  // namespace

extern "C" HWP_Status cu_register_matmul_kernels(const HWP_HostApi *host) {
  for (int d = 0; d < HWP_DTYPE_COUNT; ++d) {
    if (mm_launcher(d) == nullptr) continue;
    HWP_Status st = cu_register(host, "matmul", d, matmul_kernel, 0, nullptr);
    if (st != HWP_OK) return st;
  }
  return HWP_OK;
}
