/* hwport MPI adapter — the watchdog.
 *
 * Every process publishes, in a slot of an MPI window over MPI_COMM_WORLD, which collective it
 * started last (communicator id, sequence number, kind). A collective is polled until it
 * completes or HWPORT_CCL_TIMEOUT passes; then the waiting rank reads its peers' slots out of
 * band (one-sided MPI_Get, which needs nothing from the peers) and fails with a message naming
 * the ranks that did not arrive and where they are instead. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_adapter.h"

enum { SLOT_UID, SLOT_SEQ, SLOT_WHAT, SLOT_WORDS };

static MPI_Win g_win = MPI_WIN_NULL;
static int64_t *g_slot; /* this process's slot: SLOT_WORDS int64 */

static const char *const k_names[MPI_COLL_COUNT] = {
    "none", "all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all",
    "send", "recv"};

const char *mpi_collective_name(int what) {
  return (what >= 0 && what < MPI_COLL_COUNT) ? k_names[what] : "collective";
}

HWP_Status mpi_progress_init(void) {
  int rc = MPI_Win_allocate((MPI_Aint)(SLOT_WORDS * sizeof(int64_t)), sizeof(int64_t),
                            MPI_INFO_NULL, MPI_COMM_WORLD, &g_slot, &g_win);
  if (rc != MPI_SUCCESS)
    return mpi_error(HWP_ERROR_DEVICE,
                     "MPI_Win_allocate (the watchdog's progress slots) failed: %s",
                     mpi_error_text(rc));
  memset(g_slot, 0, SLOT_WORDS * sizeof(int64_t));
  return HWP_OK;
}

void mpi_publish_progress(HWP_CclComm comm, uint64_t seq, int what) {
  if (!g_slot) return;
  __atomic_store_n(&g_slot[SLOT_UID], (int64_t)comm->uid, __ATOMIC_RELAXED);
  __atomic_store_n(&g_slot[SLOT_WHAT], (int64_t)what, __ATOMIC_RELAXED);
  __atomic_store_n(&g_slot[SLOT_SEQ], (int64_t)seq, __ATOMIC_RELEASE);
}

