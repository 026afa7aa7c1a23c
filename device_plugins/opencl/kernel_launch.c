/* hwport OpenCL plugin — helpers shared by the kernel families other than elementwise: view
 * checks, dim collapsing, build options, kernel creation, arguments, work-group sizes,
 * stream-tracked launches, scratch buffers, blocking reads and registration. */
#include <stdio.h>
#include <string.h>

#include "hwport/kernel_util.h"
#include "kernels.h"

void ocl_dims_add(ocl_dims *d, int64_t size, int64_t st_bytes) {
  if (size == 1) return;
  if (d->n > 0 && d->st[d->n - 1] == st_bytes * size) {
    d->shape[d->n - 1] *= size;
    d->st[d->n - 1] = st_bytes;
    return;
  }
  d->shape[d->n] = size;
  d->st[d->n] = st_bytes;
  ++d->n;
}

void ocl_dims_long16(const ocl_dims *d, cl_long16 *shape, cl_long16 *st) {
  memset(shape, 0, sizeof *shape);
  memset(st, 0, sizeof *st);
  for (int k = 0; k < d->n; ++k) {
    shape->s[k] = d->shape[k];
    st->s[k] = d->st[k];
  }
}

size_t ocl_pow2_ceil(uint64_t v) {
  size_t p = 1;
  while (p < v && p < ((size_t)1 << 30)) p *= 2;
  return p;
}
size_t ocl_pow2_floor(size_t v) {
  size_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

/* Per-device facts queried once (0: not yet, 1: no, 2: yes / the value + 1). */
static int g_fp64[OCL_MAX_DEVICES];
static uint64_t g_local_mem[OCL_MAX_DEVICES];

int ocl_dev_fp64(int32_t device) {
  if (device < 0 || device >= g_ocl.num_devices) return 0;
  int v = __atomic_load_n(&g_fp64[device], __ATOMIC_RELAXED);
  if (v == 0) {
    v = ocl_device_has_fp64(g_ocl.devices[device].id) ? 2 : 1;
    __atomic_store_n(&g_fp64[device], v, __ATOMIC_RELAXED);
  }
  return v == 2;
}

int ocl_all_devices_fp64(void) {
  int all = g_ocl.num_devices > 0;
  for (int32_t d = 0; d < g_ocl.num_devices; ++d) all &= ocl_dev_fp64(d);
  return all;
}

uint64_t ocl_dev_local_mem(int32_t device) {
  if (device < 0 || device >= g_ocl.num_devices) return 32768;
  uint64_t v = __atomic_load_n(&g_local_mem[device], __ATOMIC_RELAXED);
  if (v == 0) {
    cl_ulong m = 0;
    if (clGetDeviceInfo(g_ocl.devices[device].id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof m, &m,
                        NULL) != CL_SUCCESS ||
        m == 0)
      m = 32768;
    v = (uint64_t)m + 1;
    __atomic_store_n(&g_local_mem[device], v, __ATOMIC_RELAXED);
  }
  return v - 1;
}

void ocl_dtype_options(int32_t device, HWP_DType dt, const char *extra, char *buf, size_t cap) {
  snprintf(buf, cap, "-DDT=%d%s%s%s", (int)dt, ocl_dev_fp64(device) ? " -DHAS_FP64=1" : "",
           extra != NULL && extra[0] ? " " : "", extra != NULL ? extra : "");
}

HWP_Status ocl_kernel_get(int32_t device, int slot, const char *source, const char *options,
                          const char *name, cl_kernel *out, const char *fn) {
  cl_program prog;
  HWP_Status st = ocl_program_get(device, slot, source, options, &prog, fn);
  if (st != HWP_OK) return st;
  return ocl_kernel_borrow(prog, name, out, fn);
}

HWP_Status ocl_kernel_args(cl_kernel k, int n, const ocl_arg *args, const char *fn) {
  for (int i = 0; i < n; ++i) {
    cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
    if (err != CL_SUCCESS)
      return ocl_error(HWP_ERROR_INTERNAL, "%s: clSetKernelArg(%d) failed: %s", fn, i,
                       ocl_cl_error_name(err));
  }
  return HWP_OK;
}

size_t ocl_kernel_wg(cl_kernel k, int32_t device, size_t cap) {
  size_t dev_max = g_ocl.devices[device].max_work_group_size > 0
                       ? (size_t)g_ocl.devices[device].max_work_group_size
                       : 64;
  if (cap > dev_max) cap = dev_max;
  size_t kwg = 0;
  if (clGetKernelWorkGroupInfo(k, g_ocl.devices[device].id, CL_KERNEL_WORK_GROUP_SIZE,
                               sizeof kwg, &kwg, NULL) == CL_SUCCESS &&
      kwg > 0 && kwg < cap)
    cap = kwg;
  return ocl_pow2_floor(cap > 0 ? cap : 1);
}

HWP_Status ocl_ctx_queue(const HWP_KernelContext *ctx, cl_command_queue *q, const char *fn) {
  return ctx->stream == NULL ? ocl_sync_queue(ctx->device, q, fn)
                             : ocl_stream_queue_for_launch(ctx->device, ctx->stream, q, fn);
}

HWP_Status ocl_enqueue_nd(const HWP_KernelContext *ctx, cl_command_queue q, cl_kernel k,
                          cl_uint dims, const size_t *global, const size_t *local,
                          const char *fn) {
  return ocl_enqueue_nd_at(ctx, q, k, dims, NULL, global, local, fn);
}

HWP_Status ocl_enqueue_nd_at(const HWP_KernelContext *ctx, cl_command_queue q, cl_kernel k,
                             cl_uint dims, const size_t *offset, const size_t *global,
                             const size_t *local, const char *fn) {
  /* No event: the stream counts the launch (ocl_stream_track), query_stream marks it; a
   * profiled launch takes one for its device time (profiler.c). */
  const uint64_t corr = HWP_HAS_FIELD(ctx, HWP_KernelContext, correlation_id)
                            ? ctx->correlation_id : 0;
  cl_event timed = NULL;
  const int profiled = ocl_profiling(ctx->device, corr);
  ocl_stream *s = (ocl_stream *)ctx->stream;
  /* A launch goes behind the stream's gate (stream_gate.c); a profiled one is not held (the
   * profiler waits on its event). */
  int full = 0;
  if (profiled)
    ocl_gate_open(s);
  else {
    uint64_t items = 1;
    for (cl_uint i = 0; i < dims; ++i) items *= global[i];
    full = ocl_gate_before_launch(s, q, items);
  }
  cl_int err = clEnqueueNDRangeKernel(q, k, dims, offset, global, local, 0, NULL,
                                      profiled ? &timed : NULL);
  if (full) ocl_gate_open(s);
  if (err != CL_SUCCESS) return ocl_cl_error(err, fn, "clEnqueueNDRangeKernel");
  if (timed != NULL) ocl_profiler_track(ctx->device, corr, fn, timed);
  ocl_stream_track(ctx->stream, NULL);
  return HWP_OK;
}

HWP_Status ocl_kernel_make(cl_program prog, const char *name, const ocl_arg *args, int n,
                           cl_kernel *out, const char *fn) {
  cl_kernel k = NULL;
  HWP_Status st = ocl_kernel_borrow(prog, name, &k, fn);
  if (st != HWP_OK) return st;
  st = ocl_kernel_args(k, n, args, fn);
  if (st != HWP_OK) {
    ocl_kernel_release(k);
    return st;
  }
  *out = k;
  return HWP_OK;
}

HWP_Status ocl_enqueue_1d(const HWP_KernelContext *ctx, cl_command_queue q, cl_kernel k,
                          uint64_t items, size_t local, const char *fn) {
  HWP_Status st = HWP_OK;
  if (items > 0) {
    if (local == 0) local = ocl_kernel_wg(k, ctx->device, 128);
    size_t global = (size_t)((items + local - 1) / local) * local;
    st = ocl_enqueue_nd(ctx, q, k, 1, &global, &local, fn);
  }
  ocl_kernel_release(k); /* the enqueued command captured its arguments */
  return st;
}

HWP_Status ocl_run_1d(const HWP_KernelContext *ctx, cl_command_queue q, cl_program prog,
                      const char *name, const ocl_arg *args, int n, uint64_t items,
                      const char *fn) {
  if (items == 0) return HWP_OK;
  cl_kernel k = NULL;
  HWP_Status st = ocl_kernel_make(prog, name, args, n, &k, fn);
  if (st != HWP_OK) return st;
  return ocl_enqueue_1d(ctx, q, k, items, 0, fn);
}

void ocl_split_rows(const HWP_KernelContext *ctx, uint64_t nout, uint64_t len, size_t local,
                    size_t part_bytes, uint64_t *chunks, uint64_t *chunk, HWP_Buffer *ws) {
  const ocl_device *d = &g_ocl.devices[ctx->device];
  uint64_t cus = d->compute_units > 0 ? (uint64_t)d->compute_units : 1;
  uint64_t target = cus * 8 < 64 ? 64 : cus * 8; /* groups that keep the device busy */
  if (nout >= target || len <= (uint64_t)local * 16 || ctx->allocate_workspace == NULL) return;
  uint64_t want = (target + nout - 1) / nout, most = len / ((uint64_t)local * 8);
  if (want > most) want = most;
  if (want > 4096) want = 4096;
  if (want <= 1) return;
  uint64_t c = (len + want - 1) / want, n = (len + c - 1) / c;
  HWP_Buffer buf = NULL;
  if (ctx->allocate_workspace(ctx, nout * n * part_bytes, &buf) != HWP_OK || buf == NULL)
    return; /* no workspace: one chunk per row still works */
  *chunk = c;
  *chunks = n;
  *ws = buf;
}

uint64_t ocl_numel(const HWP_TensorView *v) {
  uint64_t n = 1;
  for (int k = 0; k < v->ndim; ++k) n *= (uint64_t)v->shape[k];
  return n;
}

int ocl_view_aligned(const HWP_TensorView *v) {
  uint64_t isz = hwp_dtype_size(v->dtype); /* strides count elements: only the offset can skew */
  return isz > 0 && v->byte_offset % isz == 0;
}

HWP_Status ocl_check_view_sizes(const HWP_TensorView *v, const char *what, int i, const char *fn) {
  char name[64];
  if (i >= 0)
    snprintf(name, sizeof name, "%s %d", what, i);
  else
    snprintf(name, sizeof name, "%s", what);
  if (v->dtype < 0 || v->dtype >= HWP_DTYPE_COUNT)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has an unknown dtype %d", fn, name,
                     (int)v->dtype);
  if (v->ndim < 0 || v->ndim > HWP_MAX_NDIM)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has rank %d (expected 0..%d)", fn,
                     name, (int)v->ndim, HWP_MAX_NDIM);
  if (v->ndim > 0 && v->shape == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has rank %d but no shape", fn, name,
                     (int)v->ndim);
  int64_t numel = 0;
  const char *bad = hwp_view_size_error(v, &numel);
  if (bad != NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has %s", fn, name, bad);
  return HWP_OK;
}

