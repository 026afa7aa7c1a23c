/* hwport OpenCL plugin — declarations shared by the plugin's source files (not part of any ABI).
 *
 * One hwport device per OpenCL device (over all platforms, filtered by HWPORT_OPENCL_DEVICES).
 * The selected devices of one platform share one cl_context, so buffers and events of a
 * platform are usable by every queue of that platform. A buffer is a cl_mem; a stream is an
 * in-order command queue; an event holds the cl_event of its last record (a marker). */
#ifndef HWPORT_OPENCL_INTERNAL_H
#define HWPORT_OPENCL_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <CL/cl.h>

#include "hwport/device.h"
#include "hwport/kernel.h"
#include "hwport/plugin.h"
#include "hwport/types.h"
#include "plugin_support.h"

#define OCL_PLUGIN_VERSION "0.1.0"
#define OCL_MAX_DEVICES 64
#define OCL_MAX_PLATFORMS 16
#define OCL_ERROR_LEN 512

#if defined(__GNUC__)
#define OCL_LIKELY(x) __builtin_expect(!!(x), 1)
#define OCL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define OCL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OCL_LIKELY(x) (x)
#define OCL_UNLIKELY(x) (x)
#define OCL_PRINTF(f, a)
#endif

/* ---- errors.c: thread-local last error, OpenCL error names, logging ----------------------- */

/* The shared plugin support (device_plugins/common) under this plugin's names. */
#define ocl_error hwps_error
#define ocl_get_last_error hwps_last_error
#define ocl_set_host(host) hwps_set_host((host), "opencl")
#define ocl_log hwps_log
/* Turns a failed cl* call into a status: CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES
 * and CL_OUT_OF_HOST_MEMORY are HWP_ERROR_OUT_OF_MEMORY, anything else HWP_ERROR_DEVICE. The
 * message names the hwport function, the cl* call and the OpenCL error. */
HWP_Status ocl_cl_error(cl_int err, const char *fn, const char *call);
const char *ocl_cl_error_name(cl_int err);

/* ---- device.c: discovery (once, at init) and the device table ----------------------------- */

typedef struct ocl_stream ocl_stream;

typedef struct ocl_mem_stats {
  uint64_t in_use, peak, num_allocs, num_frees;
} ocl_mem_stats;

typedef struct ocl_device {
  cl_platform_id platform;
  cl_device_id id;
  int32_t platform_slot; /* index into g_ocl.contexts */
  char name[256];
  char vendor[128];
  char driver_version[64];
  char platform_name[128];
  uint64_t global_memory;
  uint64_t max_alloc;
  uint64_t alignment; /* bytes */
  int32_t compute_units;
  int32_t max_work_group_size;
  uint64_t memory_limit; /* the plugin's cap on bytes in use */
  int has_fp16;          /* cl_khr_fp16: the device computes in half (the plugin need not) */
  /* The architecture property: OpenCL itself names none, so these stay "" and 0.0 unless a
   * vendor extension gives one (device.c: arch_of). */
  char architecture[64];
  int32_t arch_major, arch_minor;

  /* Guarded by mu. */
  pthread_mutex_t mu;
  cl_command_queue sync_queue; /* internal queue for synchronous work; created lazily */
  ocl_stream *streams;         /* live streams (doubly linked) */
  ocl_mem_stats stats; /* guarded by memory.c's lock, not mu */
} ocl_device;

typedef struct ocl_config {
  int32_t num_devices;
  ocl_device devices[OCL_MAX_DEVICES];
  int32_t num_platforms;
  cl_platform_id platforms[OCL_MAX_PLATFORMS];
  cl_context contexts[OCL_MAX_PLATFORMS]; /* created lazily, guarded by context_mu */
  pthread_mutex_t context_mu;
  char why_none[OCL_ERROR_LEN]; /* when num_devices == 0: why */
} ocl_config;

extern ocl_config g_ocl;

void ocl_config_init(void); /* idempotent: the first call discovers the devices */
/* Whether `name` is one of the device's CL_DEVICE_EXTENSIONS (a whole token). */
int ocl_device_has_extension(cl_device_id id, const char *name);
/* kernels_elementwise.c: CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE of the float32 `add`
 * kernel (built on first call, then remembered); 1 when it cannot be built. */
int32_t ocl_ew_preferred_multiple(int32_t device);
extern const HWP_DeviceTable ocl_device_table;

static inline HWP_Status ocl_check_device(int32_t device, const char *fn) {
  if (OCL_LIKELY(device >= 0 && device < g_ocl.num_devices)) return HWP_OK;
  return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: device %d out of range [0, %d)", fn,
                   (int)device, (int)g_ocl.num_devices);
}

/* The context of `device` (created on first use). */
HWP_Status ocl_context(int32_t device, cl_context *out, const char *fn);
/* The device's internal queue for synchronous work (created on first use). */
HWP_Status ocl_sync_queue(int32_t device, cl_command_queue *out, const char *fn);

