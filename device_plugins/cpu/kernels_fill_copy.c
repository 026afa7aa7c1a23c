/* hwport CPU plugin — the fill and copy kernels. Both move raw element bits, so one inner loop
 * per element size (1, 2, 4, 8 bytes) serves every dtype. */
#include <string.h>

#include "convert.h"

#define CPU_DEFINE_FILL_COPY(N, T)                                                             \
  static void fill_##N(char *const *p, const int64_t *s, int64_t n, const void *aux) {         \
    typedef CPU_UA(T) UA; /* any alignment */                                                  \
    T v;                                                                                       \
    memcpy(&v, aux, sizeof v);                                                                 \
    if (s[0] == N) {                                                                           \
      UA *o = (UA *)p[0];                                                                      \
      for (int64_t i = 0; i < n; ++i) o[i] = v;                                                \
    } else {                                                                                   \
      char *po = p[0];                                                                         \
      for (int64_t i = 0; i < n; ++i, po += s[0]) *(UA *)po = v;                               \
    }                                                                                          \
  }                                                                                            \
  static void copy_##N(char *const *p, const int64_t *s, int64_t n, const void *aux) {         \
    typedef CPU_UA(T) UA;                                                                      \
    (void)aux;                                                                                 \
    if (s[0] == N && s[1] == N) {                                                              \
      memmove(p[0], p[1], (size_t)n * N);                                                      \
    } else {                                                                                   \
      char *po = p[0];                                                                         \
      const char *px = p[1];                                                                   \
      for (int64_t i = 0; i < n; ++i, po += s[0], px += s[1]) *(UA *)po = *(const UA *)px;     \
    }                                                                                          \
  }
CPU_DEFINE_FILL_COPY(1, uint8_t)
CPU_DEFINE_FILL_COPY(2, uint16_t)
CPU_DEFINE_FILL_COPY(4, uint32_t)
CPU_DEFINE_FILL_COPY(8, uint64_t)

static cpu_inner_fn by_size(size_t itemsize, int fill) {
  switch (itemsize) {
  case 1: return fill ? fill_1 : copy_1;
  case 2: return fill ? fill_2 : copy_2;
  case 4: return fill ? fill_4 : copy_4;
  default: return fill ? fill_8 : copy_8;
  }
}

static int is_float(HWP_DType d) {
  return d == HWP_DTYPE_FLOAT16 || d == HWP_DTYPE_BFLOAT16 || d == HWP_DTYPE_FLOAT32 ||
         d == HWP_DTYPE_FLOAT64;
}

/* Reads attribute "value" and stores it, converted to `dtype`, in `bytes`.
 * Integer and bool dtypes: INT64 first (exact for any int64), else FLOAT64 (truncated toward
 * zero, saturating). Float dtypes: FLOAT64 first, else INT64. Integers narrower than int64 wrap;
 * bool is value != 0; float16/bfloat16 round to nearest even. */
static HWP_Status fill_value(const HWP_KernelContext *ctx, HWP_DType dtype, uint8_t *bytes) {
  if (!HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) || ctx->get_attr == NULL)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "fill: the kernel context has no get_attr");
  int64_t iv = 0;
  double fv = 0.0;
  int have_int = 0, have_float = 0;
  HWP_Status st;
  if (is_float(dtype)) {
    have_float = (st = ctx->get_attr(ctx, "value", HWP_ATTR_FLOAT64, &fv, NULL)) == HWP_OK;
    if (!have_float)
      have_int = (st = ctx->get_attr(ctx, "value", HWP_ATTR_INT64, &iv, NULL)) == HWP_OK;
  } else {
    have_int = (st = ctx->get_attr(ctx, "value", HWP_ATTR_INT64, &iv, NULL)) == HWP_OK;
    if (!have_int)
      have_float = (st = ctx->get_attr(ctx, "value", HWP_ATTR_FLOAT64, &fv, NULL)) == HWP_OK;
  }
  if (!have_int && !have_float)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "fill: attribute 'value' is %s (expected an int64 or float64; status %d)",
                     st == HWP_ERROR_NOT_FOUND ? "missing" : "not a number", (int)st);
  switch (dtype) {
#define CPU_FILL_CASE(CODE, name, T)                                                           \
  case HWP_DTYPE_##CODE: {                                                                     \
    T t = have_int ? CPU_CV_KI_##name(iv) : CPU_CV_KD_##name(fv);                              \
    memcpy(bytes, &t, sizeof t);                                                               \
    return HWP_OK;                                                                             \
  }
    CPU_FOR_EACH_DTYPE(CPU_FILL_CASE)
#undef CPU_FILL_CASE
  default:
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "fill: unknown dtype %d", (int)dtype);
  }
}

HWP_Status cpu_kernel_fill(const HWP_KernelContext *ctx) {
  HWP_Status st = cpu_check_context(ctx, "fill", 0, 1);
  if (st != HWP_OK) return st;
  cpu_task task;
  uint64_t nelems;
  st = cpu_prepare_task(ctx, "fill", &task, &nelems);
  if (st != HWP_OK) return st;
  HWP_DType d = ctx->outputs[0].dtype;
  st = fill_value(ctx, d, task.u.ew.aux.bytes); /* copied now: the context dies on return */
  if (st != HWP_OK) return st;
  task.u.ew.fn = by_size(hwp_dtype_size(d), 1);
  return cpu_launch(ctx, "fill", &task, nelems);
}

HWP_Status cpu_kernel_copy(const HWP_KernelContext *ctx) {
  HWP_Status st = cpu_check_context(ctx, "copy", 1, 1);
  if (st != HWP_OK) return st;
  HWP_DType d = ctx->outputs[0].dtype;
  if (CPU_UNLIKELY(ctx->inputs[0].dtype != d))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "copy: input dtype %s differs from output dtype %s (use cast)",
                     cpu_dtype_name(ctx->inputs[0].dtype), cpu_dtype_name(d));
  cpu_task task;
  uint64_t nelems;
  st = cpu_prepare_task(ctx, "copy", &task, &nelems);
  if (st != HWP_OK) return st;
  task.u.ew.fn = by_size(hwp_dtype_size(d), 0);
  return cpu_launch(ctx, "copy", &task, nelems);
}
