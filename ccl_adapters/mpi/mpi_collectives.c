/* hwport MPI adapter — the collectives of the CCL table.
 *
 * Each call: check the arguments, order after the stream's earlier work (host-memory devices:
 * synchronize the stream; other devices: copy the inputs to host memory after it), post the
 * non-blocking MPI operation, then — outside a group — wait for it under the watchdog and
 * finish (AVG's division, copying staged results back to the device). Inside a group the
 * posted operations are kept per thread and finished at the outermost group_end. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_adapter.h"

#define MAX_STAGED 3
#define P2P_TAG 7

typedef struct Staged {
  HWP_Buffer buffer;
  uint64_t offset;
  uint64_t bytes;
  char *host; /* owned */
  int write_back;
} Staged;

typedef struct PendingOp {
  HWP_CclComm comm;
  int what;
  uint64_t seq;
  int peer;
  MPI_Request request;
  Staged staged[MAX_STAGED];
  int nstaged;
  /* AVG: divide `avg_count` elements at avg_host by nranks after completion. */
  void *avg_host;
  uint64_t avg_count;
  HWP_DType dtype;
  /* A result received into a temporary (the ranges overlapped): copy it to result_host. */
  char *temp;
  char *result_host;
  uint64_t temp_bytes;
} PendingOp;

static __thread int t_group_depth;
static __thread PendingOp **t_group_ops;
static __thread int t_group_count, t_group_cap;

static void free_op(PendingOp *op) {
  for (int i = 0; i < op->nstaged; i++) free(op->staged[i].host);
  free(op->temp);
  free(op);
}

/* ---- Checks ---- */

static HWP_Status check_call(const char *name, HWP_CclComm comm, uint64_t count, HWP_DType dtype,
                             int root) {
  if (!comm) return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "%s: comm is NULL", name);
  if (comm->aborted)
    return mpi_error(HWP_ERROR_DEVICE, "%s: the communicator was aborted: %s", name,
                     comm->async_message);
  if (!mpi_dtype_size(dtype))
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "%s: unknown dtype code %d", name, (int)dtype);
  if (count > (uint64_t)INT_MAX / (uint64_t)comm->nranks)
    return mpi_error(HWP_ERROR_NOT_SUPPORTED,
                     "%s: %llu elements is more than the MPI adapter moves in one call "
                     "(%d / nranks)", name, (unsigned long long)count, INT_MAX);
  if (root < -1 || root >= comm->nranks)
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "%s: rank %d is not in [0, %d)", name, root,
                     comm->nranks);
  return HWP_OK;
}

/* ---- Device memory as host memory ---- */

static int host_memory(const HWP_CclComm comm) {
  return (comm->dev.flags & HWP_DEVICE_HOST_MEMORY) && comm->dev.memory->host_address;
}

static const char *plugin_error(const HWP_CclComm comm) {
  return comm->dev.get_last_error ? comm->dev.get_last_error() : "";
}

/* Orders this call after the work already submitted to `stream`. */
static HWP_Status sync_stream(HWP_CclComm comm, HWP_Stream stream) {
  const HWP_CclDeviceAccess *d = &comm->dev;
  HWP_Status st = (stream && d->stream && d->stream->synchronize_stream)
                      ? d->stream->synchronize_stream(d->device, stream)
                      : d->device_table->synchronize_device(d->device);
  return st == HWP_OK ? HWP_OK
                      : mpi_error(st, "synchronizing the stream failed: %s", plugin_error(comm));
}

/* The host address of `bytes` at (buffer, offset): the buffer itself on host-memory devices,
 * else a staging copy (holding the device's data when `input`). Staged once per op. */
