/* hwport CPU plugin — the memory table: accounted aligned host allocations and copies.
 *
 * A buffer handle IS the host address of its data. Every allocation carries a small header just
 * before the data (magic, size, device) and is listed in a set of live allocations, so that
 * deallocate rejects a foreign or double-freed pointer without touching freed memory. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define CPU_ALLOC_MAGIC 0x68777063707541ull /* "hwpcpuA" */
#define CPU_ALLOC_DEAD 0x6877706370754Dull  /* "hwpcpuM" */
#define CPU_HEADER_SIZE CPU_ALIGNMENT       /* keeps the data 64-byte aligned */
#define CPU_HUGE_MIN (4u << 20)             /* blocks from here on ask for huge pages */
#define CPU_HUGE_ALIGN ((size_t)2 << 20)    /* the x86-64 huge page */

typedef struct cpu_alloc_header {
  uint64_t magic;
  uint64_t size;
  int32_t device;
} cpu_alloc_header;

typedef struct cpu_mem_stats {
  uint64_t in_use, peak, num_allocs, num_frees;
} cpu_mem_stats;

/* Everything below is guarded by g_mem_mu (allocation is rare: the host caches). */
static pthread_mutex_t g_mem_mu = PTHREAD_MUTEX_INITIALIZER;
static cpu_mem_stats g_stats[CPU_MAX_DEVICES];

/* Open-addressing set of live data pointers. 0 = empty slot, 1 = tombstone. */
static uintptr_t *g_live_slots;
static size_t g_live_cap;   /* power of two, or 0 */
static size_t g_live_used;  /* live + tombstones */
static size_t g_live_count; /* live */

