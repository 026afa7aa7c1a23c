/* hwport OpenCL plugin — kernel creation, 1-D launches, scratch buffers and blocking reads shared
 * by the index and random kernels (kernels_index.c, kernels_random.c). */
#include <string.h>

#include "kernels.h"

#define OCL_LAUNCH_LOCAL 128

HWP_Status ocl_ctx_queue(const HWP_KernelContext *ctx, cl_command_queue *q, const char *fn) {
  return ctx->stream == NULL ? ocl_sync_queue(ctx->device, q, fn)
                             : ocl_stream_queue(ctx->device, ctx->stream, q, fn);
}

HWP_Status ocl_kernel_make(cl_program prog, const char *name, const ocl_karg *args, int n,
                           cl_kernel *out, const char *fn) {
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(prog, name, &err);
  if (k == NULL || err != CL_SUCCESS) return ocl_cl_error(err, fn, "clCreateKernel");
  for (int i = 0; i < n; ++i) {
    err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
    if (err != CL_SUCCESS) {
      clReleaseKernel(k);
      return ocl_error(HWP_ERROR_INTERNAL, "%s: clSetKernelArg(%s, %d) failed: %s", fn, name, i,
                       ocl_cl_error_name(err));
    }
  }
  *out = k;
  return HWP_OK;
}

HWP_Status ocl_enqueue_1d(const HWP_KernelContext *ctx, cl_command_queue q, cl_kernel k,
                          uint64_t items, size_t local, const char *fn) {
  if (items == 0) {
    clReleaseKernel(k);
    return HWP_OK;
  }
  if (local == 0) {
    size_t kwg = 0, cap = OCL_LAUNCH_LOCAL;
    if (clGetKernelWorkGroupInfo(k, g_ocl.devices[ctx->device].id, CL_KERNEL_WORK_GROUP_SIZE,
                                 sizeof kwg, &kwg, NULL) == CL_SUCCESS &&
        kwg > 0 && kwg < cap)
      cap = kwg;
    for (local = 1; local * 2 <= cap; local *= 2) {}
  }
  size_t global = (size_t)((items + local - 1) / local) * local;
  cl_event ev = NULL;
  cl_int err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL,
                                      ctx->stream == NULL ? NULL : &ev);
  clReleaseKernel(k);
  if (err != CL_SUCCESS) return ocl_cl_error(err, fn, "clEnqueueNDRangeKernel");
  if (ctx->stream != NULL) ocl_stream_track(ctx->stream, ev);
  return HWP_OK;
}

HWP_Status ocl_run_1d(const HWP_KernelContext *ctx, cl_command_queue q, cl_program prog,
                      const char *name, const ocl_karg *args, int n, uint64_t items,
                      const char *fn) {
  if (items == 0) return HWP_OK;
  cl_kernel k;
  HWP_Status st = ocl_kernel_make(prog, name, args, n, &k, fn);
  if (st != HWP_OK) return st;
  return ocl_enqueue_1d(ctx, q, k, items, 0, fn);
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
  cl_event ev = NULL;
  cl_int err = clEnqueueReadBuffer(q, buf, CL_TRUE, (size_t)offset, bytes, dst, 0, NULL,
                                   ctx->stream == NULL ? NULL : &ev);
  if (err != CL_SUCCESS) return ocl_cl_error(err, fn, "clEnqueueReadBuffer");
  if (ctx->stream != NULL) ocl_stream_track(ctx->stream, ev);
  return HWP_OK;
}

HWP_Status ocl_register_strided(const HWP_HostApi *host, const char *op, HWP_DType dtype,
                                HWP_KernelFn fn) {
  HWP_KernelRegistration reg;
  memset(&reg, 0, sizeof reg);
  reg.struct_size = sizeof reg;
  reg.op_name = op;
  reg.dtype = dtype;
  reg.flags = HWP_KERNEL_ACCEPTS_STRIDED;
  reg.fn = fn;
  HWP_Status st = host->register_kernel(host->host_context, &reg);
  if (st != HWP_OK)
    return ocl_error(st, "hwport_plugin_init: registering %s[dtype %d] failed", op, (int)dtype);
  return HWP_OK;
}

const char *ocl_program_dtype(HWP_DType dtype) {
  static const char *const names[HWP_DTYPE_COUNT] = {
      "bool_", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
      "float64"};
  return dtype >= 0 && dtype < HWP_DTYPE_COUNT ? names[dtype] : "unknown";
}
