/* hwport OpenCL plugin — fused kernels for the composite nn ops softmax, log_softmax,
 * layer_norm, rms_norm (a plugin kernel for a composite op takes priority over its
 * decomposition; the OpenCL C is nn.cl after kernels_prelude.cl, embedded at build time as
 * ocl_nn_source).
 *
 * The registration contract is the CPU plugin's (device_plugins/cpu/kernels_nn.c): float
 * dtypes (float64 only when every device has cl_khr_fp64), strided inputs accepted, output
 * contiguous with x's dtype and shape.
 *   softmax/log_softmax: input x, attr axis (non-negative from the host; negative taken
 *     Python-style; a 0-d x is one element).
 *   layer_norm: inputs x [, weight] [, bias]; rms_norm: x [, weight]. attrs normalized_ndim
 *     (default 1), epsilon (default 1e-5 / 1e-6), has_weight/has_bias (which optional inputs
 *     are present; without them, by count in order). weight and bias have x's dtype and x's
 *     last normalized_ndim dims as their shape.
 * float16/bfloat16/float32 compute in float, float64 in double, row
 * statistics in double where the device has it (float sums fail the large-mean layer_norm test
 * and gain little: the kernels are memory-bound). Rows with unit element stride and aligned
 * offsets (x, output, weight, bias) take k_softmax_rows/k_norm_rows: explicit VW-vectors, one
 * work-item per row on CPU devices (about 15-30x faster on PoCL than the general kernels,
 * whose strided per-element loops stay scalar). softmax along an axis whose inner elements
 * are unit-stride (a non-last axis) takes k_softmax_cols: a work-item per VW neighbouring
 * columns, no trees (PoCL [2048, 2048] axis 0: 40 -> 4.4 ms). Otherwise k_softmax/k_norm: any
 * strides; a row that fits in a quarter of the device's local memory is kept there between
 * passes. One program per dtype (slots OCL_NN_SLOT0 + dtype). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwport/kernel_util.h"
#include "kernels.h"
#if defined(HWPORT_OCL_REQUIRE_GEN) || __has_include("ocl_nn_cl.h")
#include "ocl_nn_cl.h"
#else /* a standalone compile (the warning check): no embedded source */
static const char ocl_nn_source[] = "";
#endif

#define OCL_NN_SLOT0 60
#define OCL_NN_MAX_LOCAL 256

typedef struct nn_op {
  const char *name;
  int norm; /* layer_norm/rms_norm */
  int alt;  /* log_softmax / rms_norm */
} nn_op;

static const nn_op k_nn_ops[4] = {
    {"softmax", 0, 0}, {"log_softmax", 0, 1}, {"layer_norm", 1, 0}, {"rms_norm", 1, 1}};

/* Output checks shared by the nn kernels: float x; the output has x's dtype and shape. */
static HWP_Status nn_check_xy(const char *fn, const HWP_TensorView *x, const HWP_TensorView *y) {
  if (x->dtype < HWP_DTYPE_FLOAT16 || x->dtype > HWP_DTYPE_FLOAT64)
    return ocl_error(HWP_ERROR_NOT_SUPPORTED, "%s: dtype %d is not supported (float only)", fn,
                     (int)x->dtype);
  int ok = y->dtype == x->dtype && y->ndim == x->ndim;
  for (int k = 0; ok && k < x->ndim; ++k) ok = y->shape[k] == x->shape[k];
  if (!ok)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: the output must have the input's dtype and shape", fn);
  return HWP_OK;
}

/* Local memory per row: the row itself when it fits in a quarter of the device's local
 * memory (cache = 1), else one element. */
static size_t nn_row_bytes(int32_t dev, uint64_t len, size_t vsz, cl_int *cache) {
  *cache = len > 0 && len * vsz <= ocl_dev_local_mem(dev) / 4;
  return *cache ? (size_t)len * vsz : vsz;
}

static int nn_dev_cpu(int32_t dev) {
  cl_device_type t = 0;
  return clGetDeviceInfo(g_ocl.devices[dev].id, CL_DEVICE_TYPE, sizeof t, &t, NULL) ==
             CL_SUCCESS && (t & CL_DEVICE_TYPE_CPU);
}

/* The contiguous-row kernels' vector width (nn.cl's VW): 16 on CPU devices (one AVX-512
 * register of floats; PoCL runs a work-group of 1 as plain vector code), 4 elsewhere. */
