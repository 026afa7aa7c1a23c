/* hwport C ABI v1 — the device, memory, and stream/event tables a plugin provides.
 *
 * Conventions for every function below:
 * - Returns HWP_OK or an error code; on error the message is available from
 *   HWP_PluginApi.get_last_error on the same thread, and out parameters are left untouched.
 * - `device` is an index in [0, get_device_count()); an index out of range returns
 *   HWP_ERROR_INVALID_ARGUMENT.
 * - Thread safety: every function may be called concurrently from any host thread, for the
 *   same or different devices, unless its comment says otherwise.
 * - Optional functions may be NULL; the host then uses the fallback written next to each.
 * - Tables are append-only: required functions come first, so a table whose struct_size covers
 *   the required part is valid even if it predates later optional fields. */
#ifndef HWPORT_DEVICE_H
#define HWPORT_DEVICE_H

#include "hwport/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device property flags. */
enum HWP_DeviceFlag {
  /* Buffers are ordinary host memory: memory.host_address returns a pointer that the host may
   * read and write once the device is synchronized (enables zero-copy DLPack with numpy). */
  HWP_DEVICE_HOST_MEMORY = 1u << 0,
  /* ABI 1.1. The device computes in float16 / bfloat16 natively (not only stores it): kernels
   * of these dtypes run at the type's own precision and speed. Informational. */
  HWP_DEVICE_FLOAT16_ARITHMETIC = 1u << 1,
  HWP_DEVICE_BFLOAT16_ARITHMETIC = 1u << 2
};

/* DLPack device types (DLDeviceType of dlpack.h 1.x) that HWP_DeviceProperties.dlpack_device_type
 * may name: the device-memory kinds (host, pinned-host and managed memory exchange as kDLCPU
 * through HWP_DEVICE_HOST_MEMORY instead). The values are DLPack's. */
enum HWP_DLPackDeviceType {
  HWP_DLPACK_NONE = 0, /* device memory is not exchanged zero-copy */
  HWP_DLPACK_CUDA = 2,
  HWP_DLPACK_OPENCL = 4,
  HWP_DLPACK_VULKAN = 7,
  HWP_DLPACK_METAL = 8,
  HWP_DLPACK_VPI = 9,
  HWP_DLPACK_ROCM = 10,
  HWP_DLPACK_EXT_DEV = 12, /* a vendor's own device memory */
  HWP_DLPACK_ONEAPI = 14,
  HWP_DLPACK_WEBGPU = 15,
  HWP_DLPACK_HEXAGON = 16,
  HWP_DLPACK_MAIA = 17
};

typedef struct HWP_DeviceProperties {
  size_t struct_size;       /* set by the host to its sizeof before the call */
  char name[256];           /* UTF-8, NUL-terminated */
  char vendor[128];
  char driver_version[64];
  uint64_t total_memory;    /* bytes the host may allocate on this device */
  uint64_t memory_alignment;/* byte alignment of every allocation */
  int32_t compute_units;
  int32_t max_work_group_size;
  uint32_t flags;           /* HWP_DeviceFlag bits */
  /* ---- ABI 1.1 (a host reads these only when struct_size covers them) ---- */
  uint64_t max_allocation;  /* the largest single allocation in bytes; 0: total_memory */
  char architecture[64];    /* the instruction-set generation as the vendor names it, e.g.
                             * "sm_90" (CUDA compute capability 9.0); "" if none */
  int32_t architecture_major; /* its number where the vendor numbers them (compute capability
                               * 9.0 is 9, 0); 0, 0 if none */
  int32_t architecture_minor;
  int32_t simd_width;       /* work-items that execute in lockstep: the CUDA warp size, OpenCL's
                             * preferred work-group size multiple; 1 if none */
  int32_t max_threads_per_compute_unit; /* resident work-items per compute unit; 0 if unknown */
  int32_t dlpack_device_type; /* HWP_DLPackDeviceType under which other frameworks address
                               * this device's memory (memory.device_address); 0 if none.
                               * HWP_DEVICE_HOST_MEMORY devices exchange as kDLCPU instead. */
  int32_t dlpack_device_id; /* the device's id in that DLPack device type (the CUDA ordinal) */
} HWP_DeviceProperties;

typedef struct HWP_MemoryStats {
  size_t struct_size;         /* set by the host to its sizeof before the call */
  uint64_t bytes_in_use;      /* allocated and not yet freed, as the plugin accounts it */
  uint64_t peak_bytes_in_use;
  uint64_t bytes_limit;       /* the most this device will hand out; 0 if unknown */
  uint64_t num_allocs;        /* successful allocate calls since load */
  uint64_t num_frees;         /* deallocate calls on live buffers since load */
} HWP_MemoryStats;

