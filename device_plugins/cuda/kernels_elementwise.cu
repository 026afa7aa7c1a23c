/* hwport CUDA plugin — the elementwise kernels: the unary/binary primitives of ops.yaml with a
 * c_expr, the composites with a native expression (their attributes read once per launch into
 * the params' slots), where, cast, copy and fill, from the generated per-dtype tables
 * (cuda_ew_<dtype>.cu) over the one template in ew_kernels.cuh.
 *
 * The host passes inputs broadcast to the output's shape (stride 0 on broadcast dims) and
 * already of the op's dtype; they may be any strided view (HWP_KERNEL_ACCEPTS_STRIDED). The
 * shape is collapsed first (size-1 dims dropped, a dim merged into the next inner one where
 * every operand's strides allow); a launch then takes the vector kernel when every operand is
 * contiguous and aligned to 4 elements, else the strided one. */
#include <string.h>

#include "cuda_ew_tables.h"
#include "fill_value.h"
#include "native_attrs.h"

namespace {

int kind_inputs(int kind) {
  switch (kind) {
  case CU_EW_FILL: return 0;
  case CU_EW_BINARY: return 2;
  case CU_EW_WHERE: return 3;
  default: return 1;
  }
}

/* Checks every input spans the output's shape and fills p (collapsed shape, byte strides). */
HWP_Status plan(const HWP_KernelContext *ctx, const char *op, int nin, cu_ew_params *p,
                int *vec) {
  const HWP_TensorView *out = &ctx->outputs[0];
  const int nd = out->ndim;
  long long shape[HWP_MAX_NDIM], st[3][HWP_MAX_NDIM];
  size_t isz[3] = {0, 0, 0};
  const size_t osz = hwp_dtype_size(out->dtype);
  if (!cu_view_contiguous(out))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must be contiguous", op);
  for (int k = 0; k < nin; ++k) {
    const HWP_TensorView *v = &ctx->inputs[k];
    if (v->ndim != nd)
      return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                      "%s: input %d has rank %d, the output %d (inputs arrive broadcast)", op, k,
                      (int)v->ndim, nd);
    isz[k] = hwp_dtype_size(v->dtype);
    for (int d = 0; d < nd; ++d)
      if (v->shape[d] != out->shape[d])
        return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                        "%s: input %d shape[%d] = %lld, the output's %lld", op, k, d,
                        (long long)v->shape[d], (long long)out->shape[d]);
  }
  /* Contiguous element strides where a view has none, then bytes; drop size-1 dims. */
  int n = 0;
  long long acc[3] = {1, 1, 1};
  long long tmp[3][HWP_MAX_NDIM];
  for (int d = nd - 1; d >= 0; --d)
    for (int k = 0; k < nin; ++k) {
      const HWP_TensorView *v = &ctx->inputs[k];
      tmp[k][d] = v->strides ? (long long)v->strides[d] : acc[k];
      acc[k] *= v->shape[d];
    }
  p->n = 1;
  for (int d = 0; d < nd; ++d) {
    p->n *= out->shape[d];
    if (out->shape[d] == 1) continue;
    shape[n] = out->shape[d];
    for (int k = 0; k < nin; ++k) st[k][n] = tmp[k][d] * (long long)isz[k];
    ++n;
  }
  /* Merge a dim into the next inner one when every input's strides allow. */
  int m = 0;
  for (int d = 0; d < n; ++d) {
    if (m > 0) {
      int ok = 1;
      for (int k = 0; k < nin; ++k) ok &= st[k][m - 1] == st[k][d] * shape[d];
      if (ok) {
        shape[m - 1] *= shape[d];
        for (int k = 0; k < nin; ++k) st[k][m - 1] = st[k][d];
        continue;
      }
    }
    shape[m] = shape[d];
    for (int k = 0; k < nin; ++k) st[k][m] = st[k][d];
    ++m;
  }
  p->ndim = m;
  memcpy(p->shape, shape, sizeof(long long) * m);
  for (int k = 0; k < nin; ++k) memcpy(p->st[k], st[k], sizeof(long long) * m);
  p->out = cu_view_ptr(out);
  p->al = ((uintptr_t)p->out % osz) == 0;
  *vec = ((uintptr_t)p->out % (osz * CU_EW_VEC)) == 0 && m <= 1;
  for (int k = 0; k < nin; ++k) {
    p->in[k] = cu_view_ptr(&ctx->inputs[k]);
    p->al &= ((uintptr_t)p->in[k] % isz[k]) == 0;
    *vec &= ((uintptr_t)p->in[k] % (isz[k] * CU_EW_VEC)) == 0 &&
            (m == 0 || st[k][0] == (long long)isz[k]);
  }
  *vec &= p->al;
  return HWP_OK;
}