static int nn_vw(int32_t dev) { return nn_dev_cpu(dev) ? 16 : 4; }

/* Creates the kernel and picks a power-of-two group size for rows of `len`: for the
 * contiguous-row kernels (`rows`), one work-item per row on CPU devices (a work-group runs on
 * one core either way, and a single work-item needs no trees), else up to one per VW-vector;
 * HWPORT_OPENCL_NN_LOCAL=<n> sets it instead (tuning, and the tests' way to run the trees on
 * a CPU device). */
static HWP_Status nn_prepare(const HWP_KernelContext *ctx, HWP_DType dt, const char *kname,
                             uint64_t len, int rows, cl_kernel *k, size_t *local,
                             const char *fn) {
  char options[96], extra[16];
  const int vw = nn_vw(ctx->device);
  snprintf(extra, sizeof extra, "-DVW=%d", vw);
  ocl_dtype_options(ctx->device, dt, extra, options, sizeof options);
  HWP_Status st = ocl_kernel_get(ctx->device, OCL_NN_SLOT0 + (int)dt, ocl_nn_source, options,
                                 kname, k, fn);
  if (st != HWP_OK) return st;
  *local = ocl_kernel_wg(*k, ctx->device, OCL_NN_MAX_LOCAL);
  if (rows) {
    const char *env = getenv("HWPORT_OPENCL_NN_LOCAL");
    long want = env != NULL ? strtol(env, NULL, 10) : 0;
    len = want > 0 ? (uint64_t)want : nn_dev_cpu(ctx->device) ? 1 : len / (uint64_t)vw + 1;
  }
  if (ocl_pow2_ceil(len) < *local) *local = ocl_pow2_ceil(len);
  return HWP_OK;
}

/* Rows per work-group for the contiguous-row kernels: on CPU devices about 8K elements per
 * group (PoCL's cost per work-group is about that of a 1000-element row; [16384, 256] softmax
 * 4.0 -> 2.1 ms) while keeping 8 groups per compute unit; 1 elsewhere. */
static uint64_t nn_rows_per_group(int32_t dev, uint64_t len, uint64_t nrows) {
  if (!nn_dev_cpu(dev)) return 1;
  uint64_t cu = g_ocl.devices[dev].compute_units > 0 ? (uint64_t)g_ocl.devices[dev].compute_units
                                                     : 1;
  uint64_t r = (8192 + len - 1) / (len > 0 ? len : 1), cap = nrows / (8 * cu);
  if (r > cap) r = cap;
  return r > 0 ? r : 1;
}

/* sizeof AT in nn.cl: double on devices with fp64, else the value type. */
static size_t nn_acc_size(int32_t dev, HWP_DType dt) {
  return ocl_dev_fp64(dev) || dt == HWP_DTYPE_FLOAT64 ? 8 : 4;
}

static HWP_Status nn_run(const HWP_KernelContext *ctx, cl_kernel k, int n, const ocl_arg *args,
                         uint64_t rows, size_t local, const char *fn) {
  HWP_Status st = ocl_kernel_args(k, n, args, fn);
  cl_command_queue q = NULL;
  if (st == HWP_OK) st = ocl_ctx_queue(ctx, &q, fn);
  size_t global = (size_t)rows * local;
  if (st == HWP_OK) st = ocl_enqueue_nd(ctx, q, k, 1, &global, &local, fn);
  ocl_kernel_release(k);
  return st != HWP_OK ? st : ocl_launch_done(ctx, q, fn);
}

