/* Zoo plugins with a CCL table of their own (hwcheck's abi::ccl_* checks and its ccl suite,
 * tests/conformance/test_ccl_*.py): the zoo's device runtime (test_runtime.h: two
 * malloc-backed devices whose HWP_Buffer is the host pointer, no stream table, one "add"
 * float32 kernel; the ccl_*stream* variants have streams, see below) and a small CCL table
 * over MPI directly. Built by hwport_add_zoo, linked
 * with MPI::MPI_C (tests/plugins/CMakeLists.txt, only where MPI is found).
 *
 * The table is correct but simple: a communicator spans the whole MPI job (comm_init with
 * nranks other than MPI_COMM_WORLD's size is HWP_ERROR_NOT_SUPPORTED), comm_split is
 * MPI_Comm_split; all_reduce gathers every rank's input (MPI_Allgather of bytes) and reduces
 * it locally in rank order (every dtype and reduction of ccl.h, float16 / bfloat16 through
 * float); broadcast and all_gather move bytes; send / recv are blocking MPI calls outside a
 * group and MPI_Isend / MPI_Irecv completed at the outermost group_end inside one. reduce,
 * reduce_scatter and all_to_all are NULL: the host's fallbacks (all_to_all's is a group of
 * send / recv pairs) run over it. Each variant deviates in one way:
 *
 *   ccl_good           the table as described: hwcheck's ccl suite passes.
 *   ccl_threshold      all_reduce reduces only the first 4096 elements; past them every rank
 *                      keeps its own input (a chunked pipeline that forgot its later chunks):
 *                      right for small buffers, wrong above 4096 elements, which only a
 *                      multi-rank run with distinct inputs shows.
 *   ccl_bad_root       broadcast passes root to MPI unchecked: a root outside the
 *                      communicator makes MPI's default error handler abort the whole job
 *                      instead of returning HWP_ERROR_INVALID_ARGUMENT.
 *   ccl_null_required  all_gather is NULL (required in a 1.2 table): the host ignores the
 *                      table and uses its MPI adapter; the abi suite must say so.
 *   ccl_bad_id_size    unique_id_size is 0 (must be 1..HWP_CCL_UNIQUE_ID_MAX_BYTES).
 *   ccl_short_table    struct_size reaches comm_init only: larger than bare, short of
 *                      group_end.
 *   ccl_streams        a stream table (test_runtime.h's TR_STREAMS_DEFERRED: a stream's work
 *                      runs, in order, only when the host waits for it) and an add kernel
 *                      that is stream work, as a GPU's kernels are; every collective first
 *                      waits for its stream's earlier work (correct: the suite passes).
 *   ccl_ignores_stream the same, but the collectives use the buffers at once: the kernel that
 *                      wrote the input has not run yet. Right whenever the host synchronized
 *                      first, wrong in the suite's ordering cases only. */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ZC_ID_ccl_good 1
#define ZC_ID_ccl_threshold 2
#define ZC_ID_ccl_bad_root 3
#define ZC_ID_ccl_null_required 4
#define ZC_ID_ccl_bad_id_size 5
#define ZC_ID_ccl_short_table 6
#define ZC_ID_ccl_streams 7
#define ZC_ID_ccl_ignores_stream 8

#ifndef HWP_TEST_VARIANT
#error "compile with -DHWP_TEST_VARIANT=<variant> (see the list at the top of this file)"
#endif
#define ZC_CAT_(a, b) a##b
#define ZC_CAT(a, b) ZC_CAT_(a, b)
#define ZC_STR_(x) #x
#define ZC_STR(x) ZC_STR_(x)
#define ZC_VARIANT ZC_CAT(ZC_ID_, HWP_TEST_VARIANT)
#define ZC_IS(v) (ZC_VARIANT == ZC_ID_##v)
#if ZC_VARIANT < 1
#error "unknown HWP_TEST_VARIANT"
#endif

#define ZC_STREAMS (ZC_IS(ccl_streams) || ZC_IS(ccl_ignores_stream))
#if ZC_STREAMS
#define TR_WITH_STREAMS 1
#define TR_STREAMS_DEFERRED 1
#endif

