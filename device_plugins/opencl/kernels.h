/* hwport OpenCL plugin — the program cache and the kernels (not part of any ABI). */
#ifndef HWPORT_OPENCL_KERNELS_H
#define HWPORT_OPENCL_KERNELS_H

#include "internal.h"

/* ---- program_cache.c ---------------------------------------------------------------------- */

/* Program-cache slots, one per distinct source; each family owns a range of ten (one per dtype
 * where its source is specialised by dtype): elementwise 0..9, reductions 20..29,
 * argmax/argmin and scans 30..39 (40..49 free), matmul 50..59, fused nn 60..69, index ops 70..89,
 * random 90..99. */
#define OCL_MAX_PROGRAMS 128

/* The built program `slot` (< OCL_MAX_PROGRAMS; one slot per distinct source) of `device`:
 * built on first use for that device, from the on-disk binary cache when it holds a valid entry
 * for (source, device name, driver version, options), else compiled from source (and then
 * stored there). Logs "opencl: compiled program <hash>" (DEBUG) per compilation. Thread-safe;
 * the program stays owned by the cache. */
HWP_Status ocl_program_get(int32_t device, int slot, const char *source, const char *options,
                           cl_program *out, const char *fn);
/* `source` built with `options` for `device` through the on-disk binary cache, NOT kept in
 * the slots: the caller owns *out (clReleaseProgram). Source that does not compile returns
 * `bad` with the build log in the message and, when log is not NULL, in log (NUL-terminated,
 * truncated to log_cap bytes); *out is untouched on failure. */
HWP_Status ocl_program_build(int32_t device, const char *source, const char *options,
                             HWP_Status bad, char *log, size_t log_cap, cl_program *out,
                             const char *fn);
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

/* ---- kernel_launch.c: what the kernel families other than elementwise share ---------------- */

/* One kernel argument: `value` points at `size` bytes, or is NULL for `size` bytes of local
 * memory. */
typedef struct ocl_arg {
  size_t size;
  const void *value;
} ocl_arg;
#define OCL_ARG(v) {sizeof(v), &(v)}
#define OCL_LOCAL(nbytes) {(nbytes), NULL}

/* Collapsed dims of a view: size-1 dims dropped, a dim merged into the previous one when their
 * strides allow; strides in bytes. At most HWP_MAX_NDIM (<= 16, the long16 kernel arguments). */
typedef struct ocl_dims {
  int n;
  cl_long shape[HWP_MAX_NDIM];
  cl_long st[HWP_MAX_NDIM];
} ocl_dims;
void ocl_dims_add(ocl_dims *d, int64_t size, int64_t st_bytes);
/* (shape, strides) of d as long16 kernel arguments (unused lanes 0). */
void ocl_dims_long16(const ocl_dims *d, cl_long16 *shape, cl_long16 *st);

/* Smallest power of two >= v (at least 1, at most 2^30); largest power of two <= v (>= 1). */
size_t ocl_pow2_ceil(uint64_t v);
size_t ocl_pow2_floor(size_t v);
/* Whether `device` computes in double (cached); whether every device does. */
int ocl_dev_fp64(int32_t device);
int ocl_all_devices_fp64(void);
/* CL_DEVICE_LOCAL_MEM_SIZE of `device` (cached; 32 KiB when the query fails). */
uint64_t ocl_dev_local_mem(int32_t device);

/* Build options "-DDT=<dtype>[ -DHAS_FP64=1][ <extra>]" for `device` into buf. */
void ocl_dtype_options(int32_t device, HWP_DType dt, const char *extra, char *buf, size_t cap);
/* Kernel `name` of the program in `slot` (built from `source` with `options` on first use),
 * borrowed from the kernel cache: give it back with ocl_kernel_release. */
HWP_Status ocl_kernel_get(int32_t device, int slot, const char *source, const char *options,
                          const char *name, cl_kernel *out, const char *fn);
/* Sets arguments 0..n-1 of k. */
HWP_Status ocl_kernel_args(cl_kernel k, int n, const ocl_arg *args, const char *fn);
/* The largest power-of-two work-group size <= cap that the device and kernel allow. */
size_t ocl_kernel_wg(cl_kernel k, int32_t device, size_t cap);
/* The queue kernels of ctx run on: ctx->stream's, or the device's internal one. */
HWP_Status ocl_ctx_queue(const HWP_KernelContext *ctx, cl_command_queue *q, const char *fn);
/* Enqueues k over `dims` dims (global a multiple of local) on q and tracks it on ctx->stream. */
HWP_Status ocl_enqueue_nd(const HWP_KernelContext *ctx, cl_command_queue q, cl_kernel k,
                          cl_uint dims, const size_t *global, const size_t *local,
                          const char *fn);