static HWP_Status softmax_kernel(const HWP_KernelContext *ctx, const nn_op *op) {
  const char *fn = op->name;
  HWP_Status st = ocl_check_views(ctx, 1, 1, fn);
  if (st != HWP_OK) return st;
  const HWP_TensorView *x = &ctx->inputs[0], *o = &ctx->outputs[0];
  if ((st = nn_check_xy(fn, x, o)) != HWP_OK) return st;
  int axis = 0;
  if ((st = ocl_read_axis(ctx, x->ndim, &axis, fn)) != HWP_OK) return st;
  if (ocl_numel(x) == 0) return HWP_OK;
  ocl_axis_layout L;
  ocl_split_axis(x, axis, &L);
  cl_kernel k = NULL;
  size_t local = 1, vsz = x->dtype == HWP_DTYPE_FLOAT64 ? 8 : 4;
  size_t asz = nn_acc_size(ctx->device, x->dtype);
  cl_mem out = (cl_mem)o->buffer, in = (cl_mem)x->buffer;
  cl_ulong out_off = o->byte_offset, in_off = x->byte_offset, clen = L.len, inner = L.inner;
  cl_int oal = ocl_view_aligned(o), al = ocl_view_aligned(x), od = L.odims.n, id = L.idims.n,
         logsm = op->alt, cache = 0;
  cl_long16 os, ost, is, ist;
  ocl_dims_long16(&L.odims, &os, &ost);
  ocl_dims_long16(&L.idims, &is, &ist);
  if (L.inner == 1 && (L.len == 1 || L.ast == (int64_t)hwp_dtype_size(x->dtype)) && oal && al) {
    /* Contiguous rows: the rows are the outer dims. */
    if ((st = nn_prepare(ctx, x->dtype, "k_softmax_rows", L.len, 1, &k, &local, fn)) != HWP_OK)
      return st;
    cl_ulong nrows = L.outer, rpg = nn_rows_per_group(ctx->device, L.len, L.outer);
    const ocl_arg args[] = {OCL_ARG(out),   OCL_ARG(out_off), OCL_ARG(in),
                            OCL_ARG(in_off), OCL_ARG(clen),  OCL_ARG(od),
                            OCL_ARG(os),    OCL_ARG(ost),     OCL_ARG(logsm),
                            OCL_ARG(nrows), OCL_ARG(rpg),     OCL_LOCAL(vsz * local),
                            OCL_LOCAL(asz * local)};
    return nn_run(ctx, k, (int)(sizeof args / sizeof args[0]), args, (nrows + rpg - 1) / rpg,
                  local, fn);
  }
  if (L.inner > 1 && L.idims.n == 1 && L.idims.st[0] == (int64_t)hwp_dtype_size(x->dtype) &&
      oal && al) {
    /* Unit-stride inner elements: VW columns per work-item. */
    if ((st = nn_prepare(ctx, x->dtype, "k_softmax_cols", 1, 0, &k, &local, fn)) != HWP_OK)
      return st;
    const uint64_t vw = (uint64_t)nn_vw(ctx->device);
    cl_ulong blocks = L.outer * ((L.inner + vw - 1) / vw);
    local = ocl_kernel_wg(k, ctx->device, nn_dev_cpu(ctx->device) ? 8 : 64);
    const ocl_arg args[] = {OCL_ARG(out),    OCL_ARG(out_off), OCL_ARG(in),  OCL_ARG(in_off),
                            OCL_ARG(clen),   OCL_ARG(L.ast),   OCL_ARG(inner),
                            OCL_ARG(blocks), OCL_ARG(od),      OCL_ARG(os),  OCL_ARG(ost),
                            OCL_ARG(logsm)};
    return nn_run(ctx, k, (int)(sizeof args / sizeof args[0]), args, (blocks + local - 1) / local,
                  local, fn);
  }
  if ((st = nn_prepare(ctx, x->dtype, "k_softmax", L.len, 0, &k, &local, fn)) != HWP_OK)
    return st;
  cl_long ast = L.ast;
  size_t row = nn_row_bytes(ctx->device, L.len, vsz, &cache);
  const ocl_arg args[] = {OCL_ARG(out), OCL_ARG(out_off), OCL_ARG(oal),   OCL_ARG(in),
                          OCL_ARG(in_off), OCL_ARG(al),   OCL_ARG(clen),  OCL_ARG(ast),
                          OCL_ARG(inner), OCL_ARG(od),    OCL_ARG(os),    OCL_ARG(ost),
                          OCL_ARG(id),  OCL_ARG(is),      OCL_ARG(ist),   OCL_ARG(logsm),
                          OCL_ARG(cache), OCL_LOCAL(row), OCL_LOCAL(vsz * local),
                          OCL_LOCAL(asz * local)};
  return nn_run(ctx, k, (int)(sizeof args / sizeof args[0]), args, L.outer * L.inner, local, fn);
}

static int nn_attr_bool(const HWP_KernelContext *ctx, const char *name, int fallback) {
  uint8_t v = 0;
  return ctx->get_attr(ctx, name, HWP_ATTR_BOOL, &v, NULL) == HWP_OK ? v != 0 : fallback;
}

