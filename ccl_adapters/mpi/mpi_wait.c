/* hwport MPI adapter — the watchdog.
 *
 * Every process publishes, in a slot of an MPI window over MPI_COMM_WORLD, which collective it
 * started last (communicator id, sequence number, kind). A collective is polled until it
 * completes or HWPORT_CCL_TIMEOUT passes; then the waiting rank reads its peers' slots out of
 * band (one-sided MPI_Get, which needs nothing from the peers) and fails with a message naming
 * the ranks that did not arrive and where they are instead.
 *
 * Blocking collectives (MPI's tuned algorithms; the non-blocking ones are far slower) cannot be
 * polled, so the ranks first wait for each other to arrive (mpi_arrive). On one node that wait
 * reads arrival entries in shared memory: each process has a table of entries (one per
 * communicator it belongs to) in a window allocated over the node at start-up, and stores
 * (seq, kind) of each collective it starts in the communicator's entry; a member waits until
 * every other member's entry shows seq or later. No message, no MPI call: the fast path costs
 * a few loads. Communicators that span nodes exchange (seq, kind) in a small all-gather. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* ---- Arrival entries in node-shared memory ---- */

/* An entry: word 0 the communicator's uid (0: free), word 1 (seq << 8) | kind of the last
 * collective this process started on it — one word, so that a reader never pairs one
 * collective's seq with another's kind. Padded to a cache line: entries of communicators used
 * by different threads do not share one. */
enum { ARRIVE_ENTRIES = 256, ARRIVE_WORDS = 8, ARRIVE_UID = 0, ARRIVE_SEQ_WHAT = 1 };

static MPI_Win g_arrive_win = MPI_WIN_NULL;
static int64_t **g_node_tables; /* node rank -> its table (ARRIVE_ENTRIES * ARRIVE_WORDS) */
static int *g_world_to_node;    /* world rank -> node rank, -1 when on another node */
static unsigned char g_entry_used[ARRIVE_ENTRIES];
/* Rounds a waiting rank spins before yielding its core: none when the node's ranks outnumber
 * its cores (the late rank may be waiting for this very core). Not the affinity mask: mpirun
 * binds each rank to one core when they fit. */
static unsigned g_arrive_spins = 256;
static pthread_mutex_t g_entry_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Collective over MPI_COMM_WORLD. Without it (a failure here) every communicator keeps the
 * all-gather: not an error. */
static void arrival_init(void) {
  /* HWPORT_CCL_MPI_SHARED_ARRIVAL=0 keeps the all-gather on one node too (the tests run the
   * watchdog both ways). The same on every rank: mpirun passes the environment to all. */
  const char *knob = getenv("HWPORT_CCL_MPI_SHARED_ARRIVAL");
  if (knob && strcmp(knob, "0") == 0) return;
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
      MPI_SUCCESS)
    return;
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
  int64_t *mine = NULL;
  const MPI_Aint bytes = (MPI_Aint)(ARRIVE_ENTRIES * ARRIVE_WORDS * sizeof(int64_t));
  if (MPI_Win_allocate_shared(bytes, sizeof(int64_t), MPI_INFO_NULL, node, &mine,
                              &g_arrive_win) != MPI_SUCCESS) {
    g_arrive_win = MPI_WIN_NULL;
    return;
  }
  memset(mine, 0, (size_t)bytes);
  int node_size = 0, world_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  int64_t **tables = calloc((size_t)node_size, sizeof *tables);
  int *world_to_node = malloc((size_t)world_size * sizeof(int));
  int *world = malloc((size_t)world_size * sizeof(int));
  int ok = tables && world_to_node && world;
  for (int r = 0; ok && r < node_size; r++) {
    MPI_Aint size = 0;
    int unit = 0;
    ok = MPI_Win_shared_query(g_arrive_win, r, &size, &unit, &tables[r]) == MPI_SUCCESS &&
         tables[r] && size >= bytes;
  }
  if (ok) {
    MPI_Group world_group, node_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_group(node, &node_group);
    for (int r = 0; r < world_size; r++) world[r] = r;
    ok = MPI_Group_translate_ranks(world_group, world_size, world, node_group, world_to_node) ==
         MPI_SUCCESS;
    for (int r = 0; ok && r < world_size; r++)
      if (world_to_node[r] == MPI_UNDEFINED) world_to_node[r] = -1;
    MPI_Group_free(&node_group);
    MPI_Group_free(&world_group);
  }
  free(world);
  if (!ok) {
    free(tables);
    free(world_to_node);
    return; /* the window stays allocated (freeing it is collective): unused */
  }
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 0 && node_size > cores) g_arrive_spins = 0;
  /* Every node member's table is zero before any member can look at it. */
  MPI_Barrier(node);
  g_node_tables = tables;
  g_world_to_node = world_to_node;
  /* `node` stays: the window refers to it. */
}