#include "half.h" /* device_plugins/cpu: float16 / bfloat16 conversions */
#include "test_runtime.h"

#define ZC_ID_BYTES 16u
#define ZC_THRESHOLD 4096u /* ccl_threshold: elements reduced correctly */

struct HWP_CclComm_st {
  MPI_Comm comm;
  int rank, nranks;
  int32_t device;
};

/* Before a collective touches its buffers: the stream's earlier work must be done. */
static HWP_Status zc_order(HWP_CclComm comm, HWP_Stream stream) {
#if ZC_STREAMS && !ZC_IS(ccl_ignores_stream)
  if (comm != NULL && stream != NULL) return tr_synchronize_stream(comm->device, stream);
#else
  (void)comm; /* ccl_ignores_stream: the bug; the others have only the synchronous stream */
  (void)stream;
#endif
  return HWP_OK;
}

/* ---- a minimal kernel (a plugin needs kernels or a codegen table) --------------------- */
static HWP_Status zc_add_f32(const HWP_KernelContext *ctx) {
  const HWP_TensorView *a, *b, *out;
  int64_t n = 1, i;
  int32_t k;
  if (ctx == NULL || ctx->num_inputs != 2 || ctx->num_outputs != 1)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "add: expected 2 inputs and 1 output");
  a = &ctx->inputs[0];
  b = &ctx->inputs[1];
  out = &ctx->outputs[0];
  for (k = 0; k < out->ndim; ++k) n *= out->shape[k];
  for (k = 0; k < 2; ++k) {
    const HWP_TensorView *v = k ? b : a;
    int64_t m = 1;
    int32_t d;
    for (d = 0; d < v->ndim; ++d) m *= v->shape[d];
    if (m != n) return tr_fail(HWP_ERROR_NOT_SUPPORTED, "add: no broadcasting");
  }
#if ZC_STREAMS
  return tr_submit_add_f32(ctx->device, ctx->stream,
                           (float *)((char *)out->buffer + out->byte_offset),
                           (const float *)((const char *)a->buffer + a->byte_offset),
                           (const float *)((const char *)b->buffer + b->byte_offset),
                           (uint64_t)n);
  (void)i;
#else
  for (i = 0; i < n; ++i)
    ((float *)((char *)out->buffer + out->byte_offset))[i] =
        ((const float *)((const char *)a->buffer + a->byte_offset))[i] +
        ((const float *)((const char *)b->buffer + b->byte_offset))[i];
  return HWP_OK;
#endif
}

/* ---- helpers --------------------------------------------------------------------------- */
static size_t zc_itemsize(HWP_DType dtype) {
  switch (dtype) {
    case HWP_DTYPE_BOOL: case HWP_DTYPE_INT8: case HWP_DTYPE_UINT8: return 1;
    case HWP_DTYPE_INT16: case HWP_DTYPE_FLOAT16: case HWP_DTYPE_BFLOAT16: return 2;
    case HWP_DTYPE_INT32: case HWP_DTYPE_FLOAT32: return 4;
    case HWP_DTYPE_INT64: case HWP_DTYPE_FLOAT64: return 8;
    default: return 0;
  }
}

static HWP_Status zc_check(const char *fn, HWP_CclComm comm, uint64_t count, HWP_DType dtype) {
  if (comm == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: comm is NULL", fn);
  if (zc_itemsize(dtype) == 0)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: unknown dtype %d", fn, (int)dtype);
  if (count * zc_itemsize(dtype) > (uint64_t)INT32_MAX)
    return tr_fail(HWP_ERROR_NOT_SUPPORTED, "%s: more than 2 GiB", fn);
  return HWP_OK;
}

static char *zc_at(HWP_Buffer buffer, uint64_t offset) { return (char *)buffer + offset; }

static HWP_Status zc_mpi(int rc, const char *fn) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (rc == MPI_SUCCESS) return HWP_OK;
  MPI_Error_string(rc, text, &len);
  return tr_fail(HWP_ERROR_DEVICE, "%s: MPI error: %s", fn, text);
}

