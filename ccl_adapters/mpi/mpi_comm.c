/* hwport MPI adapter — MPI start-up, unique ids, communicators, and the adapter's entry point.
 *
 * A unique id names the rank that created it and a counter. comm_init bootstraps over
 * MPI_COMM_WORLD point to point: every member tells the creator its (rank, world rank), the
 * creator checks the set and sends back the world rank of every member, and the members create
 * the MPI communicator from that group (MPI_Comm_create_group, collective over members only).
 * So the creator must be a member. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_adapter.h"

const HWP_CclAdapterHost *g_mpi_host;
static int g_thread_multiple;
static int g_we_initialized;
static int g_any_aborted;
static uint32_t g_id_counter;
static pthread_mutex_t g_mpi_mutex = PTHREAD_MUTEX_INITIALIZER;
static __thread char t_error[2048];

#define ID_MAGIC 0x4d505748u /* "HWPM" */
#define BOOTSTRAP_TAG_BASE 30000
#define BOOTSTRAP_TAGS 2000

typedef struct MpiUniqueId {
  uint32_t magic;
  int32_t creator; /* world rank */
  uint32_t counter;
  uint32_t reserved;
} MpiUniqueId;

void mpi_lock(void) {
  if (!g_thread_multiple) pthread_mutex_lock(&g_mpi_mutex);
}
void mpi_unlock(void) {
  if (!g_thread_multiple) pthread_mutex_unlock(&g_mpi_mutex);
}

HWP_Status mpi_error(HWP_Status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_error, sizeof t_error, fmt, ap);
  va_end(ap);
  return code;
}

const char *mpi_last_error(void) { return t_error; }

const char *mpi_error_text(int rc) {
  static __thread char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "code %d", rc);
  return text;
}

/* A process whose watchdog gave up on a collective cannot finalize MPI (the abandoned requests
 * would block it): it ends the job the way a failed rank does. */