/* ---- profiler.c: device time (ABI 1.2) ----------------------------------------------------- */

extern const HWP_ProfilerTable ocl_profiler_table;
/* Whether a launch with `correlation_id` on `device` is timed (then it passes an event). */
int ocl_profiling(int32_t device, uint64_t correlation_id);
/* Takes `event` (released once read, or at once if profiling stopped meanwhile). */
void ocl_profiler_track(int32_t device, uint64_t correlation_id, const char *name,
                        cl_event event);
/* Every queue profiles (the flag cannot be set later, when profiling starts). */
#define OCL_QUEUE_PROPERTIES CL_QUEUE_PROFILING_ENABLE

/* ---- memory.c ------------------------------------------------------------------------------ */

extern const HWP_MemoryTable ocl_memory_table;
/* Releases every buffer still live (at shutdown). */
void ocl_memory_shutdown(void);
/* HWP_OK when [offset, offset + nbytes) lies in a live buffer of the plugin, else an
 * INVALID_ARGUMENT error naming `what` (e.g. "argument 2") and the range. */
HWP_Status ocl_buffer_range(HWP_Buffer buf, uint64_t offset, uint64_t nbytes, const char *fn,
                            const char *what);

/* ---- stream.c ------------------------------------------------------------------------------ */

struct ocl_stream {
  cl_command_queue queue;
  int32_t device;
  uint64_t magic;
  ocl_stream *prev, *next; /* in the device's list, guarded by the device's mu */
  uint64_t submitted;      /* atomic: commands enqueued on the queue so far */
  pthread_mutex_t mu;      /* guards last, last_seq and done_seq */
  cl_event last;           /* query_stream's marker: completes after the first last_seq, or NULL */
  uint64_t last_seq;
  uint64_t done_seq; /* the first done_seq commands are known to have completed */
  cl_context ctx;    /* the queue's */
  pthread_mutex_t gate_mu; /* guards gate, gate_since and gated (stream_gate.c) */
  cl_event gate;           /* the user event launches wait behind, or NULL (open) */
  uint64_t gate_since;     /* when the gate was put there, us (CLOCK_MONOTONIC) */
  uint32_t gated;          /* launches behind the gate */
  int in_burst;            /* the last command on the stream was a launch (cleared by opens) */
  uint64_t last_launch_us; /* when that launch was enqueued */
  uint32_t burst_len;      /* launches in the current burst, after its first */
};

/* stream_gate.c: a stream's kernel launches are batched behind a gate (a marker waiting on a
 * user event), opened before anything else is enqueued on the stream or waits for it, after
 * a number of launches, or by the gate thread shortly after it was put there. */
/* Before a launch of `items` work-items on s's queue q: puts a gate there when the launch is
 * part of a long burst of small ones and none is there (or opens it for a big launch);
 * returns whether the launch fills the gate (then open it after the enqueue). s NULL:
 * nothing (returns 0). */
int ocl_gate_before_launch(ocl_stream *s, cl_command_queue q, uint64_t items);
/* Whether s has a closed gate (then a launch need not be flushed: opening flushes). */
int ocl_gate_closed(const ocl_stream *s);
/* Opens s's gate, if any (s may be NULL), and flushes the queue. */
void ocl_gate_open(ocl_stream *s);
/* Stops the gate thread (at shutdown, before the streams are released). */
void ocl_gate_shutdown(void);

/* The queue of `stream` on `device` (validated), or an INVALID_ARGUMENT error; opens the
 * stream's gate (whatever the caller enqueues or waits for then runs after the launches). */
HWP_Status ocl_stream_queue(int32_t device, HWP_Stream stream, cl_command_queue *out,
                            const char *fn);
/* The same without opening the gate: for kernel ops, whose launches go behind it. */
HWP_Status ocl_stream_queue_for_launch(int32_t device, HWP_Stream stream, cl_command_queue *out,
                                       const char *fn);

/* Counts one command just enqueued on `stream` (NULL: nothing to count); `ev`, its event or
 * NULL, is released. query_stream reports the stream idle when every counted command has
 * completed, through a marker it enqueues itself, so launches need no event (PoCL allocates,
 * signals and frees one per command that asks; the plugin's tracking took a lock per launch). EVERY command enqueued on a stream's queue (copies, fills,
 * markers, barriers, kernels) must be counted here, right after the enqueue. */
void ocl_stream_track(HWP_Stream stream, cl_event ev);

/* Blocks until every queue of `device` (its streams and the internal one) has finished. */
HWP_Status ocl_synchronize_device(int32_t device, const char *fn);

/* Releases every stream still live (at shutdown). */
void ocl_stream_shutdown(void);

extern const HWP_StreamTable ocl_stream_table;

#endif /* HWPORT_OPENCL_INTERNAL_H */
