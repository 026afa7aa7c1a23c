/* hwport CUDA plugin — the memory table: cudaMalloc'd buffers (never managed memory), copies,
 * memset, and the plugin's own accounting.
 *
 * Every live buffer is in a registry (an open-addressing table keyed by device pointer): free
 * and the stats know each buffer's size and device, and a buffer that this plugin did not hand
 * out (or already freed) is an INVALID_ARGUMENT, never a cudaFree of a stray pointer.
 *
 * Device memory of another framework (DLPack imports) joins the registry through
 * wrap_device_memory as a wrapped entry: copies and device_address accept it, the stats do not
 * count it, deallocate refuses it and release_device_buffer removes it (never a cudaFree). A
 * buffer is its device pointer, so wrapping one address twice (two imports of the same array,
 * or of this plugin's own buffer coming back from another framework) cannot give two handles:
 * the entry counts its wraps instead, each release_device_buffer drops one, and a wrapped-only
 * entry leaves with the last. Its size is the largest wrap's; an own buffer keeps its size and
 * must cover the wrap, and deallocate refuses it while wraps remain.
 *
 * Synchronous copies wait for the device (cudaDeviceSynchronize: streams are non-blocking, so
 * the legacy default stream does not order them) and return with the copy complete. Async
 * host copies go through pinned staging chunks (pinned_staging.c), which makes them stream work
 * that returns at once; device-to-device ones are cudaMemcpyAsync on the stream. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct cu_alloc {
  void *ptr; /* NULL: empty slot; CU_TOMB: deleted */
  uint64_t size;
  int32_t device;
  int32_t owned; /* allocated here (cudaMalloc'd, counted in the stats) */
  uint32_t wraps; /* live wrap_device_memory calls on this address */
} cu_alloc;

#define CU_TOMB ((void *)1)

typedef struct cu_stats {
  uint64_t in_use, peak, num_allocs, num_frees;
} cu_stats;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cu_alloc *g_tab;          /* capacity g_cap (a power of two), guarded by g_mu */
static size_t g_cap, g_used;     /* g_used counts live + tombstones */
static cu_stats g_stats[CU_MAX_DEVICES];

static size_t slot_of(const void *p, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)p;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return (size_t)h & (cap - 1);
}

/* Grows (or cleans) the table so that one more entry fits at a load under 1/2. */
static int reg_reserve(void) {
  if (g_cap != 0 && (g_used + 1) * 2 <= g_cap) return 1;
  size_t cap = g_cap ? g_cap : 1024;
  size_t live = 0;
  for (size_t i = 0; i < g_cap; ++i) live += g_tab[i].ptr != NULL && g_tab[i].ptr != CU_TOMB;
  while ((live + 1) * 4 > cap) cap *= 2;
  cu_alloc *tab = calloc(cap, sizeof *tab);
  if (tab == NULL) return 0;
  for (size_t i = 0; i < g_cap; ++i) {
    if (g_tab[i].ptr == NULL || g_tab[i].ptr == CU_TOMB) continue;
    size_t s = slot_of(g_tab[i].ptr, cap);
    while (tab[s].ptr != NULL) s = (s + 1) & (cap - 1);
    tab[s] = g_tab[i];
  }
  free(g_tab);
  g_tab = tab;
  g_cap = cap;
  g_used = live;
  return 1;
}

static cu_alloc *reg_find(const void *p) {
  if (g_cap == 0) return NULL;
  for (size_t s = slot_of(p, g_cap);; s = (s + 1) & (g_cap - 1)) {
    if (g_tab[s].ptr == NULL) return NULL;
    if (g_tab[s].ptr == p) return &g_tab[s];
  }
}

/* Inserts `a` (its pointer not in the table); the caller holds g_mu and reserved room. */
static void reg_insert(cu_alloc a) {
  size_t s = slot_of(a.ptr, g_cap);
  while (g_tab[s].ptr != NULL && g_tab[s].ptr != CU_TOMB) s = (s + 1) & (g_cap - 1);
  if (g_tab[s].ptr == NULL) ++g_used;
  g_tab[s] = a;
}

