/* Large float32 and bfloat16 products through oneDNN's matmul primitive (kernels_linalg.c
 * calls cpu_dnnl_matmul first and falls back to OpenBLAS when it declines).
 *
 * Why: oneDNN's JIT kernels use the CPU's widest FMA and, where the CPU has AVX512_BF16, its
 * bfloat16 dot products (vdpbf16ps, twice the float32 rate), where OpenBLAS 0.3.21 has no
 * bfloat16 GEMM (the plugin converted both operands to float32) and follows OPENBLAS_CORETYPE.
 * Measured on a Zen 5 core, 1024^3: bfloat16 4.6 ms (was 16.6 ms through sgemm), float32 10.3
 * ms (OpenBLAS held to its Haswell kernels: 16.7 ms).
 *
 * Threads: every call runs oneDNN single-threaded on the calling thread (its OpenMP runtime
 * starts no threads of its own); the plugin's pool splits the product into row (or column)
 * bands, one oneDNN call each. Primitives are cached per (dtype, shape, strides): creating one
 * costs 0.07 ms (64^3) to 0.4 ms (1024^3, a tenth of the product). Products oneDNN would run with its reference
 * (non-JIT) implementation are declined. */
#ifdef HWPORT_CPU_HAVE_DNNL
#include <dnnl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "parallel.h"

/* OpenMP's per-thread thread count, from the runtime oneDNN links (weak: a oneDNN built on
 * another threading runtime links too, and then runs with its own threads). */
extern void omp_set_num_threads(int n) __attribute__((weak));
extern int omp_get_max_threads(void) __attribute__((weak));

/* Products below this many multiply-adds stay with OpenBLAS (its small-matrix paths cost less
 * than a primitive lookup and four memory objects). Measured on a Zen 5 core, one thread:
 * 32^3 2.6 vs 2.2 us, 64^3 4.5 vs 6.3 us, 128 x 64 x 128 11.4 vs 20.7 us (oneDNN vs OpenBLAS;
 * a shape's first call adds about 70 us of JIT). */
#define DNNL_MIN_MACS ((double)(1 << 17))
/* A band is at least this many rows (or columns): thinner ones starve oneDNN's register tile. */
#define DNNL_MIN_BAND 64
#define DNNL_CACHE 64

/* Compared with memcmp: every field 64 bits wide, so the struct has no padding bytes. */
typedef struct dnnl_key {
  int64_t dt, M, N, K, ars, acs, brs, bcs, ldc;
} dnnl_key;

typedef struct dnnl_entry {
  dnnl_key key;
  dnnl_primitive_t prim; /* NULL: oneDNN declined this key (reference implementation, error) */
  dnnl_memory_desc_t a, b, c, scratch;
} dnnl_entry;

/* Entries are never removed (a primitive may be running on another thread); once the table is
 * full, new keys are created and destroyed per call. */
static pthread_mutex_t g_dnnl_mu = PTHREAD_MUTEX_INITIALIZER;
static dnnl_entry g_dnnl_cache[DNNL_CACHE];
static int g_dnnl_count;
static dnnl_engine_t g_dnnl_engine;
static int g_dnnl_state; /* 0: not tried, 1: engine ready, -1: unusable */

static int dnnl_desc(dnnl_memory_desc_t *md, dnnl_data_type_t t, int64_t rows, int64_t cols,
                     int64_t rs, int64_t cs) {
  dnnl_dims_t dims = {rows, cols}, strides = {rs, cs};
  return dnnl_memory_desc_init_by_strides(md, 2, dims, t, strides) == dnnl_success;
}

/* Creates k's primitive into e (e->prim NULL when oneDNN has no JIT kernel for it). */
static void dnnl_create(const dnnl_key *k, dnnl_entry *e) {
  memset(e, 0, sizeof *e);
  e->key = *k;
  const dnnl_data_type_t t = k->dt == HWP_DTYPE_BFLOAT16 ? dnnl_bf16 : dnnl_f32;
  dnnl_matmul_desc_t md;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  const char *impl = NULL;
  /* The caller passes the scratchpad: the library's own one is shared by concurrent calls
   * (measured: wrong results when two pool threads ran bands at once). */
  if (!dnnl_desc(&e->a, t, k->M, k->K, k->ars, k->acs) ||
      !dnnl_desc(&e->b, t, k->K, k->N, k->brs, k->bcs) ||
      !dnnl_desc(&e->c, t, k->M, k->N, k->ldc, 1) ||
      dnnl_matmul_desc_init(&md, &e->a, &e->b, NULL, &e->c) != dnnl_success ||
      dnnl_primitive_attr_create(&attr) != dnnl_success)
    return;
  if (dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success &&
      dnnl_primitive_desc_create(&pd, &md, attr, g_dnnl_engine, NULL) == dnnl_success) {
    const dnnl_memory_desc_t *scratch =
        dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (scratch != NULL &&
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        impl != NULL && strncmp(impl, "ref", 3) != 0) {
      e->scratch = *scratch;
      (void)dnnl_primitive_create(&e->prim, pd);
    }
    dnnl_primitive_desc_destroy(pd);
  }
  dnnl_primitive_attr_destroy(attr);
}

