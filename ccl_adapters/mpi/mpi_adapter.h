/* hwport MPI adapter — the CCL table over MPI for any device (ccl_adapters/mpi).
 *
 * Host-memory devices hand MPI their buffers' host addresses; other devices are staged through
 * host memory with the plugin's copies, ordered after the stream's earlier work. Every
 * collective is issued non-blocking and polled by the watchdog (mpi_wait.c), so a rank that
 * never arrives makes the others return an error naming it instead of hanging. */
#ifndef HWPORT_MPI_ADAPTER_H
#define HWPORT_MPI_ADAPTER_H

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>

#include "hwport/ccl.h"

#if defined(__GNUC__)
#define MPI_ADAPTER_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define MPI_ADAPTER_PRINTF(f, a)
#endif

/* What each collective is called in messages and in the published progress slot. */
enum MpiCollective {
  MPI_COLL_ALL_REDUCE = 1,
  MPI_COLL_BROADCAST,
  MPI_COLL_REDUCE,
  MPI_COLL_ALL_GATHER,
  MPI_COLL_REDUCE_SCATTER,
  MPI_COLL_ALL_TO_ALL,
  MPI_COLL_SEND,
  MPI_COLL_RECV,
  MPI_COLL_COUNT
};

struct HWP_CclComm_st {
  MPI_Comm comm;
  int rank, nranks;
  int *world_ranks; /* world rank of each member */
  uint64_t uid;     /* the same on every member: names the communicator in progress slots */
  uint64_t splits;  /* comm_split calls so far (the same on every member) */
  int32_t global_device;
  HWP_CclDeviceAccess dev;
  uint64_t seq; /* collectives issued on this communicator */
  /* Arrival entries in node-shared memory (mpi_wait.c), when every member runs on this node:
   * arrive_mine is this process's entry for the communicator, arrive_peer[r] member r's (NULL
   * for this rank). NULL arrays: the members announce themselves with a small all-gather. */
  int64_t *arrive_mine;
  int64_t **arrive_peer;
  int arrive_index; /* the entry's index in this process's table, -1 when none */
  int aborted;
  HWP_Status async_error;
  char async_message[1024];
};

/* ---- mpi_comm.c ---- */
extern const HWP_CclAdapterHost *g_mpi_host;
/* Serializes MPI calls when the library is not MPI_THREAD_MULTIPLE; held only around calls. */
void mpi_lock(void);
void mpi_unlock(void);
HWP_Status mpi_error(HWP_Status code, const char *fmt, ...) MPI_ADAPTER_PRINTF(2, 3);
const char *mpi_last_error(void);
/* The MPI library's text for an MPI error code. */
const char *mpi_error_text(int rc);

/* ---- mpi_wait.c: the watchdog ---- */
/* Seconds a collective may take before it fails (HWPORT_CCL_TIMEOUT, default 600). */
double mpi_timeout_seconds(void);
/* Publishes that this process started collective `seq` (`what`) on `comm`. */
void mpi_publish_progress(HWP_CclComm comm, uint64_t seq, int what);
/* Waits for `n` requests; past the timeout, returns HWP_ERROR_DEVICE naming the ranks that did
 * not arrive and marks `comm` aborted (comm may be NULL for bootstrap traffic; `peer` is the
 * other rank of a send/recv, -1 for collectives). */
HWP_Status mpi_wait_all(HWP_CclComm comm, int n, MPI_Request *requests, const char *what,
                        uint64_t seq, int peer, int may_sleep);
/* Outside a group, before a blocking collective: waits until every member has started
 * collective `seq` on `comm`, comparing kinds. Members on one node read each other's arrival
 * entries in shared memory (no message, no MPI call); others exchange (seq, kind) in a small
 * non-blocking all-gather. A member in another collective fails every member at once, one that
 * never comes fails them at the timeout. */
HWP_Status mpi_arrive(HWP_CclComm comm, uint64_t seq, int what);
/* Collective over `comm`'s members, when it is created: gives it arrival entries in shared
 * memory if every member has one (else it keeps the all-gather). Never fails the creation. */
void mpi_arrival_attach(HWP_CclComm comm);
/* Local: frees this process's arrival entry of `comm`. */
void mpi_arrival_detach(HWP_CclComm comm);
/* Fails every later call on `comm` (and makes the process end the job at exit). */
void mpi_mark_aborted(HWP_CclComm comm, const char *message);
/* Collective over MPI_COMM_WORLD at adapter init: the window of progress slots. */
HWP_Status mpi_progress_init(void);
const char *mpi_collective_name(int what);

/* ---- mpi_types.c ---- */
HWP_Status mpi_datatype(HWP_DType dtype, MPI_Datatype *out);
HWP_Status mpi_reduce_op(HWP_DType dtype, HWP_CclReduceOp op, MPI_Op *out);
void mpi_scale_average(void *data, uint64_t count, HWP_DType dtype, int nranks);
size_t mpi_dtype_size(HWP_DType dtype);

/* ---- mpi_collectives.c: the table's data movement ---- */
HWP_Status mpi_ccl_all_reduce(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                             uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                             HWP_CclReduceOp red, HWP_CclComm comm, HWP_Stream stream);
HWP_Status mpi_ccl_broadcast(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                            uint64_t recv_offset, uint64_t count, HWP_DType dtype, int32_t root,
                            HWP_CclComm comm, HWP_Stream stream);
HWP_Status mpi_ccl_reduce(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                         uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                         HWP_CclReduceOp red, int32_t root, HWP_CclComm comm, HWP_Stream stream);
HWP_Status mpi_ccl_all_gather(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                             uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                             HWP_CclComm comm, HWP_Stream stream);
HWP_Status mpi_ccl_reduce_scatter(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                                 uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                                 HWP_CclReduceOp red, HWP_CclComm comm, HWP_Stream stream);
HWP_Status mpi_ccl_all_to_all(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                             uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                             HWP_CclComm comm, HWP_Stream stream);
HWP_Status mpi_ccl_send(HWP_Buffer buffer, uint64_t offset, uint64_t count, HWP_DType dtype,
                        int32_t peer, HWP_CclComm comm, HWP_Stream stream);
HWP_Status mpi_ccl_recv(HWP_Buffer buffer, uint64_t offset, uint64_t count, HWP_DType dtype,
                        int32_t peer, HWP_CclComm comm, HWP_Stream stream);
HWP_Status mpi_ccl_group_start(void);
HWP_Status mpi_ccl_group_end(void);

#endif /* HWPORT_MPI_ADAPTER_H */