static HWP_Status cu_allocate(int32_t device, uint64_t nbytes, HWP_Buffer *out) {
  HWP_Status st = cu_enter(device, "allocate");
  if (st != HWP_OK) return st;
  if (out == NULL) return cu_error(HWP_ERROR_INVALID_ARGUMENT, "allocate: out is NULL");
  if (nbytes == 0) return cu_error(HWP_ERROR_INVALID_ARGUMENT, "allocate: nbytes is 0");
  pthread_mutex_lock(&g_mu);
  int ok = reg_reserve();
  pthread_mutex_unlock(&g_mu);
  if (!ok) return cu_error(HWP_ERROR_OUT_OF_MEMORY, "allocate: no host memory for the registry");
  void *p = NULL;
  cudaError_t err = cudaMalloc(&p, (size_t)nbytes);
  if (err != cudaSuccess) {
    if (err == cudaErrorMemoryAllocation) (void)cudaGetLastError();
    st = cu_cuda_error(err, "allocate", "cudaMalloc");
    if (st == HWP_ERROR_OUT_OF_MEMORY) {
      size_t free_b = 0, total_b = 0;
      (void)cudaMemGetInfo(&free_b, &total_b);
      return cu_error(st, "allocate: cudaMalloc of %llu bytes on device %d failed: "
                      "cudaErrorMemoryAllocation (%llu of %llu bytes free)",
                      (unsigned long long)nbytes, (int)device, (unsigned long long)free_b,
                      (unsigned long long)total_b);
    }
    return st;
  }
  pthread_mutex_lock(&g_mu);
  (void)reg_reserve(); /* reserved above; another thread may have used the room */
  cu_alloc *stale = reg_find(p);
  if (stale != NULL) { /* only a wrap whose owner freed the memory before releasing it */
    cu_log(HWP_LOG_WARNING, "cuda: allocate: %p was still wrapped; its owner freed it first",
           p);
    stale->ptr = CU_TOMB;
  }
  reg_insert((cu_alloc){p, nbytes, device, 1, 0});
  cu_stats *S = &g_stats[device];
  S->in_use += nbytes;
  if (S->in_use > S->peak) S->peak = S->in_use;
  ++S->num_allocs;
  pthread_mutex_unlock(&g_mu);
  *out = (HWP_Buffer)p;
  return HWP_OK;
}

static HWP_Status cu_deallocate(int32_t device, HWP_Buffer buffer) {
  if (buffer == NULL) return HWP_OK;
  HWP_Status st = cu_enter(device, "deallocate");
  if (st != HWP_OK) return st;
  pthread_mutex_lock(&g_mu);
  cu_alloc *a = reg_find(buffer);
  if (a == NULL || a->device != device || !a->owned || a->wraps != 0) {
    const int mine = a != NULL && a->device == device;
    const int owned = mine && a->owned;
    const unsigned wraps = mine ? a->wraps : 0;
    pthread_mutex_unlock(&g_mu);
    if (owned)
      return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                      "deallocate: %p of device %d is still wrapped %u time(s) (release it "
                      "with release_device_buffer first)", (void *)buffer, (int)device, wraps);
    return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                    mine ? "deallocate: %p of device %d is wrapped device memory, never freed "
                           "here (release it with release_device_buffer)"
                         : "deallocate: %p is not a live buffer of device %d",
                    (void *)buffer, (int)device);
  }
  cu_stats *S = &g_stats[device];
  S->in_use -= a->size;
  ++S->num_frees;
  a->ptr = CU_TOMB;
  pthread_mutex_unlock(&g_mu);
  cudaError_t err = cudaFree((void *)buffer);
  return err == cudaSuccess ? HWP_OK : cu_cuda_error(err, "deallocate", "cudaFree");
}

/* Checks that [offset, offset + nbytes) lies inside live `buffer` of `device`. */
static HWP_Status check_range(int32_t device, HWP_Buffer buffer, uint64_t offset,
                              uint64_t nbytes, const char *fn, const char *what) {
  if (buffer == NULL) return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
  pthread_mutex_lock(&g_mu);
  const cu_alloc *a = reg_find(buffer);
  uint64_t size = a != NULL && a->device == device ? a->size : 0;
  int live = a != NULL && a->device == device;
  pthread_mutex_unlock(&g_mu);
  if (!live)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s %p is not a live buffer of device %d",
                    fn, what, (void *)buffer, (int)device);
  if (offset > size || nbytes > size - offset)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                    "%s: %s range [%llu, +%llu) exceeds its %llu bytes", fn, what,
                    (unsigned long long)offset, (unsigned long long)nbytes,
                    (unsigned long long)size);
  return HWP_OK;
}