/* ---- reduction ------------------------------------------------------------------------ */
#define ZC_COMBINE(T, acc, x, op)                             \
  do {                                                        \
    switch (op) {                                             \
      case HWP_CCL_SUM: case HWP_CCL_AVG: acc = (T)(acc + x); break; \
      case HWP_CCL_PROD: acc = (T)(acc * x); break;           \
      case HWP_CCL_MAX: if (x > acc) acc = x; break;          \
      default: if (x < acc) acc = x; break;                   \
    }                                                         \
  } while (0)

/* Signed sums and products wrap (two's complement), computed unsigned to stay defined. */
#define ZC_REDUCE_INT(T, U)                                                        \
  static void zc_reduce_##T(const char *all, char *dst, uint64_t n, int nranks,    \
                            HWP_CclReduceOp op) {                                  \
    uint64_t i;                                                                    \
    for (i = 0; i < n; ++i) {                                                      \
      T acc;                                                                       \
      int r;                                                                       \
      memcpy(&acc, all + i * sizeof(T), sizeof(T));                                \
      for (r = 1; r < nranks; ++r) {                                               \
        T x;                                                                       \
        memcpy(&x, all + ((uint64_t)r * n + i) * sizeof(T), sizeof(T));            \
        if (op == HWP_CCL_SUM || op == HWP_CCL_AVG) acc = (T)(U)((U)acc + (U)x);   \
        else if (op == HWP_CCL_PROD) acc = (T)(U)((U)acc * (U)x);                  \
        else if (op == HWP_CCL_MAX) { if (x > acc) acc = x; }                      \
        else if (x < acc) acc = x;                                                 \
      }                                                                            \
      if (op == HWP_CCL_AVG) acc = (T)(acc / nranks);                              \
      memcpy(dst + i * sizeof(T), &acc, sizeof(T));                                \
    }                                                                              \
  }
ZC_REDUCE_INT(int8_t, uint8_t)
ZC_REDUCE_INT(uint8_t, uint32_t)
ZC_REDUCE_INT(int16_t, uint32_t)
ZC_REDUCE_INT(int32_t, uint32_t)
ZC_REDUCE_INT(int64_t, uint64_t)

#define ZC_REDUCE_FLOAT(name, T, W, load, store)                                   \
  static void name(const char *all, char *dst, uint64_t n, int nranks,             \
                   HWP_CclReduceOp op) {                                           \
    uint64_t i;                                                                    \
    for (i = 0; i < n; ++i) {                                                      \
      T raw;                                                                       \
      W acc;                                                                       \
      int r;                                                                       \
      memcpy(&raw, all + i * sizeof(T), sizeof(T));                                \
      acc = load(raw);                                                             \
      for (r = 1; r < nranks; ++r) {                                               \
        W x;                                                                       \
        memcpy(&raw, all + ((uint64_t)r * n + i) * sizeof(T), sizeof(T));          \
        x = load(raw);                                                             \
        ZC_COMBINE(W, acc, x, op);                                                 \
      }                                                                            \
      if (op == HWP_CCL_AVG) acc = acc / (W)nranks;                                \
      raw = store(acc);                                                            \
      memcpy(dst + i * sizeof(T), &raw, sizeof(T));                                \
    }                                                                              \
  }
#define ZC_ID(x) (x)
ZC_REDUCE_FLOAT(zc_reduce_f32, float, float, ZC_ID, ZC_ID)
ZC_REDUCE_FLOAT(zc_reduce_f64, double, double, ZC_ID, ZC_ID)
ZC_REDUCE_FLOAT(zc_reduce_f16, uint16_t, float, cpu_f16_to_f32, cpu_f32_to_f16)
ZC_REDUCE_FLOAT(zc_reduce_bf16, uint16_t, float, cpu_bf16_to_f32, cpu_f32_to_bf16)

