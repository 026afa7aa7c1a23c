/* hwport OpenCL plugin — uniform (Philox-4x32-10), bit-exact with phi_ops/philox.py and the CPU
 * plugin (device_plugins/cpu/kernels_random.c) for the same (seed, offset):
 *   w = Philox-4x32-10(counter = offset + i as 128 bits, key = seed), element i row-major
 *   u = (w0 >> 8) * 2^-24 (float32, float16, bfloat16) or ((w1 << 21) ^ (w0 >> 11)) * 2^-53
 *   value = low + (high - low) * u in double (never fused), rounded once to the dtype.
 * One work-item per element (random.cl, program slots OCL_RND_SLOT0 + dtype, built with
 * -DDT_<dtype>=1 -DHAS_FP64=1). Registered for the float dtypes only when every device computes
 * in double (the contract's arithmetic is double). */
#include <stdio.h>
#include <string.h>

#include "hwport/kernel_util.h"
#include "kernels.h"
#include "ocl_programs.h"

#define OCL_RND_SLOT0 90 /* slots 90 .. 99 */

static char g_rnd_options[HWP_DTYPE_COUNT][48];

static HWP_Status float_attr(const HWP_KernelContext *ctx, const char *name, double fallback,
                             double *out) {
  double v = fallback;
  HWP_Status st = ctx->get_attr(ctx, name, HWP_ATTR_FLOAT64, &v, NULL);
  if (st == HWP_ERROR_NOT_FOUND) v = fallback;
  else if (st != HWP_OK)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "uniform: attribute '%s' is not a float64", name);
  *out = v;
  return HWP_OK;
}

static HWP_Status int_attr(const HWP_KernelContext *ctx, const char *name, int required,
                           int64_t *out) {
  HWP_Status st = ctx->get_attr(ctx, name, HWP_ATTR_INT64, out, NULL);
  if (st == HWP_ERROR_NOT_FOUND && !required) return HWP_OK;
  if (st != HWP_OK)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "uniform: attribute '%s' is %s (expected an int64)",
                     name, st == HWP_ERROR_NOT_FOUND ? "missing" : "not an integer");
  return HWP_OK;
}

static HWP_Status ocl_kernel_uniform(const HWP_KernelContext *ctx) {
  const char *op = "uniform";
  HWP_Status st = ocl_check_device(ctx->device, op);
  if (st != HWP_OK) return st;
  if (ctx->num_inputs != 0 || ctx->num_outputs != 1 || ctx->outputs == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: expected no inputs and 1 output", op);
  if (ctx->get_attr == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the kernel context has no get_attr", op);
  const HWP_TensorView *o = &ctx->outputs[0];
  if (o->dtype < HWP_DTYPE_FLOAT16 || o->dtype > HWP_DTYPE_FLOAT64)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output dtype %d is not a float dtype", op,
                     (int)o->dtype);
  if ((st = ocl_check_context_sizes(ctx, op)) != HWP_OK) return st;
  if (!ocl_device_has_fp64(g_ocl.devices[ctx->device].id))
    return ocl_error(HWP_ERROR_NOT_SUPPORTED, "%s: device %d has no double precision", op,
                     (int)ctx->device);
  uint64_t n = 1;
  int64_t expect = 1;
  int contiguous = 1;
  for (int k = o->ndim - 1; k >= 0; --k) {
    if (o->shape[k] < 0)
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: bad output shape", op);
    if (o->shape[k] != 1 && o->strides != NULL && o->strides[k] != expect) contiguous = 0;
    expect *= o->shape[k];
    n *= (uint64_t)o->shape[k];
  }
  if (!contiguous && n > 0)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must be contiguous", op);
  double low = 0.0, high = 1.0;
  int64_t seed = 0, offset = 0;
  if ((st = float_attr(ctx, "low", 0.0, &low)) != HWP_OK ||
      (st = float_attr(ctx, "high", 1.0, &high)) != HWP_OK ||
      (st = int_attr(ctx, "seed", 1, &seed)) != HWP_OK ||
      (st = int_attr(ctx, "offset", 0, &offset)) != HWP_OK)
    return st;
  if (n == 0) return HWP_OK;
  if (o->buffer == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output is NULL", op);
  cl_program prog;
  cl_command_queue q;
  if ((st = ocl_program_get(ctx->device, OCL_RND_SLOT0 + (int)o->dtype, ocl_random_source,
                            g_rnd_options[o->dtype], &prog, op)) != HWP_OK ||
      (st = ocl_ctx_queue(ctx, &q, op)) != HWP_OK)
    return st;
  double range = high - low;
  cl_mem out = (cl_mem)o->buffer;
  cl_ulong off = o->byte_offset, cn = n, base_lo = (uint64_t)offset;
  cl_ulong base_hi = offset < 0 ? UINT64_MAX : 0, low_bits, range_bits;
  memcpy(&low_bits, &low, 8);
  memcpy(&range_bits, &range, 8);
  cl_uint k0 = (cl_uint)(uint64_t)seed, k1 = (cl_uint)((uint64_t)seed >> 32);
  cl_int al = o->byte_offset % hwp_dtype_size(o->dtype) == 0;
  ocl_arg a[] = {OCL_ARG(out),     OCL_ARG(off),      OCL_ARG(cn),
                  OCL_ARG(k0),      OCL_ARG(k1),       OCL_ARG(base_lo),
                  OCL_ARG(base_hi), OCL_ARG(low_bits), OCL_ARG(range_bits),
                  OCL_ARG(al)};
  st = ocl_run_1d(ctx, q, prog, "k_uniform", a, 10, n, op);
  return st != HWP_OK ? st : ocl_launch_done(ctx, q, op);
}

HWP_Status ocl_register_random_kernels(const HWP_HostApi *host) {
  if (g_ocl.num_devices == 0) return HWP_OK;
  for (int32_t d = 0; d < g_ocl.num_devices; ++d)
    if (!ocl_device_has_fp64(g_ocl.devices[d].id)) {
      ocl_log(HWP_LOG_INFO, "opencl: registered 0 random kernels (device %d has no double)",
              (int)d);
      return HWP_OK;
    }
  int count = 0;
  for (HWP_DType dt = HWP_DTYPE_FLOAT16; dt <= HWP_DTYPE_FLOAT64; ++dt) {
    snprintf(g_rnd_options[dt], sizeof g_rnd_options[dt], "-DDT_%s=1 -DHAS_FP64=1",
             ocl_program_dtype(dt));
    HWP_Status st = ocl_register_strided(host, "uniform", dt, ocl_kernel_uniform);
    if (st != HWP_OK) return st;
    ++count;
  }
  ocl_log(HWP_LOG_INFO, "opencl: registered %d random kernels (float64: yes)", count);
  return HWP_OK;
}