typedef enum { CU_H2D, CU_D2H, CU_D2D } cu_dir;

/* One copy: validated, then synchronous (stream_given == 0) or on `stream`. */
static HWP_Status cu_copy(int32_t device, int stream_given, HWP_Stream stream, cu_dir dir,
                          HWP_Buffer dbuf, uint64_t doff, void *dhost, HWP_Buffer sbuf,
                          uint64_t soff, const void *shost, uint64_t nbytes, const char *fn) {
  HWP_Status st = cu_enter(device, fn);
  if (st != HWP_OK) return st;
  if (dir != CU_H2D && (st = check_range(device, sbuf, soff, nbytes, fn, "src")) != HWP_OK)
    return st;
  if (dir != CU_D2H && (st = check_range(device, dbuf, doff, nbytes, fn, "dst")) != HWP_OK)
    return st;
  if ((dir == CU_H2D && shost == NULL && nbytes) || (dir == CU_D2H && dhost == NULL && nbytes))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the host pointer is NULL", fn);
  if (nbytes == 0) return HWP_OK;
  void *dst = dir == CU_D2H ? dhost : cu_addr(dbuf, doff);
  const void *src = dir == CU_H2D ? shost : cu_addr(sbuf, soff);
  const enum cudaMemcpyKind kind = dir == CU_H2D   ? cudaMemcpyHostToDevice
                                   : dir == CU_D2H ? cudaMemcpyDeviceToHost
                                                   : cudaMemcpyDeviceToDevice;
  cudaStream_t s = 0;
  if (stream_given && stream != NULL) {
    if ((st = cu_stream_get(device, stream, &s, fn)) != HWP_OK) return st;
    cudaError_t err = dir == CU_H2D   ? cu_staged_copy_h2d(device, dst, src, (size_t)nbytes, s)
                      : dir == CU_D2H ? cu_staged_copy_d2h(device, dst, src, (size_t)nbytes, s)
                                      : cudaMemcpyAsync(dst, src, (size_t)nbytes, kind, s);
    return err == cudaSuccess ? HWP_OK : cu_cuda_error(err, fn, "cudaMemcpyAsync");
  }
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) return cu_cuda_error(err, fn, "cudaDeviceSynchronize");
  err = cudaMemcpy(dst, src, (size_t)nbytes, kind);
  /* cudaMemcpy returns before the copy has landed for device-to-device copies and for
   * host-to-device ones from pageable memory (once the driver has staged the data); the legacy
   * stream it used does not order the non-blocking streams, so wait for it here. */
  if (err == cudaSuccess && dir != CU_D2H) err = cudaDeviceSynchronize();
  return err == cudaSuccess ? HWP_OK : cu_cuda_error(err, fn, "cudaMemcpy");
}

static HWP_Status cu_copy_h2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset,
                              const void *src, uint64_t nbytes) {
  return cu_copy(device, 0, NULL, CU_H2D, dst, dst_offset, NULL, NULL, 0, src, nbytes,
                 "copy_h2d");
}
static HWP_Status cu_copy_d2h(int32_t device, void *dst, HWP_Buffer src, uint64_t src_offset,
                              uint64_t nbytes) {
  return cu_copy(device, 0, NULL, CU_D2H, NULL, 0, dst, src, src_offset, NULL, nbytes,
                 "copy_d2h");
}
static HWP_Status cu_copy_d2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset,
                              HWP_Buffer src, uint64_t src_offset, uint64_t nbytes) {
  return cu_copy(device, 0, NULL, CU_D2D, dst, dst_offset, NULL, src, src_offset, NULL, nbytes,
                 "copy_d2d");
}
static HWP_Status cu_copy_h2d_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                    uint64_t dst_offset, const void *src, uint64_t nbytes) {
  return cu_copy(device, 1, stream, CU_H2D, dst, dst_offset, NULL, NULL, 0, src, nbytes,
                 "copy_h2d_async");
}
static HWP_Status cu_copy_d2h_async(int32_t device, HWP_Stream stream, void *dst,
                                    HWP_Buffer src, uint64_t src_offset, uint64_t nbytes) {
  return cu_copy(device, 1, stream, CU_D2H, NULL, 0, dst, src, src_offset, NULL, nbytes,
                 "copy_d2h_async");
}
static HWP_Status cu_copy_d2d_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                    uint64_t dst_offset, HWP_Buffer src, uint64_t src_offset,
                                    uint64_t nbytes) {
  return cu_copy(device, 1, stream, CU_D2D, dst, dst_offset, NULL, src, src_offset, NULL,
                 nbytes, "copy_d2d_async");
}