void mpi_arrival_attach(HWP_CclComm comm) {
  comm->arrive_index = -1;
  int index = -1;
  int on_node = g_node_tables != NULL;
  for (int r = 0; on_node && r < comm->nranks; r++)
    on_node = g_world_to_node[comm->world_ranks[r]] >= 0;
  int64_t **peers = on_node ? calloc((size_t)comm->nranks, sizeof *peers) : NULL;
  if (peers) {
    pthread_mutex_lock(&g_entry_mutex);
    for (int i = 0; i < ARRIVE_ENTRIES && index < 0; i++)
      if (!g_entry_used[i]) {
        g_entry_used[i] = 1;
        index = i;
      }
    pthread_mutex_unlock(&g_entry_mutex);
  }
  int64_t *mine = NULL;
  if (index >= 0) {
    const int me = g_world_to_node[comm->world_ranks[comm->rank]];
    mine = g_node_tables[me] + (size_t)index * ARRIVE_WORDS;
    __atomic_store_n(&mine[ARRIVE_SEQ_WHAT], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&mine[ARRIVE_UID], (int64_t)comm->uid, __ATOMIC_RELEASE);
  }
  /* Every member learns where the others' entries are — and whether every member has one
   * (else all of them keep the all-gather: the choice must be the same on every member). */
  int *indices = malloc((size_t)comm->nranks * sizeof(int));
  int all = indices && MPI_Allgather(&index, 1, MPI_INT, indices, 1, MPI_INT, comm->comm) ==
                           MPI_SUCCESS;
  for (int r = 0; all && r < comm->nranks; r++) all = indices[r] >= 0;
  if (all) {
    for (int r = 0; r < comm->nranks; r++)
      if (r != comm->rank)
        peers[r] = g_node_tables[g_world_to_node[comm->world_ranks[r]]] +
                   (size_t)indices[r] * ARRIVE_WORDS;
    comm->arrive_mine = mine;
    comm->arrive_peer = peers;
    comm->arrive_index = index;
  } else {
    free(peers);
    if (index >= 0) {
      __atomic_store_n(&mine[ARRIVE_UID], 0, __ATOMIC_RELEASE);
      pthread_mutex_lock(&g_entry_mutex);
      g_entry_used[index] = 0;
      pthread_mutex_unlock(&g_entry_mutex);
    }
  }
  free(indices);
}

void mpi_arrival_detach(HWP_CclComm comm) {
  if (comm->arrive_index < 0 || !comm->arrive_mine) return;
  __atomic_store_n(&comm->arrive_mine[ARRIVE_SEQ_WHAT], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&comm->arrive_mine[ARRIVE_UID], 0, __ATOMIC_RELEASE);
  pthread_mutex_lock(&g_entry_mutex);
  g_entry_used[comm->arrive_index] = 0;
  pthread_mutex_unlock(&g_entry_mutex);
  free(comm->arrive_peer);
  comm->arrive_peer = NULL;
  comm->arrive_mine = NULL;
  comm->arrive_index = -1;
}

/* ---- The last collective of each process, for the messages ---- */

