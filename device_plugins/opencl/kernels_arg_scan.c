/* hwport OpenCL plugin — argmax, argmin, cumsum, cumprod (phi_ops/ops.yaml; the OpenCL C is
 * arg_scan.cl after kernels_prelude.cl, embedded at build time as ocl_arg_scan_source).
 *
 * attr axis: one dim (non-negative from the host; a negative one is taken Python-style; a 0-d
 * input is one element). Inputs may be strided (any stride sign, 0 included): the dims other
 * than the axis are collapsed and passed as long16 shapes and byte strides.
 *   argmax/argmin: int64 output; the first extreme wins, NaN counts as the extreme. Work-group
 *     local-memory trees over (value, index) pairs (kernels in arg_scan.cl); when there are few
 *     outputs and long rows, rows are split into chunks whose pairs go to a workspace and a
 *     second kernel combines them.
 *   cumsum/cumprod: output int64 for bool/integer inputs (wrapping), else the input dtype; one
 *     work-group per row scans it in blocks (local-memory scan plus a carried prefix); when
 *     there are few long rows, rows are split into chunks: a first kernel stores the chunk
 *     totals in a workspace, then each chunk is scanned by its own group, starting from the
 *     sum (product) of the totals before it.
 * One program per input dtype (built with -DDT=<dtype>) holds all four: slots OCL_AS_SLOT0 +
 * dtype. */
#include <stdio.h>
#include <string.h>

#include "hwport/kernel_util.h"
#include "kernels.h"
#if defined(HWPORT_OCL_REQUIRE_GEN) || __has_include("ocl_arg_scan_cl.h")
#include "ocl_arg_scan_cl.h"
#else /* a standalone compile (the warning check): no embedded source */
static const char ocl_arg_scan_source[] = "";
#endif

#define OCL_AS_SLOT0 30 /* slots 30..39: one program (the whole of arg_scan.cl) per dtype */
#define OCL_AS_MAX_LOCAL 256
#define OCL_SCAN_SPER 8 /* elements per work-item per block (SPER in arg_scan.cl) */

typedef struct as_op {
  const char *name;
  int scan; /* cumsum/cumprod */
} as_op;

static const as_op k_as_ops[4] = {
    {"argmax", 0}, {"argmin", 0}, {"cumsum", 1}, {"cumprod", 1}};

static HWP_Status arg_launch(const HWP_KernelContext *ctx, const as_op *op,
                             const ocl_axis_layout *L, const char *options) {
  const char *fn = op->name;
  const HWP_TensorView *x = &ctx->inputs[0], *o = &ctx->outputs[0];
  int dev = ctx->device;
  uint64_t nout = L->outer * L->inner;
  if (L->len == 0)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: reduction over an empty axis", fn);
  size_t vsz = x->dtype == HWP_DTYPE_FLOAT64 ? 8 : x->dtype >= HWP_DTYPE_FLOAT16 ? 4 : 8;
  char kname[32];
  snprintf(kname, sizeof kname, "k_%s", op->name);
  cl_kernel k1 = NULL, k2 = NULL;
  HWP_Status st = ocl_kernel_get(dev, OCL_AS_SLOT0 + (int)x->dtype, ocl_arg_scan_source,
                                 options, kname, &k1, fn);
  if (st != HWP_OK) return st;
  size_t local_max = ocl_kernel_wg(k1, dev, OCL_AS_MAX_LOCAL);
  size_t local = ocl_pow2_ceil(L->len);
  if (local > local_max) local = local_max;

  uint64_t chunks = 1, chunk = L->len;
  HWP_Buffer ws = NULL;
  ocl_split_rows(ctx, nout, L->len, local, vsz + 8, &chunks, &chunk, &ws);
  cl_long16 ks, kst;
  ocl_dims_long16(&L->kept, &ks, &kst);
  cl_mem out = (cl_mem)o->buffer, in = (cl_mem)x->buffer;
  cl_mem part = ws != NULL ? (cl_mem)ws : out;
  cl_ulong out_off = o->byte_offset, in_off = x->byte_offset, clen = L->len, cchunk = chunk;
  cl_ulong pv_off = nout * chunks * 8; /* indices first: both arrays stay aligned */
  cl_long ast = L->ast;
  cl_int oal = o->byte_offset % 8 == 0, al = ocl_view_aligned(x), kd = L->kept.n;
  cl_uint cchunks = (cl_uint)chunks;
  const ocl_arg a1[] = {OCL_ARG(out),    OCL_ARG(out_off), OCL_ARG(oal),  OCL_ARG(in),
                        OCL_ARG(in_off),  OCL_ARG(al),      OCL_ARG(clen), OCL_ARG(ast),
                        OCL_ARG(cchunk),  OCL_ARG(cchunks), OCL_ARG(kd),   OCL_ARG(ks),
                        OCL_ARG(kst),     OCL_ARG(part),    OCL_ARG(pv_off),
                        OCL_LOCAL(vsz * local), OCL_LOCAL(8 * local)};
  st = ocl_kernel_args(k1, (int)(sizeof a1 / sizeof a1[0]), a1, fn);
  size_t local2 = 1;
  if (st == HWP_OK && chunks > 1) {
    snprintf(kname, sizeof kname, "k_%s_fin", op->name);
    st = ocl_kernel_get(dev, OCL_AS_SLOT0 + (int)x->dtype, ocl_arg_scan_source, options, kname,
                        &k2, fn);
    if (st == HWP_OK) {
      local2 = ocl_kernel_wg(k2, dev, OCL_AS_MAX_LOCAL);
      if (ocl_pow2_ceil(chunks) < local2) local2 = ocl_pow2_ceil(chunks);
      const ocl_arg a2[] = {OCL_ARG(out),    OCL_ARG(out_off),        OCL_ARG(oal),
                            OCL_ARG(part),   OCL_ARG(pv_off),         OCL_ARG(cchunks),
                            OCL_LOCAL(vsz * local2), OCL_LOCAL(8 * local2)};
      st = ocl_kernel_args(k2, (int)(sizeof a2 / sizeof a2[0]), a2, fn);
    }
  }
  cl_command_queue q = NULL;
  if (st == HWP_OK) st = ocl_ctx_queue(ctx, &q, fn);
  size_t g1 = (size_t)(nout * chunks) * local, g2 = (size_t)nout * local2;
  if (st == HWP_OK) st = ocl_enqueue_nd(ctx, q, k1, 1, &g1, &local, fn);
  if (st == HWP_OK && k2 != NULL) st = ocl_enqueue_nd(ctx, q, k2, 1, &g2, &local2, fn);
  ocl_kernel_release(k1); /* back to the kernel cache */
  if (k2 != NULL) ocl_kernel_release(k2);
  return st != HWP_OK ? st : ocl_launch_done(ctx, q, fn);
}

