/* hwport CPU plugin — declarations shared by the plugin's source files (not part of any ABI). */
#ifndef HWPORT_CPU_INTERNAL_H
#define HWPORT_CPU_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "hwport/device.h"
#include "hwport/kernel.h"
#include "hwport/plugin.h"
#include "hwport/types.h"
#include "plugin_support.h"

#define CPU_PLUGIN_VERSION "0.1.0"
#define CPU_MAX_DEVICES 64
#define CPU_ALIGNMENT 64
#define CPU_ERROR_LEN 512
/* Work (elements; multiply-adds for matmul) of at most this much on an idle stream runs inline
 * on the submitting thread. Measured on a 2-core VM (benchmarks/bench_dispatch.py --only mlp
 * --mlp-runs 10, and op+synchronize by size): a sleeping worker's wake-up (10-30 us) and the
 * synchronizer's own wake-up cost more than the work up to ~1M elements of gelu/exp and every
 * matmul tried (up to 33M multiply-adds); a million keeps the MLP steps' matmuls (B=8: 2^19)
 * inline and big work (~1 ms and more) on the worker, where the host can go on meanwhile. */
#define CPU_DEFAULT_INLINE_ELEMENTS 1000000

#if defined(__GNUC__)
#define CPU_LIKELY(x) __builtin_expect(!!(x), 1)
#define CPU_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CPU_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CPU_LIKELY(x) (x)
#define CPU_UNLIKELY(x) (x)
#define CPU_PRINTF(f, a)
#endif

/* ---- errors.c: thread-local last error and logging -------------------------------------- */

/* The shared plugin support (device_plugins/common) under this plugin's names. */
#define cpu_error hwps_error
#define cpu_get_last_error hwps_last_error
#define cpu_set_host(host) hwps_set_host((host), "cpu")
#define cpu_log hwps_log

/* ---- device.c: configuration read once at init ------------------------------------------ */

typedef struct cpu_config {
  int32_t num_devices;
  uint64_t memory_limit;   /* per device, bytes */
  uint64_t inline_elements; /* small-work threshold; 0 disables inline execution */
  uint64_t stream_min_bytes; /* elementwise outputs this big use non-temporal stores; 0: never */
  int32_t compute_units;
  char vendor[128];
  char machine[64]; /* uname machine, e.g. "x86_64": the architecture property */
} cpu_config;

extern cpu_config g_cpu;

void cpu_config_init(void); /* idempotent: the first call reads the environment */
/* out[M, N] (contiguous) = a[M, K] @ b[K, N] (element strides) through oneDNN for float32 and
 * bfloat16 (matmul_dnnl.c): 1 when it ran, 0 when it declines (small, unsupported, or a build
 * without oneDNN) and the caller computes the product itself. */
int cpu_dnnl_matmul(HWP_DType dt, int64_t M, int64_t N, int64_t K, const void *a, int64_t ars,
                    int64_t acs, const void *b, int64_t brs, int64_t bcs, void *c);
extern const HWP_DeviceTable cpu_device_table;

static inline HWP_Status cpu_check_device(int32_t device, const char *fn) {
  if (CPU_LIKELY(device >= 0 && device < g_cpu.num_devices)) return HWP_OK;
  return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: device %d out of range [0, %d)", fn,
                   (int)device, (int)g_cpu.num_devices);
}

/* ---- memory.c --------------------------------------------------------------------------- */

extern const HWP_MemoryTable cpu_memory_table;

/* ---- elementwise work (kernels_*.c) ------------------------------------------------------ */

/* Inner loop over `n` elements: ptrs[0] is the output, ptrs[1..] the inputs; strides in bytes
 * (0 = broadcast, may be negative). `aux` points to cpu_elementwise.aux. */
typedef void (*cpu_inner_fn)(char *const *ptrs, const int64_t *strides, int64_t n,
                             const void *aux);

#define CPU_MAX_OPERANDS 4 /* output + up to three inputs (where) */

/* A self-contained description of one elementwise kernel launch: it owns copies of every shape,
 * stride and attribute it needs, so it can run after the kernel call has returned. */
typedef struct cpu_elementwise {
  cpu_inner_fn fn;
  int32_t nops;  /* 1 (output only) .. CPU_MAX_OPERANDS */
  int32_t ndim;  /* after dropping size-1 dims and merging contiguous ones; 0 = one element */
  int64_t out_itemsize; /* bytes per output element */
  int32_t plain_stores; /* 1: never non-temporal stores (a compute-bound loop); prepare sets 0 */
  char *base[CPU_MAX_OPERANDS];
  int64_t shape[HWP_MAX_NDIM];
  int64_t strides[CPU_MAX_OPERANDS][HWP_MAX_NDIM]; /* bytes */
  union {
    uint8_t bytes[8];
    int64_t i64;
    double f64;
    int64_t attr[4]; /* a native composite's attribute slots (native_attrs.h) */
  } aux;
} cpu_elementwise;

void cpu_elementwise_run(const cpu_elementwise *ew);

/* Validates the views and fills `ew` (everything but fn and aux). `nelems_out` receives the
 * element count (0: nothing to do). Views: views[0] is the output, then the inputs. Inputs must
 * have the output's ndim; a dimension of size 1 in an input broadcasts. */
HWP_Status cpu_elementwise_prepare(const char *op, const HWP_TensorView *const *views, int nops,
                                   cpu_elementwise *ew, uint64_t *nelems_out);

/* Validates a kernel context: non-NULL, struct size, operand counts, device index. */
HWP_Status cpu_check_context(const HWP_KernelContext *ctx, const char *op, int32_t num_inputs,
                             int32_t num_outputs);

