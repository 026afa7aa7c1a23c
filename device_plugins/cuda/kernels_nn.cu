/* hwport CUDA plugin — fused kernels for the composite nn ops softmax, log_softmax (attr axis),
 * layer_norm (attr epsilon, normalized_ndim; optional weight and bias) and rms_norm (epsilon,
 * normalized_ndim; optional weight): a plugin kernel for a composite op takes priority over its
 * decomposition. Float dtypes; float16/bfloat16/float32 compute in float, float64 in double.
 * Inputs arrive contiguous (no HWP_KERNEL_ACCEPTS_STRIDED).
 *
 * One kernel per op: a group of threads owns a row (the softmax axis, or the normalized
 * trailing dims): G = the row length rounded up to a power of two up to 32 (warp shuffles), a
 * block of 256 threads for rows longer than 1024. A first sweep over the row reduces, in one
 * pass, a running (max, sum of exp(x - max)) pair for softmax (rescaled when the max grows), a
 * Welford (count, mean, M2) triple for layer_norm, a sum of squares for rms_norm; the group
 * combines them; a second sweep writes the output (the row is then in L1/L2):
 *   softmax      y = exp(x - m) / s           log_softmax  y = (x - m) - log(s)
 *   layer_norm   y = (x - mean) * rsqrt(var + eps) [* w] [+ b]   (biased variance)
 *   rms_norm     y = x * rsqrt(mean(x^2) + eps) [* w] */
#include <math.h>
#include <string.h>

#include "block_reduce.cuh"
#include "dispatch.cuh"
#include "kernels.h"

namespace {

enum { NN_SOFTMAX, NN_LOG_SOFTMAX, NN_LAYER_NORM, NN_RMS_NORM, NN_COUNT };
const char *const kNnNames[NN_COUNT] = {"softmax", "log_softmax", "layer_norm", "rms_norm"};

struct nn_params {
  const char *x, *w, *b;
  char *y;
  /* row r, element j: x[(r / inner) * L * inner + r % inner + j * inner] */
  long long rows, L, inner;
  double eps;
  int al, group;
};

template <class T>
CU_D T cu_exp(T v) {
  if constexpr (std::is_same<T, float>::value) return expf(v);
  else return exp(v);
}
template <class T>
CU_D T cu_log(T v) {
  if constexpr (std::is_same<T, float>::value) return logf(v);
  else return log(v);
}

template <class T>
struct sm_acc {
  T m, s; /* running max, sum of exp(x - m) */
};
template <class T>
struct sm_comb {
  CU_D sm_acc<T> operator()(sm_acc<T> a, sm_acc<T> b) const {
    const T m = (a.m > b.m || a.m != a.m) ? a.m : b.m;
    const T sa = a.s == 0 ? (T)0 : a.s * cu_exp(a.m - m);
    const T sb = b.s == 0 ? (T)0 : b.s * cu_exp(b.m - m);
    return sm_acc<T>{m, sa + sb};
  }
};
template <class T>
struct wf_acc {
  T n, mean, m2;
};
template <class T>
struct wf_comb {
  CU_D wf_acc<T> operator()(wf_acc<T> a, wf_acc<T> b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const T n = a.n + b.n, d = b.mean - a.mean;
    return wf_acc<T>{n, a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * b.n / n)};
  }
};
template <class T>
struct add_comb {
  CU_D T operator()(T a, T b) const { return a + b; }
};

template <class Acc, class Comb>
CU_D Acc group_combine(Acc v, int group, Comb comb, Acc *smem) {
  return group <= 32 ? cu_warp_reduce(v, group, comb) : cu_block_reduce(v, comb, smem);
}