static HWP_Status scan_launch(const HWP_KernelContext *ctx, const as_op *op,
                              const ocl_axis_layout *L, const char *options) {
  const char *fn = op->name;
  const HWP_TensorView *x = &ctx->inputs[0], *o = &ctx->outputs[0];
  int dev = ctx->device;
  size_t asz = x->dtype == HWP_DTYPE_FLOAT16 || x->dtype == HWP_DTYPE_BFLOAT16 ||
                       (x->dtype == HWP_DTYPE_FLOAT32 && !ocl_dev_fp64(dev))
                   ? 4
                   : 8;
  char kname[32];
  snprintf(kname, sizeof kname, "k_%s", op->name);
  cl_kernel k = NULL;
  HWP_Status st = ocl_kernel_get(dev, OCL_AS_SLOT0 + (int)x->dtype, ocl_arg_scan_source,
                                 options, kname, &k, fn);
  if (st != HWP_OK) return st;
  /* Local memory: a chunk (SPER per work-item) and the work-items' totals, within half the
   * device's local memory. */
  size_t cap = (size_t)(ocl_dev_local_mem(dev) / 2 / (asz * (OCL_SCAN_SPER + 1)));
  if (cap > OCL_AS_MAX_LOCAL) cap = OCL_AS_MAX_LOCAL;
  size_t local = ocl_kernel_wg(k, dev, cap > 0 ? cap : 1);
  size_t want = ocl_pow2_ceil((L->len + OCL_SCAN_SPER - 1) / OCL_SCAN_SPER);
  if (want < local) local = want;
  /* Few long rows: chunks scanned by groups of their own after k_*_tot stored their totals. */
  uint64_t rows = L->outer * L->inner, chunks = 1, chunk = L->len;
  HWP_Buffer ws = NULL;
  ocl_split_rows(ctx, rows, L->len, local, asz, &chunks, &chunk, &ws);
  cl_long16 os, ost, is, ist;
  ocl_dims_long16(&L->odims, &os, &ost);
  ocl_dims_long16(&L->idims, &is, &ist);
  cl_mem out = (cl_mem)o->buffer, in = (cl_mem)x->buffer;
  cl_mem part = ws != NULL ? (cl_mem)ws : out;
  cl_ulong out_off = o->byte_offset, in_off = x->byte_offset, clen = L->len, inner = L->inner,
           cchunk = chunk;
  cl_uint cchunks = (cl_uint)chunks;
  cl_long ast = L->ast;
  cl_int osz = (cl_int)hwp_dtype_size(o->dtype), oal = ocl_view_aligned(o),
         al = ocl_view_aligned(x), od = L->odims.n, id = L->idims.n;
  const ocl_arg args[] = {OCL_ARG(out),    OCL_ARG(out_off), OCL_ARG(oal),   OCL_ARG(osz),
                          OCL_ARG(in),     OCL_ARG(in_off),  OCL_ARG(al),    OCL_ARG(clen),
                          OCL_ARG(ast),    OCL_ARG(inner),   OCL_ARG(od),    OCL_ARG(os),
                          OCL_ARG(ost),    OCL_ARG(id),      OCL_ARG(is),    OCL_ARG(ist),
                          OCL_ARG(cchunk), OCL_ARG(cchunks), OCL_ARG(part),
                          OCL_LOCAL(asz * local * OCL_SCAN_SPER), OCL_LOCAL(asz * local)};
  st = ocl_kernel_args(k, (int)(sizeof args / sizeof args[0]), args, fn);
  cl_command_queue q = NULL;
  if (st == HWP_OK) st = ocl_ctx_queue(ctx, &q, fn);
  if (st == HWP_OK && chunks > 1) { /* k_*_tot takes the main kernel's arguments 4..18 */
    cl_kernel kt = NULL;
    snprintf(kname, sizeof kname, "k_%s_tot", op->name);
    st = ocl_kernel_get(dev, OCL_AS_SLOT0 + (int)x->dtype, ocl_arg_scan_source, options,
                        kname, &kt, fn);
    if (st == HWP_OK) {
      size_t lt = ocl_kernel_wg(kt, dev, OCL_AS_MAX_LOCAL);
      ocl_arg targs[16];
      memcpy(targs, args + 4, 15 * sizeof(ocl_arg));
      targs[15] = (ocl_arg)OCL_LOCAL(asz * lt);
      st = ocl_kernel_args(kt, 16, targs, fn);
      size_t gt = (size_t)(rows * chunks) * lt;
      if (st == HWP_OK) st = ocl_enqueue_nd(ctx, q, kt, 1, &gt, &lt, fn);
      ocl_kernel_release(kt);
    }
  }
  size_t global = (size_t)(rows * chunks) * local;
  if (st == HWP_OK) st = ocl_enqueue_nd(ctx, q, k, 1, &global, &local, fn);
  ocl_kernel_release(k);
  return st != HWP_OK ? st : ocl_launch_done(ctx, q, fn);
}