HWP_Status ocl_check_context_sizes(const HWP_KernelContext *ctx, const char *fn) {
  HWP_Status st = HWP_OK;
  for (int i = 0; i < ctx->num_inputs && st == HWP_OK; ++i)
    st = ocl_check_view_sizes(&ctx->inputs[i], "input", i, fn);
  for (int i = 0; i < ctx->num_outputs && st == HWP_OK; ++i)
    st = ocl_check_view_sizes(&ctx->outputs[i], "output", i, fn);
  return st;
}

static HWP_Status check_view(const HWP_TensorView *v, const char *what, int i, const char *fn) {
  HWP_Status st = ocl_check_view_sizes(v, what, i, fn);
  if (st != HWP_OK) return st;
  if (v->buffer == NULL && ocl_numel(v) > 0)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s %d has a NULL buffer", fn, what, i);
  return HWP_OK;
}

HWP_Status ocl_check_views(const HWP_KernelContext *ctx, int min_inputs, int max_inputs,
                           const char *fn) {
  if (ctx == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: NULL kernel context", fn);
  HWP_Status st = ocl_check_device(ctx->device, fn);
  if (st != HWP_OK) return st;
  if (ctx->num_inputs < min_inputs || ctx->num_inputs > max_inputs || ctx->num_outputs != 1 ||
      (ctx->num_inputs > 0 && ctx->inputs == NULL) || ctx->outputs == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: expected %d..%d inputs and 1 output, got %d and %d", fn, min_inputs,
                     max_inputs, (int)ctx->num_inputs, (int)ctx->num_outputs);
  if (ctx->get_attr == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the kernel context has no get_attr", fn);
  for (int i = 0; i < ctx->num_inputs; ++i)
    if ((st = check_view(&ctx->inputs[i], "input", i, fn)) != HWP_OK) return st;
  if ((st = check_view(&ctx->outputs[0], "output", 0, fn)) != HWP_OK) return st;
  int fp64 = ocl_dev_fp64(ctx->device);
  for (int i = 0; i <= ctx->num_inputs; ++i) {
    const HWP_TensorView *v = i < ctx->num_inputs ? &ctx->inputs[i] : &ctx->outputs[0];
    if (v->dtype == HWP_DTYPE_FLOAT64 && !fp64)
      return ocl_error(HWP_ERROR_NOT_SUPPORTED, "%s: device %d has no cl_khr_fp64 (float64)",
                       fn, (int)ctx->device);
  }
  return HWP_OK;
}

HWP_Status ocl_register_op(const HWP_HostApi *host, const char *op, uint32_t mask,
                           HWP_KernelFn fn, void *user_data, int *count) {
  int fp64 = ocl_all_devices_fp64();
  for (HWP_DType dt = 0; dt < HWP_DTYPE_COUNT; ++dt) {
    if (!((mask >> dt) & 1u) || (dt == HWP_DTYPE_FLOAT64 && !fp64)) continue;
    HWP_Status st = hwps_register_kernel(host, op, dt, HWP_KERNEL_ACCEPTS_STRIDED, fn, user_data);
    if (st != HWP_OK) return st;
    ++*count;
  }
  return HWP_OK;
}

HWP_Status ocl_register_strided(const HWP_HostApi *host, const char *op, HWP_DType dtype,
                                HWP_KernelFn fn) {
  return hwps_register_kernel(host, op, dtype, HWP_KERNEL_ACCEPTS_STRIDED, fn, NULL);
}

/* Reads attr axis as a dim of an ndim-d input (0-d: 0 or -1). */
HWP_Status ocl_read_axis(const HWP_KernelContext *ctx, int ndim, int *axis, const char *fn) {
  int64_t a = 0;
  HWP_Status st = ctx->get_attr(ctx, "axis", HWP_ATTR_INT64, &a, NULL);
  if (st != HWP_OK)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute 'axis' is %s (expected an int)",
                     fn, st == HWP_ERROR_NOT_FOUND ? "missing" : "not an integer");
  int n = ndim > 0 ? ndim : 1;
  if (a < 0) a += n;
  if (a < 0 || a >= n)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: attribute 'axis' = %lld is out of range for a %d-d input", fn,
                     (long long)a, ndim);
  *axis = (int)a;
  return HWP_OK;
}