static HWP_Status host_view(PendingOp *op, HWP_Buffer buffer, uint64_t offset, uint64_t bytes,
                            int input, HWP_Stream stream, char **out) {
  HWP_CclComm comm = op->comm;
  const HWP_CclDeviceAccess *d = &comm->dev;
  if (bytes == 0) {
    static char empty[8];
    *out = empty;
    return HWP_OK;
  }
  if (host_memory(comm)) {
    void *p = NULL;
    HWP_Status st = d->memory->host_address(d->device, buffer, offset, &p);
    if (st != HWP_OK) return mpi_error(st, "host_address failed: %s", plugin_error(comm));
    *out = (char *)p;
    return HWP_OK;
  }
  for (int i = 0; i < op->nstaged; i++) {
    Staged *s = &op->staged[i];
    if (s->buffer == buffer && s->offset <= offset && offset + bytes <= s->offset + s->bytes) {
      *out = s->host + (offset - s->offset);
      return HWP_OK;
    }
  }
  if (op->nstaged == MAX_STAGED) return mpi_error(HWP_ERROR_INTERNAL, "too many staged ranges");
  Staged *s = &op->staged[op->nstaged];
  s->host = malloc(bytes);
  if (!s->host)
    return mpi_error(HWP_ERROR_OUT_OF_MEMORY, "staging %llu bytes in host memory failed",
                     (unsigned long long)bytes);
  s->buffer = buffer;
  s->offset = offset;
  s->bytes = bytes;
  op->nstaged++;
  if (input) {
    HWP_Status st;
    if (stream && d->stream && d->memory->copy_d2h_async) {
      st = d->memory->copy_d2h_async(d->device, stream, s->host, buffer, offset, bytes);
      if (st == HWP_OK) st = d->stream->synchronize_stream(d->device, stream);
    } else {
      st = d->memory->copy_d2h(d->device, s->host, buffer, offset, bytes);
    }
    if (st != HWP_OK) return mpi_error(st, "staging to the host failed: %s", plugin_error(comm));
  }
  *out = s->host;
  return HWP_OK;
}

/* Marks the staged range holding `host` for copying back to the device after completion. */
static void write_back(PendingOp *op, const char *host) {
  for (int i = 0; i < op->nstaged; i++) {
    Staged *s = &op->staged[i];
    if (host >= s->host && host < s->host + s->bytes) s->write_back = 1;
  }
}

static int overlap(const char *a, uint64_t na, const char *b, uint64_t nb) {
  return na && nb && a < b + nb && b < a + na;
}

/* When the receive range overlaps the send range (other than as MPI_IN_PLACE allows), the
 * result goes to a temporary first. */
static HWP_Status receive_into(PendingOp *op, char *recv, uint64_t bytes, const char *send,
                               uint64_t send_bytes, char **target) {
  *target = recv;
  if (!overlap(recv, bytes, send, send_bytes)) return HWP_OK;
  op->temp = malloc(bytes);
  if (!op->temp) return mpi_error(HWP_ERROR_OUT_OF_MEMORY, "out of host memory");
  op->temp_bytes = bytes;
  op->result_host = recv;
  *target = op->temp;
  return HWP_OK;
}

/* ---- Posting and finishing ---- */

static PendingOp *new_op(HWP_CclComm comm, int what, int peer, HWP_DType dtype) {
  PendingOp *op = calloc(1, sizeof *op);
  if (!op) return NULL;
  op->comm = comm;
  op->what = what;
  op->peer = peer;
  op->dtype = dtype;
  op->request = MPI_REQUEST_NULL;
  return op;
}

static HWP_Status finish(PendingOp *op) {
  HWP_CclComm comm = op->comm;
  /* A blocking collective left no request: nothing to wait for. */
  HWP_Status st = op->request == MPI_REQUEST_NULL
                      ? HWP_OK
                      : mpi_wait_all(comm, 1, &op->request, mpi_collective_name(op->what),
                                     op->seq, op->peer, 0);
  if (st == HWP_OK && op->temp) memcpy(op->result_host, op->temp, op->temp_bytes);
  if (st == HWP_OK && op->avg_host)
    mpi_scale_average(op->avg_host, op->avg_count, op->dtype, comm->nranks);
  for (int i = 0; st == HWP_OK && i < op->nstaged; i++) {
    Staged *s = &op->staged[i];
    if (!s->write_back) continue;
    st = comm->dev.memory->copy_h2d(comm->dev.device, s->buffer, s->offset, s->host, s->bytes);
    if (st != HWP_OK) st = mpi_error(st, "copying the result to the device failed: %s",
                                     plugin_error(comm));
  }
  free_op(op);
  return st;
}

/* After a successful post: finish now, or keep for group_end. */
static HWP_Status issue(PendingOp *op, int rc) {
  if (rc != MPI_SUCCESS) {
    HWP_Status st = mpi_error(HWP_ERROR_DEVICE, "%s: MPI failed: %s",
                              mpi_collective_name(op->what), mpi_error_text(rc));
    free_op(op);
    return st;
  }
  if (t_group_depth == 0) return finish(op);
  if (t_group_count == t_group_cap) {
    int cap = t_group_cap ? 2 * t_group_cap : 16;
    PendingOp **grown = realloc(t_group_ops, (size_t)cap * sizeof *grown);
    if (!grown) {
      HWP_Status st = finish(op);
      return st != HWP_OK ? st : mpi_error(HWP_ERROR_OUT_OF_MEMORY, "group: out of host memory");
    }
    t_group_ops = grown;
    t_group_cap = cap;
  }
  t_group_ops[t_group_count++] = op;
  return HWP_OK;
}

