/* hwport NCCL adapter — the CCL table over NCCL for devices whose memory is CUDA's (the CUDA
 * plugin's). libnccl.so.2 is loaded with dlopen at init (HWPORT_NCCL_LIBRARY, else the
 * nvidia-nccl wheel's or the system's), so this builds without NCCL; NCCL's few types are
 * declared here as its ABI has them (nccl.h 2.x).
 *
 * Buffers reach NCCL as device pointers (memory->device_address) and streams as the plugin's
 * native CUDA streams (stream->native_stream). AVG is ncclAvg; BOOL travels as uint8 with
 * MAX (or) / MIN (and); INT16 has no NCCL type and is refused as not supported. all_to_all is
 * a group of send/recv pairs, as nccl-tests does it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwport/ccl.h"

/* ---- NCCL's ABI (nccl.h 2.x) ---- */
typedef struct ncclComm *ncclComm_t;
typedef struct {
  char internal[128];
} ncclUniqueId;
typedef int ncclResult_t; /* 0: ncclSuccess; 7: ncclInProgress */
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
enum { ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclInt64 = 4, ncclFloat16 = 6,
       ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9 };
enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };
typedef void *cudaStream_t;

typedef struct NcclApi {
  const char *(*GetErrorString)(ncclResult_t);
  ncclResult_t (*GetUniqueId)(ncclUniqueId *);
  ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*CommSplit)(ncclComm_t, int, int, ncclComm_t *, void *);
  ncclResult_t (*CommDestroy)(ncclComm_t);
  ncclResult_t (*CommAbort)(ncclComm_t);
  ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *);
  ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t);
  ncclResult_t (*Broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t);
  ncclResult_t (*Reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int,
                         ncclComm_t, cudaStream_t);
  ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                            cudaStream_t);
  ncclResult_t (*ReduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                ncclComm_t, cudaStream_t);
  ncclResult_t (*Send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*GroupStart)(void);
  ncclResult_t (*GroupEnd)(void);
} NcclApi;

static NcclApi g_nccl;
static const HWP_CclAdapterHost *g_host;
static __thread char t_error[1024];

struct HWP_CclComm_st {
  ncclComm_t comm;
  int nranks, rank;
  int32_t global_device;
  HWP_CclDeviceAccess dev;
};

static HWP_Status fail(HWP_Status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_error, sizeof t_error, fmt, ap);
  va_end(ap);
  return code;
}

static const char *last_error(void) { return t_error; }

static HWP_Status nccl_status(ncclResult_t rc, const char *call) {
  if (rc == 0) return HWP_OK;
  return fail(HWP_ERROR_DEVICE, "%s failed: %s", call,
              g_nccl.GetErrorString ? g_nccl.GetErrorString(rc) : "NCCL error");
}

static HWP_Status nccl_type(HWP_DType dtype, ncclDataType_t *out, size_t *size) {
  switch (dtype) {
    case HWP_DTYPE_BOOL: *out = ncclUint8; *size = 1; return HWP_OK;
    case HWP_DTYPE_INT8: *out = ncclInt8; *size = 1; return HWP_OK;
    case HWP_DTYPE_UINT8: *out = ncclUint8; *size = 1; return HWP_OK;
    case HWP_DTYPE_INT32: *out = ncclInt32; *size = 4; return HWP_OK;
    case HWP_DTYPE_INT64: *out = ncclInt64; *size = 8; return HWP_OK;
    case HWP_DTYPE_FLOAT16: *out = ncclFloat16; *size = 2; return HWP_OK;
    case HWP_DTYPE_BFLOAT16: *out = ncclBfloat16; *size = 2; return HWP_OK;
    case HWP_DTYPE_FLOAT32: *out = ncclFloat32; *size = 4; return HWP_OK;
    case HWP_DTYPE_FLOAT64: *out = ncclFloat64; *size = 8; return HWP_OK;
    case HWP_DTYPE_INT16:
      return fail(HWP_ERROR_NOT_SUPPORTED, "NCCL has no int16 type");
    default: return fail(HWP_ERROR_INVALID_ARGUMENT, "unknown dtype code %d", (int)dtype);
  }
}

static HWP_Status nccl_op(HWP_DType dtype, HWP_CclReduceOp op, ncclRedOp_t *out) {
  if (op < 0 || op >= HWP_CCL_REDUCE_OP_COUNT)
    return fail(HWP_ERROR_INVALID_ARGUMENT, "unknown reduction code %d", (int)op);
  if (dtype == HWP_DTYPE_BOOL) {
    if (op == HWP_CCL_AVG) return fail(HWP_ERROR_NOT_SUPPORTED, "AVG of bool is not defined");
    *out = (op == HWP_CCL_SUM || op == HWP_CCL_MAX) ? ncclMax : ncclMin;
    return HWP_OK;
  }
  static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  *out = ops[op];
  return HWP_OK;
}

