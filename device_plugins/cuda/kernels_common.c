/* hwport CUDA plugin — the kernel families' shared host-side helpers (kernels.h). */
#include "kernels.h"

HWP_Status cu_kernel_begin(const HWP_KernelContext *ctx, const char *op, int nin, int nout,
                           cu_kctx *k) {
  if (ctx == NULL || !HWP_HAS_FIELD(ctx, HWP_KernelContext, outputs))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the kernel context is NULL or too small",
                    op);
  if (ctx->num_inputs != nin || ctx->num_outputs != nout)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                    "%s: expected %d input(s) and %d output(s), got %d and %d", op, nin, nout,
                    (int)ctx->num_inputs, (int)ctx->num_outputs);
  if ((nin > 0 && ctx->inputs == NULL) || (nout > 0 && ctx->outputs == NULL))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the input or output views are NULL", op);
  for (int i = 0; i < nin + nout; ++i) {
    const HWP_TensorView *v = i < nin ? &ctx->inputs[i] : &ctx->outputs[i - nin];
    if (v->ndim < 0 || v->ndim > HWP_MAX_NDIM || (v->ndim > 0 && v->shape == NULL) ||
        hwp_dtype_size(v->dtype) == 0)
      return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s %d has a bad rank, shape or dtype",
                      op, i < nin ? "input" : "output", i < nin ? i : i - nin);
    int64_t numel = 0; /* bounds every element count and byte offset formed from the view */
    const char *bad = hwp_view_size_error(v, &numel);
    if (bad != NULL)
      return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s %d has %s", op,
                      i < nin ? "input" : "output", i < nin ? i : i - nin, bad);
  }
  HWP_Status st = cu_enter(ctx->device, op);
  if (st != HWP_OK) return st;
  k->device = ctx->device;
  k->sync = ctx->stream == NULL;
  k->sm_count = g_cu.devices[ctx->device].sm_count;
  if ((st = cu_stream_get(ctx->device, ctx->stream, &k->stream, op)) != HWP_OK) return st;
  /* cu_kernel_end reads the launches' errors with cudaGetLastError, which also returns a
   * non-sticky error an earlier runtime call left on this thread (a cudaEventQuery that found
   * work pending leaves cudaErrorNotReady): clear it so that only this op's launches count
   * (the CUDA programming guide's advice; a sticky error is not cleared and still reported). */
  (void)cudaGetLastError();
  if (k->sync && (st = cu_synchronize_device(ctx->device, op)) != HWP_OK) return st;
  cu_profile_begin(ctx, k);
  return HWP_OK;
}

HWP_Status cu_kernel_end(const cu_kctx *k, const char *op) {
  cudaError_t err = cudaGetLastError();
  cu_profile_end(k, op); /* before the error return: a failed launch still closes its span */
  if (err != cudaSuccess) return cu_cuda_error(err, op, "kernel launch");
  if (k->sync) return cu_synchronize_device(k->device, op);
  return HWP_OK;
}

unsigned cu_grid(const cu_kctx *k, uint64_t nwork, unsigned block) {
  uint64_t blocks = (nwork + block - 1) / block;
  const uint64_t cap = (uint64_t)(k->sm_count > 0 ? k->sm_count : 1) * 32;
  if (blocks > cap) blocks = cap;
  return blocks == 0 ? 1u : (unsigned)blocks;
}

HWP_Status cu_scratch_alloc(const HWP_KernelContext *ctx, const cu_kctx *k, const char *op,
                            uint64_t nbytes, cu_scratch *s) {
  s->ptr = NULL;
  s->own = 0;
  HWP_Buffer ws = NULL;
  if (HWP_HAS_FIELD(ctx, HWP_KernelContext, allocate_workspace) &&
      ctx->allocate_workspace != NULL && ctx->allocate_workspace(ctx, nbytes, &ws) == HWP_OK &&
      ws != NULL) {
    s->ptr = cu_addr(ws, 0);
    return HWP_OK;
  }
  const int pools = g_cu.devices[k->device].memory_pools;
  cudaError_t err = pools ? cudaMallocAsync(&s->ptr, (size_t)nbytes, k->stream)
                          : cudaMalloc(&s->ptr, (size_t)nbytes);
  if (err != cudaSuccess) {
    s->ptr = NULL;
    (void)cudaGetLastError(); /* an allocation failure is not sticky */
    return cu_cuda_error(err, op, pools ? "cudaMallocAsync (scratch)" : "cudaMalloc (scratch)");
  }
  s->own = pools ? 1 : 2;
  return HWP_OK;
}