/* Common start of every call: checks, an op record, the stream order, the watchdog's slot. */
static HWP_Status begin(const char *name, int what, HWP_CclComm comm, uint64_t count,
                        HWP_DType dtype, int root, HWP_Stream stream, PendingOp **out) {
  HWP_Status st = check_call(name, comm, count, dtype, root);
  if (st != HWP_OK) return st;
  if (host_memory(comm)) {
    st = sync_stream(comm, stream);
    if (st != HWP_OK) return st;
  }
  PendingOp *op = new_op(comm, what, (what == MPI_COLL_SEND || what == MPI_COLL_RECV) ? root : -1,
                         dtype);
  if (!op) return mpi_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", name);
  if (op->peer < 0) {
    op->seq = ++comm->seq;
    mpi_publish_progress(comm, op->seq, what);
  }
  *out = op;
  return HWP_OK;
}

/* Issues a collective: outside a group, once every member has arrived (mpi_arrive: on one node
 * a few loads from shared memory), as the blocking call (MPI's tuned algorithms, progressed
 * inside the call; the non-blocking ones are much slower); inside a group, non-blocking,
 * finished at group_end. */
#define POST(op, blocking_call, nonblocking_call)                          \
  do {                                                                     \
    int rc_;                                                               \
    if (t_group_depth == 0) {                                              \
      HWP_Status arrived_ = mpi_arrive((op)->comm, (op)->seq, (op)->what); \
      if (arrived_ != HWP_OK) {                                            \
        free_op(op);                                                       \
        return arrived_;                                                   \
      }                                                                    \
      mpi_lock();                                                          \
      rc_ = blocking_call;                                                 \
      mpi_unlock();                                                        \
    } else {                                                               \
      mpi_lock();                                                          \
      rc_ = nonblocking_call;                                              \
      mpi_unlock();                                                        \
    }                                                                      \
    return issue(op, rc_);                                                 \
  } while (0)

#define TRY(expr)                  \
  do {                             \
    HWP_Status st_ = (expr);       \
    if (st_ != HWP_OK) {           \
      free_op(op);                 \
      return st_;                  \
    }                              \
  } while (0)

HWP_Status mpi_ccl_all_reduce(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                             uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                             HWP_CclReduceOp red, HWP_CclComm comm, HWP_Stream stream) {
  PendingOp *op = NULL;
  HWP_Status st = begin("all_reduce", MPI_COLL_ALL_REDUCE, comm, count, dtype, -1, stream, &op);
  if (st != HWP_OK) return st;
  const uint64_t bytes = count * mpi_dtype_size(dtype);
  MPI_Datatype dt;
  MPI_Op mop;
  char *s, *r, *target;
  TRY(mpi_datatype(dtype, &dt));
  TRY(mpi_reduce_op(dtype, red, &mop));
  const int in_place = send == recv && send_offset == recv_offset;
  TRY(host_view(op, send, send_offset, bytes, 1, stream, &s));
  TRY(host_view(op, recv, recv_offset, bytes, in_place, stream, &r));
  write_back(op, r);
  if (in_place) {
    target = r;
  } else {
    TRY(receive_into(op, r, bytes, s, bytes, &target));
  }
  if (red == HWP_CCL_AVG) {
    op->avg_host = target;
    op->avg_count = count;
  }
  const void *src = in_place ? MPI_IN_PLACE : s;
  POST(op, MPI_Allreduce(src, target, (int)count, dt, mop, comm->comm),
       MPI_Iallreduce(src, target, (int)count, dt, mop, comm->comm, &op->request));
}

