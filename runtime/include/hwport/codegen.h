/* hwport C ABI v1 — the code-generation target table (optional; functions since 1.2).
 *
 * A plugin with a codegen target lets the host's compiler (cinn_backends/) render kernels as
 * source in a dialect the target accepts, compile them through the plugin, and launch them on
 * the plugin's streams. A device runtime plus this table is a complete port: every op can be
 * generated (docs/abi.md, section 4, "HWP_CodegenTable").
 *
 * Dialects (what `source` is written in; the host's renderer for each is documented in
 * docs/codegen.md):
 *   "c99"           C99 for the host CPU. A kernel is
 *                     void NAME(int64_t gx, int64_t gy, int64_t gz, void *const *args)
 *                   called once per group (gx, gy, gz) of the grid (group must be {1,1,1}); for
 *                   argument i, args[i] points to: the first byte of a buffer argument (its
 *                   address plus byte_offset, as `char *`), an int64_t, or a double. Groups run
 *                   concurrently on the plugin's threads; the launch completes when all have.
 *   "opencl-c-1.2"  OpenCL C 1.2; a __kernel whose parameters are, in order, one
 *                   `__global T *` per buffer argument followed by `ulong` (its byte offset),
 *                   `long` per int64 argument, `double` (or `float` where the target lacks
 *                   fp64, flag HWP_CODEGEN_FLOAT64 absent) per float64 argument.
 *                   global size = grid * group per dimension, local size = group.
 *   "cuda-c++17"    CUDA C++17 through NVRTC; an `extern "C" __global__` function whose
 *                   parameters are a `T *` per buffer argument (its address plus byte_offset
 *                   already), `long long` per int64, `double` per float64. <<<grid, group>>>.
 *   A vendor's own dialect names its own kernel convention (docs/codegen.md).
 *
 * Ownership: modules are created by compile/deserialize and released by unload; a function is
 * owned by its module and valid until the module is unloaded. Strings the plugin returns stay
 * valid until the plugin is unloaded. */
#ifndef HWPORT_CODEGEN_H
#define HWPORT_CODEGEN_H

#include "hwport/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct HWP_CodegenModule_st *HWP_CodegenModule;
typedef struct HWP_CodegenFunction_st *HWP_CodegenFunction;

/* HWP_CodegenTargetInfo.flags */
enum HWP_CodegenFlag {
  HWP_CODEGEN_SIMT = 1u << 0,            /* groups of threads in lockstep (GPU-like) */
  HWP_CODEGEN_SUBGROUP_SHUFFLE = 1u << 1, /* warp/sub-group shuffles are available */
  HWP_CODEGEN_FLOAT16 = 1u << 2,         /* half arithmetic in kernels */
  HWP_CODEGEN_FLOAT64 = 1u << 3,         /* double arithmetic in kernels */
  HWP_CODEGEN_SERIALIZE = 1u << 4        /* serialize/deserialize work for this device */
};

/* What the compiler needs to know to schedule for a device. */
typedef struct HWP_CodegenTargetInfo {
  size_t struct_size;
  /* NULL-terminated list of the dialects `compile` accepts on this device, preferred first.
   * Owned by the plugin. */
  const char *const *dialects;
  /* e.g. "x86_64-avx2", "sm_90", the OpenCL device name: part of the host's cache key. */
  const char *architecture;
  uint32_t flags;                  /* HWP_CodegenFlag bits */
  uint32_t simd_width;             /* float32 lanes of a vector register (CPU); warp size (SIMT) */
  uint32_t preferred_vector_width; /* float32 lanes a vectorized loop should use */
  uint32_t max_group_size;         /* threads in one group (product of group[]); 1 for "c99" */
  uint32_t compute_units;          /* groups that run at once (threads of a CPU) */
  uint32_t reserved;
  uint64_t local_memory_bytes;     /* per group (shared/local memory); 0 if none */
  uint64_t max_grid_size;          /* groups in grid dimension 0 (x); 0 = 2^31 - 1. Dimensions
                                    * 1 and 2 take at least min(65535, max_grid_size) */
} HWP_CodegenTargetInfo;

typedef int32_t HWP_CodegenArgKind;
enum HWP_CodegenArgKindCode {
  HWP_CODEGEN_ARG_BUFFER = 0,  /* value.buffer: a device buffer and a byte offset into it */
  HWP_CODEGEN_ARG_INT64 = 1,   /* value.i64 */
  HWP_CODEGEN_ARG_FLOAT64 = 2  /* value.f64 */
};