static void zc_reduce_bool(const char *all, char *dst, uint64_t n, int nranks,
                           HWP_CclReduceOp op) {
  const int any = op == HWP_CCL_SUM || op == HWP_CCL_MAX;
  uint64_t i;
  for (i = 0; i < n; ++i) {
    int acc = all[i] != 0, r;
    for (r = 1; r < nranks; ++r) {
      const int x = all[(uint64_t)r * n + i] != 0;
      acc = any ? (acc || x) : (acc && x);
    }
    dst[i] = (char)acc;
  }
}

/* dst[i] = op over ranks of all[r * n + i]. */
static void zc_reduce(const char *all, char *dst, uint64_t n, int nranks, HWP_DType dtype,
                      HWP_CclReduceOp op) {
  switch (dtype) {
    case HWP_DTYPE_BOOL: zc_reduce_bool(all, dst, n, nranks, op); break;
    case HWP_DTYPE_INT8: zc_reduce_int8_t(all, dst, n, nranks, op); break;
    case HWP_DTYPE_UINT8: zc_reduce_uint8_t(all, dst, n, nranks, op); break;
    case HWP_DTYPE_INT16: zc_reduce_int16_t(all, dst, n, nranks, op); break;
    case HWP_DTYPE_INT32: zc_reduce_int32_t(all, dst, n, nranks, op); break;
    case HWP_DTYPE_INT64: zc_reduce_int64_t(all, dst, n, nranks, op); break;
    case HWP_DTYPE_FLOAT16: zc_reduce_f16(all, dst, n, nranks, op); break;
    case HWP_DTYPE_BFLOAT16: zc_reduce_bf16(all, dst, n, nranks, op); break;
    case HWP_DTYPE_FLOAT32: zc_reduce_f32(all, dst, n, nranks, op); break;
    default: zc_reduce_f64(all, dst, n, nranks, op); break;
  }
}

/* ---- the CCL table ---------------------------------------------------------------------- */
static HWP_Status zc_get_unique_id(void *id) {
  static unsigned counter;
  unsigned char *p = (unsigned char *)id;
  unsigned i;
  if (id == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "get_unique_id: id is NULL");
  ++counter;
  for (i = 0; i < ZC_ID_BYTES; ++i) p[i] = (unsigned char)(0xc0 + i + counter * 7u);
  return HWP_OK;
}

static HWP_Status zc_start_mpi(void) {
  int ready = 0, provided = 0;
  MPI_Initialized(&ready);
  if (!ready && MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    return tr_fail(HWP_ERROR_DEVICE, "comm_init: MPI_Init_thread failed");
  return HWP_OK;
}

static HWP_Status zc_wrap(MPI_Comm c, int32_t device, HWP_CclComm *out) {
  HWP_CclComm comm = (HWP_CclComm)calloc(1, sizeof *comm);
  if (comm == NULL) {
    MPI_Comm_free(&c);
    return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "comm: out of host memory");
  }
  comm->comm = c;
  comm->device = device;
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c, &comm->rank);
  MPI_Comm_size(c, &comm->nranks);
  *out = comm;
  return HWP_OK;
}

static HWP_Status zc_comm_init(int32_t nranks, int32_t rank, const void *id, int32_t device,
                               HWP_CclComm *out) {
  MPI_Comm c;
  int world = 0;
  HWP_Status st = tr_check_device(device, "comm_init");
  if (st != HWP_OK) return st;
  if (id == NULL || out == NULL)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "comm_init: NULL id or out");
  if ((st = zc_start_mpi()) != HWP_OK) return st;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (nranks != world)
    return tr_fail(HWP_ERROR_NOT_SUPPORTED,
                   "comm_init: this zoo table spans the whole MPI job (%d ranks), not %d",
                   world, (int)nranks);
  if (rank < 0 || rank >= nranks)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "comm_init: rank %d of %d", (int)rank,
                   (int)nranks);
  if ((st = zc_mpi(MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &c), "comm_init")) != HWP_OK)
    return st;
  return zc_wrap(c, device, out);
}