HWP_Status mpi_ccl_broadcast(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                            uint64_t recv_offset, uint64_t count, HWP_DType dtype, int32_t root,
                            HWP_CclComm comm, HWP_Stream stream) {
  PendingOp *op = NULL;
  HWP_Status st = begin("broadcast", MPI_COLL_BROADCAST, comm, count, dtype, root, stream, &op);
  if (st != HWP_OK) return st;
  if (root < 0) {
    free_op(op);
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "broadcast: root %d is negative", (int)root);
  }
  const uint64_t bytes = count * mpi_dtype_size(dtype);
  MPI_Datatype dt;
  char *s = NULL, *r;
  TRY(mpi_datatype(dtype, &dt));
  const int is_root = comm->rank == root;
  if (is_root) TRY(host_view(op, send, send_offset, bytes, 1, stream, &s));
  TRY(host_view(op, recv, recv_offset, bytes, 0, stream, &r));
  if (is_root && s != r) memmove(r, s, bytes);
  write_back(op, r);
  POST(op, MPI_Bcast(r, (int)count, dt, root, comm->comm),
       MPI_Ibcast(r, (int)count, dt, root, comm->comm, &op->request));
}

HWP_Status mpi_ccl_reduce(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                         uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                         HWP_CclReduceOp red, int32_t root, HWP_CclComm comm, HWP_Stream stream) {
  PendingOp *op = NULL;
  HWP_Status st = begin("reduce", MPI_COLL_REDUCE, comm, count, dtype, root, stream, &op);
  if (st != HWP_OK) return st;
  if (root < 0) {
    free_op(op);
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "reduce: root %d is negative", (int)root);
  }
  const uint64_t bytes = count * mpi_dtype_size(dtype);
  MPI_Datatype dt;
  MPI_Op mop;
  char *s, *r = NULL, *target = NULL;
  TRY(mpi_datatype(dtype, &dt));
  TRY(mpi_reduce_op(dtype, red, &mop));
  const int is_root = comm->rank == root;
  const int in_place = is_root && send == recv && send_offset == recv_offset;
  TRY(host_view(op, send, send_offset, bytes, 1, stream, &s));
  if (is_root) {
    TRY(host_view(op, recv, recv_offset, bytes, in_place, stream, &r));
    write_back(op, r);
    if (in_place) {
      target = r;
    } else {
      TRY(receive_into(op, r, bytes, s, bytes, &target));
    }
    if (red == HWP_CCL_AVG) {
      op->avg_host = target;
      op->avg_count = count;
    }
  }
  const void *src = in_place ? MPI_IN_PLACE : s;
  POST(op, MPI_Reduce(src, target, (int)count, dt, mop, root, comm->comm),
       MPI_Ireduce(src, target, (int)count, dt, mop, root, comm->comm, &op->request));
}

HWP_Status mpi_ccl_all_gather(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                             uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                             HWP_CclComm comm, HWP_Stream stream) {
  PendingOp *op = NULL;
  HWP_Status st = begin("all_gather", MPI_COLL_ALL_GATHER, comm, count, dtype, -1, stream, &op);
  if (st != HWP_OK) return st;
  const uint64_t bytes = count * mpi_dtype_size(dtype);
  const uint64_t total = bytes * (uint64_t)comm->nranks;
  MPI_Datatype dt;
  char *s, *r, *target;
  TRY(mpi_datatype(dtype, &dt));
  const int in_place = send == recv && send_offset == recv_offset + (uint64_t)comm->rank * bytes;
  TRY(host_view(op, recv, recv_offset, total, in_place, stream, &r));
  TRY(host_view(op, send, send_offset, bytes, 1, stream, &s));
  write_back(op, r);
  if (in_place) {
    target = r;
  } else {
    TRY(receive_into(op, r, total, s, bytes, &target));
  }
  const void *src = in_place ? MPI_IN_PLACE : s;
  POST(op, MPI_Allgather(src, (int)count, dt, target, (int)count, dt, comm->comm),
       MPI_Iallgather(src, (int)count, dt, target, (int)count, dt, comm->comm, &op->request));
}

HWP_Status mpi_ccl_reduce_scatter(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                                 uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                                 HWP_CclReduceOp red, HWP_CclComm comm, HWP_Stream stream) {
  PendingOp *op = NULL;
  HWP_Status st =
      begin("reduce_scatter", MPI_COLL_REDUCE_SCATTER, comm, count, dtype, -1, stream, &op);
  if (st != HWP_OK) return st;
  const uint64_t bytes = count * mpi_dtype_size(dtype);
  const uint64_t total = bytes * (uint64_t)comm->nranks;
  MPI_Datatype dt;
  MPI_Op mop;
  char *s, *r, *target;
  TRY(mpi_datatype(dtype, &dt));
  TRY(mpi_reduce_op(dtype, red, &mop));
  TRY(host_view(op, send, send_offset, total, 1, stream, &s));
  TRY(host_view(op, recv, recv_offset, bytes, 0, stream, &r));
  write_back(op, r);
  TRY(receive_into(op, r, bytes, s, total, &target));
  if (red == HWP_CCL_AVG) {
    op->avg_host = target;
    op->avg_count = count;
  }
  POST(op, MPI_Reduce_scatter_block(s, target, (int)count, dt, mop, comm->comm),
       MPI_Ireduce_scatter_block(s, target, (int)count, dt, mop, comm->comm, &op->request));
}