/* The device pointer of (buffer, offset) and the CUDA stream of `stream`. */
static HWP_Status reach(HWP_CclComm c, HWP_Buffer buffer, uint64_t offset, void **ptr) {
  if (!c->dev.memory->device_address)
    return fail(HWP_ERROR_NOT_SUPPORTED, "the device's plugin has no device_address");
  HWP_Status st = c->dev.memory->device_address(c->dev.device, buffer, offset, ptr);
  return st == HWP_OK ? HWP_OK : fail(st, "device_address failed: %s", c->dev.get_last_error());
}

static HWP_Status native(HWP_CclComm c, HWP_Stream stream, cudaStream_t *out) {
  uintptr_t handle = 0;
  if (!c->dev.stream || !c->dev.stream->native_stream)
    return fail(HWP_ERROR_NOT_SUPPORTED, "the device's plugin has no native_stream");
  HWP_Status st = c->dev.stream->native_stream(c->dev.device, stream, &handle);
  if (st != HWP_OK) return fail(st, "native_stream failed: %s", c->dev.get_last_error());
  /* DLPack's convention: 1 is the legacy default stream (NULL for NCCL), 2 per-thread. */
  *out = handle == 1 ? NULL : (cudaStream_t)handle;
  return HWP_OK;
}

#define PREPARE(c, dtype, nt, size, cs)                      \
  ncclDataType_t nt;                                         \
  size_t size;                                               \
  cudaStream_t cs;                                           \
  do {                                                       \
    if (!(c)) return fail(HWP_ERROR_INVALID_ARGUMENT, "comm is NULL"); \
    HWP_Status st_ = nccl_type(dtype, &nt, &size);           \
    if (st_ == HWP_OK) st_ = native(c, stream, &cs);         \
    if (st_ != HWP_OK) return st_;                           \
  } while (0)

static HWP_Status get_unique_id(void *id) {
  ncclUniqueId uid;
  HWP_Status st = nccl_status(g_nccl.GetUniqueId(&uid), "ncclGetUniqueId");
  if (st == HWP_OK) memcpy(id, &uid, sizeof uid);
  return st;
}

static HWP_Status comm_init(int32_t nranks, int32_t rank, const void *id, int32_t device,
                            HWP_CclComm *out) {
  HWP_CclComm c = calloc(1, sizeof *c);
  if (!c) return fail(HWP_ERROR_OUT_OF_MEMORY, "out of host memory");
  c->dev.struct_size = sizeof c->dev;
  HWP_Status st = g_host->describe_device(g_host->host_context, device, &c->dev);
  if (st == HWP_OK && c->dev.device_table->set_device)
    st = c->dev.device_table->set_device(c->dev.device);
  ncclUniqueId uid;
  memcpy(&uid, id, sizeof uid);
  if (st == HWP_OK)
    st = nccl_status(g_nccl.CommInitRank(&c->comm, nranks, uid, rank), "ncclCommInitRank");
  if (st != HWP_OK) {
    free(c);
    return st;
  }
  c->nranks = nranks;
  c->rank = rank;
  c->global_device = device;
  *out = c;
  return HWP_OK;
}

static HWP_Status comm_split(HWP_CclComm comm, int32_t color, int32_t key, HWP_CclComm *out) {
  if (!g_nccl.CommSplit) return fail(HWP_ERROR_NOT_SUPPORTED, "this NCCL has no ncclCommSplit");
  ncclComm_t split = NULL;
  HWP_Status st = nccl_status(g_nccl.CommSplit(comm->comm, color < 0 ? -1 : color, key, &split,
                                               NULL), "ncclCommSplit");
  if (st != HWP_OK) return st;
  if (!split) {
    *out = NULL;
    return HWP_OK;
  }
  HWP_CclComm c = calloc(1, sizeof *c);
  if (!c) return fail(HWP_ERROR_OUT_OF_MEMORY, "out of host memory");
  *c = *comm;
  c->comm = split;
  *out = c;
  return HWP_OK;
}

static HWP_Status comm_destroy(HWP_CclComm comm) {
  if (!comm) return HWP_OK;
  HWP_Status st = nccl_status(g_nccl.CommDestroy(comm->comm), "ncclCommDestroy");
  free(comm);
  return st;
}

static HWP_Status comm_abort(HWP_CclComm comm) {
  if (!comm) return HWP_OK;
  HWP_Status st = nccl_status(g_nccl.CommAbort(comm->comm), "ncclCommAbort");
  free(comm);
  return st;
}

