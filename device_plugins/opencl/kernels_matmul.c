/* hwport OpenCL plugin — matmul tiled in local memory (phi_ops/ops.yaml; the OpenCL C is
 * matmul.cl after kernels_prelude.cl, embedded at build time as ocl_matmul_source).
 *
 * The contract: x [B..., M, K] and y [B..., K, N] strided views already broadcast to the same
 * batch dims (stride 0 allowed), transposes applied as views, 1-D operands unsqueezed; output
 * [B..., M, N] contiguous, of the inputs' dtype; integers wrap. Any strides work (the operands
 * are read through byte strides while staged into local memory); the batch dims are collapsed.
 *
 * Work-groups are TS x TS work-items (TS a power of two with TS * TS within
 * CL_DEVICE_MAX_WORK_GROUP_SIZE: 16 on GPUs, 8 on CPUs) computing WPT x WPT outputs each
 * (4 on GPUs, 16 on CPUs), so a group covers a (TS * WPT)^2 block; WPT shrinks when the two
 * staged tiles would not fit in half the device's local memory (mm_options). The ND-range is
 * (blocks along N * TS, blocks along M * TS, B): a multiple of the work-group size. One
 * program per dtype (slots OCL_MM_SLOT0 + dtype), built with the device's tile options.
 * On CPU devices, float32/float64 with unit-stride rows of y and aligned views take
 * k_matmul_rows instead (register blocks of explicit vectors, no local memory; PoCL 1024^3
 * f32: 45 -> ~7.5 ms, OpenBLAS ~9 ms on the same 2 cores). K == 0 writes zeros. */
#include <stdio.h>
#include <string.h>

#include "hwport/kernel_util.h"
#include "kernels.h"
#if defined(HWPORT_OCL_REQUIRE_GEN) || __has_include("ocl_matmul_cl.h")
#include "ocl_matmul_cl.h"
#else /* a standalone compile (the warning check): no embedded source */
static const char ocl_matmul_source[] = "";
#endif

#define OCL_MM_SLOT0 50

/* The tile shape for (device, dtype) as build options; acc is the accumulator size in bytes.
 * GPUs (and anything but a CPU): TS x TS = 16 x 16 work-items (fewer when the device allows
 * fewer) computing 4 x 4 outputs each, neighbours on neighbouring columns. CPU devices run a
 * work-item's loop as (vector) code of its own: 8 x 8 work-items with 16 x 16 outputs each
 * on contiguous columns (about 3x faster on PoCL). WPT halves until the staged tiles fit in
 * half the device's local memory. */
static int mm_dev_cpu(int32_t dev) {
  cl_device_type type = 0;
  return clGetDeviceInfo(g_ocl.devices[dev].id, CL_DEVICE_TYPE, sizeof type, &type, NULL) ==
             CL_SUCCESS && (type & CL_DEVICE_TYPE_CPU);
}

/* k_matmul_rows' register block on CPU devices: MM_MR rows x MM_NV vectors of mm_vw(dt)
 * (one 512-bit register each: 24 accumulator registers; measured on PoCL/AVX-512 against
 * 8x2, 12x2, 14x2, 4x4, 7x4: 6x4 is fastest, 1024^3 f32 7.5 ms vs 10-26 ms). */
#define MM_MR 6
#define MM_NV 4
static int mm_vw(HWP_DType dt) { return dt == HWP_DTYPE_FLOAT64 ? 8 : 16; }

static void mm_options(int32_t dev, HWP_DType dt, size_t acc, int *ts, int *wpt, char *buf,
                       size_t cap) {
  size_t maxwg = g_ocl.devices[dev].max_work_group_size > 0
                     ? (size_t)g_ocl.devices[dev].max_work_group_size
                     : 64;
  int cpu = mm_dev_cpu(dev);
  int t = cpu ? 8 : 16, w = cpu ? 16 : 4;
  while (t > 1 && (size_t)(t * t) > maxwg) t /= 2;
  uint64_t budget = ocl_dev_local_mem(dev) / 2;
  while (w > 1 && 2 * (uint64_t)t * (uint64_t)(t * w) * acc > budget) w /= 2;
  char extra[96];
  if (cpu)
    snprintf(extra, sizeof extra, "-DTS=%d -DWPT=%d -DCOLS_CONTIG=1 -DMR=%d -DNV=%d -DMVW=%d", t,
             w, MM_MR, MM_NV, mm_vw(dt));
  else
    snprintf(extra, sizeof extra, "-DTS=%d -DWPT=%d", t, w);
  ocl_dtype_options(dev, dt, extra, buf, cap);
  *ts = t;
  *wpt = w;
}