static HWP_Status norm_kernel(const HWP_KernelContext *ctx, const nn_op *op) {
  const char *fn = op->name;
  const int rms = op->alt;
  HWP_Status st = ocl_check_views(ctx, 1, rms ? 2 : 3, fn);
  if (st != HWP_OK) return st;
  /* Optional inputs: the attrs say which are present; without them, by count (in order). */
  int n_in = ctx->num_inputs;
  int has_w = nn_attr_bool(ctx, "has_weight", n_in >= 2);
  int has_b = rms ? 0 : nn_attr_bool(ctx, "has_bias", n_in >= 3 || (n_in == 2 && !has_w));
  if (n_in != 1 + has_w + has_b)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: %d inputs, but has_weight=%d and has_bias=%d say %d", fn, n_in, has_w,
                     has_b, 1 + has_w + has_b);
  const HWP_TensorView *x = &ctx->inputs[0], *o = &ctx->outputs[0];
  if ((st = nn_check_xy(fn, x, o)) != HWP_OK) return st;
  int64_t nd = hwp_attr_int64(ctx, "normalized_ndim", 1);
  if (nd < 1 || nd > x->ndim)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: normalized_ndim = %lld must be in [1, %d] for a %d-d input", fn,
                     (long long)nd, (int)x->ndim, (int)x->ndim);
  const int lead = x->ndim - (int)nd;
  const HWP_TensorView *params[2] = {has_w ? &ctx->inputs[1] : NULL,
                                     has_b ? &ctx->inputs[1 + has_w] : NULL};
  for (int i = 0; i < 2; ++i) {
    const HWP_TensorView *p = params[i];
    if (p == NULL) continue;
    int ok = p->dtype == x->dtype && p->ndim == (int)nd;
    for (int k = 0; ok && k < (int)nd; ++k) ok = p->shape[k] == x->shape[lead + k];
    if (!ok)
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: %s must have the input's dtype and its last %lld dims as its shape",
                       fn, i == 0 ? "weight" : "bias", (long long)nd);
  }
  if (ocl_numel(x) == 0) return HWP_OK;
  /* Rows: the leading dims (collapsed). The normalized dims keep x's order with size-1 dims
   * dropped, one stride set each for x, weight and bias (merged only where all three allow). */
  int64_t isz = (int64_t)hwp_dtype_size(x->dtype);
  ocl_dims rows;
  memset(&rows, 0, sizeof rows);
  uint64_t nrows = 1, len = 1;
  cl_long16 nshape, nxs, nws, nbs;
  memset(&nshape, 0, sizeof nshape);
  memset(&nxs, 0, sizeof nxs);
  memset(&nws, 0, sizeof nws);
  memset(&nbs, 0, sizeof nbs);
  int nn = 0;
  for (int k = 0; k < x->ndim; ++k) {
    int64_t n = x->shape[k];
    if (k < lead) {
      ocl_dims_add(&rows, n, x->strides[k] * isz);
      nrows *= (uint64_t)n;
      continue;
    }
    len *= (uint64_t)n;
    if (n == 1) continue;
    int64_t sx = x->strides[k] * isz;
    int64_t sw = params[0] ? params[0]->strides[k - lead] * isz : 0;
    int64_t sb = params[1] ? params[1]->strides[k - lead] * isz : 0;
    if (nn > 0 && nxs.s[nn - 1] == sx * n && nws.s[nn - 1] == sw * n && nbs.s[nn - 1] == sb * n) {
      nshape.s[nn - 1] *= n;
      nxs.s[nn - 1] = sx;
      nws.s[nn - 1] = sw;
      nbs.s[nn - 1] = sb;
      continue;
    }
    nshape.s[nn] = n;
    nxs.s[nn] = sx;
    nws.s[nn] = sw;
    nbs.s[nn] = sb;
    ++nn;
  }
  cl_kernel k = NULL;
  size_t local = 1, vsz = x->dtype == HWP_DTYPE_FLOAT64 ? 8 : 4;
  cl_long16 rshape, rst;
  ocl_dims_long16(&rows, &rshape, &rst);
  cl_mem out = (cl_mem)o->buffer, in = (cl_mem)x->buffer;
  cl_mem wm = params[0] ? (cl_mem)params[0]->buffer : in;
  cl_mem bm = params[1] ? (cl_mem)params[1]->buffer : in;
  cl_ulong out_off = o->byte_offset, in_off = x->byte_offset, clen = len;
  cl_ulong w_off = params[0] ? params[0]->byte_offset : 0;
  cl_ulong b_off = params[1] ? params[1]->byte_offset : 0;
  cl_int oal = ocl_view_aligned(o), al = ocl_view_aligned(x), rd = rows.n, ndim = nn,
         chw = has_w, chb = has_b, crms = rms, cache = 0;
  for (int i = 0; i < 2; ++i)
    if (params[i] != NULL) al &= ocl_view_aligned(params[i]);
  double eps = hwp_attr_float64(ctx, "epsilon", rms ? 1e-6 : 1e-5);
  float eps_f = (float)eps;
  size_t asz = nn_acc_size(ctx->device, x->dtype);
  const ocl_arg eps_arg = asz == 8 ? (ocl_arg)OCL_ARG(eps) : (ocl_arg)OCL_ARG(eps_f);
  /* Contiguous rows: x, weight and bias have one unit-stride normalized dim (or none). */
  if (oal && al && (nn == 0 || (nn == 1 && nxs.s[0] == isz && (!has_w || nws.s[0] == isz) &&
                                (!has_b || nbs.s[0] == isz)))) {
    if ((st = nn_prepare(ctx, x->dtype, "k_norm_rows", len, 1, &k, &local, fn)) != HWP_OK)
      return st;
    cl_ulong cnrows = nrows, rpg = nn_rows_per_group(ctx->device, len, nrows);
    const ocl_arg args[] = {OCL_ARG(out),  OCL_ARG(out_off), OCL_ARG(in),    OCL_ARG(in_off),
                            OCL_ARG(clen), OCL_ARG(rd),      OCL_ARG(rshape), OCL_ARG(rst),
                            OCL_ARG(wm),   OCL_ARG(w_off),   OCL_ARG(bm),    OCL_ARG(b_off),
                            OCL_ARG(chw),  OCL_ARG(chb),     OCL_ARG(crms),  eps_arg,
                            OCL_ARG(cnrows), OCL_ARG(rpg),   OCL_LOCAL(asz * local)};
    return nn_run(ctx, k, (int)(sizeof args / sizeof args[0]), args, (nrows + rpg - 1) / rpg,
                  local, fn);
  }
  if ((st = nn_prepare(ctx, x->dtype, "k_norm", len, 0, &k, &local, fn)) != HWP_OK) return st;
  size_t row = nn_row_bytes(ctx->device, len, vsz, &cache);
  const ocl_arg args[] = {OCL_ARG(out),   OCL_ARG(out_off), OCL_ARG(oal),    OCL_ARG(in),
                          OCL_ARG(in_off), OCL_ARG(al),     OCL_ARG(clen),   OCL_ARG(rd),
                          OCL_ARG(rshape), OCL_ARG(rst),    OCL_ARG(ndim),   OCL_ARG(nshape),
                          OCL_ARG(nxs),   OCL_ARG(wm),      OCL_ARG(w_off),  OCL_ARG(nws),
                          OCL_ARG(bm),    OCL_ARG(b_off),   OCL_ARG(nbs),    OCL_ARG(chw),
                          OCL_ARG(chb),   OCL_ARG(crms),    eps_arg,         OCL_ARG(cache),
                          OCL_LOCAL(row), OCL_LOCAL(asz * local)};
  return nn_run(ctx, k, (int)(sizeof args / sizeof args[0]), args, nrows, local, fn);
}

static HWP_Status nn_kernel(const HWP_KernelContext *ctx) {
  const nn_op *op = (const nn_op *)ctx->user_data;
  return op->norm ? norm_kernel(ctx, op) : softmax_kernel(ctx, op);
}

HWP_Status ocl_register_nn_kernels(const HWP_HostApi *host) {
  if (g_ocl.num_devices == 0) return HWP_OK;
  int count = 0;
  const uint32_t floats = (1u << HWP_DTYPE_FLOAT16) | (1u << HWP_DTYPE_BFLOAT16) |
                          (1u << HWP_DTYPE_FLOAT32) | (1u << HWP_DTYPE_FLOAT64);
  for (int i = 0; i < 4; ++i) { /* ops.yaml: float dtypes only */
    HWP_Status st = ocl_register_op(host, k_nn_ops[i].name, floats, nn_kernel,
                                    (void *)&k_nn_ops[i], &count);
    if (st != HWP_OK) return st;
  }
  ocl_log(HWP_LOG_INFO, "opencl: registered %d fused nn kernels (float64: %s)", count,
          ocl_all_devices_fp64() ? "yes" : "no");
  return HWP_OK;
}
