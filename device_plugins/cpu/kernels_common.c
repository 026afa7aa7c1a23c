/* hwport CPU plugin — what every elementwise kernel shares: context and view validation, the
 * N-d strided iterator, submission, and kernel registration. */
#include <string.h>

#include "elementwise_iter.h"
#include "kernels.h"

const char *cpu_dtype_name(HWP_DType dtype) {
  switch (dtype) {
#define CPU_DTYPE_NAME_CASE(CODE, name, T)                                                     \
  case HWP_DTYPE_##CODE: return #name;
    CPU_FOR_EACH_DTYPE(CPU_DTYPE_NAME_CASE)
#undef CPU_DTYPE_NAME_CASE
  default: return "unknown";
  }
}

HWP_Status cpu_check_context(const HWP_KernelContext *ctx, const char *op, int32_t num_inputs,
                             int32_t num_outputs) {
  if (CPU_UNLIKELY(ctx == NULL))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: kernel context is NULL", op);
  if (CPU_UNLIKELY(!HWP_HAS_FIELD(ctx, HWP_KernelContext, outputs)))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: kernel context struct_size %zu is too small", op, ctx->struct_size);
  HWP_Status st = cpu_check_device(ctx->device, op);
  if (st != HWP_OK) return st;
  if (CPU_UNLIKELY(ctx->num_inputs != num_inputs || ctx->num_outputs != num_outputs))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: expects %d input(s) and %d output(s), got %d and %d", op,
                     (int)num_inputs, (int)num_outputs, (int)ctx->num_inputs,
                     (int)ctx->num_outputs);
  if (CPU_UNLIKELY((num_inputs > 0 && ctx->inputs == NULL) || ctx->outputs == NULL))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", op,
                     ctx->outputs == NULL ? "outputs" : "inputs");
  return HWP_OK;
}

static const char *operand_name(int i) {
  static const char *const names[CPU_MAX_OPERANDS] = {"output 0", "input 0", "input 1",
                                                       "input 2"};
  return names[i];
}

HWP_Status cpu_elementwise_prepare(const char *op, const HWP_TensorView *const *views, int nops,
                                   cpu_elementwise *ew, uint64_t *nelems_out) {
  size_t itemsize[CPU_MAX_OPERANDS] = {0, 0, 0, 0};
  for (int i = 0; i < nops; ++i) {
    const HWP_TensorView *v = views[i];
    if (CPU_UNLIKELY(!HWP_HAS_FIELD(v, HWP_TensorView, strides)))
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s view is %s", op, operand_name(i),
                       v == NULL ? "NULL" : "too small (struct_size)");
    itemsize[i] = hwp_dtype_size(v->dtype);
    if (CPU_UNLIKELY(itemsize[i] == 0))
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has unknown dtype %d", op,
                       operand_name(i), (int)v->dtype);
    if (CPU_UNLIKELY(v->ndim < 0 || v->ndim > HWP_MAX_NDIM))
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has ndim %d (allowed 0..%d)", op,
                       operand_name(i), (int)v->ndim, HWP_MAX_NDIM);
    if (CPU_UNLIKELY(v->ndim > 0 && v->shape == NULL))
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has ndim %d but shape is NULL", op,
                       operand_name(i), (int)v->ndim);
    if (CPU_UNLIKELY(v->ndim != views[0]->ndim))
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: %s has ndim %d but the output has %d (inputs arrive broadcast to "
                       "the output's rank)",
                       op, operand_name(i), (int)v->ndim, (int)views[0]->ndim);
    int64_t numel = 0; /* bounds every offset and product below */
    const char *bad = hwp_view_size_error(v, &numel);
    if (CPU_UNLIKELY(bad != NULL))
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has %s", op, operand_name(i), bad);
  }

  const int ndim = views[0]->ndim;
  const int64_t *out_shape = views[0]->shape;
  uint64_t nelems = 1;
  for (int k = 0; k < ndim; ++k) {
    int64_t n = out_shape[k];
    if (CPU_UNLIKELY(n < 0))
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output 0 has shape[%d] = %lld", op, k,
                       (long long)n);
    for (int i = 1; i < nops; ++i) {
      int64_t m = views[i]->shape[k];
      if (CPU_UNLIKELY(m != n && m != 1))
        return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                         "%s: %s has shape[%d] = %lld, expected %lld (or 1 to broadcast)", op,
                         operand_name(i), k, (long long)m, (long long)n);
    }
    nelems *= (uint64_t)n; /* checked above */
  }
  *nelems_out = nelems;
  if (nelems == 0) return HWP_OK;

  for (int i = 0; i < nops; ++i) {
    if (CPU_UNLIKELY(views[i]->buffer == NULL))
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s buffer is NULL", op,
                       operand_name(i));
    ew->base[i] = (char *)views[i]->buffer + views[i]->byte_offset;
  }
  ew->nops = nops;
  ew->out_itemsize = (int64_t)itemsize[0];
  ew->plain_stores = 0;

  /* Element strides (NULL strides = contiguous), size-1 dims dropped, broadcast dims stride 0,
   * then adjacent dims merged where every operand is contiguous across them. */
  int64_t contiguous[CPU_MAX_OPERANDS] = {1, 1, 1, 1};
  int64_t stride_of[CPU_MAX_OPERANDS][HWP_MAX_NDIM];
  for (int k = ndim - 1; k >= 0; --k) {
    for (int i = 0; i < nops; ++i) {
      const HWP_TensorView *v = views[i];
      int64_t n = v->shape[k];
      stride_of[i][k] = n == 1 ? 0 : v->strides != NULL ? v->strides[k] : contiguous[i];
      contiguous[i] *= n;
    }
  }
  int nd = 0;
  for (int k = 0; k < ndim; ++k) {
    int64_t n = out_shape[k];
    if (n == 1) continue;
    int merge = nd > 0;
    for (int i = 0; i < nops && merge; ++i)
      merge = (uint64_t)ew->strides[i][nd - 1] == (uint64_t)stride_of[i][k] * (uint64_t)n;
    if (merge) {
      ew->shape[nd - 1] *= n;
      for (int i = 0; i < nops; ++i) ew->strides[i][nd - 1] = stride_of[i][k];
    } else {
      ew->shape[nd] = n;
      for (int i = 0; i < nops; ++i) ew->strides[i][nd] = stride_of[i][k];
      ++nd;
    }
  }
  ew->ndim = nd;
  for (int i = 0; i < nops; ++i)
    for (int k = 0; k < nd; ++k) ew->strides[i][k] *= (int64_t)itemsize[i];
  return HWP_OK;
}