static size_t live_hash(uintptr_t p, size_t cap) {
  return (size_t)(((uint64_t)(p >> 6) * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static size_t live_find(uintptr_t p) { /* index of p, or g_live_cap when absent */
  if (g_live_cap == 0) return 0;
  for (size_t i = live_hash(p, g_live_cap);; i = (i + 1) & (g_live_cap - 1)) {
    if (g_live_slots[i] == p) return i;
    if (g_live_slots[i] == 0) return g_live_cap;
  }
}

static int live_rehash(size_t cap) {
  uintptr_t *slots = calloc(cap, sizeof *slots);
  if (slots == NULL) return 0;
  for (size_t i = 0; i < g_live_cap; ++i) {
    uintptr_t p = g_live_slots[i];
    if (p <= 1) continue;
    size_t j = live_hash(p, cap);
    while (slots[j] != 0) j = (j + 1) & (cap - 1);
    slots[j] = p;
  }
  free(g_live_slots);
  g_live_slots = slots;
  g_live_cap = cap;
  g_live_used = g_live_count;
  return 1;
}

static int live_insert(uintptr_t p) {
  if ((g_live_used + 1) * 2 > g_live_cap) {
    size_t cap = 64;
    while (cap < (g_live_count + 1) * 4) cap *= 2;
    if (!live_rehash(cap)) return 0;
  }
  size_t i = live_hash(p, g_live_cap);
  while (g_live_slots[i] > 1) i = (i + 1) & (g_live_cap - 1);
  if (g_live_slots[i] == 0) ++g_live_used;
  g_live_slots[i] = p;
  ++g_live_count;
  return 1;
}

static void live_remove(size_t index) {
  g_live_slots[index] = 1;
  if (--g_live_count == 0) { /* release the table between workloads */
    free(g_live_slots);
    g_live_slots = NULL;
    g_live_cap = g_live_used = 0;
  }
}

static cpu_alloc_header *header_of(void *data) {
  return (cpu_alloc_header *)((char *)data - CPU_HEADER_SIZE);
}

/* ---- allocate / deallocate -------------------------------------------------------------- */

static HWP_Status cpu_allocate(int32_t device, uint64_t nbytes, HWP_Buffer *out) {
  HWP_Status st = cpu_check_device(device, "allocate");
  if (st != HWP_OK) return st;
  if (out == NULL) return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "allocate: out is NULL");
  if (nbytes == 0)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "allocate: nbytes must be > 0 (got 0)");

  pthread_mutex_lock(&g_mem_mu);
  cpu_mem_stats *s = &g_stats[device];
  uint64_t limit = g_cpu.memory_limit;
  if (nbytes > limit || s->in_use > limit - nbytes ||
      nbytes > (uint64_t)SIZE_MAX - CPU_HEADER_SIZE) {
    st = cpu_error(HWP_ERROR_OUT_OF_MEMORY,
                   "allocate: out of memory on cpu device %d: requested %llu bytes, %llu in "
                   "use, limit %llu (HWPORT_CPU_MEMORY_LIMIT)",
                   (int)device, (unsigned long long)nbytes, (unsigned long long)s->in_use,
                   (unsigned long long)limit);
    pthread_mutex_unlock(&g_mem_mu);
    return st;
  }
  void *raw = NULL;
  /* Big blocks start on a 2 MiB boundary and ask for transparent huge pages (Linux in the
   * default "madvise" mode grants them only on request, as numpy requests them): streaming
   * kernels over 4 KiB pages run at half the memory bandwidth, bound by TLB misses. Advice
   * only: a kernel that refuses it changes nothing. */
  const int huge = nbytes >= CPU_HUGE_MIN;
  if (posix_memalign(&raw, huge ? CPU_HUGE_ALIGN : CPU_ALIGNMENT,
                     (size_t)nbytes + CPU_HEADER_SIZE) != 0 || raw == NULL) {
    st = cpu_error(HWP_ERROR_OUT_OF_MEMORY,
                   "allocate: the host could not provide %llu bytes for cpu device %d (%llu in "
                   "use, limit %llu)",
                   (unsigned long long)nbytes, (int)device, (unsigned long long)s->in_use,
                   (unsigned long long)limit);
    pthread_mutex_unlock(&g_mem_mu);
    return st;
  }
#ifdef MADV_HUGEPAGE
  if (huge) (void)madvise(raw, (size_t)nbytes + CPU_HEADER_SIZE, MADV_HUGEPAGE);
#endif
  char *data = (char *)raw + CPU_HEADER_SIZE;
  if (!live_insert((uintptr_t)data)) {
    free(raw);
    st = cpu_error(HWP_ERROR_OUT_OF_MEMORY, "allocate: no host memory for bookkeeping");
    pthread_mutex_unlock(&g_mem_mu);
    return st;
  }
  cpu_alloc_header *h = header_of(data);
  h->magic = CPU_ALLOC_MAGIC;
  h->size = nbytes;
  h->device = device;
  s->in_use += nbytes;
  if (s->in_use > s->peak) s->peak = s->in_use;
  s->num_allocs += 1;
  pthread_mutex_unlock(&g_mem_mu);
  *out = (HWP_Buffer)data;
  return HWP_OK;
}

static HWP_Status cpu_deallocate(int32_t device, HWP_Buffer buffer) {
  HWP_Status st = cpu_check_device(device, "deallocate");
  if (st != HWP_OK) return st;
  if (buffer == NULL) return HWP_OK;
  pthread_mutex_lock(&g_mem_mu);
  size_t index = live_find((uintptr_t)buffer);
  if (index == g_live_cap) {
    pthread_mutex_unlock(&g_mem_mu);
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "deallocate: buffer %p is not a live allocation of the cpu plugin (freed "
                     "twice, wrapped host memory, or a foreign pointer)",
                     (void *)buffer);
  }
  cpu_alloc_header *h = header_of(buffer);
  if (h->magic != CPU_ALLOC_MAGIC || h->device != device) {
    int owner = h->magic == CPU_ALLOC_MAGIC ? (int)h->device : -1;
    pthread_mutex_unlock(&g_mem_mu);
    if (owner >= 0)
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "deallocate: buffer %p belongs to cpu device %d, not %d", (void *)buffer,
                       owner, (int)device);
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "deallocate: buffer %p has a corrupt header",
                     (void *)buffer);
  }
  live_remove(index);
  cpu_mem_stats *s = &g_stats[device];
  s->in_use -= h->size;
  s->num_frees += 1;
  h->magic = CPU_ALLOC_DEAD;
  pthread_mutex_unlock(&g_mem_mu);
  free(h);
  return HWP_OK;
}

/* ---- copies ----------------------------------------------------------------------------- */

