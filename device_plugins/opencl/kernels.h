/* hwport OpenCL plugin — the program cache and the kernels (not part of any ABI). */
#ifndef HWPORT_OPENCL_KERNELS_H
#define HWPORT_OPENCL_KERNELS_H

#include "internal.h"

/* ---- program_cache.c ---------------------------------------------------------------------- */

/* Program-cache slots, one per distinct source; each family owns a range of ten (one per dtype
 * where its source is specialised by dtype): elementwise 0..9, reductions 20..29,
 * argmax/argmin 30..39, scans 40..49, matmul 50..59, fused nn 60..69, index ops 70..89,
 * random 90..99. */
#define OCL_MAX_PROGRAMS 128

/* The built program `slot` (< OCL_MAX_PROGRAMS; one slot per distinct source) of `device`:
 * built on first use for that device, from the on-disk binary cache when it holds a valid entry
 * for (source, device name, driver version, options), else compiled from source (and then
 * stored there). Logs "opencl: compiled program <hash>" (DEBUG) per compilation. Thread-safe;
 * the program stays owned by the cache. */
HWP_Status ocl_program_get(int32_t device, int slot, const char *source, const char *options,
                           cl_program *out, const char *fn);
/* Releases every cached program (at shutdown). */
void ocl_program_cache_shutdown(void);

/* ---- kernels_elementwise.c ---------------------------------------------------------------- */

/* Registers the generated elementwise kernels (unary/binary primitives, where, cast, copy,
 * fill) for the dtypes every discovered device supports. */
HWP_Status ocl_register_elementwise_kernels(const HWP_HostApi *host);

/* Whether the device computes in double (cl_khr_fp64 or a non-zero double config). */
int ocl_device_has_fp64(cl_device_id id);
/* Ends a kernel launch on queue q: flushed when ctx has a stream (asynchronous), finished for
 * the NULL (synchronous) stream. */
HWP_Status ocl_launch_done(const HWP_KernelContext *ctx, cl_command_queue q, const char *fn);
/* kernels_reduce.c: sum, prod, max, min with work-group local-memory trees (program slots
 * 20..29, one per dtype). */
HWP_Status ocl_register_reduce_kernels(const HWP_HostApi *host);

/* kernels_arg_scan.c: argmax, argmin (local-memory trees), cumsum, cumprod (slots 30..49). */
HWP_Status ocl_register_arg_scan_kernels(const HWP_HostApi *host);
/* kernels_matmul.c: matmul tiled in local memory (slots 50..59). */
HWP_Status ocl_register_matmul_kernels(const HWP_HostApi *host);
/* kernels_nn.c: fused softmax, log_softmax, layer_norm, rms_norm (slots 60..69). */
HWP_Status ocl_register_nn_kernels(const HWP_HostApi *host);
/* kernels_index.c: concat, pad, gather, take_along_axis, scatter, argsort, arange
 * (slots 70..89). */
HWP_Status ocl_register_index_kernels(const HWP_HostApi *host);
/* kernels_random.c: uniform, bit-exact with phi_ops/philox.py (slots 90..99). */
HWP_Status ocl_register_random_kernels(const HWP_HostApi *host);

/* ---- launch.c: what the index and random kernels share ----------------------------------- */

/* One kernel argument: a value of `size` bytes, or local memory of `size` bytes (value NULL). */
typedef struct ocl_karg {
  size_t size;
  const void *value;
} ocl_karg;
#define OCL_ARG(x) {sizeof(x), &(x)}
#define OCL_LOCAL(bytes) {(bytes), NULL}

/* The queue kernels of ctx run on: ctx->stream's, or the device's internal one (NULL stream). */
HWP_Status ocl_ctx_queue(const HWP_KernelContext *ctx, cl_command_queue *q, const char *fn);
/* Creates kernel `name` of `prog` and sets its `n` arguments; on error nothing is left. */
HWP_Status ocl_kernel_make(cl_program prog, const char *name, const ocl_karg *args, int n,
                           cl_kernel *out, const char *fn);
/* Enqueues `k` over `items` work-items (rounded up to a multiple of the local size: `local`, or
 * when 0 the largest power of two <= 128 the kernel allows) on q, tracked on ctx->stream, and
 * releases k (the enqueued command keeps it alive). items == 0 enqueues nothing. */
HWP_Status ocl_enqueue_1d(const HWP_KernelContext *ctx, cl_command_queue q, cl_kernel k,
                          uint64_t items, size_t local, const char *fn);
/* ocl_kernel_make + ocl_enqueue_1d with the automatic local size. */
HWP_Status ocl_run_1d(const HWP_KernelContext *ctx, cl_command_queue q, cl_program prog,
                      const char *name, const ocl_karg *args, int n, uint64_t items,
                      const char *fn);
/* A private device buffer of `bytes` (> 0) in the device's context, initialised from `init`
 * when not NULL. The caller releases it (after enqueueing the commands that use it: OpenCL
 * keeps it alive until they finish). */
HWP_Status ocl_temp_buffer(int32_t device, size_t bytes, const void *init, cl_mem *out,
                           const char *fn);
/* A blocking read of `bytes` at `offset` of `buf` on q (tracked on ctx->stream). */
HWP_Status ocl_read_now(const HWP_KernelContext *ctx, cl_command_queue q, cl_mem buf,
                        uint64_t offset, size_t bytes, void *dst, const char *fn);

/* Registers `fn` for (op, dtype) with HWP_KERNEL_ACCEPTS_STRIDED and no user data. */
HWP_Status ocl_register_strided(const HWP_HostApi *host, const char *op, HWP_DType dtype,
                                HWP_KernelFn fn);

/* The dtype's name in elementwise_prelude.cl's DT_<name> macros ("bool_", "int8", ...). */
const char *ocl_program_dtype(HWP_DType dtype);

#endif /* HWPORT_OPENCL_KERNELS_H */