/* The same with a global work offset (NULL: none). */
HWP_Status ocl_enqueue_nd_at(const HWP_KernelContext *ctx, cl_command_queue q, cl_kernel k,
                             cl_uint dims, const size_t *offset, const size_t *global,
                             const size_t *local, const char *fn);
/* Checks the kernel context (device, counts, get_attr) and that every view has a known dtype,
 * a rank <= HWP_MAX_NDIM, sizes that pass ocl_check_view_sizes and a buffer unless empty. */
HWP_Status ocl_check_views(const HWP_KernelContext *ctx, int min_inputs, int max_inputs,
                           const char *fn);
/* Splits rows of `len` into chunks (each a work-group of `local`) when `nout` rows are too few
 * to fill the device: sets *chunks, *chunk and *ws (a workspace of nout * chunks * part_bytes
 * for the partial results). Leaves them untouched (one chunk per row) when splitting does not
 * pay or no workspace is to be had. */
void ocl_split_rows(const HWP_KernelContext *ctx, uint64_t nout, uint64_t len, size_t local,
                    size_t part_bytes, uint64_t *chunks, uint64_t *chunk, HWP_Buffer *ws);
/* Checks view `v` (named `what` `i`, or `what` alone for i < 0, in messages): known dtype, rank 0..HWP_MAX_NDIM, a shape
 * when ndim > 0, and hwp_view_size_error's size checks (so that no offset or product a kernel
 * forms from it overflows int64). */
HWP_Status ocl_check_view_sizes(const HWP_TensorView *v, const char *what, int i, const char *fn);
/* ocl_check_view_sizes over every input and output of the context (counts already checked). */
HWP_Status ocl_check_context_sizes(const HWP_KernelContext *ctx, const char *fn);
/* Element count of a view (checked by ocl_check_view_sizes first). */
uint64_t ocl_numel(const HWP_TensorView *v);
/* Whether the view's byte offset is a multiple of its itemsize (strides count elements). */
int ocl_view_aligned(const HWP_TensorView *v);
/* Reads attr axis as a dim of an ndim-d input (negative: Python-style; 0-d: 0 or -1). */
HWP_Status ocl_read_axis(const HWP_KernelContext *ctx, int ndim, int *axis, const char *fn);
/* The row layout of x around `axis`: outer dims (before it), the axis (length, byte stride),
 * inner dims (after it); `kept` collects outer and inner together (argmax's output order). */
typedef struct ocl_axis_layout {
  uint64_t len, outer, inner;
  int64_t ast;
  ocl_dims odims, idims, kept;
} ocl_axis_layout;
void ocl_split_axis(const HWP_TensorView *x, int axis, ocl_axis_layout *L);
/* Registers `op` for each dtype in `mask` (bit 1 << dtype; float64 only when every device has
 * it) with fn and user_data, strided inputs accepted; adds the count to *count. */
HWP_Status ocl_register_op(const HWP_HostApi *host, const char *op, uint32_t mask,
                           HWP_KernelFn fn, void *user_data, int *count);

/* kernels_arg_scan.c: argmax, argmin (local-memory trees), cumsum, cumprod (slots 30..39). */
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
/* kernels_optim.c: the fused adam_update (slots 100..109). */
HWP_Status ocl_register_optim_kernels(const HWP_HostApi *host);

/* ---- kernel_cache.c ------------------------------------------------------------------------ */

/* Kernel `name` of `prog` for one launch: an idle cached one, else a new one. The caller sets
 * every argument, enqueues, and gives it back with ocl_kernel_release (never clReleaseKernel). */
HWP_Status ocl_kernel_borrow(cl_program prog, const char *name, cl_kernel *out, const char *fn);
/* Gives back a kernel from ocl_kernel_borrow (kept for the next launch, or released); any other
 * kernel is released. */
void ocl_kernel_release(cl_kernel k);
/* Releases every cached kernel (at shutdown, before the programs). */
void ocl_kernel_cache_shutdown(void);

/* A kernel of `prog` (ocl_kernel_borrow) with its `n` arguments set; on error nothing is left.
 * Give it back with ocl_kernel_release. */
HWP_Status ocl_kernel_make(cl_program prog, const char *name, const ocl_arg *args, int n,
                           cl_kernel *out, const char *fn);
/* Enqueues `k` over `items` work-items (rounded up to a multiple of the local size: `local`, or
 * when 0 the largest power of two <= 128 the kernel allows) on q, tracked on ctx->stream, and
 * gives k back (ocl_kernel_release). items == 0 enqueues nothing. */
HWP_Status ocl_enqueue_1d(const HWP_KernelContext *ctx, cl_command_queue q, cl_kernel k,
                          uint64_t items, size_t local, const char *fn);
/* ocl_kernel_make + ocl_enqueue_1d with the automatic local size. */
HWP_Status ocl_run_1d(const HWP_KernelContext *ctx, cl_command_queue q, cl_program prog,
                      const char *name, const ocl_arg *args, int n, uint64_t items,
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