#define CPU_REQUIRE(cond, fn, what)                                                            \
  do {                                                                                         \
    if (CPU_UNLIKELY(!(cond)))                                                                 \
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);                \
  } while (0)

/* Synchronous copy: waits for the device's streams, then copies on the calling thread. */
static HWP_Status sync_copy(int32_t device, void *dst, const void *src, uint64_t nbytes) {
  HWP_Status st = cpu_synchronize_device(device);
  if (st != HWP_OK) return st;
  if (nbytes != 0) memmove(dst, src, (size_t)nbytes);
  return HWP_OK;
}

static HWP_Status cpu_copy_h2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset,
                               const void *src, uint64_t nbytes) {
  HWP_Status st = cpu_check_device(device, "copy_h2d");
  if (st != HWP_OK) return st;
  if (nbytes != 0) {
    CPU_REQUIRE(dst != NULL, "copy_h2d", "dst");
    CPU_REQUIRE(src != NULL, "copy_h2d", "src");
  }
  return sync_copy(device, (char *)dst + dst_offset, src, nbytes);
}

static HWP_Status cpu_copy_d2h(int32_t device, void *dst, HWP_Buffer src, uint64_t src_offset,
                               uint64_t nbytes) {
  HWP_Status st = cpu_check_device(device, "copy_d2h");
  if (st != HWP_OK) return st;
  if (nbytes != 0) {
    CPU_REQUIRE(dst != NULL, "copy_d2h", "dst");
    CPU_REQUIRE(src != NULL, "copy_d2h", "src");
  }
  return sync_copy(device, dst, (const char *)src + src_offset, nbytes);
}

static HWP_Status cpu_copy_d2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset,
                               HWP_Buffer src, uint64_t src_offset, uint64_t nbytes) {
  HWP_Status st = cpu_check_device(device, "copy_d2d");
  if (st != HWP_OK) return st;
  if (nbytes != 0) {
    CPU_REQUIRE(dst != NULL, "copy_d2d", "dst");
    CPU_REQUIRE(src != NULL, "copy_d2d", "src");
  }
  return sync_copy(device, (char *)dst + dst_offset, (const char *)src + src_offset, nbytes);
}

/* Stream-ordered copy. The work size for the inline decision counts 8-byte words. */
static HWP_Status async_copy(int32_t device, HWP_Stream stream, void *dst, const void *src,
                             uint64_t nbytes, const char *fn) {
  if (nbytes == 0) return HWP_OK;
  cpu_task t;
  t.kind = CPU_TASK_COPY;
  t.u.copy.dst = dst;
  t.u.copy.src = src;
  t.u.copy.nbytes = nbytes;
  return cpu_submit(device, stream, &t, (nbytes + 7) / 8, fn);
}

static HWP_Status cpu_copy_h2d_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                     uint64_t dst_offset, const void *src, uint64_t nbytes) {
  HWP_Status st = cpu_check_device(device, "copy_h2d_async");
  if (st != HWP_OK) return st;
  if (nbytes != 0) {
    CPU_REQUIRE(dst != NULL, "copy_h2d_async", "dst");
    CPU_REQUIRE(src != NULL, "copy_h2d_async", "src");
  }
  return async_copy(device, stream, (char *)dst + dst_offset, src, nbytes, "copy_h2d_async");
}

static HWP_Status cpu_copy_d2h_async(int32_t device, HWP_Stream stream, void *dst,
                                     HWP_Buffer src, uint64_t src_offset, uint64_t nbytes) {
  HWP_Status st = cpu_check_device(device, "copy_d2h_async");
  if (st != HWP_OK) return st;
  if (nbytes != 0) {
    CPU_REQUIRE(dst != NULL, "copy_d2h_async", "dst");
    CPU_REQUIRE(src != NULL, "copy_d2h_async", "src");
  }
  return async_copy(device, stream, dst, (const char *)src + src_offset, nbytes,
                    "copy_d2h_async");
}

static HWP_Status cpu_copy_d2d_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                     uint64_t dst_offset, HWP_Buffer src, uint64_t src_offset,
                                     uint64_t nbytes) {
  HWP_Status st = cpu_check_device(device, "copy_d2d_async");
  if (st != HWP_OK) return st;
  if (nbytes != 0) {
    CPU_REQUIRE(dst != NULL, "copy_d2d_async", "dst");
    CPU_REQUIRE(src != NULL, "copy_d2d_async", "src");
  }
  return async_copy(device, stream, (char *)dst + dst_offset, (const char *)src + src_offset,
                    nbytes, "copy_d2d_async");
}