void cpu_elementwise_run(const cpu_elementwise *ew) {
  const int nops = ew->nops;
  char *ptr[CPU_MAX_OPERANDS] = {ew->base[0], ew->base[1], ew->base[2], ew->base[3]};
  int64_t inner[CPU_MAX_OPERANDS] = {0, 0, 0, 0};
  if (ew->ndim == 0) {
    ew->fn(ptr, inner, 1, &ew->aux);
    return;
  }
  const int last = ew->ndim - 1;
  const int64_t n = ew->shape[last];
  if (last > 0 || n >= CPU_EW_PARALLEL_MIN) { /* big launches run on the thread pool */
    int64_t total = n;
    for (int k = 0; k < last; ++k) total *= ew->shape[k];
    if (total >= CPU_EW_PARALLEL_MIN) {
      const int64_t out_size = ew->out_itemsize;
      const int stream = !ew->plain_stores && g_cpu.stream_min_bytes > 0 &&
                         ew->strides[0][last] == out_size &&
                         (uint64_t)total * (uint64_t)out_size >= g_cpu.stream_min_bytes;
      cpu_ew_iter it = {ew->fn, &ew->aux, nops, ew->ndim, ptr, ew->shape,
                        {ew->strides[0], ew->strides[1], ew->strides[2], ew->strides[3]},
                        total, stream ? out_size : 0};
      cpu_ew_iter_run(&it);
      return;
    }
  }
  for (int i = 0; i < nops; ++i) inner[i] = ew->strides[i][last];
  if (last == 0) {
    ew->fn(ptr, inner, n, &ew->aux);
    return;
  }
  int64_t index[HWP_MAX_NDIM] = {0};
  for (;;) {
    ew->fn(ptr, inner, n, &ew->aux);
    int k = last - 1;
    for (; k >= 0; --k) { /* odometer over the outer dims */
      if (++index[k] < ew->shape[k]) {
        for (int i = 0; i < nops; ++i) ptr[i] += ew->strides[i][k];
        break;
      }
      index[k] = 0;
      for (int i = 0; i < nops; ++i) ptr[i] -= ew->strides[i][k] * (ew->shape[k] - 1);
    }
    if (k < 0) return;
  }
}

HWP_Status cpu_prepare_task(const HWP_KernelContext *ctx, const char *op, cpu_task *task,
                            uint64_t *nelems) {
  const HWP_TensorView *views[CPU_MAX_OPERANDS];
  int nops = 1 + ctx->num_inputs;
  views[0] = &ctx->outputs[0];
  for (int i = 1; i < nops; ++i) views[i] = &ctx->inputs[i - 1];
  task->kind = CPU_TASK_ELEMENTWISE;
  return cpu_elementwise_prepare(op, views, nops, &task->u.ew, nelems);
}

HWP_Status cpu_launch(const HWP_KernelContext *ctx, const char *op, cpu_task *task,
                      uint64_t nelems) {
  if (nelems == 0) return HWP_OK;
  return cpu_submit_launch(ctx, task, nelems, op);
}

/* ---- registration ----------------------------------------------------------------------- */

static const struct {
  const char *op;
  HWP_KernelFn fn;
} g_ops[] = {
    {"fill", cpu_kernel_fill},   {"copy", cpu_kernel_copy},         {"cast", cpu_kernel_cast},
    {"add", cpu_kernel_add},     {"multiply", cpu_kernel_multiply},
};

void cpu_register_one(const HWP_HostApi *host, const char *op, HWP_DType dtype, HWP_KernelFn fn,
                      uint32_t flags) {
  HWP_Status st = hwps_register_kernel(host, op, dtype, flags, fn, NULL);
  if (st != HWP_OK)
    cpu_log(HWP_LOG_WARNING, "register_kernel(%s, %s) failed with status %d", op,
            cpu_dtype_name(dtype), (int)st);
}

void cpu_register_kernels(const HWP_HostApi *host) {
  if (!HWP_HAS_FIELD(host, HWP_HostApi, register_kernel) || host->register_kernel == NULL) {
    cpu_log(HWP_LOG_WARNING, "the host offers no register_kernel: the cpu plugin has no kernels");
    return;
  }
  for (size_t o = 0; o < sizeof g_ops / sizeof g_ops[0]; ++o)
    for (HWP_DType d = 0; d < HWP_DTYPE_COUNT; ++d)
      cpu_register_one(host, g_ops[o].op, d, g_ops[o].fn, HWP_KERNEL_ACCEPTS_STRIDED);
  cpu_register_elementwise_kernels(host);
  cpu_register_reduction_kernels(host);
  cpu_register_linalg_kernels(host);
  cpu_register_index_kernels(host);
  cpu_register_random_kernels(host);
  cpu_register_optim_kernels(host);
  cpu_ew_select_simd();
}