static HWP_Status cu_memset_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                  uint64_t dst_offset, uint8_t value, uint64_t nbytes) {
  HWP_Status st = cu_enter(device, "memset_async");
  if (st != HWP_OK) return st;
  if ((st = check_range(device, dst, dst_offset, nbytes, "memset_async", "dst")) != HWP_OK)
    return st;
  cudaStream_t s = 0;
  if ((st = cu_stream_get(device, stream, &s, "memset_async")) != HWP_OK) return st;
  if (nbytes == 0) return HWP_OK;
  /* The NULL stream is synchronous, as for kernels: the device's earlier work (on non-blocking
   * streams, which the legacy stream does not wait for) first, then the memset. */
  if (stream == NULL && (st = cu_synchronize_device(device, "memset_async")) != HWP_OK) return st;
  cudaError_t err = cudaMemsetAsync(cu_addr(dst, dst_offset), value, (size_t)nbytes, s);
  if (err == cudaSuccess && stream == NULL) err = cudaStreamSynchronize(s);
  return err == cudaSuccess ? HWP_OK : cu_cuda_error(err, "memset_async", "cudaMemsetAsync");
}

static HWP_Status cu_get_memory_stats(int32_t device, HWP_MemoryStats *stats) {
  HWP_Status st = cu_enter(device, "get_memory_stats");
  if (st != HWP_OK) return st;
  if (stats == NULL || stats->struct_size < sizeof(size_t))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "get_memory_stats: stats is NULL or too small");
  size_t free_b = 0, total_b = 0;
  cudaError_t err = cudaMemGetInfo(&free_b, &total_b);
  if (err != cudaSuccess) return cu_cuda_error(err, "get_memory_stats", "cudaMemGetInfo");
  HWP_MemoryStats full;
  memset(&full, 0, sizeof full);
  pthread_mutex_lock(&g_mu);
  const cu_stats S = g_stats[device];
  pthread_mutex_unlock(&g_mu);
  full.bytes_in_use = S.in_use;
  full.peak_bytes_in_use = S.peak;
  /* What this process could still get: ours plus what the device has free now. */
  full.bytes_limit = S.in_use + (uint64_t)free_b;
  full.num_allocs = S.num_allocs;
  full.num_frees = S.num_frees;
  size_t n = stats->struct_size < sizeof full ? stats->struct_size : sizeof full;
  full.struct_size = stats->struct_size;
  memcpy(stats, &full, n);
  return HWP_OK;
}

/* ---- ABI 1.1: DLPack exchange ---------------------------------------------------------- */

static HWP_Status cu_device_address(int32_t device, HWP_Buffer buffer, uint64_t offset,
                                    void **out) {
  HWP_Status st = cu_enter(device, "device_address");
  if (st != HWP_OK) return st;
  if (out == NULL) return cu_error(HWP_ERROR_INVALID_ARGUMENT, "device_address: out is NULL");
  if ((st = check_range(device, buffer, offset, 0, "device_address", "buffer")) != HWP_OK)
    return st;
  *out = cu_addr(buffer, offset);
  return HWP_OK;
}

/* Whether `address` is device memory (not managed, not host) of CUDA device `ordinal`. */
static HWP_Status check_foreign(const void *address, int ordinal) {
  struct cudaPointerAttributes at;
  cudaError_t err = cudaPointerGetAttributes(&at, address);
  if (err != cudaSuccess)
    return cu_cuda_error(err, "wrap_device_memory", "cudaPointerGetAttributes");
  if (at.type != cudaMemoryTypeDevice || at.device != ordinal)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                    "wrap_device_memory: %p is not device memory of CUDA device %d (it is %s "
                    "memory of device %d); managed, host and other devices' memory is not "
                    "wrapped", address, ordinal,
                    at.type == cudaMemoryTypeManaged ? "managed"
                    : at.type == cudaMemoryTypeHost  ? "host"
                    : at.type == cudaMemoryTypeDevice ? "device"
                                                      : "unregistered",
                    at.device);
  return HWP_OK;
}