template <int D, int MODE>
__global__ void __launch_bounds__(256) k_nn(nn_params p) {
  typedef typename cu_dt<D>::C T;
  typedef typename cu_dt<D>::S S;
  const long long isz = sizeof(S);
  const int G = p.group;
  const int gpb = blockDim.x / G, gid = threadIdx.x / G, lane = threadIdx.x % G;
  __shared__ sm_acc<T> sm_smem[32];
  __shared__ wf_acc<T> wf_smem[32];
  __shared__ T sum_smem[32];
  for (long long r0 = (long long)blockIdx.x * gpb; r0 < p.rows; r0 += (long long)gridDim.x * gpb) {
    const long long row = r0 + gid;
    const bool active = row < p.rows;
    const long long base = active ? (row / p.inner) * p.L * p.inner + row % p.inner : 0;
    const long long step = p.inner * isz;
    const char *x = p.x + base * isz;
    char *y = p.y + base * isz;
    const long long L = active ? p.L : 0;
    if constexpr (MODE == NN_SOFTMAX || MODE == NN_LOG_SOFTMAX) {
      sm_acc<T> a{(T)-INFINITY, (T)0};
      for (long long j = lane; j < L; j += G) {
        const T v = cu_load<D>(x + j * step, p.al);
        if (v > a.m) {
          a.s = (a.s == 0 ? (T)0 : a.s * cu_exp(a.m - v)) + (T)1;
          a.m = v;
        } else {
          a.s += v == (T)-INFINITY ? (T)0 : cu_exp(v - a.m); /* NaN stays NaN */
        }
      }
      a = group_combine(a, G, sm_comb<T>(), sm_smem);
      const T inv = (T)1 / a.s, ls = cu_log(a.s);
      for (long long j = lane; j < L; j += G) {
        const T v = cu_load<D>(x + j * step, p.al);
        const T out = MODE == NN_SOFTMAX ? cu_exp(v - a.m) * inv : (v - a.m) - ls;
        cu_st(y + j * step, p.al, cu_dt<D>::st(out));
      }
    } else if constexpr (MODE == NN_LAYER_NORM) {
      wf_acc<T> a{(T)0, (T)0, (T)0};
      for (long long j = lane; j < L; j += G) {
        const T v = cu_load<D>(x + j * step, p.al);
        a.n += (T)1;
        const T d = v - a.mean;
        a.mean += d / a.n;
        a.m2 += d * (v - a.mean);
      }
      a = group_combine(a, G, wf_comb<T>(), wf_smem);
      const T var = a.n > 0 ? a.m2 / a.n : (T)0;
      const T rstd = (T)1 / sqrt(var + (T)p.eps);
      for (long long j = lane; j < L; j += G) {
        T out = (cu_load<D>(x + j * step, p.al) - a.mean) * rstd;
        if (p.w != nullptr) out *= cu_load<D>(p.w + j * isz, p.al);
        if (p.b != nullptr) out += cu_load<D>(p.b + j * isz, p.al);
        cu_st(y + j * step, p.al, cu_dt<D>::st(out));
      }
    } else {
      T ss = 0;
      for (long long j = lane; j < L; j += G) {
        const T v = cu_load<D>(x + j * step, p.al);
        ss += v * v;
      }
      ss = group_combine(ss, G, add_comb<T>(), sum_smem);
      const T r = (T)1 / sqrt(ss / (T)(p.L > 0 ? p.L : 1) + (T)p.eps);
      for (long long j = lane; j < L; j += G) {
        T out = cu_load<D>(x + j * step, p.al) * r;
        if (p.w != nullptr) out *= cu_load<D>(p.w + j * isz, p.al);
        cu_st(y + j * step, p.al, cu_dt<D>::st(out));
      }
    }
  }
}

typedef void (*nn_launch_fn)(const nn_params &, const cu_kctx &);

template <int D, int MODE>
void nn_launch(const nn_params &p, const cu_kctx &k) {
  const unsigned gpb = 256u / (unsigned)p.group;
  k_nn<D, MODE><<<cu_grid(&k, (uint64_t)((p.rows + gpb - 1) / gpb), 1), 256, 0, k.stream>>>(p);
}

template <int MODE>
struct nn_pick {
  template <int D>
  struct at {
    static nn_launch_fn get() {
      if constexpr (D >= HWP_DTYPE_FLOAT16) return nn_launch<D, MODE>;
      else return nullptr; /* float dtypes only */
    }
  };
};

nn_launch_fn nn_launcher(int mode, HWP_DType dt) {
  switch (mode) {
  case NN_SOFTMAX: return cu_pick<nn_pick<NN_SOFTMAX>::at>(dt);
  case NN_LOG_SOFTMAX: return cu_pick<nn_pick<NN_LOG_SOFTMAX>::at>(dt);
  case NN_LAYER_NORM: return cu_pick<nn_pick<NN_LAYER_NORM>::at>(dt);
  default: return cu_pick<nn_pick<NN_RMS_NORM>::at>(dt);
  }
}

int attr_bool(const HWP_KernelContext *ctx, const char *name, int fallback) {
  uint8_t v = 0;
  if (HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) && ctx->get_attr != nullptr &&
      ctx->get_attr(ctx, name, HWP_ATTR_BOOL, &v, nullptr) == HWP_OK)
    return v != 0;
  return fallback;
}

/* Checks that view v has dtype dt and shape `shape` (n dims). */
HWP_Status check_shape(const char *op, const char *what, const HWP_TensorView *v, HWP_DType dt,
                       int n, const int64_t *shape) {
  int ok = v->dtype == dt && v->ndim == n && cu_view_contiguous(v);
  for (int k = 0; ok && k < n; ++k) ok = v->shape[k] == shape[k];
  if (ok) return HWP_OK;
  return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                  "%s: %s must be a contiguous %s tensor of the input's last %d dim(s)", op,
                  what, cu_dtype_name(dt), n);
}