HWP_Status ew_kernel(const HWP_KernelContext *ctx) {
  const cu_ew_entry *e =
      ctx != NULL ? static_cast<const cu_ew_entry *>(ctx->user_data) : nullptr;
  const char *op = e != nullptr ? e->name : "elementwise";
  if (e == nullptr)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the kernel context is NULL", op);
  const int nin = kind_inputs(e->kind);
  cu_kctx k;
  HWP_Status st = cu_kernel_begin(ctx, op, nin, 1, &k);
  if (st != HWP_OK) return st;
  const HWP_TensorView *out = &ctx->outputs[0];
  const HWP_DType dt = e->kind == CU_EW_FILL ? out->dtype
                       : e->kind == CU_EW_WHERE ? ctx->inputs[1].dtype
                                                : ctx->inputs[0].dtype;
  cu_ew_params p;
  memset(&p, 0, sizeof p);
  p.odt = out->dtype;
  /* The dtypes each kind expects of its views. */
  if (e->kind == CU_EW_WHERE) {
    if ((st = cu_check_dtype(op, "condition", &ctx->inputs[0], HWP_DTYPE_BOOL)) != HWP_OK ||
        (st = cu_check_dtype(op, "y", &ctx->inputs[2], dt)) != HWP_OK)
      return st;
  } else if (e->kind == CU_EW_BINARY) {
    if ((st = cu_check_dtype(op, "input 1", &ctx->inputs[1], dt)) != HWP_OK) return st;
  }
  if (e->kind != CU_EW_CAST &&
      (st = cu_check_dtype(op, "the output", out, e->out_bool ? HWP_DTYPE_BOOL : dt)) != HWP_OK)
    return st;
  if (e->kind == CU_EW_FILL) {
    int64_t bits = 0;
    if ((st = hwps_value_bits(ctx, "fill", "value", 1, dt, &bits)) != HWP_OK) return st;
    p.bits = bits;
  }
  if (e->nattrs > 0 &&
      (st = hwps_native_attrs(ctx, op, e->attrs, e->nattrs, dt, p.attrs)) != HWP_OK)
    return st;
  int vec = 0;
  if ((st = plan(ctx, op, nin, &p, &vec)) != HWP_OK) return st;
  if (p.n == 0) return cu_kernel_end(&k, op);
  if ((st = e->launch(&p, &k, vec)) != HWP_OK) return st;
  return cu_kernel_end(&k, op);
}

}  // namespace

extern "C" HWP_Status cu_register_elementwise_kernels(const HWP_HostApi *host) {
  int count = 0;
  for (int t = 0; t < CU_EW_NUM_TABLES; ++t)
    for (const cu_ew_entry *e = cu_ew_tables[t].table; e->name != nullptr; ++e) {
      HWP_Status st = cu_register(host, e->name, cu_ew_tables[t].dtype, ew_kernel,
                                  HWP_KERNEL_ACCEPTS_STRIDED, const_cast<cu_ew_entry *>(e));
      if (st != HWP_OK) return st;
      ++count;
    }
  cu_log(HWP_LOG_DEBUG, "cuda: registered %d elementwise kernels", count);
  return HWP_OK;
}