static HWP_Status comm_get_async_error(HWP_CclComm comm, HWP_Status *error) {
  ncclResult_t rc = 0;
  HWP_Status st = nccl_status(g_nccl.CommGetAsyncError(comm->comm, &rc), "ncclCommGetAsyncError");
  if (st != HWP_OK) return st;
  *error = nccl_status(rc, "a collective (asynchronous error)");
  return HWP_OK;
}

static HWP_Status all_reduce(HWP_Buffer send, uint64_t so, HWP_Buffer recv, uint64_t ro,
                             uint64_t count, HWP_DType dtype, HWP_CclReduceOp op, HWP_CclComm c,
                             HWP_Stream stream) {
  PREPARE(c, dtype, nt, size, cs);
  (void)size;
  ncclRedOp_t rop;
  void *s, *r;
  HWP_Status st = nccl_op(dtype, op, &rop);
  if (st == HWP_OK) st = reach(c, send, so, &s);
  if (st == HWP_OK) st = reach(c, recv, ro, &r);
  if (st != HWP_OK) return st;
  return nccl_status(g_nccl.AllReduce(s, r, count, nt, rop, c->comm, cs), "ncclAllReduce");
}

static HWP_Status broadcast(HWP_Buffer send, uint64_t so, HWP_Buffer recv, uint64_t ro,
                            uint64_t count, HWP_DType dtype, int32_t root, HWP_CclComm c,
                            HWP_Stream stream) {
  PREPARE(c, dtype, nt, size, cs);
  (void)size;
  void *s = NULL, *r;
  HWP_Status st = c->rank == root ? reach(c, send, so, &s) : HWP_OK;
  if (st == HWP_OK) st = reach(c, recv, ro, &r);
  if (st != HWP_OK) return st;
  return nccl_status(g_nccl.Broadcast(s, r, count, nt, root, c->comm, cs), "ncclBroadcast");
}

static HWP_Status reduce(HWP_Buffer send, uint64_t so, HWP_Buffer recv, uint64_t ro,
                         uint64_t count, HWP_DType dtype, HWP_CclReduceOp op, int32_t root,
                         HWP_CclComm c, HWP_Stream stream) {
  PREPARE(c, dtype, nt, size, cs);
  (void)size;
  ncclRedOp_t rop;
  void *s, *r = NULL;
  HWP_Status st = nccl_op(dtype, op, &rop);
  if (st == HWP_OK) st = reach(c, send, so, &s);
  if (st == HWP_OK && c->rank == root) st = reach(c, recv, ro, &r);
  if (st != HWP_OK) return st;
  return nccl_status(g_nccl.Reduce(s, r, count, nt, rop, root, c->comm, cs), "ncclReduce");
}

static HWP_Status all_gather(HWP_Buffer send, uint64_t so, HWP_Buffer recv, uint64_t ro,
                             uint64_t count, HWP_DType dtype, HWP_CclComm c, HWP_Stream stream) {
  PREPARE(c, dtype, nt, size, cs);
  (void)size;
  void *s, *r;
  HWP_Status st = reach(c, send, so, &s);
  if (st == HWP_OK) st = reach(c, recv, ro, &r);
  if (st != HWP_OK) return st;
  return nccl_status(g_nccl.AllGather(s, r, count, nt, c->comm, cs), "ncclAllGather");
}

static HWP_Status reduce_scatter(HWP_Buffer send, uint64_t so, HWP_Buffer recv, uint64_t ro,
                                 uint64_t count, HWP_DType dtype, HWP_CclReduceOp op,
                                 HWP_CclComm c, HWP_Stream stream) {
  PREPARE(c, dtype, nt, size, cs);
  (void)size;
  ncclRedOp_t rop;
  void *s, *r;
  HWP_Status st = nccl_op(dtype, op, &rop);
  if (st == HWP_OK) st = reach(c, send, so, &s);
  if (st == HWP_OK) st = reach(c, recv, ro, &r);
  if (st != HWP_OK) return st;
  return nccl_status(g_nccl.ReduceScatter(s, r, count, nt, rop, c->comm, cs),
                     "ncclReduceScatter");
}

static HWP_Status send_(HWP_Buffer buffer, uint64_t offset, uint64_t count, HWP_DType dtype,
                        int32_t peer, HWP_CclComm c, HWP_Stream stream) {
  PREPARE(c, dtype, nt, size, cs);
  (void)size;
  void *p;
  HWP_Status st = reach(c, buffer, offset, &p);
  if (st != HWP_OK) return st;
  return nccl_status(g_nccl.Send(p, count, nt, peer, c->comm, cs), "ncclSend");
}

static HWP_Status recv_(HWP_Buffer buffer, uint64_t offset, uint64_t count, HWP_DType dtype,
                        int32_t peer, HWP_CclComm c, HWP_Stream stream) {
  PREPARE(c, dtype, nt, size, cs);
  (void)size;
  void *p;
  HWP_Status st = reach(c, buffer, offset, &p);
  if (st != HWP_OK) return st;
  return nccl_status(g_nccl.Recv(p, count, nt, peer, c->comm, cs), "ncclRecv");
}