static void mpi_at_exit(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (g_any_aborted) {
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (g_we_initialized) MPI_Finalize();
}

/* Open MPI loads its components with dlopen and they need libmpi's symbols: the adapter was
 * loaded RTLD_LOCAL, so promote libmpi (as mpi4py loads it) to the global scope. */
static void promote_libmpi(void) {
  Dl_info info;
  if (dladdr((void *)&MPI_Init_thread, &info) && info.dli_fname)
    (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

static HWP_Status start_mpi(void) {
  int initialized = 0, finalized = 0, provided = 0;
  MPI_Finalized(&finalized);
  if (finalized) return mpi_error(HWP_ERROR_DEVICE, "MPI was already finalized in this process");
  MPI_Initialized(&initialized);
  if (!initialized) {
    promote_libmpi();
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS)
      return mpi_error(HWP_ERROR_DEVICE, "MPI_Init_thread failed: %s", mpi_error_text(rc));
    g_we_initialized = 1;
  } else {
    MPI_Query_thread(&provided);
  }
  g_thread_multiple = provided >= MPI_THREAD_MULTIPLE;
  /* Errors come back as codes (turned into statuses), never as an abort of the job. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  atexit(mpi_at_exit);
  return mpi_progress_init();
}

static HWP_Status get_unique_id(void *id) {
  if (!id) return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "get_unique_id: id is NULL");
  MpiUniqueId uid = {ID_MAGIC, 0, __atomic_add_fetch(&g_id_counter, 1, __ATOMIC_RELAXED), 0};
  MPI_Comm_rank(MPI_COMM_WORLD, &uid.creator);
  memcpy(id, &uid, sizeof uid);
  return HWP_OK;
}

static HWP_Status describe(int32_t global_device, HWP_CclDeviceAccess *dev) {
  memset(dev, 0, sizeof *dev);
  dev->struct_size = sizeof *dev;
  HWP_Status st = g_mpi_host->describe_device(g_mpi_host->host_context, global_device, dev);
  if (st != HWP_OK)
    return mpi_error(st, "comm_init: device %d is unknown to the host", (int)global_device);
  if (!dev->memory || !dev->device_table)
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "comm_init: device %d has no memory table",
                     (int)global_device);
  return HWP_OK;
}

static HWP_Status finish_comm(MPI_Comm mc, int32_t global_device, const HWP_CclDeviceAccess *dev,
                              uint64_t uid, HWP_CclComm *out) {
  HWP_CclComm c = calloc(1, sizeof *c);
  if (!c) return mpi_error(HWP_ERROR_OUT_OF_MEMORY, "comm_init: out of host memory");
  c->comm = mc;
  MPI_Comm_set_errhandler(mc, MPI_ERRORS_RETURN);
  MPI_Comm_rank(mc, &c->rank);
  MPI_Comm_size(mc, &c->nranks);
  c->world_ranks = calloc((size_t)c->nranks, sizeof(int));
  if (!c->world_ranks) {
    free(c);
    return mpi_error(HWP_ERROR_OUT_OF_MEMORY, "comm_init: out of host memory");
  }
  MPI_Group world_group, group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Comm_group(mc, &group);
  int *mine = malloc((size_t)c->nranks * sizeof(int));
  for (int i = 0; mine && i < c->nranks; i++) mine[i] = i;
  if (mine) MPI_Group_translate_ranks(group, c->nranks, mine, world_group, c->world_ranks);
  free(mine);
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  c->uid = uid;
  c->global_device = global_device;
  c->dev = *dev;
  mpi_arrival_attach(c); /* collective over the members, as is this whole function */
  *out = c;
  return HWP_OK;
}

static HWP_Status comm_init(int32_t nranks, int32_t rank, const void *id, int32_t device,
                            HWP_CclComm *out) {
  if (!id || !out) return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "comm_init: id or out is NULL");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "comm_init: rank %d is not in [0, %d)",
                     (int)rank, (int)nranks);
  MpiUniqueId uid;
  memcpy(&uid, id, sizeof uid);
  if (uid.magic != ID_MAGIC)
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT,
                     "comm_init: the id was not made by this adapter's get_unique_id");
  HWP_CclDeviceAccess dev;
  HWP_Status st = describe(device, &dev);
  if (st != HWP_OK) return st;
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (nranks > world_size)
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "comm_init: %d ranks but the MPI job has %d",
                     (int)nranks, world_size);
  const int tag = BOOTSTRAP_TAG_BASE + (int)(uid.counter % BOOTSTRAP_TAGS);
  int *members = calloc((size_t)nranks, sizeof(int));
  if (!members) return mpi_error(HWP_ERROR_OUT_OF_MEMORY, "comm_init: out of host memory");
  const char *what = "comm_init (bootstrap)";
  mpi_lock();
  if (world_rank == uid.creator) {
    /* Collect (rank, world rank) from the other members. */
    for (int i = 0; i < nranks; i++) members[i] = -1;
    members[rank] = world_rank;
    for (int got = 1; got < nranks && st == HWP_OK; got++) {
      int pair[2];
      MPI_Request req;
      MPI_Irecv(pair, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &req);
      mpi_unlock();
      st = mpi_wait_all(NULL, 1, &req, what, 0, -1, 1);
      mpi_lock();
      if (st != HWP_OK) break;
      if (pair[0] < 0 || pair[0] >= nranks || members[pair[0]] != -1)
        st = mpi_error(HWP_ERROR_INVALID_ARGUMENT,
                       "comm_init: world rank %d claimed rank %d, which is out of range or taken",
                       pair[1], pair[0]);
      else
        members[pair[0]] = pair[1];
    }
    for (int r = 0; r < nranks && st == HWP_OK; r++)
      if (members[r] != world_rank)
        MPI_Send(members, nranks, MPI_INT, members[r], tag, MPI_COMM_WORLD);
  } else {
    int pair[2] = {rank, world_rank};
    MPI_Send(pair, 2, MPI_INT, uid.creator, tag, MPI_COMM_WORLD);
    MPI_Request req;
    MPI_Irecv(members, nranks, MPI_INT, uid.creator, tag, MPI_COMM_WORLD, &req);
    mpi_unlock();
    st = mpi_wait_all(NULL, 1, &req, what, 0, -1, 1);
    mpi_lock();
  }
  MPI_Comm mc = MPI_COMM_NULL;
  if (st == HWP_OK) {
    MPI_Group world_group, group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, nranks, members, &group);
    int rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &mc);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    if (rc != MPI_SUCCESS)
      st = mpi_error(HWP_ERROR_DEVICE, "comm_init: MPI_Comm_create_group failed: %s",
                     mpi_error_text(rc));
  }
  if (st == HWP_OK)
    st = finish_comm(mc, device, &dev, ((uint64_t)(uint32_t)uid.creator << 32) | uid.counter, out);
  mpi_unlock();
  free(members);
  return st;
}

static HWP_Status comm_split(HWP_CclComm comm, int32_t color, int32_t key, HWP_CclComm *out) {
  if (!comm || !out)
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "comm_split: comm or out is NULL");
  if (comm->aborted) return mpi_error(HWP_ERROR_DEVICE, "comm_split: the communicator was aborted");
  MPI_Comm mc = MPI_COMM_NULL;
  mpi_lock();
  int rc = MPI_Comm_split(comm->comm, color < 0 ? MPI_UNDEFINED : color, key, &mc);
  HWP_Status st = HWP_OK;
  uint64_t split = ++comm->splits;
  if (rc != MPI_SUCCESS)
    st = mpi_error(HWP_ERROR_DEVICE, "comm_split: MPI_Comm_split failed: %s", mpi_error_text(rc));
  else if (mc == MPI_COMM_NULL)
    *out = NULL;
  else
    st = finish_comm(mc, comm->global_device, &comm->dev,
                     comm->uid * 1000003u + split * 131u + (uint64_t)color, out);
  mpi_unlock();
  return st;
}

