/* hwport CUDA plugin — declarations shared by the plugin's source files (not part of any ABI).
 *
 * One hwport device per CUDA device the runtime enumerates. A buffer is a device pointer from
 * cudaMalloc (never managed memory), or device memory another framework allocated and the host
 * wrapped (wrap_device_memory); positions inside it are (buffer, byte offset). A stream is
 * a non-blocking CUDA stream; an event a CUDA event without timing. Every call first makes its
 * device current on the calling thread (cudaSetDevice is cheap when it already is).
 *
 * Included from C (the runtime: device.c, memory.c, stream.c, errors.c) and from CUDA C++ (the
 * kernels), hence the extern "C" guard. */
#ifndef HWPORT_CUDA_INTERNAL_H
#define HWPORT_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "hwport/device.h"
#include "hwport/kernel.h"
#include "hwport/plugin.h"
#include "hwport/types.h"
#include "plugin_support.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CU_PLUGIN_VERSION "0.1.0"
#define CU_MAX_DEVICES 64

/* The shared plugin support (device_plugins/common) under this plugin's names. */
#define cu_error hwps_error
#define cu_get_last_error hwps_last_error
#define cu_log hwps_log

/* ---- errors.c ------------------------------------------------------------------------------ */

/* Turns a failed CUDA runtime call into a status and the thread's last-error message, which
 * names the hwport function, the CUDA call, the CUDA error name and its description. A sticky
 * error (the context is unusable: an illegal address, a trap, a launch failure) says so: every
 * later call on that device fails too, and the message tells the user to restart the process.
 * cudaErrorMemoryAllocation -> OUT_OF_MEMORY, cudaErrorInvalidValue and friends ->
 * INVALID_ARGUMENT, cudaErrorNotReady -> NOT_READY, cudaErrorNotSupported -> NOT_SUPPORTED,
 * a missing driver or device -> DEVICE, anything else -> DEVICE. */
HWP_Status cu_cuda_error(cudaError_t err, const char *fn, const char *call);
/* The HWP_Status a CUDA error maps to (see cu_cuda_error). */
HWP_Status cu_status_of(cudaError_t err);
/* Whether `err` leaves the CUDA context unusable for the rest of the process. */
int cu_error_is_sticky(cudaError_t err);

/* ---- device.c ------------------------------------------------------------------------------ */

typedef struct cu_device {
  int ordinal; /* the CUDA device ordinal (cudaSetDevice, DLPack's device id): the plugin's
                * index differs when cu_enumerate skipped a device it could not query */
  char name[256];
  int cc_major, cc_minor;
  uint64_t total_memory;
  int sm_count;
  int max_threads_per_block;
  int warp_size;
  int max_threads_per_sm;
  int has_fp16; /* arithmetic in half precision (cc >= 5.3) */
  int has_bf16; /* native bfloat16 arithmetic (cc >= 8.0); storage works everywhere */
  int memory_pools; /* cudaMallocAsync supported */
} cu_device;

typedef struct cu_config {
  int32_t num_devices;
  cu_device devices[CU_MAX_DEVICES];
  int driver_version, runtime_version;
  char why_none[HWPS_ERROR_LEN]; /* when num_devices == 0: why */
} cu_config;

extern cu_config g_cu;

void cu_config_init(void); /* idempotent: the first call enumerates the devices */
extern const HWP_DeviceTable cu_device_table;

/* Validates `device` and makes its CUDA device (g_cu.devices[device].ordinal) current on the
 * calling thread. */
HWP_Status cu_enter(int32_t device, const char *fn);

/* ---- memory.c ------------------------------------------------------------------------------ */

extern const HWP_MemoryTable cu_memory_table;
/* The device address of byte `offset` of `buffer` (a buffer is its device pointer). */
static inline void *cu_addr(HWP_Buffer buffer, uint64_t offset) {
  return (void *)((char *)buffer + offset);
}
/* Releases every buffer still live (at shutdown). */
void cu_memory_shutdown(void);

/* ---- pinned_staging.c ---------------------------------------------------------------------- */

/* Stream-ordered host copies through pinned staging chunks (`device` is current, `s` one of its
 * streams); without a chunk, a plain cudaMemcpyAsync. The CUDA error of the enqueueing. */
cudaError_t cu_staged_copy_h2d(int32_t device, void *dst, const void *src, size_t nbytes,
                               cudaStream_t s);
cudaError_t cu_staged_copy_d2h(int32_t device, void *dst, const void *src, size_t nbytes,
                               cudaStream_t s);
/* Waits for and frees every staging chunk (at shutdown). */
void cu_staging_shutdown(void);

/* ---- stream.c ------------------------------------------------------------------------------ */

extern const HWP_StreamTable cu_stream_table;
/* The CUDA stream of `stream` on `device` (validated); the NULL stream gives 0 (the device's
 * legacy default stream, used synchronously). */
HWP_Status cu_stream_get(int32_t device, HWP_Stream stream, cudaStream_t *out, const char *fn);
/* Blocks until all work of `device` has finished (cudaDeviceSynchronize). */
HWP_Status cu_synchronize_device(int32_t device, const char *fn);

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_CUDA_INTERNAL_H */
