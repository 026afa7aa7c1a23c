/* hwport CUDA plugin — uniform from Philox-4x32-10, bit for bit the numbers of
 * phi_ops/philox.py and the CPU plugin (device_plugins/cpu/philox.h):
 *   w = Philox-4x32-10(counter = offset + i as 128 bits, key = seed), element i row-major
 *   u = (w0 >> 8) * 2^-24                      float32, float16, bfloat16
 *   u = ((w1 << 21) ^ (w0 >> 11)) * 2^-53      float64
 *   value = low + (high - low) * u             in double, never fused, rounded once
 * (__dmul_rn/__dadd_rn keep nvcc from contracting the expression into an FMA). */
#include <string.h>

#include "dispatch.cuh"
#include "kernels.h"

namespace {

struct uni_params {
  char *out;
  long long n, seed, offset;
  double low, range;
  int al;
};

CU_D void philox4x32_10(unsigned c[4], unsigned k0, unsigned k1) {
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const unsigned hi0 = __umulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
    const unsigned hi1 = __umulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
    const unsigned n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
  }
}

template <int D>
__global__ void __launch_bounds__(256) k_uniform(uni_params p) {
  const unsigned k0 = (unsigned)(unsigned long long)p.seed;
  const unsigned k1 = (unsigned)((unsigned long long)p.seed >> 32);
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += step) {
    /* The 128-bit counter offset + i: offset sign-extended, i >= 0. */
    const unsigned long long lo = (unsigned long long)p.offset + (unsigned long long)i;
    unsigned long long hi = p.offset < 0 ? ~0ull : 0ull;
    if (lo < (unsigned long long)p.offset) ++hi;
    unsigned c[4] = {(unsigned)lo, (unsigned)(lo >> 32), (unsigned)hi, (unsigned)(hi >> 32)};
    philox4x32_10(c, k0, k1);
    const double u = D == HWP_DTYPE_FLOAT64
                         ? (double)(((unsigned long long)c[1] << 21) ^ (c[0] >> 11)) * 0x1p-53
                         : (double)(c[0] >> 8) * 0x1p-24;
    const double v = __dadd_rn(p.low, __dmul_rn(p.range, u));
    cu_st(p.out + i * (long long)sizeof(typename cu_dt<D>::S), p.al, cu_dt<D>::st(v));
  }
}

typedef void (*uni_fn)(const uni_params &, const cu_kctx &);

template <int D>
struct uni_pick {
  static uni_fn get() {
    if constexpr (D >= HWP_DTYPE_FLOAT16) {
      return [](const uni_params &p, const cu_kctx &k) {
        k_uniform<D><<<cu_grid(&k, (uint64_t)p.n, 256), 256, 0, k.stream>>>(p);
      };
    } else {
      return nullptr; /* float dtypes only */
    }
  }
};

HWP_Status uniform_kernel(const HWP_KernelContext *ctx) {
  const char *op = "uniform";
  cu_kctx k;
  HWP_Status st = cu_kernel_begin(ctx, op, 0, 1, &k);
  if (st != HWP_OK) return st;
  const HWP_TensorView *y = &ctx->outputs[0];
  uni_fn fn = cu_pick<uni_pick>(y->dtype);
  if (fn == nullptr)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output dtype %s is not a float dtype", op,
                    cu_dtype_name(y->dtype));
  if (!cu_view_contiguous(y))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must be contiguous", op);
  uni_params p;
  memset(&p, 0, sizeof p);
  double low = 0.0, high = 1.0;
  int64_t seed = 0, offset = 0;
  if ((st = cu_attr_double(ctx, op, "low", 0.0, &low)) != HWP_OK ||
      (st = cu_attr_double(ctx, op, "high", 1.0, &high)) != HWP_OK ||
      (st = cu_attr_int(ctx, op, "offset", 0, &offset)) != HWP_OK)
    return st;
  if (ctx->get_attr == nullptr ||
      ctx->get_attr(ctx, "seed", HWP_ATTR_INT64, &seed, nullptr) != HWP_OK)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute seed (an int) is required", op);
  p.out = cu_view_ptr(y);
  p.n = cu_view_numel(y);
  p.seed = seed;
  p.offset = offset;
  p.low = low;
  p.range = high - low;
  p.al = cu_view_aligned(y);
  if (p.n > 0) fn(p, k);
  return cu_kernel_end(&k, op);
}

}  // namespace

extern "C" HWP_Status cu_register_random_kernels(const HWP_HostApi *host) {
  for (int d = 0; d < HWP_DTYPE_COUNT; ++d) {
    if (cu_pick<uni_pick>(d) == nullptr) continue;
    HWP_Status st = cu_register(host, "uniform", d, uniform_kernel, 0, nullptr);
    if (st != HWP_OK) return st;
  }
  return HWP_OK;
}