/* One kernel argument. */
typedef struct HWP_CodegenArg {
  size_t struct_size;
  HWP_CodegenArgKind kind;
  int32_t reserved;
  union {
    struct {
      HWP_Buffer buffer;
      uint64_t byte_offset;
    } buffer;
    int64_t i64;
    double f64;
  } value;
} HWP_CodegenArg;

/* One launch: `grid` groups per dimension, `group` threads per group ({1,1,1} for "c99"). */
typedef struct HWP_CodegenLaunch {
  size_t struct_size;
  uint32_t grid[3];
  uint32_t group[3];
  int32_t num_args;
  int32_t reserved;
  const HWP_CodegenArg *args; /* num_args entries, owned by the host, valid during the call */
  /* Appended in 1.2 (read it when HWP_HAS_FIELD(launch, HWP_CodegenLaunch, correlation_id)).
   * As HWP_KernelContext.correlation_id: nonzero while the host profiles the device, the op
   * call this launch belongs to; a plugin with a profiler table reports the launch's device
   * work with it (named after the function). Zero otherwise. */
  uint64_t correlation_id;
} HWP_CodegenLaunch;

/* The table. Everything up to `unload` is required when the table is present with a
 * struct_size that covers it; a smaller table (1.0/1.1: struct_size only) means no target. */
typedef struct HWP_CodegenTable {
  size_t struct_size;

  /* 1.2. Fills `info` up to info->struct_size. HWP_ERROR_NOT_SUPPORTED: this device has no
   * usable target now (e.g. no C compiler on the machine): not a failure, the host compiles
   * nothing for it. */
  HWP_Status (*get_target_info)(int32_t device, HWP_CodegenTargetInfo *info);

  /* 1.2. Compiles `source` (NUL-terminated, in `dialect`) for `device` with the
   * space-separated `options` (may be "" or NULL; e.g. "-O3"). On success *out is a new module
   * the host owns (release it with unload). On failure returns HWP_ERROR_INVALID_ARGUMENT for
   * source that does not compile, HWP_ERROR_NOT_SUPPORTED for a dialect the device does not
   * accept, and writes the compiler's output (NUL-terminated, truncated to log_capacity) into
   * `log` when log is not NULL; *out is untouched. Thread-safe. */
  HWP_Status (*compile)(int32_t device, const char *dialect, const char *source,
                        const char *options, HWP_CodegenModule *out, char *log,
                        size_t log_capacity);

  /* 1.2. The kernel `name` of `module`. HWP_ERROR_NOT_FOUND if it has none such. The function
   * is owned by the module. */
  HWP_Status (*get_function)(HWP_CodegenModule module, const char *name,
                             HWP_CodegenFunction *out);

  /* 1.2. Enqueues one launch of `function` on `stream` of `device` (NULL: the device's default
   * stream), ordered after the work already there, and returns without waiting.
   * HWP_ERROR_INVALID_ARGUMENT for a zero or too large grid/group, a NULL launch or args. */
  HWP_Status (*launch)(int32_t device, HWP_CodegenFunction function, HWP_Stream stream,
                       const HWP_CodegenLaunch *launch);

  /* 1.2. Releases a module. The host calls it only when no launch of its functions is pending
   * (it synchronizes the device first). */
  HWP_Status (*unload)(HWP_CodegenModule module);

  /* 1.2, optional (NULL: the host's disk cache keeps source only and compiles again in each
   * process). Writes the module's compiled form into data (capacity bytes) and its size into
   * *size; with data NULL only *size. HWP_ERROR_INVALID_ARGUMENT if capacity is too small. */
  HWP_Status (*serialize)(HWP_CodegenModule module, void *data, size_t capacity, size_t *size);

  /* 1.2, optional with serialize. A module from serialize's bytes, as compile would have made
   * it on `device`. HWP_ERROR_INVALID_ARGUMENT for bytes it cannot load (the host then
   * compiles the source again). */
  HWP_Status (*deserialize)(int32_t device, const char *dialect, const void *data, size_t size,
                            HWP_CodegenModule *out);
} HWP_CodegenTable;

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_CODEGEN_H */