double mpi_timeout_seconds(void) {
  const char *s = getenv("HWPORT_CCL_TIMEOUT");
  if (!s || !*s) return 600.0;
  char *end = NULL;
  double v = strtod(s, &end);
  return (end != s && v > 0) ? v : 600.0;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void read_slot(int world_rank, int64_t out[SLOT_WORDS]) {
  mpi_lock();
  MPI_Win_lock(MPI_LOCK_SHARED, world_rank, 0, g_win);
  MPI_Get(out, SLOT_WORDS, MPI_INT64_T, world_rank, 0, SLOT_WORDS, MPI_INT64_T, g_win);
  MPI_Win_unlock(world_rank, g_win);
  mpi_unlock();
}

static size_t appendf(char *buf, size_t cap, size_t len, const char *fmt, ...)
    MPI_ADAPTER_PRINTF(4, 5);
static size_t appendf(char *buf, size_t cap, size_t len, const char *fmt, ...) {
  if (len >= cap) return len;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
  return n < 0 ? len : len + (size_t)n;
}

static HWP_Status report_timeout(HWP_CclComm comm, const char *what, uint64_t seq, int peer,
                                 double limit) {
  char msg[1024];
  size_t len = 0;
  if (!comm) {
    len = appendf(msg, sizeof msg, len,
                  "%s did not complete within %g s (HWPORT_CCL_TIMEOUT): a member never joined",
                  what, limit);
    mpi_mark_aborted(NULL, msg);
    return mpi_error(HWP_ERROR_DEVICE, "%s", msg);
  }
  if (peer >= 0)
    len = appendf(msg, sizeof msg, len,
                  "%s with rank %d (global rank %d) on a communicator of %d ranks did not complete "
                  "within %g s (HWPORT_CCL_TIMEOUT):",
                  what, peer, comm->world_ranks[peer], comm->nranks, limit);
  else
    len = appendf(msg, sizeof msg, len,
                  "%s #%llu on a communicator of %d ranks did not complete within %g s "
                  "(HWPORT_CCL_TIMEOUT):",
                  what, (unsigned long long)seq, comm->nranks, limit);
  int missing = 0;
  for (int r = 0; r < comm->nranks; r++) {
    if (r == comm->rank) continue;
    int64_t slot[SLOT_WORDS];
    read_slot(comm->world_ranks[r], slot);
    const int here = (uint64_t)slot[SLOT_UID] == comm->uid;
    if (peer >= 0 && r != peer) continue; /* point to point: only the peer matters */
    if (here && ((uint64_t)slot[SLOT_SEQ] > seq ||
                 ((uint64_t)slot[SLOT_SEQ] == seq &&
                  strcmp(mpi_collective_name((int)slot[SLOT_WHAT]), what) == 0)))
      continue; /* arrived */
    missing++;
    len = appendf(msg, sizeof msg, len, "%s rank %d (global rank %d) ", missing > 1 ? ";" : "",
                  r, comm->world_ranks[r]);
    if (peer >= 0)
      len = appendf(msg, sizeof msg, len, "did not post the matching %s (its last collective is "
                    "%s #%lld%s)", strcmp(what, "send") == 0 ? "recv" : "send",
                    mpi_collective_name((int)slot[SLOT_WHAT]), (long long)slot[SLOT_SEQ],
                    here ? "" : " on another communicator");
    else if (!slot[SLOT_SEQ])
      len = appendf(msg, sizeof msg, len, "did not arrive (it has issued no collective yet)");
    else if (!here)
      len = appendf(msg, sizeof msg, len,
                    "did not arrive (it is in %s #%lld on another communicator)",
                    mpi_collective_name((int)slot[SLOT_WHAT]), (long long)slot[SLOT_SEQ]);
    else if ((uint64_t)slot[SLOT_SEQ] < seq)
      len = appendf(msg, sizeof msg, len,
                    "did not arrive (its last collective here is #%lld, %s)",
                    (long long)slot[SLOT_SEQ], mpi_collective_name((int)slot[SLOT_WHAT]));
    else
      len = appendf(msg, sizeof msg, len, "is in %s #%lld instead (mismatched collectives)",
                    mpi_collective_name((int)slot[SLOT_WHAT]), (long long)slot[SLOT_SEQ]);
  }
  if (!missing)
    appendf(msg, sizeof msg, len,
            " every rank arrived; the transfer itself stalled (a peer may have died)");
  mpi_mark_aborted(comm, msg);
  return mpi_error(HWP_ERROR_DEVICE, "%s", msg);
}

HWP_Status mpi_wait_all(HWP_CclComm comm, int n, MPI_Request *requests, const char *what,
                        uint64_t seq, int peer, int may_sleep) {
  if (n == 0) return HWP_OK;
  const double limit = mpi_timeout_seconds();
  const double start = now_seconds();
  for (unsigned polls = 0;; polls++) {
    int done = 0;
    mpi_lock();
    int rc = MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
    mpi_unlock();
    if (rc != MPI_SUCCESS)
      return mpi_error(HWP_ERROR_DEVICE, "%s #%llu failed in MPI: %s", what,
                       (unsigned long long)seq, mpi_error_text(rc));
    if (done) return HWP_OK;
    if ((polls & 63) == 0 && now_seconds() - start > limit)
      return report_timeout(comm, what, seq, peer, limit);
    /* Spin first (latency), then yield the core (ranks may outnumber cores); small control
     * messages may then sleep. Transfers never sleep: a non-blocking collective advances only
     * inside MPI calls. */
    if (polls > 2000) {
      if (may_sleep && now_seconds() - start > 0.05) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
      } else {
        sched_yield();
      }
    }
  }
}

HWP_Status mpi_arrive(HWP_CclComm comm, uint64_t seq, int what) {
  if (mpi_timeout_seconds() <= 0) return HWP_OK; /* HWPORT_CCL_TIMEOUT=0: no watchdog */
  const int n = comm->nranks;
  int64_t mine[2] = {(int64_t)seq, (int64_t)what};
  int64_t *all = malloc(2 * (size_t)n * sizeof(int64_t));
  if (!all) return mpi_error(HWP_ERROR_OUT_OF_MEMORY, "out of host memory");
  MPI_Request req;
  mpi_lock();
  int rc = MPI_Iallgather(mine, 2, MPI_INT64_T, all, 2, MPI_INT64_T, comm->comm, &req);
  mpi_unlock();
  HWP_Status st = rc == MPI_SUCCESS
                      ? mpi_wait_all(comm, 1, &req, mpi_collective_name(what), seq, -1, 1)
                      : mpi_error(HWP_ERROR_DEVICE, "%s: MPI failed: %s",
                                  mpi_collective_name(what), mpi_error_text(rc));
  if (st == HWP_OK) {
    char msg[1024];
    size_t len = 0;
    int mismatched = 0;
    for (int r = 0; r < n; r++) {
      if (all[2 * r] == mine[0] && all[2 * r + 1] == mine[1]) continue;
      if (!mismatched++)
        len = appendf(msg, sizeof msg, len,
                      "%s #%llu on a communicator of %d ranks: not every rank is in it:",
                      mpi_collective_name(what), (unsigned long long)seq, n);
      len = appendf(msg, sizeof msg, len, "%s rank %d (global rank %d) is in %s #%lld",
                    mismatched > 1 ? ";" : "", r, comm->world_ranks[r],
                    mpi_collective_name((int)all[2 * r + 1]), (long long)all[2 * r]);
    }
    if (mismatched) {
      mpi_mark_aborted(comm, msg);
      st = mpi_error(HWP_ERROR_DEVICE, "%s", msg);
    }
  }
  free(all);
  return st;
}