/* ---- device table --------------------------------------------------------------------- */
typedef struct HWP_DeviceTable {
  size_t struct_size;

  /* REQUIRED. Number of devices; 0 is valid (e.g. a driver is missing: get_last_error should
   * then say why, while the call still returns HWP_OK). */
  HWP_Status (*get_device_count)(int32_t *count);

  /* REQUIRED. Blocks until all work submitted to `device`, on every stream, has completed. */
  HWP_Status (*synchronize_device)(int32_t device);

  /* Optional. Fills `props` (up to props->struct_size). Fallback: empty name, vendor and driver
   * version, no flags, no alignment known (docs/abi.md section 4). */
  HWP_Status (*get_properties)(int32_t device, HWP_DeviceProperties *props);

  /* Optional. Called once per device before first use / at host shutdown. Fallback: nothing. */
  HWP_Status (*init_device)(int32_t device);
  HWP_Status (*deinit_device)(int32_t device);

  /* Optional. Tells the plugin which device the calling thread now uses (for runtimes with a
   * per-thread current device). Fallback: nothing; every call passes the device anyway. */
  HWP_Status (*set_device)(int32_t device);
} HWP_DeviceTable;

/* ---- memory table --------------------------------------------------------------------- */
typedef struct HWP_MemoryTable {
  size_t struct_size;

  /* REQUIRED. Allocates `nbytes` (> 0) of device memory, aligned to memory_alignment.
   * Ownership: the host owns the returned buffer and releases it with deallocate.
   * Returns HWP_ERROR_OUT_OF_MEMORY when the device cannot satisfy the request. */
  HWP_Status (*allocate)(int32_t device, uint64_t nbytes, HWP_Buffer *out);

  /* REQUIRED. Releases a buffer from allocate. NULL is a no-op. The host guarantees no
   * enqueued work still uses the buffer (it synchronizes first). */
  HWP_Status (*deallocate)(int32_t device, HWP_Buffer buffer);

  /* REQUIRED. Synchronous copies: each waits for all work already submitted to `device`, then
   * copies, then returns with the copy complete (host memory may be reused at once). */
  HWP_Status (*copy_h2d)(int32_t device, HWP_Buffer dst, uint64_t dst_offset, const void *src,
                         uint64_t nbytes);
  HWP_Status (*copy_d2h)(int32_t device, void *dst, HWP_Buffer src, uint64_t src_offset,
                         uint64_t nbytes);
  HWP_Status (*copy_d2d)(int32_t device, HWP_Buffer dst, uint64_t dst_offset, HWP_Buffer src,
                         uint64_t src_offset, uint64_t nbytes);

  /* Optional. Stream-ordered copies: enqueued on `stream` after its earlier work; they return
   * at once. The host keeps `src`/`dst` host memory alive and unchanged until the stream
   * completes past the copy. Fallback: synchronize the stream, then the synchronous copy. */
  HWP_Status (*copy_h2d_async)(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                               uint64_t dst_offset, const void *src, uint64_t nbytes);
  HWP_Status (*copy_d2h_async)(int32_t device, HWP_Stream stream, void *dst, HWP_Buffer src,
                               uint64_t src_offset, uint64_t nbytes);
  HWP_Status (*copy_d2d_async)(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                               uint64_t dst_offset, HWP_Buffer src, uint64_t src_offset,
                               uint64_t nbytes);

  /* Optional. Stream-ordered fill of `nbytes` bytes with `value`.
   * Fallback: a host buffer of `value` bytes and copy_h2d. */
  HWP_Status (*memset_async)(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                             uint64_t dst_offset, uint8_t value, uint64_t nbytes);

  /* Optional. The plugin's own accounting (stats->struct_size set by the host).
   * Fallback: the host reports only its own allocator's view. */
  HWP_Status (*get_memory_stats)(int32_t device, HWP_MemoryStats *stats);

  /* Optional, only for HWP_DEVICE_HOST_MEMORY devices: the host address of byte `offset` of
   * `buffer`. Fallback: no zero-copy exchange; data is copied. */
  HWP_Status (*host_address)(int32_t device, HWP_Buffer buffer, uint64_t offset, void **out);

  /* Optional, only for HWP_DEVICE_HOST_MEMORY devices: wraps `nbytes` of host memory that the
   * host keeps alive as a buffer usable in kernels and copies, without copying it. The wrapped
   * buffer is released with release_host_buffer (never deallocate) and does not count in the
   * memory stats. Fallback: data imported from the host is copied. */
  HWP_Status (*wrap_host_memory)(int32_t device, void *host_ptr, uint64_t nbytes,
                                 HWP_Buffer *out);
  HWP_Status (*release_host_buffer)(int32_t device, HWP_Buffer buffer);

  /* ---- ABI 1.1: zero-copy exchange of device memory with other frameworks (DLPack), for
   * devices whose properties name a dlpack_device_type. ---- */

  /* Optional. The address under which other frameworks on this device reach byte `offset` of
   * `buffer` (for CUDA the device pointer): DLPack's data pointer. Fallback: tensors of this
   * device are not exported; users copy through the host. */
  HWP_Status (*device_address)(int32_t device, HWP_Buffer buffer, uint64_t offset, void **out);

  /* Optional. Wraps `nbytes` of this device's memory at `address` (as device_address gives
   * it), which another framework allocated and the host keeps alive until it releases the
   * buffer, as a buffer usable in kernels and copies, without copying. Released with
   * release_device_buffer (never deallocate); not counted in the memory stats. Fallback:
   * importing such memory is refused with an error that says so. */
  HWP_Status (*wrap_device_memory)(int32_t device, void *address, uint64_t nbytes,
                                   HWP_Buffer *out);
  HWP_Status (*release_device_buffer)(int32_t device, HWP_Buffer buffer);
} HWP_MemoryTable;