/* The cached entry for k, or (table full) a fresh one in *spare that the caller destroys. */
static const dnnl_entry *dnnl_lookup(const dnnl_key *k, dnnl_entry *spare) {
  pthread_mutex_lock(&g_dnnl_mu);
  const dnnl_entry *found = NULL;
  for (int i = 0; i < g_dnnl_count && found == NULL; ++i)
    if (memcmp(&g_dnnl_cache[i].key, k, sizeof *k) == 0) found = &g_dnnl_cache[i];
  if (found == NULL) {
    dnnl_entry *e = g_dnnl_count < DNNL_CACHE ? &g_dnnl_cache[g_dnnl_count++] : spare;
    dnnl_create(k, e);
    found = e;
  }
  pthread_mutex_unlock(&g_dnnl_mu);
  return found;
}

/* Whether oneDNN is on: HWPORT_CPU_DNNL=0 turns it off (every product goes to OpenBLAS). */
static int dnnl_ready(void) {
  pthread_mutex_lock(&g_dnnl_mu);
  if (g_dnnl_state == 0) {
    const char *env = getenv("HWPORT_CPU_DNNL");
    if (env != NULL && strcmp(env, "0") == 0)
      g_dnnl_state = -1;
    else
      g_dnnl_state = dnnl_engine_create(&g_dnnl_engine, dnnl_cpu, 0) == dnnl_success ? 1 : -1;
  }
  const int ok = g_dnnl_state == 1;
  pthread_mutex_unlock(&g_dnnl_mu);
  return ok;
}

/* Per thread: a oneDNN stream and a scratchpad grown as needed, released when the thread ends
 * (a stream's worker thread ends with its stream). */
typedef struct dnnl_thread {
  dnnl_stream_t stream;
  void *scratch;
  size_t scratch_bytes;
} dnnl_thread;

static pthread_key_t g_dnnl_thread_key;
static pthread_once_t g_dnnl_thread_once = PTHREAD_ONCE_INIT;

static void dnnl_thread_free(void *p) {
  dnnl_thread *t = p;
  if (t->stream != NULL) dnnl_stream_destroy(t->stream);
  free(t->scratch);
  free(t);
}
static void dnnl_thread_key_init(void) {
  (void)pthread_key_create(&g_dnnl_thread_key, dnnl_thread_free);
}

static dnnl_thread *dnnl_this_thread(void) {
  pthread_once(&g_dnnl_thread_once, dnnl_thread_key_init);
  dnnl_thread *t = pthread_getspecific(g_dnnl_thread_key);
  if (t != NULL) return t;
  if ((t = calloc(1, sizeof *t)) == NULL) return NULL;
  if (dnnl_stream_create(&t->stream, g_dnnl_engine, dnnl_stream_default_flags) != dnnl_success ||
      pthread_setspecific(g_dnnl_thread_key, t) != 0) {
    dnnl_thread_free(t);
    return NULL;
  }
  return t;
}

