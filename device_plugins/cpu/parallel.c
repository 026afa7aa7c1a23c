/* hwport CPU plugin — cpu_parallel_for over a persistent pool of worker threads.
 *
 * The pool starts on first use with HWPORT_CPU_THREADS threads in all (read when the library
 * loads; default: the cores this process may run on), that is, that many minus one detached workers plus the calling thread.
 * One job runs at a time: concurrent callers (different streams) take turns on g_owner, and a
 * call made from inside a chunk (any pool thread, or a caller while it runs its job) runs
 * serially, so nothing can wait on itself.
 *
 * A job is split into `nchunks` ranges that threads claim with a compare-and-swap on one word,
 * g_job.claim = (generation << CLAIM_BITS) | chunks left to claim. A thread reads the job's
 * fields only after it won a chunk of the current generation, and the owner publishes the next
 * job only after every chunk of this one finished (g_job.pending == 0), so a late worker can
 * never mix two jobs. Idle workers spin briefly on the claim word, then sleep on a condition
 * variable; the owner signals it only when someone sleeps.
 *
 * The library pins itself in memory (RTLD_NODELETE) when the pool starts: detached workers
 * must never outlive the code they run, even if the host dlclose()s the plugin. After fork()
 * the child starts a fresh pool on its first parallel call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "parallel.h"

#define POOL_MAX_THREADS 1024
#define CHUNKS_PER_THREAD 4  /* a little slack for threads that start late */
#define CLAIM_BITS 24        /* chunks per job < 2^24 (at most 4 * POOL_MAX_THREADS) */
#define CLAIM_MASK ((1ull << CLAIM_BITS) - 1)
#define WORKER_SPIN_NS 300000 /* an idle worker polls this long before it sleeps */
#define OWNER_SPIN_NS 20000  /* the owner polls this long for the last chunks, then sleeps */

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield" ::: "memory")
#else
#define CPU_RELAX() __asm__ __volatile__("" ::: "memory")
#endif

#define LOAD(p, mo) __atomic_load_n((p), __ATOMIC_##mo)
#define STORE(p, v, mo) __atomic_store_n((p), (v), __ATOMIC_##mo)

static struct {
  /* Written by the owner before it publishes the job; read after winning a chunk. */
  void (*fn)(void *ctx, int64_t begin, int64_t end);
  void *ctx;
  int64_t n;
  int64_t nchunks;
  uint64_t claim;   /* atomic: (generation << CLAIM_BITS) | chunks left to claim */
  int64_t pending;  /* atomic: chunks not finished yet */
  uint64_t gen;     /* the last generation published (owner only, under g_owner) */
} g_job;

static pthread_mutex_t g_owner = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static pthread_mutex_t g_init_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_sleep_mu = PTHREAD_MUTEX_INITIALIZER; /* idle workers */
static pthread_cond_t g_sleep_cv = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t g_done_mu = PTHREAD_MUTEX_INITIALIZER; /* the owner, for the last chunk */
static pthread_cond_t g_done_cv = PTHREAD_COND_INITIALIZER;
static int g_sleepers;      /* atomic: workers asleep (or about to be) on g_sleep_cv */
static int g_owner_waiting; /* atomic: the owner sleeps on g_done_cv */
static int g_ready;         /* atomic: the pool is started */
static int g_threads = 1;   /* threads a job may use, the caller included */
static int g_atfork_done;

static __thread int t_in_pool; /* pool workers always; an owner while its job runs */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Polls until done(arg) or `ns` nanoseconds passed; returns done(arg). */
static int spin_until(int (*done)(const void *arg), const void *arg, uint64_t ns) {
  uint64_t deadline = 0;
  for (unsigned i = 0;; ++i) {
    if (done(arg)) return 1;
    if ((i & 63u) == 0) {
      uint64_t t = now_ns();
      if (deadline == 0) deadline = t + ns;
      else if (t >= deadline) return 0;
    }
    CPU_RELAX();
  }
}

/* ---- chunks ----------------------------------------------------------------------------- */