/* ---- stream and event table (optional as a whole) ---------------------------------------
 * A stream executes its work in submission order; work on different streams may overlap.
 * Ownership: the plugin owns streams and events; the host destroys what it created.
 * Destroying NULL is a no-op. Destroying a stream waits for its pending work.
 * Fallback when the table is absent: one implicit in-order stream per device (stream
 * arguments are NULL) and events are replaced by synchronize_device.
 * A NULL stream passed to a stream-ordered call (kernel, async copy, memset) means
 * synchronous: the call waits for the device's earlier work, does its own, and returns with it
 * complete. An event may be waited on by a stream of another device of the same plugin. */
typedef struct HWP_StreamTable {
  size_t struct_size;
  HWP_Status (*create_stream)(int32_t device, HWP_Stream *out);
  HWP_Status (*destroy_stream)(int32_t device, HWP_Stream stream);
  /* Blocks until all work submitted to `stream` has completed. */
  HWP_Status (*synchronize_stream)(int32_t device, HWP_Stream stream);
  /* HWP_OK when all submitted work completed, HWP_ERROR_NOT_READY otherwise. Optional;
   * fallback: synchronize_stream then HWP_OK. */
  HWP_Status (*query_stream)(int32_t device, HWP_Stream stream);

  HWP_Status (*create_event)(int32_t device, HWP_Event *out);
  HWP_Status (*destroy_event)(int32_t device, HWP_Event event);
  /* Captures the work submitted to `stream` so far; the event completes when that work has.
   * Recording again replaces what the event waits for. An event never recorded is complete. */
  HWP_Status (*record_event)(int32_t device, HWP_Stream stream, HWP_Event event);
  /* Blocks the host until the event's captured work has completed. */
  HWP_Status (*synchronize_event)(int32_t device, HWP_Event event);
  /* HWP_OK when complete, HWP_ERROR_NOT_READY otherwise. */
  HWP_Status (*query_event)(int32_t device, HWP_Event event);
  /* Makes work submitted to `stream` after this call wait until `event` completes (as recorded
   * at the time of this call), without blocking the host. Waits accumulate: after several calls
   * the stream waits for every event. `device` is the stream's; the event may have been
   * recorded on another device's stream (docs/abi.md, "Implicit ordering"). */
  HWP_Status (*stream_wait_event)(int32_t device, HWP_Stream stream, HWP_Event event);

  /* ---- ABI 1.1: stream exchange with other frameworks (DLPack's `stream` argument). A native
   * stream is a handle of the device's own runtime as DLPack passes it (for CUDA: 1 is the
   * legacy default stream, 2 the per-thread default stream, any other value a cudaStream_t). */

  /* Optional. The native handle of the queue on which work submitted to `stream` runs (for the
   * NULL stream, the one synchronous work uses). Fallback: the host imports foreign memory
   * without naming a stream, and synchronizes the device before using it. */
  HWP_Status (*native_stream)(int32_t device, HWP_Stream stream, uintptr_t *out);

  /* Optional. Makes the foreign native stream `native` wait, without blocking the host, for all
   * work submitted to `stream` so far. Fallback: the host synchronizes `stream` instead. */
  HWP_Status (*native_stream_wait)(int32_t device, uintptr_t native, HWP_Stream stream);
} HWP_StreamTable;

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_DEVICE_H */
