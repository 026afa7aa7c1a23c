/* hwport C ABI v1 — the collective communication (CCL) table (optional; filled in ABI 1.2).
 *
 * A plugin whose device has its own collective library (NCCL, RCCL, HCCL, ...) fills this table.
 * A plugin that leaves HWP_PluginApi.ccl NULL, or whose table predates 1.2 (struct_size covers
 * only struct_size), gets the host's MPI adapter instead: host-memory devices exchange their
 * buffers directly, other devices are staged through host memory, stream-ordered.
 *
 * The model is NCCL's. One process per rank; rank 0 of a future communicator calls
 * get_unique_id, the host distributes the id out of band (over MPI), and every member calls
 * comm_init with the same (nranks, id), its own rank and its device. Collectives take buffers as
 * (HWP_Buffer, byte offset) on `device`'s memory and are ordered on `stream` (NULL: the device's
 * synchronous stream): they may return before the data has moved, and work submitted to the
 * stream afterwards sees the result. Every member must issue the same collectives on a
 * communicator in the same order; the MPI adapter requires the rank that created the id to
 * be a member. `count` is in elements of `dtype` (every HWP_DType; a table
 * returns HWP_ERROR_NOT_SUPPORTED for a dtype or reduction it cannot do); count 0 is valid and
 * moves nothing. In-place calls pass the same (buffer, offset) for send and receive where the
 * comment allows it.
 *
 * Errors are values: a failed call returns a status with the reason in get_last_error (of the
 * plugin, or of the adapter). A collective that cannot complete — a peer that never joins, a
 * peer that died — must not hang forever where the library can detect it: it returns an error
 * (HWP_ERROR_DEVICE) or reports it through comm_get_async_error, and comm_abort then releases
 * the communicator without waiting for peers.
 *
 * Thread safety: calls on different communicators may run concurrently; calls on one
 * communicator are serialized by the host. group_start/group_end nest per calling thread. */
#ifndef HWPORT_CCL_H
#define HWPORT_CCL_H

#include "hwport/device.h"
#include "hwport/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque plugin-defined communicator: one rank's membership in one group on one device. */
typedef struct HWP_CclComm_st *HWP_CclComm;

/* The largest unique id any table may use (NCCL's is 128 bytes). */
#define HWP_CCL_UNIQUE_ID_MAX_BYTES 128

/* Reductions. Values are part of the ABI and never change. AVG is SUM divided by nranks (for
 * integer dtypes, truncated toward zero). For BOOL, SUM and MAX are logical or, PROD and MIN
 * logical and, AVG is not supported. */
typedef int32_t HWP_CclReduceOp;
enum HWP_CclReduceOpCode {
  HWP_CCL_SUM = 0,
  HWP_CCL_PROD = 1,
  HWP_CCL_MAX = 2,
  HWP_CCL_MIN = 3,
  HWP_CCL_AVG = 4,
  HWP_CCL_REDUCE_OP_COUNT = 5
};

