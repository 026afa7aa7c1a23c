/* hwport OpenCL plugin — the generated elementwise kernels: the unary/binary primitives of
 * phi_ops/ops.yaml with a c_expr, where, cast, copy and fill.
 *
 * ocl_elementwise_gen.h (phi_ops/codegen/gen_opencl_elementwise.py) holds one OpenCL C program
 * per dtype (kernel k_<op> per op registered for it) and the op table. A launch collapses the
 * output's dims (dropping size-1 dims, merging dims contiguous in every operand), passes shape
 * and byte strides (any sign, 0 for broadcast) as long16 arguments, and byte offsets: kernels
 * index through uchar pointers, moving elements byte by byte when any offset or stride is not a
 * multiple of the itemsize. Kernels accept strided inputs (HWP_KERNEL_ACCEPTS_STRIDED).
 *
 * The program of a dtype is built for a device on its first launch there (program_cache.c).
 * float64 kernels (and casts to float64) are registered only when every device reports
 * cl_khr_fp64. Work is enqueued on ctx->stream's queue and tracked (ocl_stream_track); with a
 * NULL stream it runs on the device's internal queue and completes before the kernel returns. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hwport/kernel_util.h"
#include "fill_value.h"
#include "kernels.h"
#include "native_attrs.h"
/* The generated table. CMake builds define HWPORT_OCL_REQUIRE_GEN (a missing table is an
 * error there); a standalone compile of this file (e.g. a warning check) gets an empty table. */
#if defined(HWPORT_OCL_REQUIRE_GEN) || !defined(__has_include)
#include "ocl_elementwise_gen.h"
#elif __has_include("ocl_elementwise_gen.h")
#include "ocl_elementwise_gen.h"
#else
enum { OCL_EW_UNARY = 1, OCL_EW_BINARY = 2, OCL_EW_WHERE = 3, OCL_EW_CAST = 4,
       OCL_EW_COPY = 5, OCL_EW_FILL = 6 };
typedef struct ocl_ew_op_info {
  const char *name;
  int kind;
  uint32_t dtype_mask;
  int nattrs;
  hwps_attr_spec attrs[HWPS_MAX_NATIVE_ATTRS];
  uint32_t vec_mask;
} ocl_ew_op_info;
static const ocl_ew_op_info ocl_ew_ops[1] = {{"", 0, 0u, 0, {{NULL, 0, 0}}, 0u}};
#define OCL_EW_NUM_OPS 0
static const char *const ocl_ew_program_source[10] = {"", "", "", "", "", "", "", "", "", ""};
#endif

#define OCL_EW_LOCAL 128
/* kv_<op> (explicit vectors, elementwise_vector.cl) on a CPU device: OCL_EW_VPER vectors per
 * work-item, OCL_EW_VLOCAL work-items per group (PoCL runs a group on one core: 16 x 16 x 16
 * floats = 4096 elements per group keeps the per-group cost small and leaves thousands of
 * groups to balance over the cores; measured on PoCL 3.1, exp over 16M float32: 4 vectors
 * per work-item took ~1.25x the CPU plugin's CPU time, 16 ~1.18x, 64 ~1.19x). Elsewhere
 * one vector per work-item, OCL_EW_LOCAL. */
#define OCL_EW_VPER_CPU 16
#define OCL_EW_VLOCAL_CPU 16

static int g_fp64[OCL_MAX_DEVICES];
static int g_vw[OCL_MAX_DEVICES];  /* EW_VW of the device's programs: 4, 8 or 16 floats */
static int g_cpu[OCL_MAX_DEVICES]; /* CL_DEVICE_TYPE_CPU */
static char g_options[OCL_MAX_DEVICES][160];



/* ---- launch ----------------------------------------------------------------------------------- */

typedef struct ew_layout {
  int ndim;
  cl_long shape[16];
  cl_long st[3][16]; /* byte strides per input */
} ew_layout;