void ocl_split_axis(const HWP_TensorView *x, int axis, ocl_axis_layout *L) {
  memset(L, 0, sizeof *L);
  int64_t isz = (int64_t)hwp_dtype_size(x->dtype);
  L->len = x->ndim > 0 ? (uint64_t)x->shape[axis] : 1;
  L->ast = x->ndim > 0 ? x->strides[axis] * isz : 0;
  L->outer = L->inner = 1;
  for (int k = 0; k < x->ndim; ++k) {
    if (k == axis) continue;
    ocl_dims_add(k < axis ? &L->odims : &L->idims, x->shape[k], x->strides[k] * isz);
    ocl_dims_add(&L->kept, x->shape[k], x->strides[k] * isz);
    if (k < axis)
      L->outer *= (uint64_t)x->shape[k];
    else
      L->inner *= (uint64_t)x->shape[k];
  }
}

HWP_Status ocl_temp_buffer(int32_t device, size_t bytes, const void *init, cl_mem *out,
                           const char *fn) {
  cl_context c;
  HWP_Status st = ocl_context(device, &c, fn);
  if (st != HWP_OK) return st;
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE | (init != NULL ? CL_MEM_COPY_HOST_PTR : 0),
                            bytes, (void *)init, &err);
  if (m == NULL || err != CL_SUCCESS) return ocl_cl_error(err, fn, "clCreateBuffer");
  *out = m;
  return HWP_OK;
}

HWP_Status ocl_read_now(const HWP_KernelContext *ctx, cl_command_queue q, cl_mem buf,
                        uint64_t offset, size_t bytes, void *dst, const char *fn) {
  ocl_gate_open((ocl_stream *)ctx->stream); /* a blocking read: the launches before it run */
  cl_int err = clEnqueueReadBuffer(q, buf, CL_TRUE, (size_t)offset, bytes, dst, 0, NULL, NULL);
  if (err != CL_SUCCESS) return ocl_cl_error(err, fn, "clEnqueueReadBuffer");
  ocl_stream_track(ctx->stream, NULL);
  return HWP_OK;
}

const char *ocl_program_dtype(HWP_DType dtype) {
  static const char *const names[HWP_DTYPE_COUNT] = {
      "bool_", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
      "float64"};
  return dtype >= 0 && dtype < HWP_DTYPE_COUNT ? names[dtype] : "unknown";
}