/* Registers every kernel through host->register_kernel (failures are logged and skipped). */
void cpu_register_kernels(const HWP_HostApi *host);
/* Registers one kernel (flags: HWP_KERNEL_ACCEPTS_STRIDED); failures are logged. */
void cpu_register_one(const HWP_HostApi *host, const char *op, HWP_DType dtype, HWP_KernelFn fn,
                      uint32_t flags);
/* Kernel families, one file each; each registers its ops for the dtypes it supports. */
void cpu_register_elementwise_kernels(const HWP_HostApi *host); /* kernels_elementwise.c */
void cpu_register_reduction_kernels(const HWP_HostApi *host);   /* kernels_reduce.c */
void cpu_register_linalg_kernels(const HWP_HostApi *host);      /* kernels_linalg.c */
void cpu_register_index_kernels(const HWP_HostApi *host);       /* kernels_index.c */
void cpu_register_random_kernels(const HWP_HostApi *host);      /* kernels_random.c */
void cpu_register_optim_kernels(const HWP_HostApi *host);       /* kernels_optim.c */
/* kernels_elementwise.c: picks the elementwise loops' instruction set (AVX2, AVX-512) at load. */
void cpu_ew_select_simd(void);
/* The level it chose: 0 the baseline (SSE2), 1 AVX2+FMA+F16C, 2 AVX-512 (F, DQ) as well. */
int cpu_ew_simd_level(void);

/* ---- stream.c: streams, events, tasks --------------------------------------------------- */

typedef struct cpu_marker cpu_marker;

enum cpu_task_kind {
  CPU_TASK_ELEMENTWISE = 0,
  CPU_TASK_COPY = 1,
  CPU_TASK_MEMSET = 2,
  CPU_TASK_RECORD = 3,
  CPU_TASK_WAIT = 4,
  CPU_TASK_CALLBACK = 5 /* any other kernel: run(payload) then release(payload) */
};

typedef struct cpu_task {
  struct cpu_task *next;
  int32_t kind;
  /* Set by the stream when the task is queued: the launch's correlation id (0: not profiled)
   * and what it reports as the span's name (profiler.c). */
  uint64_t correlation_id;
  const char *name;
  union {
    cpu_elementwise ew;
    struct {
      void *dst;
      const void *src;
      uint64_t nbytes;
    } copy;
    struct {
      void *dst;
      uint64_t nbytes;
      uint8_t value;
    } set;
    cpu_marker *marker;
    struct {
      HWP_Status (*run)(void *payload);  /* an error becomes the stream's sticky error */
      void (*release)(void *payload);    /* may be NULL; runs after run, always */
      void *payload;                     /* owned by the task once cpu_submit succeeded */
    } call;
  } u;
} cpu_task;

/* Submits run(payload) to ctx's stream as one task (`work` elements, for the inline decision).
 * Takes `payload` in every case: release(payload) runs exactly once, after run, or at once
 * when the task could not be submitted; the caller never frees it. The way every
 * non-elementwise kernel enqueues its work. */
HWP_Status cpu_submit_call(const HWP_KernelContext *ctx, const char *op,
                           HWP_Status (*run)(void *payload), void (*release)(void *payload),
                           void *payload, uint64_t work);

/* cpu_submit_call for work that no kernel context describes (a codegen launch): on `stream`
 * of `device` (NULL: synchronously, after the device's streams drained); `name` names the
 * task in errors and profiles, `correlation_id` (0: none) times it as a kernel launch's. The
 * same ownership of `payload`. */
HWP_Status cpu_submit_callback(int32_t device, HWP_Stream stream, const char *name,
                               uint64_t correlation_id, HWP_Status (*run)(void *payload),
                               void (*release)(void *payload), void *payload, uint64_t work);

/* cpu_submit for the work of a kernel launch: also carries ctx's correlation id, so that a
 * profiled launch's work is timed (profiler.c). */
HWP_Status cpu_submit_launch(const HWP_KernelContext *ctx, const cpu_task *task, uint64_t work,
                             const char *op);

/* Submits `task` (a prototype the caller owns; copied if it has to wait) to `stream` of
 * `device`. `work` is the task's size in elements, for the inline decision. A NULL stream runs
 * the task synchronously after the device's streams have drained. `fn` names the caller in
 * error messages. */
HWP_Status cpu_submit(int32_t device, HWP_Stream stream, const cpu_task *task, uint64_t work,
                      const char *fn);

/* Blocks until every stream of `device` is idle; reports (and clears) a sticky stream error. */
HWP_Status cpu_synchronize_device(int32_t device);

extern const HWP_StreamTable cpu_stream_table;

/* ---- codegen.c: the "c99" codegen target (ABI 1.2) ---------------------------------------- */

extern const HWP_CodegenTable cpu_codegen_table;

/* ---- profiler.c: device time (ABI 1.2) ---------------------------------------------------- */

extern const HWP_ProfilerTable cpu_profiler_table;

/* ctx's correlation id, 0 when the host predates it (ABI < 1.2) or does not profile. */
static inline uint64_t cpu_correlation_id(const HWP_KernelContext *ctx) {
  return HWP_HAS_FIELD(ctx, HWP_KernelContext, correlation_id) ? ctx->correlation_id : 0;
}

/* Runs `run(task)` and, when `correlation_id` is nonzero and `device` is being profiled,
 * reports the time it took as one span named `name`. */
HWP_Status cpu_run_timed(HWP_Status (*run)(const cpu_task *), const cpu_task *task,
                         int32_t device, uint64_t correlation_id, const char *name);

#endif /* HWPORT_CPU_INTERNAL_H */