static HWP_Status as_kernel(const HWP_KernelContext *ctx) {
  const as_op *op = (const as_op *)ctx->user_data;
  const char *fn = op->name;
  HWP_Status st = ocl_check_views(ctx, 1, 1, fn);
  if (st != HWP_OK) return st;
  const HWP_TensorView *x = &ctx->inputs[0], *o = &ctx->outputs[0];
  int is_int = x->dtype <= HWP_DTYPE_INT64;
  HWP_DType want = !op->scan || is_int ? HWP_DTYPE_INT64 : x->dtype;
  if (o->dtype != want)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output dtype %d, expected %d for input %d",
                     fn, (int)o->dtype, (int)want, (int)x->dtype);
  int axis = 0;
  if ((st = ocl_read_axis(ctx, x->ndim, &axis, fn)) != HWP_OK) return st;
  ocl_axis_layout L;
  ocl_split_axis(x, axis, &L);
  uint64_t want_n = op->scan ? L.outer * L.len * L.inner : L.outer * L.inner;
  if (ocl_numel(o) != want_n)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output has %llu elements, expected %llu",
                     fn, (unsigned long long)ocl_numel(o), (unsigned long long)want_n);
  if (want_n == 0) return HWP_OK;
  char options[96];
  ocl_dtype_options(ctx->device, x->dtype, NULL, options, sizeof options);
  return op->scan ? scan_launch(ctx, op, &L, options) : arg_launch(ctx, op, &L, options);
}

HWP_Status ocl_register_arg_scan_kernels(const HWP_HostApi *host) {
  if (g_ocl.num_devices == 0) return HWP_OK;
  int count = 0;
  for (int i = 0; i < 4; ++i) { /* ops.yaml: every dtype */
    HWP_Status st = ocl_register_op(host, k_as_ops[i].name, (1u << HWP_DTYPE_COUNT) - 1u,
                                    as_kernel, (void *)&k_as_ops[i], &count);
    if (st != HWP_OK) return st;
  }
  ocl_log(HWP_LOG_INFO, "opencl: registered %d argmax/argmin/cumsum/cumprod kernels (float64: %s)",
          count, ocl_all_devices_fp64() ? "yes" : "no");
  return HWP_OK;
}
