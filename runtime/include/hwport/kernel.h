/* hwport C ABI v1 — kernels: the kernel context, attributes and registration.
 *
 * A kernel is `HWP_Status fn(const HWP_KernelContext *ctx)`. The host calls it on a host
 * thread after inferring output shapes and allocating outputs; the kernel enqueues (or runs)
 * the computation on ctx->stream and returns. Everything reachable from `ctx` is valid only
 * during the call: a kernel that runs work later must copy what it needs (views, shapes,
 * attribute values). Kernels may be called concurrently for different streams. */
#ifndef HWPORT_KERNEL_H
#define HWPORT_KERNEL_H

#include "hwport/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t HWP_AttrType;
enum HWP_AttrTypeCode {
  HWP_ATTR_BOOL = 0,          /* out: uint8_t*            */
  HWP_ATTR_INT64 = 1,         /* out: int64_t*            */
  HWP_ATTR_FLOAT64 = 2,       /* out: double*             */
  HWP_ATTR_STRING = 3,        /* out: const char**        */
  HWP_ATTR_INT64_ARRAY = 4,   /* out: const int64_t**, count set */
  HWP_ATTR_FLOAT64_ARRAY = 5, /* out: const double**, count set */
  HWP_ATTR_DTYPE = 6          /* out: HWP_DType*          */
};

typedef struct HWP_KernelContext HWP_KernelContext;

struct HWP_KernelContext {
  size_t struct_size;
  int32_t device;
  HWP_Stream stream; /* NULL when the plugin has no stream table */
  int32_t num_inputs;
  int32_t num_outputs;
  /* Read only. For elementwise ops the host passes inputs already broadcast to the output's
   * shape (same ndim, stride 0 on broadcast dimensions) and already of the op's dtype. */
  const HWP_TensorView *inputs;
  const HWP_TensorView *outputs; /* allocated by the host, shapes inferred; contiguous */
  void *user_data;               /* as given in HWP_KernelRegistration */
  void *host_context;            /* opaque; pass back to the callbacks below */

  /* Looks up attribute `name` as `type` and writes it to `out` (see HWP_AttrType for what
   * `out` points to); `count` receives the length for arrays and may be NULL otherwise.
   * Integer, float and bool attributes convert to a requested INT64/FLOAT64/BOOL when exact.
   * HWP_ERROR_NOT_FOUND when absent, HWP_ERROR_INVALID_ARGUMENT on a type mismatch; `out`
   * untouched on error. Pointers written are valid until the kernel returns. */
  HWP_Status (*get_attr)(const HWP_KernelContext *ctx, const char *name, HWP_AttrType type,
                         void *out, int64_t *count);

  /* Allocates scratch device memory valid for the work this kernel enqueues on ctx->stream;
   * the host releases it after that work completes (stream-ordered). Ownership: the host. */
  HWP_Status (*allocate_workspace)(const HWP_KernelContext *ctx, uint64_t nbytes,
                                   HWP_Buffer *out);

  /* Since 1.2 (read it when HWP_HAS_FIELD(ctx, HWP_KernelContext, correlation_id)). Nonzero
   * while the host profiles the device (HWP_ProfilerTable.start): the op call this launch
   * belongs to. A plugin that times device work reports each piece of work this launch
   * enqueues with this id (profiler.h). Zero otherwise. */
  uint64_t correlation_id;
};

typedef HWP_Status (*HWP_KernelFn)(const HWP_KernelContext *ctx);

/* Kernel flags. */
enum HWP_KernelFlag {
  /* Inputs may be arbitrary strided views (strides 0 or negative included). Without it the host
   * passes contiguous inputs, copying them first when needed. Outputs are always contiguous. */
  HWP_KERNEL_ACCEPTS_STRIDED = 1u << 0
};

typedef struct HWP_KernelRegistration {
  size_t struct_size;
  const char *op_name; /* e.g. "add"; copied by the host */
  /* The dtype the kernel handles: that of the op's key input (phi_ops/ops.yaml `kernel_key`,
   * the first input unless it says otherwise, e.g. `x` for "where"), or of the first output
   * for ops without inputs (e.g. "fill"). */
  HWP_DType dtype;
  uint32_t flags; /* HWP_KernelFlag bits */
  HWP_KernelFn fn;
  void *user_data; /* passed back in HWP_KernelContext.user_data; owned by the plugin */
} HWP_KernelRegistration;

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_KERNEL_H */