static HWP_Status zc_comm_split(HWP_CclComm comm, int32_t color, int32_t key, HWP_CclComm *out) {
  MPI_Comm c;
  HWP_Status st;
  if (comm == NULL || out == NULL)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "comm_split: NULL comm or out");
  st = zc_mpi(MPI_Comm_split(comm->comm, color < 0 ? MPI_UNDEFINED : color, key, &c),
              "comm_split");
  if (st != HWP_OK) return st;
  if (c == MPI_COMM_NULL) {
    *out = NULL;
    return HWP_OK;
  }
  return zc_wrap(c, comm->device, out);
}

static HWP_Status zc_comm_destroy(HWP_CclComm comm) {
  if (comm == NULL) return HWP_OK;
  MPI_Comm_free(&comm->comm);
  free(comm);
  return HWP_OK;
}

static HWP_Status zc_comm_abort(HWP_CclComm comm) {
  free(comm); /* the MPI communicator is abandoned, as pending work would be */
  return HWP_OK;
}

static HWP_Status zc_comm_get_async_error(HWP_CclComm comm, HWP_Status *error) {
  if (comm == NULL || error == NULL)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "comm_get_async_error: NULL argument");
  *error = HWP_OK; /* every call completes before it returns */
  return HWP_OK;
}

static HWP_Status zc_all_reduce(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                                uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                                HWP_CclReduceOp op, HWP_CclComm comm, HWP_Stream stream) {
  const size_t size = zc_itemsize(dtype);
  uint64_t n = count;
  char *all;
  HWP_Status st = zc_check("all_reduce", comm, count, dtype);
  if (st != HWP_OK) return st;
  if ((st = zc_order(comm, stream)) != HWP_OK) return st;
  if (op < 0 || op >= HWP_CCL_REDUCE_OP_COUNT)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "all_reduce: unknown reduction %d", (int)op);
  if (dtype == HWP_DTYPE_BOOL && op == HWP_CCL_AVG)
    return tr_fail(HWP_ERROR_NOT_SUPPORTED, "all_reduce: AVG of bool");
  if (count == 0) return HWP_OK;
  all = (char *)malloc(count * size * (size_t)comm->nranks);
  if (all == NULL) return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "all_reduce: out of host memory");
  st = zc_mpi(MPI_Allgather(zc_at(send, send_offset), (int)(count * size), MPI_BYTE, all,
                            (int)(count * size), MPI_BYTE, comm->comm),
              "all_reduce");
  if (st == HWP_OK) {
#if ZC_IS(ccl_threshold)
    /* the bug: only the first chunk is reduced; later elements keep this rank's input */
    if (n > ZC_THRESHOLD) {
      memmove(zc_at(recv, recv_offset) + ZC_THRESHOLD * size,
              all + (uint64_t)comm->rank * count * size + ZC_THRESHOLD * size,
              (count - ZC_THRESHOLD) * size);
      n = ZC_THRESHOLD;
    }
#endif
    if (n == count) {
      zc_reduce(all, zc_at(recv, recv_offset), count, comm->nranks, dtype, op);
    } else { /* reduce the first n of each rank's block */
      char *dst = (char *)malloc(n * size);
      if (dst == NULL) {
        free(all);
        return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "all_reduce: out of host memory");
      }
      {
        int r;
        for (r = 1; r < comm->nranks; ++r)
          memmove(all + (uint64_t)r * n * size, all + (uint64_t)r * count * size, n * size);
      }
      zc_reduce(all, dst, n, comm->nranks, dtype, op);
      memcpy(zc_at(recv, recv_offset), dst, n * size);
      free(dst);
    }
  }
  free(all);
  return st;
}

static HWP_Status zc_broadcast(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                               uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                               int32_t root, HWP_CclComm comm, HWP_Stream stream) {
  const size_t size = zc_itemsize(dtype);
  HWP_Status st = zc_check("broadcast", comm, count, dtype);
  if (st != HWP_OK) return st;
  if ((st = zc_order(comm, stream)) != HWP_OK) return st;
#if ZC_IS(ccl_bad_root)
  MPI_Comm_set_errhandler(comm->comm, MPI_ERRORS_ARE_FATAL); /* the bug: root unchecked */
#else
  if (root < 0 || root >= comm->nranks)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "broadcast: root %d is not in [0, %d)",
                   (int)root, comm->nranks);