HWP_Status nn_kernel(const HWP_KernelContext *ctx) {
  const int mode = (int)(intptr_t)(ctx != nullptr ? ctx->user_data : nullptr);
  const char *op = kNnNames[mode >= 0 && mode < NN_COUNT ? mode : 0];
  if (ctx == nullptr || !HWP_HAS_FIELD(ctx, HWP_KernelContext, outputs))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the kernel context is NULL or too small", op);
  const int norm = mode >= NN_LAYER_NORM;
  /* Optional inputs: the attrs say which are present; without them, by count (in order). */
  const int n_in = ctx->num_inputs;
  const int has_w = norm ? attr_bool(ctx, "has_weight", n_in >= 2) : 0;
  const int has_b = mode == NN_LAYER_NORM
                        ? attr_bool(ctx, "has_bias", n_in >= 3 || (n_in == 2 && !has_w))
                        : 0;
  cu_kctx k;
  HWP_Status st = cu_kernel_begin(ctx, op, 1 + has_w + has_b, 1, &k);
  if (st != HWP_OK) return st;
  const HWP_TensorView *x = &ctx->inputs[0], *y = &ctx->outputs[0];
  nn_launch_fn fn = nn_launcher(mode, x->dtype);
  if (fn == nullptr)
    return cu_error(HWP_ERROR_NOT_SUPPORTED, "%s: dtype %s is not supported (float only)", op,
                    cu_dtype_name(x->dtype));
  if ((st = check_shape(op, "the output", y, x->dtype, x->ndim, x->shape)) != HWP_OK) return st;
  if (!cu_view_contiguous(x))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the input must be contiguous", op);
  nn_params p;
  memset(&p, 0, sizeof p);
  int lead = 0; /* dims before the row */
  p.inner = 1;
  if (!norm) {
    int64_t axis = -1;
    if ((st = cu_attr_int(ctx, op, "axis", -1, &axis)) != HWP_OK) return st;
    const int nd = x->ndim == 0 ? 1 : x->ndim;
    if (axis < -nd || axis >= nd)
      return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: axis %lld out of range for %d dims", op,
                      (long long)axis, (int)x->ndim);
    lead = (int)(axis < 0 ? axis + nd : axis);
    for (int d = lead + 1; d < x->ndim; ++d) p.inner *= x->shape[d];
    p.L = x->ndim == 0 ? 1 : x->shape[lead];
  } else {
    int64_t nd = 1;
    if ((st = cu_attr_int(ctx, op, "normalized_ndim", 1, &nd)) != HWP_OK) return st;
    if (nd < 1 || nd > x->ndim)
      return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                      "%s: normalized_ndim = %lld must be in [1, %d] for a %d-d input", op,
                      (long long)nd, (int)x->ndim, (int)x->ndim);
    lead = x->ndim - (int)nd;
    p.L = 1;
    for (int d = lead; d < x->ndim; ++d) p.L *= x->shape[d];
    double eps = mode == NN_RMS_NORM ? 1e-6 : 1e-5;
    if (HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) && ctx->get_attr != nullptr)
      (void)ctx->get_attr(ctx, "epsilon", HWP_ATTR_FLOAT64, &eps, nullptr);
    p.eps = eps;
    for (int i = 0; i < has_w + has_b; ++i) {
      const int is_w = i == 0 && has_w;
      const HWP_TensorView *v = &ctx->inputs[1 + i];
      if ((st = check_shape(op, is_w ? "weight" : "bias", v, x->dtype, (int)nd,
                            x->shape + lead)) != HWP_OK)
        return st;
      (is_w ? p.w : p.b) = cu_view_ptr(v);
    }
  }
  const long long numel = cu_view_numel(x);
  if (numel == 0) return cu_kernel_end(&k, op);
  p.rows = numel / (p.L * p.inner) * p.inner;
  p.x = cu_view_ptr(x);
  p.y = cu_view_ptr(y);
  p.al = cu_view_aligned(x) && cu_view_aligned(y);
  for (int i = 0; i < has_w + has_b; ++i) p.al &= cu_view_aligned(&ctx->inputs[1 + i]);
  if (p.L > 1024) {
    p.group = 256;
  } else {
    p.group = 1;
    while (p.group < p.L && p.group < 32) p.group <<= 1;
  }
  fn(p, k);
  return cu_kernel_end(&k, op);
}

}  // namespace

extern "C" HWP_Status cu_register_nn_kernels(const HWP_HostApi *host) {
  for (int mode = 0; mode < NN_COUNT; ++mode)
    for (int d = 0; d < HWP_DTYPE_COUNT; ++d) {
      if (nn_launcher(mode, d) == nullptr) continue;
      HWP_Status st = cu_register(host, kNnNames[mode], d, nn_kernel, 0, (void *)(intptr_t)mode);
      if (st != HWP_OK) return st;
    }
  return HWP_OK;
}