static HWP_Status ew_kernel(const HWP_KernelContext *ctx) {
  const ocl_ew_op_info *op = (const ocl_ew_op_info *)ctx->user_data;
  const char *fn = op->name;
  HWP_Status st = ocl_check_device(ctx->device, fn);
  if (st != HWP_OK) return st;
  int nin = op->kind == OCL_EW_UNARY || op->kind == OCL_EW_CAST || op->kind == OCL_EW_COPY ? 1
            : op->kind == OCL_EW_BINARY                                             ? 2
            : op->kind == OCL_EW_WHERE                                              ? 3
                                                                                    : 0;
  if (ctx->num_inputs != nin || ctx->num_outputs != 1 || ctx->outputs == NULL ||
      (nin > 0 && ctx->inputs == NULL))
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: expected %d inputs and 1 output, got %d, %d",
                     fn, nin, (int)ctx->num_inputs, (int)ctx->num_outputs);
  const HWP_TensorView *o = &ctx->outputs[0];
  HWP_DType key = op->kind == OCL_EW_FILL    ? o->dtype
                  : op->kind == OCL_EW_WHERE ? ctx->inputs[1].dtype
                                             : ctx->inputs[0].dtype;
  if (key < 0 || key >= HWP_DTYPE_COUNT || !((op->dtype_mask >> key) & 1u))
    return ocl_error(HWP_ERROR_NOT_SUPPORTED, "%s: dtype %d not supported", fn, (int)key);
  if (o->dtype < 0 || o->dtype >= HWP_DTYPE_COUNT)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: bad output dtype %d", fn, (int)o->dtype);
  int dev = ctx->device;
  if ((key == HWP_DTYPE_FLOAT64 || o->dtype == HWP_DTYPE_FLOAT64) && !g_fp64[dev])
    return ocl_error(HWP_ERROR_NOT_SUPPORTED, "%s: device %d has no cl_khr_fp64", fn, dev);
  if ((st = ocl_check_context_sizes(ctx, fn)) != HWP_OK) return st;
  for (int i = 0; i < nin; ++i) {
    const HWP_TensorView *v = &ctx->inputs[i];
    HWP_DType want = (op->kind == OCL_EW_WHERE && i == 0) ? HWP_DTYPE_BOOL
                     : op->kind == OCL_EW_WHERE            ? key
                                                           : v->dtype;
    if (v->dtype != want || v->ndim != o->ndim || v->buffer == NULL)
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: input %d (dtype %d, ndim %d) does not match the output", fn, i,
                       (int)v->dtype, (int)v->ndim);
    for (int k = 0; k < o->ndim; ++k)
      if (v->shape[k] != o->shape[k])
        return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: input %d is not broadcast", fn, i);
  }
  uint64_t n = 1;
  for (int k = 0; k < o->ndim; ++k) n *= (uint64_t)o->shape[k];
  if (n == 0) return HWP_OK;
  if (o->buffer == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output is NULL", fn);

  /* Collapse: drop size-1 dims, merge a dim into the next when every input is contiguous
   * across them (the output always is). */
  ew_layout L;
  memset(&L, 0, sizeof L);
  int64_t isz[3] = {0, 0, 0};
  for (int i = 0; i < nin; ++i) isz[i] = (int64_t)hwp_dtype_size(ctx->inputs[i].dtype);
  for (int k = 0; k < o->ndim; ++k) {
    if (o->shape[k] == 1) continue;
    int merge = L.ndim > 0;
    for (int i = 0; i < nin && merge; ++i)
      merge = L.st[i][L.ndim - 1] == ctx->inputs[i].strides[k] * isz[i] * o->shape[k];
    if (merge) {
      L.shape[L.ndim - 1] *= o->shape[k];
      for (int i = 0; i < nin; ++i) L.st[i][L.ndim - 1] = ctx->inputs[i].strides[k] * isz[i];
    } else {
      L.shape[L.ndim] = o->shape[k];
      for (int i = 0; i < nin; ++i) L.st[i][L.ndim] = ctx->inputs[i].strides[k] * isz[i];
      ++L.ndim;
    }
  }
  int aligned = o->byte_offset % hwp_dtype_size(o->dtype) == 0;
  for (int i = 0; i < nin; ++i) {
    if (ctx->inputs[i].byte_offset % (uint64_t)isz[i] != 0) aligned = 0;
    for (int k = 0; k < L.ndim; ++k)
      if (L.st[i][k] % isz[i] != 0) aligned = 0;
  }

  int arg = op->kind == OCL_EW_CAST ? (int)o->dtype : 0;
  cl_long16 shape, sa, sb, sc;
  memset(&shape, 0, sizeof shape);
  memset(&sa, 0, sizeof sa);
  memset(&sb, 0, sizeof sb);
  memset(&sc, 0, sizeof sc);
  for (int k = 0; k < L.ndim; ++k) {
    shape.s[k] = L.shape[k];
    sa.s[k] = L.st[0][k];
    sb.s[k] = L.st[1][k];
    sc.s[k] = L.st[2][k];
  }
  int ndim = L.ndim;
  cl_long4 at; /* a native composite's attributes */
  memset(&at, 0, sizeof at);
  if (op->nattrs > 0 &&
      (st = hwps_native_attrs(ctx, fn, op->attrs, op->nattrs, key, at.s)) != HWP_OK)
    return st;
  if (op->kind == OCL_EW_FILL) {
    int64_t bits = 0;
    st = hwps_value_bits(ctx, "fill", "value", 1, o->dtype, &bits);
    if (st != HWP_OK) return st;
    sa.s[0] = bits;
    ndim = 0;
  }

  cl_program prog;
  st = ocl_program_get(dev, (int)key, ocl_ew_program_source[key], g_options[dev], &prog, fn);
  if (st != HWP_OK) return st;
  cl_mem out = (cl_mem)o->buffer;
  cl_mem in[3] = {out, out, out};
  cl_ulong off[3] = {0, 0, 0};
  for (int i = 0; i < nin; ++i) {
    in[i] = (cl_mem)ctx->inputs[i].buffer;
    off[i] = ctx->inputs[i].byte_offset;
  }
  cl_ulong out_off = o->byte_offset, cn = n;
  cl_int cndim = ndim, cal = aligned, carg = arg;
  const ocl_arg args[17] = {OCL_ARG(out),   OCL_ARG(out_off), OCL_ARG(in[0]), OCL_ARG(off[0]),
                            OCL_ARG(in[1]), OCL_ARG(off[1]),  OCL_ARG(in[2]), OCL_ARG(off[2]),
                            OCL_ARG(cn),    OCL_ARG(cndim),   OCL_ARG(cal),   OCL_ARG(carg),
                            OCL_ARG(shape), OCL_ARG(sa),      OCL_ARG(sb),    OCL_ARG(sc),
                            OCL_ARG(at)};
  char kname[96];
  snprintf(kname, sizeof kname, "k_%s", op->name);
  cl_kernel k = NULL, kc = NULL;
  st = ocl_kernel_make(prog, kname, args, 17, &k, fn);
  if (st != HWP_OK) return st;
  size_t local = ocl_kernel_wg(k, dev, OCL_EW_LOCAL);
  /* The contiguous kc_ kernels have no bounds check (it keeps the device compiler from
   * vectorizing across work-items): they cover the whole work-groups, and k_, with its check,
   * the last partial one. Where the op has explicit-vector kernels (kv_, float32/float16), kv_ covers the whole groups of vectors first: [0, n_vec), then kc_ and k_ the
   * rest from n_vec (global offsets; kv_ reads `arg` as its vectors per work-item). */
  uint64_t n_main = 0, n_vec = 0;
  int contiguous = aligned && ndim == 1 && op->kind != OCL_EW_FILL;
  for (int i = 0; i < nin; ++i) contiguous = contiguous && L.st[i][0] == isz[i];
  cl_kernel kv = NULL;
  size_t vlocal = 1, vglobal = 0;
  if (contiguous && ((op->vec_mask >> key) & 1u) && g_vw[dev] > 0) {
    const cl_int per = g_cpu[dev] ? OCL_EW_VPER_CPU : 1;
    const uint64_t wi_elems = (uint64_t)per * (uint64_t)g_vw[dev];
    ocl_arg vargs[17];
    memcpy(vargs, args, sizeof vargs);
    vargs[11] = (ocl_arg)OCL_ARG(per); /* kv_'s `arg`: vectors per work-item */
    snprintf(kname, sizeof kname, "kv_%s", op->name);
    /* A kernel that fails to build or launch here is no error: kc_/k_ cover the range. */
    if (n >= wi_elems * OCL_EW_VLOCAL_CPU &&
        ocl_kernel_make(prog, kname, vargs, 17, &kv, fn) == HWP_OK) {
      vlocal = ocl_kernel_wg(kv, dev, g_cpu[dev] ? OCL_EW_VLOCAL_CPU : OCL_EW_LOCAL);
      vglobal = (size_t)(n / (wi_elems * vlocal) * vlocal);
      n_vec = (uint64_t)vglobal * wi_elems;
      if (n_vec == 0) {
        ocl_kernel_release(kv);
        kv = NULL;
      }
    }
  }
  n_main = n_vec;
  if (contiguous && n - n_vec >= local) {
    snprintf(kname, sizeof kname, "kc_%s", op->name);
    st = ocl_kernel_make(prog, kname, args, 17, &kc, fn);
    if (st == HWP_OK) {
      size_t lc = ocl_kernel_wg(kc, dev, OCL_EW_LOCAL);
      if (lc < local) local = lc;
      n_main = n_vec + (n - n_vec) / local * local;
    }
  }
  cl_command_queue q;
  if (st == HWP_OK) st = ocl_ctx_queue(ctx, &q, fn);
  if (st == HWP_OK && kv != NULL)
    st = ocl_enqueue_nd_at(ctx, q, kv, 1, NULL, &vglobal, &vlocal, fn);
  if (st == HWP_OK && n_main > n_vec) {
    size_t offset = (size_t)n_vec, global = (size_t)(n_main - n_vec);
    st = ocl_enqueue_nd_at(ctx, q, kc, 1, &offset, &global, &local, fn);
  }
  if (st == HWP_OK && n_main < n) {
    size_t offset = (size_t)n_main, global = (size_t)((n - n_main + local - 1) / local) * local;
    st = ocl_enqueue_nd_at(ctx, q, k, 1, &offset, &global, &local, fn);
  }
  ocl_kernel_release(k); /* back to the kernel cache */
  if (kc != NULL) ocl_kernel_release(kc);
  if (kv != NULL) ocl_kernel_release(kv);
  if (st != HWP_OK) return st;
  return ocl_launch_done(ctx, q, fn);
}