/* One product on this thread; 1 when it ran. */
static int dnnl_run(const dnnl_key *k, const void *a, const void *b, void *c) {
  dnnl_thread *t = dnnl_this_thread();
  if (t == NULL) return 0;
  dnnl_entry spare;
  memset(&spare, 0, sizeof spare);
  const dnnl_entry *e = dnnl_lookup(k, &spare);
  int ran = 0;
  dnnl_memory_t m[4] = {NULL, NULL, NULL, NULL};
  const size_t need = e->prim != NULL ? dnnl_memory_desc_get_size(&e->scratch) : 0;
  if (need > t->scratch_bytes) {
    free(t->scratch);
    t->scratch_bytes = posix_memalign(&t->scratch, 64, need) == 0 ? need : 0;
    if (t->scratch_bytes == 0) t->scratch = NULL;
  }
  if (e->prim != NULL && need <= t->scratch_bytes &&
      dnnl_memory_create(&m[0], &e->a, g_dnnl_engine, (void *)a) == dnnl_success &&
      dnnl_memory_create(&m[1], &e->b, g_dnnl_engine, (void *)b) == dnnl_success &&
      dnnl_memory_create(&m[2], &e->c, g_dnnl_engine, c) == dnnl_success &&
      (need == 0 ||
       dnnl_memory_create(&m[3], &e->scratch, g_dnnl_engine, t->scratch) == dnnl_success)) {
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, m[0]}, {DNNL_ARG_WEIGHTS, m[1]},
                               {DNNL_ARG_DST, m[2]}, {DNNL_ARG_SCRATCHPAD, m[3]}};
    /* One thread: this thread's OpenMP setting (per thread), put back after the call, since
     * inline products run on the caller's own thread. */
    const int omp = omp_set_num_threads != NULL && omp_get_max_threads != NULL;
    const int prev = omp ? omp_get_max_threads() : 1;
    if (omp && prev != 1) omp_set_num_threads(1);
    ran = dnnl_primitive_execute(e->prim, t->stream, need > 0 ? 4 : 3, args) == dnnl_success &&
          dnnl_stream_wait(t->stream) == dnnl_success;
    if (omp && prev != 1) omp_set_num_threads(prev);
  }
  for (int i = 0; i < 4; ++i)
    if (m[i] != NULL) dnnl_memory_destroy(m[i]);
  if (spare.prim != NULL) dnnl_primitive_destroy(spare.prim);
  return ran;
}

typedef struct dnnl_bands {
  dnnl_key whole;
  const char *a, *b;
  char *c;
  int64_t esz, band, nbands;
  int by_rows;
  int failed;
} dnnl_bands;

static void dnnl_band_task(void *ctx, int64_t begin, int64_t end) {
  dnnl_bands *B = ctx;
  for (int64_t i = begin; i < end; ++i) {
    dnnl_key k = B->whole;
    const int64_t lo = i * B->band;
    const char *a = B->a, *b = B->b;
    char *c = B->c;
    if (B->by_rows) {
      k.M = (lo + B->band < B->whole.M ? B->band : B->whole.M - lo);
      a += lo * k.ars * B->esz;
      c += lo * k.ldc * B->esz;
    } else {
      k.N = (lo + B->band < B->whole.N ? B->band : B->whole.N - lo);
      b += lo * k.bcs * B->esz;
      c += lo * B->esz;
    }
    if (!dnnl_run(&k, a, b, c)) __atomic_store_n(&B->failed, 1, __ATOMIC_RELAXED);
  }
}

int cpu_dnnl_matmul(HWP_DType dt, int64_t M, int64_t N, int64_t K, const void *a, int64_t ars,
                    int64_t acs, const void *b, int64_t brs, int64_t bcs, void *c) {
  if (dt != HWP_DTYPE_FLOAT32 && dt != HWP_DTYPE_BFLOAT16) return 0;
  if (M < 2 || N < 2 || (double)M * (double)N * (double)K < DNNL_MIN_MACS) return 0;
  const int64_t esz = dt == HWP_DTYPE_FLOAT32 ? 4 : 2;
  if ((uintptr_t)a % esz || (uintptr_t)b % esz || (uintptr_t)c % esz) return 0;
  if (ars <= 0 || acs <= 0 || brs <= 0 || bcs <= 0) return 0; /* broadcast or reversed views */
  if (!dnnl_ready()) return 0;
  dnnl_bands B = {.whole = {dt, M, N, K, ars, acs, brs, bcs, N}, .a = a, .b = b, .c = c,
                  .esz = esz};
  const int64_t threads = cpu_parallel_threads() > 0 ? cpu_parallel_threads() : 1;
  B.by_rows = M >= N;
  const int64_t span = B.by_rows ? M : N;
  int64_t bands = span / DNNL_MIN_BAND;
  if (bands > threads) bands = threads;
  if (bands < 1) bands = 1;
  B.band = (span + bands - 1) / bands;
  B.band = (B.band + 15) / 16 * 16; /* whole register tiles: one band shape, one remainder */
  B.nbands = (span + B.band - 1) / B.band;
  if (B.nbands == 1)
    dnnl_band_task(&B, 0, 1);
  else
    cpu_parallel_for(B.nbands, 1, dnnl_band_task, &B);
  return !__atomic_load_n(&B.failed, __ATOMIC_RELAXED);
}
#endif
