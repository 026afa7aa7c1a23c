/* hwport OpenCL plugin — the fused optimizer update adam_update (ops.yaml: its kernel contract;
 * the CPU plugin's is device_plugins/cpu/kernels_optim.c): one launch instead of the
 * decomposition's eleven elementwise ones. float32, and float64 where every device has it (the
 * other dtypes decompose). Four contiguous inputs of one dtype and element count (the host
 * copies views: registered without strided support); each output is either disjoint from every
 * operand or, all three at once, its own input (param_out = param, moment1_out = moment1,
 * moment2_out = moment2, as the optimizers launch it). The attrs are rounded to the dtype on
 * the host, (1 - beta) computed in double first, as the decomposition does. The OpenCL C is
 * optim.cl, embedded at build time as ocl_optim_source; slots 100..109. */
#include <stdio.h>
#include <string.h>

#include "hwport/kernel_util.h"
#include "kernels.h"
#if defined(HWPORT_OCL_REQUIRE_GEN) || __has_include("ocl_optim_cl.h")
#include "ocl_optim_cl.h"
#else /* a standalone compile (the warning check): no embedded source */
static const char ocl_optim_source[] = "";
#endif

#define OCL_OPTIM_SLOT0 100

static char g_optim_options[HWP_DTYPE_COUNT][96];

static HWP_Status adam_attr(const HWP_KernelContext *ctx, const char *name, int required,
                            double *out) {
  HWP_Status st = ctx->get_attr(ctx, name, HWP_ATTR_FLOAT64, out, NULL);
  if (st == HWP_ERROR_NOT_FOUND && !required) return HWP_OK;
  if (st != HWP_OK)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "adam_update: attribute '%s' is %s (expected a float)", name,
                     st == HWP_ERROR_NOT_FOUND ? "missing" : "not a float64");
  return HWP_OK;
}

/* Row-major contiguous (strides in elements; size-1 dims may have any stride). */
static int contiguous(const HWP_TensorView *v) {
  int64_t expect = 1;
  for (int k = v->ndim - 1; k >= 0; --k) {
    if (v->shape[k] != 1 && v->strides != NULL && v->strides[k] != expect) return 0;
    expect *= v->shape[k];
  }
  return 1;
}

/* Whether two byte ranges of one buffer share a byte. */
static int ranges_overlap(const HWP_TensorView *a, const HWP_TensorView *b, uint64_t bytes) {
  return a->buffer == b->buffer && a->byte_offset < b->byte_offset + bytes &&
         b->byte_offset < a->byte_offset + bytes;
}

static HWP_Status ocl_kernel_adam_update(const HWP_KernelContext *ctx) {
  static const char op[] = "adam_update";
  static const char *const names[7] = {"param", "grad", "moment1", "moment2",
                                       "param_out", "moment1_out", "moment2_out"};
  HWP_Status st = ocl_check_device(ctx->device, op);
  if (st != HWP_OK) return st;
  if (ctx->num_inputs != 4 || ctx->num_outputs != 3 || ctx->inputs == NULL ||
      ctx->outputs == NULL || ctx->get_attr == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: expected 4 inputs, 3 outputs and attributes", op);
  if ((st = ocl_check_context_sizes(ctx, op)) != HWP_OK) return st;
  const HWP_TensorView *v[7];
  for (int k = 0; k < 7; ++k) v[k] = k < 4 ? &ctx->inputs[k] : &ctx->outputs[k - 4];
  const HWP_DType dt = v[0]->dtype;
  if (dt != HWP_DTYPE_FLOAT32 && dt != HWP_DTYPE_FLOAT64)
    return ocl_error(HWP_ERROR_NOT_SUPPORTED, "%s: dtype %s is not supported (float32, float64)",
                     op, ocl_program_dtype(dt));
  const uint64_t n = ocl_numel(v[0]), isz = hwp_dtype_size(dt);
  for (int k = 0; k < 7; ++k) {
    if (v[k]->dtype != dt || ocl_numel(v[k]) != n)
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: %s (%s, %llu elements) must match param (%s, %llu elements)", op,
                       names[k], ocl_program_dtype(v[k]->dtype),
                       (unsigned long long)ocl_numel(v[k]), ocl_program_dtype(dt),
                       (unsigned long long)n);
    if (!contiguous(v[k]))
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s must be contiguous", op, names[k]);
    if (v[k]->byte_offset % isz != 0)
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s is not aligned to its dtype", op,
                       names[k]);
  }
  static const int own_input[3] = {0, 2, 3};
  int aliased = 0;
  for (int o = 0; o < 3; ++o) {
    const HWP_TensorView *out = v[4 + o];
    const int own = out->buffer == v[own_input[o]]->buffer &&
                    out->byte_offset == v[own_input[o]]->byte_offset;
    aliased += own;
    for (int k = 0; k < 7; ++k) {
      if (k == 4 + o || (k == own_input[o] && own)) continue;
      if (ranges_overlap(out, v[k], n * isz))
        return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                         "%s: %s overlaps %s (an output is its own input or disjoint from "
                         "every operand)", op, names[4 + o], names[k]);
    }
  }
  if (aliased != 0 && aliased != 3)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: %d of the 3 outputs are their own inputs; in place means all three "
                     "(param_out = param, moment1_out = moment1, moment2_out = moment2)", op,
                     aliased);
  double beta1 = 0, beta2 = 0, eps = 0, lr = 0, decay = 1.0;
  if ((st = adam_attr(ctx, "beta1", 1, &beta1)) != HWP_OK ||
      (st = adam_attr(ctx, "beta2", 1, &beta2)) != HWP_OK ||
      (st = adam_attr(ctx, "epsilon", 1, &eps)) != HWP_OK ||
      (st = adam_attr(ctx, "lr", 1, &lr)) != HWP_OK ||
      (st = adam_attr(ctx, "decay", 0, &decay)) != HWP_OK)
    return st;
  if (n == 0) return HWP_OK;
  cl_program prog;
  cl_command_queue q;
  if ((st = ocl_program_get(ctx->device, OCL_OPTIM_SLOT0 + (int)dt, ocl_optim_source,
                            g_optim_options[dt], &prog, op)) != HWP_OK ||
      (st = ocl_ctx_queue(ctx, &q, op)) != HWP_OK)
    return st;
  cl_mem mem[7];
  cl_ulong off[7];
  for (int k = 0; k < 7; ++k) {
    mem[k] = (cl_mem)v[k]->buffer;
    off[k] = v[k]->byte_offset;
  }
  const double c[7] = {beta1, 1.0 - beta1, beta2, 1.0 - beta2, eps, lr, decay};
  cl_float cf[7];
  cl_double cd[7];
  for (int k = 0; k < 7; ++k) {
    cf[k] = (cl_float)c[k];
    cd[k] = c[k];
  }
  const int f64 = dt == HWP_DTYPE_FLOAT64;
  const size_t csz = f64 ? sizeof(cl_double) : sizeof(cl_float);