/* The work-items a device runs in lockstep, as OpenCL puts it for the kernel most work goes
 * through (float32 kc_add, built anyway on first use): queried once per device. */
int32_t ocl_ew_preferred_multiple(int32_t dev) {
  static int32_t known[OCL_MAX_DEVICES]; /* 0: not yet */
  int32_t v = __atomic_load_n(&known[dev], __ATOMIC_RELAXED);
  if (v != 0) return v;
  cl_program prog;
  cl_kernel k = NULL;
  size_t m = 0;
  if (ocl_program_get(dev, HWP_DTYPE_FLOAT32, ocl_ew_program_source[HWP_DTYPE_FLOAT32],
                      g_options[dev], &prog, "get_properties") == HWP_OK &&
      ocl_kernel_make(prog, "kc_add", NULL, 0, &k, "get_properties") == HWP_OK) {
    if (clGetKernelWorkGroupInfo(k, g_ocl.devices[dev].id,
                                 CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof m, &m,
                                 NULL) != CL_SUCCESS)
      m = 0;
    ocl_kernel_release(k);
  }
  v = m > 0 && m <= INT32_MAX ? (int32_t)m : 1;
  __atomic_store_n(&known[dev], v, __ATOMIC_RELAXED);
  return v;
}

/* ---- registration --------------------------------------------------------------------------- */


