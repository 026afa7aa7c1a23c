/* hwport CPU plugin — uniform from Philox-4x32-10.
 *
 * Element i of the output (flat, row-major) is a function of (seed, offset + i) only, so the
 * numbers are the same on every plugin, for any split of the work, and a launch at offset
 * o + k continues the stream of a launch at offset o from its element k (phi_ops/ops.yaml):
 *   w = Philox-4x32-10(counter = offset + i, key = seed)
 *   u = (w0 >> 8) * 2^-24                      float32, float16, bfloat16
 *   u = ((w1 << 21) ^ (w0 >> 11)) * 2^-53      float64
 *   value = low + (high - low) * u             in double (never fused), rounded once. */
#include "convert.h"
#include "index_nd.h"
#include "philox.h"

typedef struct uniform_payload {
  char *base;
  int64_t n;
  HWP_DType dtype;
  double low, range;
  int64_t seed, offset;
} uniform_payload;

static void uniform_chunk(void *c, int64_t begin, int64_t end) {
  const uniform_payload *p = c;
  uint32_t key[2], ctr[4], w[4];
  cpu_philox_key(p->seed, key);
  switch (p->dtype) {
#define CPU_UNIFORM_CASE(CODE, dname, T, U)                                                    \
  case HWP_DTYPE_##CODE: {                                                                     \
    CPU_UA(T) *o = (CPU_UA(T) *)p->base;                                                       \
    for (int64_t i = begin; i < end; ++i) {                                                    \
      cpu_philox_counter(p->offset, i, ctr);                                                   \
      cpu_philox4x32_10(ctr, key, w);                                                          \
      o[i] = CPU_CV_KD_##dname(cpu_add_mul(p->low, p->range, U(w)));                           \
    }                                                                                          \
    break;                                                                                     \
  }
    CPU_UNIFORM_CASE(FLOAT16, float16, uint16_t, cpu_philox_u24)
    CPU_UNIFORM_CASE(BFLOAT16, bfloat16, uint16_t, cpu_philox_u24)
    CPU_UNIFORM_CASE(FLOAT32, float32, float, cpu_philox_u24)
    CPU_UNIFORM_CASE(FLOAT64, float64, double, cpu_philox_u53)
#undef CPU_UNIFORM_CASE
  default: break;
  }
}

static HWP_Status uniform_run(void *c) {
  uniform_payload *p = c;
  cpu_parallel_for(p->n, CPU_ND_GRAIN / 4, uniform_chunk, p);
  return HWP_OK;
}

static HWP_Status float_attr(const HWP_KernelContext *ctx, const char *op, const char *name,
                             double fallback, double *out) {
  double v = fallback;
  HWP_Status st = cpu_get_attr(ctx, name, HWP_ATTR_FLOAT64, &v, NULL);
  if (st == HWP_ERROR_NOT_FOUND) v = fallback;
  else if (st != HWP_OK)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute '%s' is not a float64", op,
                     name);
  *out = v;
  return HWP_OK;
}

static HWP_Status cpu_kernel_uniform(const HWP_KernelContext *ctx) {
  const char *op = "uniform";
  HWP_Status st = cpu_check_context(ctx, op, 0, 1);
  if (st != HWP_OK) return st;
  cpu_view out;
  memset(&out, 0, sizeof out);
  if ((st = cpu_view_load(op, "output 0", &ctx->outputs[0], &out)) != HWP_OK) return st;
  if (!cpu_is_float_dtype(out.dtype))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output dtype %s is not a float dtype", op,
                     cpu_dtype_name(out.dtype));
  if (!cpu_xview_contiguous(&out))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must be contiguous", op);
  double low = 0.0, high = 1.0;
  int64_t seed = 0, offset = 0;
  if ((st = float_attr(ctx, op, "low", 0.0, &low)) != HWP_OK) return st;
  if ((st = float_attr(ctx, op, "high", 1.0, &high)) != HWP_OK) return st;
  if ((st = cpu_attr_int(ctx, op, "seed", 1, 0, &seed)) != HWP_OK) return st;
  if ((st = cpu_attr_int(ctx, op, "offset", 0, 0, &offset)) != HWP_OK) return st;
  uniform_payload *p = malloc(sizeof *p);
  if (p == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", op);
  p->base = out.base;
  p->n = out.numel;
  p->dtype = out.dtype;
  p->low = low;
  p->range = high - low;
  p->seed = seed;
  p->offset = offset;
  return cpu_submit_payload(ctx, op, uniform_run, p, (uint64_t)p->n);
}

void cpu_register_random_kernels(const HWP_HostApi *host) {
  static const HWP_DType floats[] = {HWP_DTYPE_FLOAT16, HWP_DTYPE_BFLOAT16, HWP_DTYPE_FLOAT32,
                                     HWP_DTYPE_FLOAT64};
  for (size_t i = 0; i < sizeof floats / sizeof floats[0]; ++i)
    cpu_register_one(host, "uniform", floats[i], cpu_kernel_uniform, HWP_KERNEL_ACCEPTS_STRIDED);
}