#define ADAM_C(k) {csz, f64 ? (const void *)&cd[k] : (const void *)&cf[k]}
  cl_ulong cn = n;
  cl_int decayed = decay != 1.0;
  ocl_arg a[] = {OCL_ARG(mem[4]), OCL_ARG(off[4]), OCL_ARG(mem[5]), OCL_ARG(off[5]),
                 OCL_ARG(mem[6]), OCL_ARG(off[6]), OCL_ARG(mem[0]), OCL_ARG(off[0]),
                 OCL_ARG(mem[1]), OCL_ARG(off[1]), OCL_ARG(mem[2]), OCL_ARG(off[2]),
                 OCL_ARG(mem[3]), OCL_ARG(off[3]), OCL_ARG(cn),     ADAM_C(0),
                 ADAM_C(1),       ADAM_C(2),       ADAM_C(3),       ADAM_C(4),
                 ADAM_C(5),       ADAM_C(6),       OCL_ARG(decayed)};
#undef ADAM_C
  st = ocl_run_1d(ctx, q, prog, "k_adam", a, (int)(sizeof a / sizeof a[0]), n, op);
  return st != HWP_OK ? st : ocl_launch_done(ctx, q, op);
}

HWP_Status ocl_register_optim_kernels(const HWP_HostApi *host) {
  if (g_ocl.num_devices == 0) return HWP_OK;
  /* the divide and sqrt of the elementwise kernels: correctly rounded where every device
   * offers it (kernels_elementwise.c asks for it the same way) */
  int rounded = 1;
  for (int32_t d = 0; d < g_ocl.num_devices; ++d) {
    cl_device_fp_config sp = 0;
    clGetDeviceInfo(g_ocl.devices[d].id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof sp, &sp, NULL);
    rounded &= (sp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  }
  int count = 0;
  for (HWP_DType dt = HWP_DTYPE_FLOAT32; dt <= HWP_DTYPE_FLOAT64; ++dt) {
    if (dt == HWP_DTYPE_FLOAT64 && !ocl_all_devices_fp64()) continue;
    snprintf(g_optim_options[dt], sizeof g_optim_options[dt], "-DDT_%s=1%s",
             ocl_program_dtype(dt), rounded ? " -cl-fp32-correctly-rounded-divide-sqrt" : "");
    HWP_Status st = hwps_register_kernel(host, "adam_update", dt, 0, ocl_kernel_adam_update,
                                         NULL);
    if (st != HWP_OK) return st;
    ++count;
  }
  ocl_log(HWP_LOG_INFO, "opencl: registered %d optimizer kernels", count);
  return HWP_OK;
}