static HWP_Status group_start(void) { return nccl_status(g_nccl.GroupStart(), "ncclGroupStart"); }
static HWP_Status group_end(void) { return nccl_status(g_nccl.GroupEnd(), "ncclGroupEnd"); }

static HWP_Status all_to_all(HWP_Buffer send, uint64_t so, HWP_Buffer recv, uint64_t ro,
                             uint64_t count, HWP_DType dtype, HWP_CclComm c, HWP_Stream stream) {
  PREPARE(c, dtype, nt, size, cs);
  void *s, *r;
  HWP_Status st = reach(c, send, so, &s);
  if (st == HWP_OK) st = reach(c, recv, ro, &r);
  if (st != HWP_OK) return st;
  const size_t block = count * size;
  st = group_start();
  for (int peer = 0; st == HWP_OK && peer < c->nranks; peer++) {
    st = nccl_status(g_nccl.Send((char *)s + peer * block, count, nt, peer, c->comm, cs),
                     "ncclSend");
    if (st == HWP_OK)
      st = nccl_status(g_nccl.Recv((char *)r + peer * block, count, nt, peer, c->comm, cs),
                       "ncclRecv");
  }
  HWP_Status end = group_end();
  return st != HWP_OK ? st : end;
}

static const HWP_CclTable g_table = {
    .struct_size = sizeof(HWP_CclTable),
    .unique_id_size = sizeof(ncclUniqueId),
    .get_unique_id = get_unique_id,
    .comm_init = comm_init,
    .comm_split = comm_split,
    .comm_destroy = comm_destroy,
    .comm_abort = comm_abort,
    .comm_get_async_error = comm_get_async_error,
    .all_reduce = all_reduce,
    .broadcast = broadcast,
    .all_gather = all_gather,
    .send = send_,
    .recv = recv_,
    .group_start = group_start,
    .group_end = group_end,
    .reduce = reduce,
    .reduce_scatter = reduce_scatter,
    .all_to_all = all_to_all,
};

static void *open_nccl(void) {
  const char *env = getenv("HWPORT_NCCL_LIBRARY");
  if (env && *env) return dlopen(env, RTLD_NOW | RTLD_LOCAL);
  void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  return h ? h : dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
}

HWP_EXPORT HWP_Status hwport_ccl_adapter_init(const HWP_CclAdapterHost *host,
                                              const HWP_CclTable **out,
                                              const char *(**get_last_error)(void)) {
  if (get_last_error) *get_last_error = last_error;
  if (!host || !out) return fail(HWP_ERROR_INVALID_ARGUMENT, "host or out is NULL");
  void *h = open_nccl();
  if (!h) return fail(HWP_ERROR_NOT_SUPPORTED, "libnccl could not be loaded: %s", dlerror());
  struct {
    const char *name;
    void **slot;
    int required;
  } syms[] = {
      {"ncclGetErrorString", (void **)&g_nccl.GetErrorString, 1},
      {"ncclGetUniqueId", (void **)&g_nccl.GetUniqueId, 1},
      {"ncclCommInitRank", (void **)&g_nccl.CommInitRank, 1},
      {"ncclCommSplit", (void **)&g_nccl.CommSplit, 0},
      {"ncclCommDestroy", (void **)&g_nccl.CommDestroy, 1},
      {"ncclCommAbort", (void **)&g_nccl.CommAbort, 1},
      {"ncclCommGetAsyncError", (void **)&g_nccl.CommGetAsyncError, 1},
      {"ncclAllReduce", (void **)&g_nccl.AllReduce, 1},
      {"ncclBroadcast", (void **)&g_nccl.Broadcast, 1},
      {"ncclReduce", (void **)&g_nccl.Reduce, 1},
      {"ncclAllGather", (void **)&g_nccl.AllGather, 1},
      {"ncclReduceScatter", (void **)&g_nccl.ReduceScatter, 1},
      {"ncclSend", (void **)&g_nccl.Send, 1},
      {"ncclRecv", (void **)&g_nccl.Recv, 1},
      {"ncclGroupStart", (void **)&g_nccl.GroupStart, 1},
      {"ncclGroupEnd", (void **)&g_nccl.GroupEnd, 1},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].slot = dlsym(h, syms[i].name);
    if (!*syms[i].slot && syms[i].required)
      return fail(HWP_ERROR_NOT_SUPPORTED, "libnccl has no %s (NCCL >= 2.7 is needed)",
                  syms[i].name);
  }
  g_host = host;
  *out = &g_table;
  return HWP_OK;
}