static HWP_Status mm_kernel(const HWP_KernelContext *ctx) {
  static const char fn[] = "matmul";
  HWP_Status st = ocl_check_views(ctx, 2, 2, fn);
  if (st != HWP_OK) return st;
  const HWP_TensorView *x = &ctx->inputs[0], *y = &ctx->inputs[1], *o = &ctx->outputs[0];
  if (y->dtype != x->dtype || o->dtype != x->dtype || x->dtype == HWP_DTYPE_BOOL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "matmul: dtypes %d @ %d -> %d must all match (and not be bool)",
                     (int)x->dtype, (int)y->dtype, (int)o->dtype);
  const int nd = x->ndim;
  if (nd < 2 || y->ndim != nd || o->ndim != nd)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "matmul: expects x, y and the output of one rank >= 2, got %d, %d, %d",
                     (int)x->ndim, (int)y->ndim, (int)o->ndim);
  for (int k = 0; k < nd - 2; ++k)
    if (y->shape[k] != x->shape[k] || o->shape[k] != x->shape[k])
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                       "matmul: batch dim %d differs (x %lld, y %lld, output %lld); the host "
                       "broadcasts batch dims first",
                       k, (long long)x->shape[k], (long long)y->shape[k],
                       (long long)o->shape[k]);
  const int64_t M = x->shape[nd - 2], K = x->shape[nd - 1], N = y->shape[nd - 1];
  if (y->shape[nd - 2] != K || o->shape[nd - 2] != M || o->shape[nd - 1] != N)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "matmul: shapes [.., %lld, %lld] @ [.., %lld, %lld] -> [.., %lld, %lld] do "
                     "not match",
                     (long long)M, (long long)K, (long long)y->shape[nd - 2], (long long)N,
                     (long long)o->shape[nd - 2], (long long)o->shape[nd - 1]);
  uint64_t total = ocl_numel(o);
  if (total == 0) return HWP_OK;
  uint64_t B = total / (uint64_t)(M * N);
  int64_t isz = (int64_t)hwp_dtype_size(x->dtype);
  /* Collapse the batch dims of x and y together: merge only where both allow it. */
  ocl_dims bd;
  memset(&bd, 0, sizeof bd);
  cl_long16 bshape, bxs, bys;
  memset(&bshape, 0, sizeof bshape);
  memset(&bxs, 0, sizeof bxs);
  memset(&bys, 0, sizeof bys);
  for (int k = 0; k < nd - 2; ++k) {
    int64_t n = x->shape[k], sx = x->strides[k] * isz, sy = y->strides[k] * isz;
    if (n == 1) continue;
    if (bd.n > 0 && bxs.s[bd.n - 1] == sx * n && bys.s[bd.n - 1] == sy * n) {
      bshape.s[bd.n - 1] *= n;
      bxs.s[bd.n - 1] = sx;
      bys.s[bd.n - 1] = sy;
      continue;
    }
    bshape.s[bd.n] = n;
    bxs.s[bd.n] = sx;
    bys.s[bd.n] = sy;
    ++bd.n;
  }
  int dev = ctx->device;
  size_t acc = x->dtype == HWP_DTYPE_FLOAT64 || x->dtype == HWP_DTYPE_INT64 ? 8 : 4;
  char options[160];
  int ts = 1, wpt = 1;
  mm_options(dev, x->dtype, acc, &ts, &wpt, options, sizeof options);
  cl_kernel k = NULL;
  cl_mem out = (cl_mem)o->buffer, xm = (cl_mem)x->buffer, ym = (cl_mem)y->buffer;
  if (K == 0) xm = ym = out; /* nothing is read */
  cl_ulong out_off = o->byte_offset, x_off = x->byte_offset, y_off = y->byte_offset;
  cl_int oal = ocl_view_aligned(o), al = ocl_view_aligned(x) && ocl_view_aligned(y);
  cl_long cm = M, cn = N, ck = K, sxm = x->strides[nd - 2] * isz, sxk = x->strides[nd - 1] * isz,
          syk = y->strides[nd - 2] * isz, syn = y->strides[nd - 1] * isz;
  cl_int bdim = bd.n;
  /* CPU devices, float32/float64, y's rows unit-stride, all aligned: k_matmul_rows. */
  const int rows = mm_dev_cpu(dev) && oal && al && (syn == isz || N == 1) &&
                   (x->dtype == HWP_DTYPE_FLOAT32 || x->dtype == HWP_DTYPE_FLOAT64);
  st = ocl_kernel_get(dev, OCL_MM_SLOT0 + (int)x->dtype, ocl_matmul_source, options,
                      rows ? "k_matmul_rows" : "k_matmul", &k, fn);
  if (st != HWP_OK) return st;
  const ocl_arg args[] = {OCL_ARG(out),  OCL_ARG(out_off), OCL_ARG(oal),   OCL_ARG(xm),
                          OCL_ARG(x_off), OCL_ARG(ym),     OCL_ARG(y_off), OCL_ARG(al),
                          OCL_ARG(cm),   OCL_ARG(cn),      OCL_ARG(ck),    OCL_ARG(sxm),
                          OCL_ARG(sxk),  OCL_ARG(syk),     OCL_ARG(syn),   OCL_ARG(bdim),
                          OCL_ARG(bshape), OCL_ARG(bxs),   OCL_ARG(bys)};
  /* k_matmul_rows takes the same arguments less oal, al and syn. */
  const ocl_arg rargs[] = {args[0], args[1], args[3],  args[4],  args[5],  args[6],
                           args[8], args[9], args[10], args[11], args[12], args[13],
                           args[15], args[16], args[17], args[18]};
  st = rows ? ocl_kernel_args(k, (int)(sizeof rargs / sizeof rargs[0]), rargs, fn)
            : ocl_kernel_args(k, (int)(sizeof args / sizeof args[0]), args, fn);
  cl_command_queue q = NULL;
  if (st == HWP_OK) st = ocl_ctx_queue(ctx, &q, fn);
  size_t local[3] = {(size_t)ts, (size_t)ts, 1}, global[3];
  if (rows) { /* MM_MR x MM_NV * vw blocks; groups of 8 along M */
    const uint64_t mb = ((uint64_t)M + MM_MR - 1) / MM_MR, nr = MM_NV * mm_vw(x->dtype);
    local[0] = ocl_kernel_wg(k, dev, 8); /* one size for every M: PoCL compiles a kernel per
                                            work-group size */
    local[1] = 1;
    global[0] = (size_t)((mb + local[0] - 1) / local[0] * local[0]);
    global[1] = (size_t)(((uint64_t)N + nr - 1) / nr);
  } else {
    const uint64_t bm = (uint64_t)ts * (uint64_t)wpt;
    global[0] = (size_t)(((uint64_t)N + bm - 1) / bm) * (size_t)ts;
    global[1] = (size_t)(((uint64_t)M + bm - 1) / bm) * (size_t)ts;
  }
  global[2] = (size_t)B;
  if (st == HWP_OK) st = ocl_enqueue_nd(ctx, q, k, 3, global, local, fn);
  ocl_kernel_release(k);
  return st != HWP_OK ? st : ocl_launch_done(ctx, q, fn);
}

HWP_Status ocl_register_matmul_kernels(const HWP_HostApi *host) {
  if (g_ocl.num_devices == 0) return HWP_OK;
  int count = 0;
  /* ops.yaml: matmul is defined for the numeric dtypes (all but bool). */
  uint32_t mask = ((1u << HWP_DTYPE_COUNT) - 1u) & ~(1u << HWP_DTYPE_BOOL);
  HWP_Status st = ocl_register_op(host, "matmul", mask, mm_kernel, NULL, &count);
  if (st != HWP_OK) return st;
  ocl_log(HWP_LOG_INFO, "opencl: registered %d matmul kernels (float64: %s)", count,
          ocl_all_devices_fp64() ? "yes" : "no");
  return HWP_OK;
}