HWP_Status mpi_progress_init(void) {
  arrival_init();
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
  if (comm->arrive_mine)
    __atomic_store_n(&comm->arrive_mine[ARRIVE_SEQ_WHAT], (int64_t)((seq << 8) | (uint64_t)what),
                     __ATOMIC_RELEASE);
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
  return (end != s && v >= 0) ? v : 600.0; /* 0: no watchdog (docs/abi.md) */
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
    if ((polls & 63) == 0 && limit > 0 && now_seconds() - start > limit)
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

/* After every member arrived at `seq`: fails every member at once when one is in another
 * collective. kinds[r] is member r's kind at seq (0 for this rank and for members already past
 * it, which passed only after seeing this rank in the same kind). */
static HWP_Status check_kinds(HWP_CclComm comm, uint64_t seq, int what, const int64_t *seqs,
                              const int64_t *kinds) {
  char msg[1024];
  size_t len = 0;
  int mismatched = 0;
  for (int r = 0; r < comm->nranks; r++) {
    if (r == comm->rank || (seqs[r] == (int64_t)seq && kinds[r] == what)) continue;
    if (seqs[r] > (int64_t)seq && !kinds[r]) continue;
    if (!mismatched++)
      len = appendf(msg, sizeof msg, len,
                    "%s #%llu on a communicator of %d ranks: not every rank is in it:",
                    mpi_collective_name(what), (unsigned long long)seq, comm->nranks);
    len = appendf(msg, sizeof msg, len, "%s rank %d (global rank %d) is in %s #%lld",
                  mismatched > 1 ? ";" : "", r, comm->world_ranks[r],
                  mpi_collective_name((int)kinds[r]), (long long)seqs[r]);
  }
  if (!mismatched) return HWP_OK;
  mpi_mark_aborted(comm, msg);
  return mpi_error(HWP_ERROR_DEVICE, "%s", msg);
}

/* Communicators across nodes: (seq, kind) in a small non-blocking all-gather, polled. */
static HWP_Status arrive_allgather(HWP_CclComm comm, uint64_t seq, int what) {
  const int n = comm->nranks;
  int64_t mine[2] = {(int64_t)seq, (int64_t)what};
  int64_t *all = malloc(4 * (size_t)n * sizeof(int64_t));
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
    int64_t *seqs = all + 2 * n, *kinds = all + 3 * n;
    for (int r = 0; r < n; r++) {
      seqs[r] = all[2 * r];
      kinds[r] = all[2 * r + 1];
    }
    st = check_kinds(comm, seq, what, seqs, kinds);
  }
  free(all);
  return st;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* One node: wait until every other member's entry shows seq or later. Spin briefly (the
 * members usually arrive within microseconds of each other), then yield the core at each round
 * (ranks may outnumber cores, and the late member may need this one), and only after 50 ms
 * sleep between rounds. */
static HWP_Status arrive_shared(HWP_CclComm comm, uint64_t seq, int what) {
  enum { STACK_RANKS = 64 };
  const unsigned spins = g_arrive_spins;
  const int n = comm->nranks;
  int64_t stack[2 * STACK_RANKS];
  int64_t *seqs = n <= STACK_RANKS ? stack : malloc(2 * (size_t)n * sizeof(int64_t));
  if (!seqs) return mpi_error(HWP_ERROR_OUT_OF_MEMORY, "out of host memory");
  int64_t *kinds = seqs + n;
  for (int r = 0; r < n; r++) seqs[r] = -1;
  seqs[comm->rank] = (int64_t)seq;
  kinds[comm->rank] = what;
  HWP_Status st = HWP_OK;
  double start = 0, limit = 0;
  int sleeping = 0;
  int next = 0; /* members before it have arrived */
  for (unsigned round = 0;; round++) {
    while (next < n) {
      if (next != comm->rank) {
        const int64_t *entry = comm->arrive_peer[next];
        const int64_t v = __atomic_load_n(&entry[ARRIVE_SEQ_WHAT], __ATOMIC_ACQUIRE);
        /* The uid tells a live entry of this communicator from a freed or reused one. */
        if ((uint64_t)v >> 8 < seq ||
            (uint64_t)__atomic_load_n(&entry[ARRIVE_UID], __ATOMIC_RELAXED) != comm->uid)
          break;
        seqs[next] = (int64_t)((uint64_t)v >> 8);
        /* A member past seq saw this rank at seq in the same kind before going on. */
        kinds[next] = seqs[next] == (int64_t)seq ? (v & 0xff) : 0;
      }
      next++;
    }
    if (next == n) {
      st = check_kinds(comm, seq, what, seqs, kinds);
      break;
    }
    if (round < spins) {
      cpu_relax();
      continue;
    }
    if (round == spins) {
      start = now_seconds();
      limit = mpi_timeout_seconds();
    }
    if ((round & 15) == 0) {
      const double waited = now_seconds() - start;
      if (limit > 0 && waited > limit) {
        st = report_timeout(comm, mpi_collective_name(what), seq, -1, limit);
        break;
      }
      sleeping = waited > 0.05;
    }
    if (sleeping) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    } else {
      sched_yield();
    }
  }
  if (seqs != stack) free(seqs);
  return st;
}

HWP_Status mpi_arrive(HWP_CclComm comm, uint64_t seq, int what) {
  if (mpi_timeout_seconds() <= 0) return HWP_OK; /* HWPORT_CCL_TIMEOUT=0: no watchdog */
  return comm->arrive_peer ? arrive_shared(comm, seq, what) : arrive_allgather(comm, seq, what);
}