HWP_Status ocl_register_elementwise_kernels(const HWP_HostApi *host) {
  if (g_ocl.num_devices == 0) return HWP_OK; /* nothing could run them */
  int fp64_all = 1;
  for (int32_t d = 0; d < g_ocl.num_devices; ++d) {
    cl_device_id id = g_ocl.devices[d].id;
    g_fp64[d] = ocl_device_has_fp64(id);
    fp64_all &= g_fp64[d];
    cl_device_fp_config sp = 0;
    clGetDeviceInfo(id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof sp, &sp, NULL);
    /* The vector width of kv_ kernels: the device's preferred float vector width as 4, 8 or
     * 16 (GPUs often report 1: float4 loads still serve them). */
    cl_uint pw = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof pw, &pw, NULL) !=
        CL_SUCCESS)
      pw = 0;
    g_vw[d] = pw >= 16 ? 16 : pw >= 8 ? 8 : 4;
    cl_device_type type = 0;
    g_cpu[d] = clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL) == CL_SUCCESS &&
               (type & CL_DEVICE_TYPE_CPU) != 0;
    snprintf(g_options[d], sizeof g_options[d], "-DEW_VW=%d%s%s", g_vw[d],
             g_fp64[d] ? " -DHAS_FP64=1" : "",
             (sp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)
                 ? " -cl-fp32-correctly-rounded-divide-sqrt"
                 : "");
  }
  int count = 0;
  for (int i = 0; i < OCL_EW_NUM_OPS; ++i) {
    const ocl_ew_op_info *op = &ocl_ew_ops[i];
    HWP_Status st = ocl_register_op(host, op->name, op->dtype_mask, ew_kernel, (void *)op, &count);
    if (st != HWP_OK) return st;
  }
  ocl_log(HWP_LOG_INFO, "opencl: registered %d elementwise kernels (float64: %s)", count,
          fp64_all ? "yes" : "no");
  return HWP_OK;
}