#endif
  if (count == 0) return HWP_OK;
  if (comm->rank == root && (send != recv || send_offset != recv_offset))
    memmove(zc_at(recv, recv_offset), zc_at(send, send_offset), count * size);
  return zc_mpi(MPI_Bcast(zc_at(recv, recv_offset), (int)(count * size), MPI_BYTE, root,
                          comm->comm),
                "broadcast");
}

static HWP_Status zc_all_gather(HWP_Buffer send, uint64_t send_offset, HWP_Buffer recv,
                                uint64_t recv_offset, uint64_t count, HWP_DType dtype,
                                HWP_CclComm comm, HWP_Stream stream) {
  const size_t bytes = (size_t)count * zc_itemsize(dtype);
  char *mine;
  HWP_Status st = zc_check("all_gather", comm, count, dtype);
  if (st != HWP_OK) return st;
  if ((st = zc_order(comm, stream)) != HWP_OK) return st;
  if (count == 0) return HWP_OK;
  mine = (char *)malloc(bytes); /* a copy: the send block may lie inside recv (in place) */
  if (mine == NULL) return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "all_gather: out of host memory");
  memcpy(mine, zc_at(send, send_offset), bytes);
  st = zc_mpi(MPI_Allgather(mine, (int)bytes, MPI_BYTE, zc_at(recv, recv_offset), (int)bytes,
                            MPI_BYTE, comm->comm),
              "all_gather");
  free(mine);
  return st;
}

/* Groups: per thread, nesting; requests complete at the outermost group_end. */
#define ZC_MAX_PENDING 256
static __thread int zc_depth;
static __thread int zc_npending;
static __thread MPI_Request zc_pending[ZC_MAX_PENDING];

static HWP_Status zc_p2p(int is_send, HWP_Buffer buffer, uint64_t offset, uint64_t count,
                         HWP_DType dtype, int32_t peer, HWP_CclComm comm) {
  const char *fn = is_send ? "send" : "recv";
  const int bytes = (int)(count * zc_itemsize(dtype));
  char *p = zc_at(buffer, offset);
  HWP_Status st = zc_check(fn, comm, count, dtype);
  if (st != HWP_OK) return st;
  if (peer < 0 || peer >= comm->nranks)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: peer %d is not in [0, %d)", fn, (int)peer,
                   comm->nranks);
  if (zc_depth > 0) {
    if (zc_npending >= ZC_MAX_PENDING)
      return tr_fail(HWP_ERROR_NOT_SUPPORTED, "%s: more than %d calls in a group", fn,
                     ZC_MAX_PENDING);
    return zc_mpi(is_send ? MPI_Isend(p, bytes, MPI_BYTE, peer, 7, comm->comm,
                                      &zc_pending[zc_npending++])
                          : MPI_Irecv(p, bytes, MPI_BYTE, peer, 7, comm->comm,
                                      &zc_pending[zc_npending++]),
                  fn);
  }
  return zc_mpi(is_send ? MPI_Send(p, bytes, MPI_BYTE, peer, 7, comm->comm)
                        : MPI_Recv(p, bytes, MPI_BYTE, peer, 7, comm->comm, MPI_STATUS_IGNORE),
                fn);
}

static HWP_Status zc_send(HWP_Buffer buffer, uint64_t offset, uint64_t count, HWP_DType dtype,
                          int32_t peer, HWP_CclComm comm, HWP_Stream stream) {
  HWP_Status st = zc_order(comm, stream);
  if (st != HWP_OK) return st;
  return zc_p2p(1, buffer, offset, count, dtype, peer, comm);
}

static HWP_Status zc_recv(HWP_Buffer buffer, uint64_t offset, uint64_t count, HWP_DType dtype,
                          int32_t peer, HWP_CclComm comm, HWP_Stream stream) {
  HWP_Status st = zc_order(comm, stream);
  if (st != HWP_OK) return st;
  return zc_p2p(0, buffer, offset, count, dtype, peer, comm);
}