HWP_Status mpi_ccl_all_to_all(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                             uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                             HWP_CclComm comm, HWP_Stream stream) {
  PendingOp *op = NULL;
  HWP_Status st = begin("all_to_all", MPI_COLL_ALL_TO_ALL, comm, count, dtype, -1, stream, &op);
  if (st != HWP_OK) return st;
  const uint64_t total = count * mpi_dtype_size(dtype) * (uint64_t)comm->nranks;
  MPI_Datatype dt;
  char *s, *r, *target;
  TRY(mpi_datatype(dtype, &dt));
  TRY(host_view(op, send, send_offset, total, 1, stream, &s));
  TRY(host_view(op, recv, recv_offset, total, 0, stream, &r));
  write_back(op, r);
  TRY(receive_into(op, r, total, s, total, &target));
  POST(op, MPI_Alltoall(s, (int)count, dt, target, (int)count, dt, comm->comm),
       MPI_Ialltoall(s, (int)count, dt, target, (int)count, dt, comm->comm, &op->request));
}

HWP_Status mpi_ccl_send(HWP_Buffer buffer, uint64_t offset, uint64_t count, HWP_DType dtype,
                        int32_t peer, HWP_CclComm comm, HWP_Stream stream) {
  PendingOp *op = NULL;
  HWP_Status st = begin("send", MPI_COLL_SEND, comm, count, dtype, peer, stream, &op);
  if (st != HWP_OK) return st;
  if (peer < 0) {
    free_op(op);
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "send: peer %d is negative", (int)peer);
  }
  MPI_Datatype dt;
  char *s;
  TRY(mpi_datatype(dtype, &dt));
  TRY(host_view(op, buffer, offset, count * mpi_dtype_size(dtype), 1, stream, &s));
  mpi_lock();
  int rc = MPI_Isend(s, (int)count, dt, peer, P2P_TAG, comm->comm, &op->request);
  mpi_unlock();
  return issue(op, rc);
}

HWP_Status mpi_ccl_recv(HWP_Buffer buffer, uint64_t offset, uint64_t count, HWP_DType dtype,
                        int32_t peer, HWP_CclComm comm, HWP_Stream stream) {
  PendingOp *op = NULL;
  HWP_Status st = begin("recv", MPI_COLL_RECV, comm, count, dtype, peer, stream, &op);
  if (st != HWP_OK) return st;
  if (peer < 0) {
    free_op(op);
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "recv: peer %d is negative", (int)peer);
  }
  MPI_Datatype dt;
  char *r;
  TRY(mpi_datatype(dtype, &dt));
  TRY(host_view(op, buffer, offset, count * mpi_dtype_size(dtype), 0, stream, &r));
  write_back(op, r);
  mpi_lock();
  int rc = MPI_Irecv(r, (int)count, dt, peer, P2P_TAG, comm->comm, &op->request);
  mpi_unlock();
  return issue(op, rc);
}

HWP_Status mpi_ccl_group_start(void) {
  t_group_depth++;
  return HWP_OK;
}

HWP_Status mpi_ccl_group_end(void) {
  if (t_group_depth == 0)
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "group_end without a matching group_start");
  if (--t_group_depth > 0) return HWP_OK;
  /* Everything was posted: finishing in order cannot deadlock. The first error wins; the rest
   * still finish (or fail) so that no request is left behind. */
  HWP_Status first = HWP_OK;
  char message[1024] = "";
  for (int i = 0; i < t_group_count; i++) {
    HWP_Status st = finish(t_group_ops[i]);
    if (st != HWP_OK && first == HWP_OK) {
      first = st;
      strncpy(message, mpi_last_error(), sizeof message - 1);
    }
  }
  t_group_count = 0;
  return first == HWP_OK ? HWP_OK : mpi_error(first, "%s", message);
}