/* Claims and runs chunks of generation `gen` until none is left. */
static void run_chunks(uint64_t gen) {
  for (;;) {
    uint64_t c = LOAD(&g_job.claim, ACQUIRE);
    for (;;) {
      if ((c >> CLAIM_BITS) != gen || (c & CLAIM_MASK) == 0) return;
      if (__atomic_compare_exchange_n(&g_job.claim, &c, c - 1, 1, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        break;
    }
    /* Chunk i of nchunks: [i*q + min(i, r), ...) with n = q*nchunks + r. */
    const int64_t nchunks = g_job.nchunks, n = g_job.n;
    const int64_t i = nchunks - (int64_t)(c & CLAIM_MASK);
    const int64_t q = n / nchunks, r = n % nchunks;
    const int64_t begin = i * q + (i < r ? i : r);
    const int64_t end = begin + q + (i < r ? 1 : 0);
    g_job.fn(g_job.ctx, begin, end);
    if (__atomic_sub_fetch(&g_job.pending, 1, __ATOMIC_SEQ_CST) == 0 &&
        LOAD(&g_owner_waiting, SEQ_CST)) {
      pthread_mutex_lock(&g_done_mu);
      pthread_cond_signal(&g_done_cv);
      pthread_mutex_unlock(&g_done_mu);
    }
  }
}

/* ---- workers ---------------------------------------------------------------------------- */

static int new_job(const void *seen) {
  return (LOAD(&g_job.claim, ACQUIRE) >> CLAIM_BITS) != *(const uint64_t *)seen;
}

static int job_done(const void *unused) {
  (void)unused;
  return LOAD(&g_job.pending, ACQUIRE) == 0;
}

static void *worker_main(void *arg) {
  uint64_t seen = (uint64_t)(uintptr_t)arg; /* the generation current when it was created */
  t_in_pool = 1;
  for (;;) {
    uint64_t gen;
    if (!spin_until(new_job, &seen, WORKER_SPIN_NS)) {
      pthread_mutex_lock(&g_sleep_mu);
      __atomic_add_fetch(&g_sleepers, 1, __ATOMIC_SEQ_CST);
      while ((gen = LOAD(&g_job.claim, SEQ_CST) >> CLAIM_BITS) == seen)
        pthread_cond_wait(&g_sleep_cv, &g_sleep_mu);
      __atomic_sub_fetch(&g_sleepers, 1, __ATOMIC_SEQ_CST);
      pthread_mutex_unlock(&g_sleep_mu);
    } else {
      gen = LOAD(&g_job.claim, ACQUIRE) >> CLAIM_BITS;
    }
    seen = gen;
    run_chunks(gen);
  }
  return NULL;
}

/* ---- start-up --------------------------------------------------------------------------- */

static int default_threads(void) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int n = online > 0 ? (int)online : 1;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int allowed = CPU_COUNT(&set);
    if (allowed > 0 && allowed < n) n = allowed;
  }
  return n;
}

/* HWPORT_CPU_THREADS, read when the library loads (as the host's environment stands when it
 * loads plugins, like every HWPORT_CPU_* setting); the pool starts later, on first use. */
static char g_env_threads[64];
static int g_env_threads_set;

__attribute__((constructor)) static void read_thread_setting(void) {
  const char *s = getenv("HWPORT_CPU_THREADS");
  if (s != NULL && *s != '\0') {
    strncpy(g_env_threads, s, sizeof g_env_threads - 1);
    g_env_threads[sizeof g_env_threads - 1] = '\0';
    g_env_threads_set = 1;
  }
}

static int configured_threads(void) {
  int n = default_threads();
  if (g_env_threads_set) {
    char *end = NULL;
    long v = strtol(g_env_threads, &end, 10);
    if (end != g_env_threads && *end == '\0' && v >= 1) {
      n = v > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)v;
    } else {
      cpu_log(HWP_LOG_WARNING, "HWPORT_CPU_THREADS='%s' is not a positive integer; using %d",
              g_env_threads, n);
    }
  }
  return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : n;
}

/* In the child of fork(): the workers are gone (and a lock may have been held by a thread
 * that no longer exists); start over on the next parallel call. */