static HWP_Status cu_wrap_device_memory(int32_t device, void *address, uint64_t nbytes,
                                        HWP_Buffer *out) {
  HWP_Status st = cu_enter(device, "wrap_device_memory");
  if (st != HWP_OK) return st;
  if (out == NULL || address == NULL || nbytes == 0)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "wrap_device_memory: %s",
                    out == NULL ? "out is NULL" : address == NULL ? "address is NULL"
                                                                  : "nbytes is 0");
  /* Only the start is checked: the CUDA runtime API has no allocation-range query. */
  if ((st = check_foreign(address, g_cu.devices[device].ordinal)) != HWP_OK) return st;
  pthread_mutex_lock(&g_mu);
  cu_alloc *a = reg_find(address);
  if (a != NULL && a->device != device) {
    st = cu_error(HWP_ERROR_INVALID_ARGUMENT,
                  "wrap_device_memory: %p is a buffer of device %d, not %d", address,
                  (int)a->device, (int)device);
  } else if (a != NULL && a->owned && nbytes > a->size) {
    st = cu_error(HWP_ERROR_INVALID_ARGUMENT,
                  "wrap_device_memory: %llu bytes at %p exceed this plugin's %llu-byte buffer "
                  "there", (unsigned long long)nbytes, address, (unsigned long long)a->size);
  } else if (a != NULL) {
    ++a->wraps;
    if (nbytes > a->size) a->size = nbytes;
  } else if (!reg_reserve()) {
    st = cu_error(HWP_ERROR_OUT_OF_MEMORY,
                  "wrap_device_memory: no host memory for the registry");
  } else {
    reg_insert((cu_alloc){address, nbytes, device, 0, 1});
  }
  pthread_mutex_unlock(&g_mu);
  if (st == HWP_OK) *out = (HWP_Buffer)address;
  return st;
}

static HWP_Status cu_release_device_buffer(int32_t device, HWP_Buffer buffer) {
  HWP_Status st = cu_enter(device, "release_device_buffer");
  if (st != HWP_OK) return st;
  pthread_mutex_lock(&g_mu);
  cu_alloc *a = buffer != NULL ? reg_find(buffer) : NULL;
  if (a == NULL || a->device != device || a->wraps == 0) {
    const int owned = a != NULL && a->device == device && a->owned;
    pthread_mutex_unlock(&g_mu);
    return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                    owned ? "release_device_buffer: %p of device %d was allocated, not wrapped "
                            "(free it with deallocate)"
                          : "release_device_buffer: %p is not a wrapped buffer of device %d",
                    (void *)buffer, (int)device);
  }
  if (--a->wraps == 0 && !a->owned) a->ptr = CU_TOMB;
  pthread_mutex_unlock(&g_mu);
  return HWP_OK;
}

void cu_memory_shutdown(void) {
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_cap; ++i) {
    if (g_tab[i].ptr == NULL || g_tab[i].ptr == CU_TOMB) continue;
    if (g_tab[i].owned && cudaSetDevice(g_cu.devices[g_tab[i].device].ordinal) == cudaSuccess)
      (void)cudaFree(g_tab[i].ptr);
    g_tab[i].ptr = CU_TOMB;
  }
  pthread_mutex_unlock(&g_mu);
}

const HWP_MemoryTable cu_memory_table = {
    .struct_size = sizeof(HWP_MemoryTable),
    .allocate = cu_allocate,
    .deallocate = cu_deallocate,
    .copy_h2d = cu_copy_h2d,
    .copy_d2h = cu_copy_d2h,
    .copy_d2d = cu_copy_d2d,
    .copy_h2d_async = cu_copy_h2d_async,
    .copy_d2h_async = cu_copy_d2h_async,
    .copy_d2d_async = cu_copy_d2d_async,
    .memset_async = cu_memset_async,
    .get_memory_stats = cu_get_memory_stats,
    .host_address = NULL,
    .wrap_host_memory = NULL,
    .release_host_buffer = NULL,
    .device_address = cu_device_address,
    .wrap_device_memory = cu_wrap_device_memory,
    .release_device_buffer = cu_release_device_buffer,
};