typedef struct HWP_CclTable {
  size_t struct_size;

  /* ---- ABI 1.2. Everything from here to group_end is required in a 1.2 table (a table whose
   * struct_size does not cover group_end counts as absent); the functions after it are
   * optional. ---- */

  /* Bytes of a unique id, 1..HWP_CCL_UNIQUE_ID_MAX_BYTES. */
  uint32_t unique_id_size;

  /* Writes a new unique id (unique_id_size bytes) to `id`. Called by one rank; the id is
   * plain bytes the host copies to the other ranks. */
  HWP_Status (*get_unique_id)(void *id);

  /* Collective over the `nranks` members: each calls it with the same id and its own `rank`
   * (0..nranks-1) and `device` (an index of this plugin). Blocks until every member joined or
   * the library gives up. Ownership: the host releases *out with comm_destroy or comm_abort. */
  HWP_Status (*comm_init)(int32_t nranks, int32_t rank, const void *id, int32_t device,
                          HWP_CclComm *out);

  /* Collective over `comm`'s members: members with the same `color` (>= 0) form a new
   * communicator, ranked by (key, old rank); a member passing color < 0 joins none and gets
   * *out = NULL. Ownership as comm_init's. */
  HWP_Status (*comm_split)(HWP_CclComm comm, int32_t color, int32_t key, HWP_CclComm *out);

  /* Releases a communicator after its pending work completed (waits for it). NULL: no-op. */
  HWP_Status (*comm_destroy)(HWP_CclComm comm);

  /* Releases a communicator at once, abandoning pending work, without waiting for peers
   * (after an error or a timeout). NULL: no-op. */
  HWP_Status (*comm_abort)(HWP_CclComm comm);

  /* Sets *error to HWP_OK, or to the error a collective on `comm` ran into after it returned
   * (the message through get_last_error on this call). */
  HWP_Status (*comm_get_async_error)(HWP_CclComm comm, HWP_Status *error);

  /* recv[i] = op over ranks of send[i], i < count, on every rank. In place: send == recv. */
  HWP_Status (*all_reduce)(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                           uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                           HWP_CclReduceOp op, HWP_CclComm comm, HWP_Stream stream);

  /* `count` elements of root's send go to every rank's recv (root: send may equal recv;
   * other ranks ignore send). */
  HWP_Status (*broadcast)(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                          uint64_t recv_offset, uint64_t count, HWP_DType dtype, int32_t root,
                          HWP_CclComm comm, HWP_Stream stream);

  /* recv holds nranks * count elements: rank r's `count` elements of send at r * count.
   * In place: send == recv + rank * count elements. */
  HWP_Status (*all_gather)(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                           uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                           HWP_CclComm comm, HWP_Stream stream);

  /* Point to point: `count` elements to / from rank `peer`. Matched in issue order per pair.
   * Outside a group each call may block until the peer posts its side. */
  HWP_Status (*send)(HWP_Buffer buffer, uint64_t offset, uint64_t count, HWP_DType dtype,
                     int32_t peer, HWP_CclComm comm, HWP_Stream stream);
  HWP_Status (*recv)(HWP_Buffer buffer, uint64_t offset, uint64_t count, HWP_DType dtype,
                     int32_t peer, HWP_CclComm comm, HWP_Stream stream);

  /* Calls between group_start and group_end (per thread, nesting) are issued together at
   * the outermost group_end, so matching sends and receives in any order cannot deadlock. */
  HWP_Status (*group_start)(void);
  HWP_Status (*group_end)(void);

  /* ---- Optional (NULL: the host's fallback, built from the functions above). ---- */

  /* As all_reduce, but only root's recv receives the result (others' recv is untouched).
   * Fallback: all_reduce into a scratch buffer, root copies it to recv. */
  HWP_Status (*reduce)(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                       uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                       HWP_CclReduceOp op, int32_t root, HWP_CclComm comm, HWP_Stream stream);

  /* send holds nranks * count elements; rank r's recv gets the reduction over ranks of
   * send[r * count .. (r + 1) * count). Fallback: all_reduce into a scratch buffer, each rank
   * copies its block. */
  HWP_Status (*reduce_scatter)(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                               uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                               HWP_CclReduceOp op, HWP_CclComm comm, HWP_Stream stream);

  /* send and recv hold nranks * count elements: block j of rank i's send goes to block i of
   * rank j's recv. Not in place. Fallback: a group of send/recv pairs. */
  HWP_Status (*all_to_all)(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                           uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                           HWP_CclComm comm, HWP_Stream stream);
} HWP_CclTable;

/* ---- Adapters -----------------------------------------------------------------------------
 * An adapter is a CCL table that is not part of a device plugin: the host's MPI adapter
 * (ccl_adapters/mpi) or NCCL adapter (ccl_adapters/nccl), which serve any plugin without a
 * table of its own. It is a shared library exporting
 *
 *   HWP_EXPORT HWP_Status hwport_ccl_adapter_init(const HWP_CclAdapterHost *host,
 *                                                 const HWP_CclTable **out,
 *                                                 const char *(**get_last_error)(void));
 *
 * It fills *out with a table it owns (valid until the process exits) and *get_last_error with
 * the function that returns the calling thread's last message. On failure (its library is
 * missing, say) it returns a status and the host goes on without it.
 *
 * Its table takes the host's *global* device ids (one per (plugin, device)) where a plugin's
 * takes its own indices; the adapter asks the host how to reach each device's memory. */

/* How an adapter reaches one device: the plugin's own tables (valid until the process
 * exits). `flags` are HWP_DeviceProperties.flags (HWP_DEVICE_HOST_MEMORY: buffers are host
 * memory reachable through memory->host_address). */
typedef struct HWP_CclDeviceAccess {
  size_t struct_size;
  int32_t device; /* the plugin's own index of the device */
  uint32_t flags;
  const HWP_DeviceTable *device_table;
  const HWP_MemoryTable *memory;
  const HWP_StreamTable *stream; /* NULL: the plugin has no stream table */
  const char *(*get_last_error)(void);  /* the plugin's */
  int32_t dlpack_device_type;           /* HWP_DeviceProperties.dlpack_device_type */
  int32_t dlpack_device_id;
} HWP_CclDeviceAccess;

typedef struct HWP_CclAdapterHost {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  void *host_context;
  /* Fills *out (out->struct_size set by the adapter) for a global device id. */
  HWP_Status (*describe_device)(void *host_context, int32_t global_device,
                                HWP_CclDeviceAccess *out);
  void (*log)(void *host_context, int32_t level, const char *message);
} HWP_CclAdapterHost;

typedef HWP_Status (*HWP_CclAdapterInitFn)(const HWP_CclAdapterHost *host,
                                           const HWP_CclTable **out,
                                           const char *(**get_last_error)(void));

#define HWP_CCL_ADAPTER_INIT_SYMBOL "hwport_ccl_adapter_init"

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_CCL_H */