static HWP_Status zc_group_start(void) {
  ++zc_depth;
  return HWP_OK;
}

static HWP_Status zc_group_end(void) {
  HWP_Status st = HWP_OK;
  if (zc_depth == 0)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "group_end without a matching group_start");
  if (--zc_depth == 0 && zc_npending > 0) {
    st = zc_mpi(MPI_Waitall(zc_npending, zc_pending, MPI_STATUSES_IGNORE), "group_end");
    zc_npending = 0;
  }
  return st;
}

static const HWP_CclTable zc_ccl_table = {
#if ZC_IS(ccl_short_table)
    offsetof(HWP_CclTable, comm_init) + sizeof(void *), /* the bug: short of group_end */
#else
    sizeof(HWP_CclTable),
#endif
#if ZC_IS(ccl_bad_id_size)
    0, /* the bug: must be 1..HWP_CCL_UNIQUE_ID_MAX_BYTES */
#else
    ZC_ID_BYTES,
#endif
    zc_get_unique_id, zc_comm_init, zc_comm_split, zc_comm_destroy, zc_comm_abort,
    zc_comm_get_async_error, zc_all_reduce, zc_broadcast,
#if ZC_IS(ccl_null_required)
    NULL, /* the bug: all_gather is required */
#else
    zc_all_gather,
#endif
    zc_send, zc_recv, zc_group_start, zc_group_end,
    NULL, NULL, NULL}; /* reduce, reduce_scatter, all_to_all: the host's fallbacks */

static const HWP_DeviceTable zc_device_table = {
    sizeof(HWP_DeviceTable), tr_get_device_count, tr_synchronize_device, tr_get_properties,
    NULL, NULL, NULL};
#if ZC_STREAMS
#define ZC_ASYNC_COPIES tr_copy_h2d_async, tr_copy_d2h_async, tr_copy_d2d_async, tr_memset_async
#define ZC_STREAM_TABLE &tr_stream_table
#else
#define ZC_ASYNC_COPIES NULL, NULL, NULL, NULL
#define ZC_STREAM_TABLE NULL
#endif
static const HWP_MemoryTable zc_memory_table = {
    sizeof(HWP_MemoryTable), tr_allocate, tr_deallocate, tr_copy_h2d, tr_copy_d2h, tr_copy_d2d,
    ZC_ASYNC_COPIES, tr_get_memory_stats, NULL, NULL, NULL, TR_DLPACK_MEMORY};
static const HWP_PluginApi zc_api = {
    sizeof(HWP_PluginApi), HWP_ABI_VERSION_MAJOR, HWP_ABI_VERSION_MINOR,
    "test_" ZC_STR(HWP_TEST_VARIANT), "1.0.0", &zc_device_table, &zc_memory_table,
    tr_get_last_error, ZC_STREAM_TABLE, &zc_ccl_table, NULL, NULL, NULL};

HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out);
HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out) {
  HWP_KernelRegistration reg;
  HWP_Status st;
  if (host == NULL || out == NULL)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "hwport_plugin_init: NULL argument");
  if (host->abi_major != HWP_ABI_VERSION_MAJOR)
    return tr_fail(HWP_ERROR_VERSION_MISMATCH, "host ABI major %u, plugin %d",
                   (unsigned)host->abi_major, HWP_ABI_VERSION_MAJOR);
  tr_memory_init("test_" ZC_STR(HWP_TEST_VARIANT));
  memset(&reg, 0, sizeof reg);
  reg.struct_size = sizeof reg;
  reg.op_name = "add";
  reg.dtype = HWP_DTYPE_FLOAT32;
  reg.fn = zc_add_f32;
  st = host->register_kernel(host->host_context, &reg);
  if (st != HWP_OK) return tr_fail(st, "register_kernel(add, float32) failed with %d", (int)st);
  *out = &zc_api;
  return HWP_OK;
}
