/* hwport CUDA plugin — what the kernel families share on the host side: the validated kernel
 * context, launch bookkeeping, view helpers and registration (not part of any ABI). */
#ifndef HWPORT_CUDA_KERNELS_H
#define HWPORT_CUDA_KERNELS_H

#include "hwport/kernel_util.h"
#include "internal.h"
/* CU_DTYPE_MASK: the dtypes every family registers (generated from HWPORT_CUDA_DTYPES). */
#include "cuda_dtypes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cu_kctx {
  int32_t device;
  cudaStream_t stream; /* 0 for the NULL (synchronous) stream */
  int sync;            /* ctx->stream was NULL: wait before and after */
  int sm_count;
  uint64_t correlation_id; /* ctx's (ABI 1.2), 0: not profiled */
  cudaEvent_t timed_begin; /* recorded before the launches while profiled (profiler.c) */
} cu_kctx;

/* profiler.c: device time (ABI 1.2). begin records an event on k->stream when the launch is
 * profiled; end records the closing one and keeps the pair for the profiler's stop. */
extern const HWP_ProfilerTable cu_profiler_table;
void cu_profile_begin(const HWP_KernelContext *ctx, cu_kctx *k);
void cu_profile_end(const cu_kctx *k, const char *op);

/* Validates ctx (struct size, input/output counts, device, stream) and, for the synchronous
 * NULL stream, waits for the device's earlier work. */
HWP_Status cu_kernel_begin(const HWP_KernelContext *ctx, const char *op, int nin, int nout,
                           cu_kctx *k);
/* After the launches: a launch error (cudaGetLastError) becomes the status; the synchronous
 * NULL stream waits for the work to complete (and reports an error it raised). */
HWP_Status cu_kernel_end(const cu_kctx *k, const char *op);
/* Blocks for a grid-stride loop over `nwork` items with `block` threads each. */
unsigned cu_grid(const cu_kctx *k, uint64_t nwork, unsigned block);

/* Device scratch memory for one kernel call. The host's workspace (allocate_workspace) when it
 * gives one; it may not (the runtime's caching allocator hands out only blocks that start a
 * buffer), so otherwise stream-ordered memory of the CUDA device's pool (cudaMallocAsync on
 * k->stream), or a cudaMalloc'd block where the device has no pools. cu_scratch_free after the
 * launches that use it (stream-ordered, or after waiting for the stream). */
typedef struct cu_scratch {
  void *ptr;
  int own; /* 1: cudaMallocAsync'd, 2: cudaMalloc'd; 0: the host's workspace (or none) */
} cu_scratch;
HWP_Status cu_scratch_alloc(const HWP_KernelContext *ctx, const cu_kctx *k, const char *op,
                            uint64_t nbytes, cu_scratch *s);
HWP_Status cu_scratch_free(const cu_kctx *k, const char *op, cu_scratch *s);

/* Element count of a view (1 for a scalar). */
int64_t cu_view_numel(const HWP_TensorView *v);
/* The device address of a view's first element. */
static inline char *cu_view_ptr(const HWP_TensorView *v) {
  return (char *)cu_addr(v->buffer, v->byte_offset);
}
/* Whether the view's address is a multiple of its itemsize (elements then are all aligned). */
int cu_view_aligned(const HWP_TensorView *v);
/* Whether a view is contiguous (NULL strides, or row-major strides over the non-1 dims). */
int cu_view_contiguous(const HWP_TensorView *v);
/* The view's dtype name for messages. */
const char *cu_dtype_name(HWP_DType dt);
/* Checks outputs[i]/inputs[i] has dtype `want` (an INVALID_ARGUMENT naming op and view). */
HWP_Status cu_check_dtype(const char *op, const char *what, const HWP_TensorView *v,
                          HWP_DType want);
/* An attribute as int64 (`fallback` when absent); a present attribute of the wrong type is an
 * INVALID_ARGUMENT. */
HWP_Status cu_attr_int(const HWP_KernelContext *ctx, const char *op, const char *name,
                       int64_t fallback, int64_t *out);

/* The NOT_SUPPORTED error of a kernel called for a dtype it has no instantiation for. */
HWP_Status cu_unsupported_dtype(const char *op, HWP_DType dt);
/* An attribute as float64 (`fallback` when absent; an integer attribute converts). */
HWP_Status cu_attr_double(const HWP_KernelContext *ctx, const char *op, const char *name,
                          double fallback, double *out);
/* Splits `shape` around dim `axis`: outer = prod(shape[:axis]), inner = prod(shape[axis+1:]). */
void cu_split_axis(const HWP_TensorView *v, int axis, long long *outer, long long *inner);

/* Registers `fn` for (op, dtype). */
HWP_Status cu_register(const HWP_HostApi *host, const char *op, HWP_DType dtype,
                       HWP_KernelFn fn, uint32_t flags, void *user_data);

/* The kernel families; each registers what it implements for CU_DTYPE_MASK. */
HWP_Status cu_register_elementwise_kernels(const HWP_HostApi *host); /* kernels_elementwise.cu */
HWP_Status cu_register_reduce_kernels(const HWP_HostApi *host);      /* kernels_reduce.cu */
HWP_Status cu_register_nn_kernels(const HWP_HostApi *host);          /* kernels_nn.cu */
HWP_Status cu_register_matmul_kernels(const HWP_HostApi *host);      /* kernels_matmul.cu */
HWP_Status cu_register_scan_kernels(const HWP_HostApi *host);        /* kernels_scan.cu */
HWP_Status cu_register_random_kernels(const HWP_HostApi *host);      /* kernels_random.cu */
HWP_Status cu_register_index_kernels(const HWP_HostApi *host);       /* kernels_index.cu */
HWP_Status cu_register_sort_kernels(const HWP_HostApi *host);        /* kernels_sort.cu */
/* cublas_loader.c: cuBLAS through dlopen at first use. */
void cu_cublas_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_CUDA_KERNELS_H */