static HWP_Status cpu_memset_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                   uint64_t dst_offset, uint8_t value, uint64_t nbytes) {
  HWP_Status st = cpu_check_device(device, "memset_async");
  if (st != HWP_OK) return st;
  if (nbytes == 0) return HWP_OK;
  CPU_REQUIRE(dst != NULL, "memset_async", "dst");
  cpu_task t;
  t.kind = CPU_TASK_MEMSET;
  t.u.set.dst = (char *)dst + dst_offset;
  t.u.set.nbytes = nbytes;
  t.u.set.value = value;
  return cpu_submit(device, stream, &t, (nbytes + 7) / 8, "memset_async");
}

/* ---- stats and host memory -------------------------------------------------------------- */

static HWP_Status cpu_get_memory_stats(int32_t device, HWP_MemoryStats *stats) {
  HWP_Status st = cpu_check_device(device, "get_memory_stats");
  if (st != HWP_OK) return st;
  CPU_REQUIRE(stats != NULL, "get_memory_stats", "stats");
  size_t size = stats->struct_size;
  pthread_mutex_lock(&g_mem_mu);
  cpu_mem_stats s = g_stats[device];
  pthread_mutex_unlock(&g_mem_mu);
#define CPU_SET_STAT(field, value)                                                             \
  do {                                                                                         \
    if (size >= offsetof(HWP_MemoryStats, field) + sizeof(stats->field))                       \
      stats->field = (value);                                                                  \
  } while (0)
  CPU_SET_STAT(bytes_in_use, s.in_use);
  CPU_SET_STAT(peak_bytes_in_use, s.peak);
  CPU_SET_STAT(bytes_limit, g_cpu.memory_limit);
  CPU_SET_STAT(num_allocs, s.num_allocs);
  CPU_SET_STAT(num_frees, s.num_frees);
#undef CPU_SET_STAT
  return HWP_OK;
}

static HWP_Status cpu_host_address(int32_t device, HWP_Buffer buffer, uint64_t offset,
                                   void **out) {
  HWP_Status st = cpu_check_device(device, "host_address");
  if (st != HWP_OK) return st;
  CPU_REQUIRE(buffer != NULL, "host_address", "buffer");
  CPU_REQUIRE(out != NULL, "host_address", "out");
  *out = (char *)buffer + offset;
  return HWP_OK;
}

static HWP_Status cpu_wrap_host_memory(int32_t device, void *host_ptr, uint64_t nbytes,
                                       HWP_Buffer *out) {
  HWP_Status st = cpu_check_device(device, "wrap_host_memory");
  if (st != HWP_OK) return st;
  CPU_REQUIRE(host_ptr != NULL, "wrap_host_memory", "host_ptr");
  CPU_REQUIRE(out != NULL, "wrap_host_memory", "out");
  (void)nbytes;
  *out = (HWP_Buffer)host_ptr;
  return HWP_OK;
}

static HWP_Status cpu_release_host_buffer(int32_t device, HWP_Buffer buffer) {
  (void)buffer; /* the host owns wrapped memory: nothing to release */
  return cpu_check_device(device, "release_host_buffer");
}

const HWP_MemoryTable cpu_memory_table = {
    .struct_size = sizeof(HWP_MemoryTable),
    .allocate = cpu_allocate,
    .deallocate = cpu_deallocate,
    .copy_h2d = cpu_copy_h2d,
    .copy_d2h = cpu_copy_d2h,
    .copy_d2d = cpu_copy_d2d,
    .copy_h2d_async = cpu_copy_h2d_async,
    .copy_d2h_async = cpu_copy_d2h_async,
    .copy_d2d_async = cpu_copy_d2d_async,
    .memset_async = cpu_memset_async,
    .get_memory_stats = cpu_get_memory_stats,
    .host_address = cpu_host_address,
    .wrap_host_memory = cpu_wrap_host_memory,
    .release_host_buffer = cpu_release_host_buffer,
};