static void release(HWP_CclComm comm, int abandon) {
  if (!comm) return;
  int finalized = 0;
  MPI_Finalized(&finalized); /* mpi4py may have finalized MPI before the host lets go */
  mpi_lock();
  /* An aborted communicator may still have requests in flight: leave it to the job's end. */
  if (!abandon && !finalized && comm->comm != MPI_COMM_NULL) MPI_Comm_free(&comm->comm);
  mpi_unlock();
  mpi_arrival_detach(comm);
  free(comm->world_ranks);
  free(comm);
}

static HWP_Status comm_destroy(HWP_CclComm comm) {
  release(comm, comm && comm->aborted);
  return HWP_OK;
}

static HWP_Status comm_abort(HWP_CclComm comm) {
  if (comm) g_any_aborted = 1;
  release(comm, 1);
  return HWP_OK;
}

static HWP_Status comm_get_async_error(HWP_CclComm comm, HWP_Status *error) {
  if (!comm || !error)
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "comm_get_async_error: comm or error is NULL");
  *error = comm->async_error;
  if (comm->async_error != HWP_OK) mpi_error(comm->async_error, "%s", comm->async_message);
  return HWP_OK;
}

void mpi_mark_aborted(HWP_CclComm comm, const char *message) {
  g_any_aborted = 1;
  if (!comm) return;
  comm->aborted = 1;
  comm->async_error = HWP_ERROR_DEVICE;
  snprintf(comm->async_message, sizeof comm->async_message, "%s", message);
}

static const HWP_CclTable g_mpi_ccl_table = {
    .struct_size = sizeof(HWP_CclTable),
    .unique_id_size = 16,
    .get_unique_id = get_unique_id,
    .comm_init = comm_init,
    .comm_split = comm_split,
    .comm_destroy = comm_destroy,
    .comm_abort = comm_abort,
    .comm_get_async_error = comm_get_async_error,
    .all_reduce = mpi_ccl_all_reduce,
    .broadcast = mpi_ccl_broadcast,
    .all_gather = mpi_ccl_all_gather,
    .send = mpi_ccl_send,
    .recv = mpi_ccl_recv,
    .group_start = mpi_ccl_group_start,
    .group_end = mpi_ccl_group_end,
    .reduce = mpi_ccl_reduce,
    .reduce_scatter = mpi_ccl_reduce_scatter,
    .all_to_all = mpi_ccl_all_to_all,
};

/* The entry point: collective over MPI_COMM_WORLD (every rank loads the adapter together). */
HWP_EXPORT HWP_Status hwport_ccl_adapter_init(const HWP_CclAdapterHost *host,
                                              const HWP_CclTable **out,
                                              const char *(**get_last_error)(void)) {
  if (get_last_error) *get_last_error = mpi_last_error;
  if (!host || !out || !host->describe_device)
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "hwport_ccl_adapter_init: host or out is NULL");
  if (host->abi_major != HWP_ABI_VERSION_MAJOR)
    return mpi_error(HWP_ERROR_VERSION_MISMATCH, "host ABI major %u, adapter %d",
                     host->abi_major, HWP_ABI_VERSION_MAJOR);
  g_mpi_host = host;
  HWP_Status st = start_mpi();
  if (st != HWP_OK) return st;
  *out = &g_mpi_ccl_table;
  return HWP_OK;
}

/* ---- Bootstrap over MPI_COMM_WORLD, for the host (rank, size, and handing a vendor table's
 * unique id to the members). Not part of the CCL table. ---- */

HWP_EXPORT HWP_Status hwport_ccl_mpi_world(int32_t *rank, int32_t *size) {
  int r = 0, s = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  *rank = r;
  *size = s;
  return HWP_OK;
}

/* Collective over MPI_COMM_WORLD: root's `nbytes` at `data` reach every rank. */
HWP_EXPORT HWP_Status hwport_ccl_mpi_bcast_bytes(void *data, uint32_t nbytes, int32_t root) {
  MPI_Request req;
  mpi_lock();
  int rc = MPI_Ibcast(data, (int)nbytes, MPI_BYTE, root, MPI_COMM_WORLD, &req);
  mpi_unlock();
  if (rc != MPI_SUCCESS)
    return mpi_error(HWP_ERROR_DEVICE, "MPI_Ibcast failed: %s", mpi_error_text(rc));
  return mpi_wait_all(NULL, 1, &req, "bootstrap broadcast", 0, -1, 1);
}