static void atfork_child(void) {
  pthread_mutex_init(&g_owner, NULL);
  pthread_mutex_init(&g_init_mu, NULL);
  pthread_mutex_init(&g_sleep_mu, NULL);
  pthread_cond_init(&g_sleep_cv, NULL);
  pthread_mutex_init(&g_done_mu, NULL);
  pthread_cond_init(&g_done_cv, NULL);
  memset(&g_job, 0, sizeof g_job);
  g_sleepers = 0;
  g_owner_waiting = 0;
  g_threads = 1;
  t_in_pool = 0;
  STORE(&g_ready, 0, RELEASE);
}

/* Keeps this library mapped for the life of the process (the workers run its code). */
static void pin_library(void) {
  Dl_info info;
  if (dladdr((void *)&cpu_parallel_for, &info) != 0 && info.dli_fname != NULL) {
    void *self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    (void)self; /* intentionally never closed */
  }
}

static void pool_start(void) {
  pthread_mutex_lock(&g_init_mu);
  if (!LOAD(&g_ready, ACQUIRE)) {
    if (!g_atfork_done) {
      pthread_atfork(NULL, NULL, atfork_child);
      pin_library();
      g_atfork_done = 1;
    }
    int want = configured_threads();
    int started = 1;
    if (want > 1) {
      sigset_t all, old; /* workers block every signal: they belong to the host's threads */
      sigfillset(&all);
      pthread_sigmask(SIG_SETMASK, &all, &old);
      pthread_attr_t attr;
      pthread_attr_init(&attr);
      pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
      void *gen = (void *)(uintptr_t)(LOAD(&g_job.claim, ACQUIRE) >> CLAIM_BITS);
      for (; started < want; ++started) {
        pthread_t t;
        int rc = pthread_create(&t, &attr, worker_main, gen);
        if (rc != 0) {
          cpu_log(HWP_LOG_WARNING,
                  "cpu thread pool: could not start worker %d of %d (error %d); using %d "
                  "threads",
                  started, want - 1, rc, started);
          break;
        }
      }
      pthread_attr_destroy(&attr);
      pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    g_threads = started;
    STORE(&g_ready, 1, RELEASE);
  }
  pthread_mutex_unlock(&g_init_mu);
}

static inline void pool_ensure(void) {
  if (CPU_UNLIKELY(!LOAD(&g_ready, ACQUIRE))) pool_start();
}

int cpu_parallel_threads(void) {
  pool_ensure();
  return g_threads;
}

/* ---- parallel for ----------------------------------------------------------------------- */

void cpu_parallel_for(int64_t n, int64_t grain,
                      void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (t_in_pool || n < 2 * grain) { /* nested, or too small to split */
    fn(ctx, 0, n);
    return;
  }
  pool_ensure();
  int64_t nchunks = n / grain;
  const int64_t most = (int64_t)g_threads * CHUNKS_PER_THREAD;
  if (nchunks > most) nchunks = most;
  if (g_threads <= 1 || nchunks < 2) {
    fn(ctx, 0, n);
    return;
  }

  pthread_mutex_lock(&g_owner);
  t_in_pool = 1;
  g_job.fn = fn;
  g_job.ctx = ctx;
  g_job.n = n;
  g_job.nchunks = nchunks;
  STORE(&g_job.pending, nchunks, RELAXED);
  const uint64_t gen = ++g_job.gen & ((1ull << (64 - CLAIM_BITS)) - 1);
  STORE(&g_job.claim, (gen << CLAIM_BITS) | (uint64_t)nchunks, SEQ_CST); /* publish */
  if (LOAD(&g_sleepers, SEQ_CST) > 0) {
    pthread_mutex_lock(&g_sleep_mu);
    pthread_cond_broadcast(&g_sleep_cv);
    pthread_mutex_unlock(&g_sleep_mu);
  }

  run_chunks(gen);

  /* Others may still run their last chunk: spin briefly, then sleep until the last one ends. */
  if (!spin_until(job_done, NULL, OWNER_SPIN_NS)) {
    pthread_mutex_lock(&g_done_mu);
    STORE(&g_owner_waiting, 1, SEQ_CST);
    while (LOAD(&g_job.pending, SEQ_CST) != 0) pthread_cond_wait(&g_done_cv, &g_done_mu);
    STORE(&g_owner_waiting, 0, RELAXED);
    pthread_mutex_unlock(&g_done_mu);
  }
  t_in_pool = 0;
  pthread_mutex_unlock(&g_owner);
}