HWP_Status cu_scratch_free(const cu_kctx *k, const char *op, cu_scratch *s) {
  cudaError_t err = cudaSuccess;
  if (s->own == 1) {
    err = cudaFreeAsync(s->ptr, k->stream);
  } else if (s->own == 2) {
    err = cudaStreamSynchronize(k->stream); /* the launches still use it */
    cudaError_t err2 = cudaFree(s->ptr);
    if (err == cudaSuccess) err = err2;
  }
  s->ptr = NULL;
  s->own = 0;
  return err == cudaSuccess ? HWP_OK : cu_cuda_error(err, op, "freeing the scratch memory");
}

int64_t cu_view_numel(const HWP_TensorView *v) {
  int64_t n = 1;
  for (int i = 0; i < v->ndim; ++i) n *= v->shape[i];
  return n;
}

int cu_view_aligned(const HWP_TensorView *v) {
  return ((uintptr_t)cu_view_ptr(v) % hwp_dtype_size(v->dtype)) == 0;
}

int cu_view_contiguous(const HWP_TensorView *v) {
  if (v->strides == NULL) return 1;
  int64_t acc = 1;
  for (int i = v->ndim - 1; i >= 0; --i) {
    if (v->shape[i] == 1) continue;
    if (v->strides[i] != acc) return 0;
    acc *= v->shape[i];
  }
  return 1;
}

const char *cu_dtype_name(HWP_DType dt) {
  static const char *const names[HWP_DTYPE_COUNT] = {
      "bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
      "float64"};
  return dt >= 0 && dt < HWP_DTYPE_COUNT ? names[dt] : "unknown";
}

HWP_Status cu_check_dtype(const char *op, const char *what, const HWP_TensorView *v,
                          HWP_DType want) {
  if (v->dtype == want) return HWP_OK;
  return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s must be %s, got %s", op, what,
                  cu_dtype_name(want), cu_dtype_name(v->dtype));
}

HWP_Status cu_attr_int(const HWP_KernelContext *ctx, const char *op, const char *name,
                       int64_t fallback, int64_t *out) {
  if (!HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) || ctx->get_attr == NULL) {
    *out = fallback;
    return HWP_OK;
  }
  int64_t v = fallback;
  HWP_Status st = ctx->get_attr(ctx, name, HWP_ATTR_INT64, &v, NULL);
  if (st == HWP_ERROR_NOT_FOUND) v = fallback;
  else if (st != HWP_OK)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute %s must be an integer", op,
                    name);
  *out = v;
  return HWP_OK;
}

HWP_Status cu_unsupported_dtype(const char *op, HWP_DType dt) {
  return cu_error(HWP_ERROR_NOT_SUPPORTED, "%s: no CUDA kernel for dtype %s", op,
                  cu_dtype_name(dt));
}

HWP_Status cu_attr_double(const HWP_KernelContext *ctx, const char *op, const char *name,
                          double fallback, double *out) {
  double v = fallback;
  HWP_Status st = HWP_ERROR_NOT_FOUND;
  if (HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) && ctx->get_attr != NULL)
    st = ctx->get_attr(ctx, name, HWP_ATTR_FLOAT64, &v, NULL);
  if (st == HWP_ERROR_NOT_FOUND) v = fallback;
  else if (st != HWP_OK)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute %s must be a number", op, name);
  *out = v;
  return HWP_OK;
}

void cu_split_axis(const HWP_TensorView *v, int axis, long long *outer, long long *inner) {
  long long o = 1, i = 1;
  for (int d = 0; d < v->ndim; ++d) {
    if (d < axis) o *= v->shape[d];
    else if (d > axis) i *= v->shape[d];
  }
  *outer = o;
  *inner = i;
}

HWP_Status cu_register(const HWP_HostApi *host, const char *op, HWP_DType dtype,
                       HWP_KernelFn fn, uint32_t flags, void *user_data) {
  return hwps_register_kernel(host, op, dtype, flags, fn, user_data);
}
