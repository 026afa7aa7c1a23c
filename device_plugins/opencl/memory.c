/* hwport OpenCL plugin — the memory table: accounted cl_mem buffers and copies.
 *
 * A buffer handle IS a cl_mem from clCreateBuffer; positions inside it are (buffer, byte
 * offset). The plugin keeps the live buffers in a set (handle -> size, device), so deallocate
 * and the copies reject a foreign or freed handle, and a copy past the end of a buffer, with a
 * clear message instead of handing it to the driver. OpenCL has no memory query: the stats are
 * the plugin's own accounting, capped by HWPORT_OPENCL_MEMORY_LIMIT. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct live_entry {
  uintptr_t key; /* 0 = empty, 1 = tombstone */
  uint64_t size;
  int32_t device;
} live_entry;

/* Everything below is guarded by g_mem_mu (allocation is rare: the host caches). */
static pthread_mutex_t g_mem_mu = PTHREAD_MUTEX_INITIALIZER;
static live_entry *g_live;
static size_t g_live_cap, g_live_used, g_live_count;

static size_t live_hash(uintptr_t p, size_t cap) {
  return (size_t)(((uint64_t)(p >> 4) * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static live_entry *live_find(uintptr_t p) {
  if (g_live_cap == 0) return NULL;
  for (size_t i = live_hash(p, g_live_cap);; i = (i + 1) & (g_live_cap - 1)) {
    if (g_live[i].key == p) return &g_live[i];
    if (g_live[i].key == 0) return NULL;
  }
}

static int live_rehash(size_t cap) {
  live_entry *t = calloc(cap, sizeof *t);
  if (t == NULL) return 0;
  for (size_t i = 0; i < g_live_cap; ++i) {
    if (g_live[i].key <= 1) continue;
    size_t j = live_hash(g_live[i].key, cap);
    while (t[j].key != 0) j = (j + 1) & (cap - 1);
    t[j] = g_live[i];
  }
  free(g_live);
  g_live = t;
  g_live_cap = cap;
  g_live_used = g_live_count;
  return 1;
}

static int live_insert(uintptr_t p, uint64_t size, int32_t device) {
  if ((g_live_used + 1) * 2 > g_live_cap) {
    size_t cap = 64;
    while (cap < (g_live_count + 1) * 4) cap *= 2;
    if (!live_rehash(cap)) return 0;
  }
  size_t i = live_hash(p, g_live_cap);
  while (g_live[i].key > 1) i = (i + 1) & (g_live_cap - 1);
  if (g_live[i].key == 0) ++g_live_used;
  g_live[i].key = p;
  g_live[i].size = size;
  g_live[i].device = device;
  ++g_live_count;
  return 1;
}

static void live_remove(live_entry *e) {
  e->key = 1;
  if (--g_live_count == 0) { /* release the table between workloads */
    free(g_live);
    g_live = NULL;
    g_live_cap = g_live_used = 0;
  }
}

/* Checks that [offset, offset + nbytes) lies in a live buffer of the plugin (of any device:
 * buffers of one platform share a context). */
static HWP_Status check_range(HWP_Buffer buf, uint64_t offset, uint64_t nbytes, const char *fn,
                              const char *what) {
  if (buf == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
  pthread_mutex_lock(&g_mem_mu);
  live_entry *e = live_find((uintptr_t)buf);
  uint64_t size = e != NULL ? e->size : 0;
  pthread_mutex_unlock(&g_mem_mu);
  if (e == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: %s %p is not a live buffer of the opencl plugin", fn, what, (void *)buf);
  if (offset > size || nbytes > size - offset)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: %s range [%llu, %llu) is outside its %llu bytes", fn, what,
                     (unsigned long long)offset, (unsigned long long)(offset + nbytes),
                     (unsigned long long)size);
  return HWP_OK;
}

HWP_Status ocl_buffer_range(HWP_Buffer buf, uint64_t offset, uint64_t nbytes, const char *fn,
                            const char *what) {
  return check_range(buf, offset, nbytes, fn, what);
}

/* ---- allocate / deallocate ---------------------------------------------------------------- */

static HWP_Status ocl_allocate(int32_t device, uint64_t nbytes, HWP_Buffer *out) {
  HWP_Status st = ocl_check_device(device, "allocate");
  if (st != HWP_OK) return st;
  if (out == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "allocate: out is NULL");
  if (nbytes == 0)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "allocate: nbytes must be > 0 (got 0)");
  ocl_device *d = &g_ocl.devices[device];
  uint64_t limit = d->memory_limit;

  /* Reserve the bytes first so concurrent allocations cannot overshoot the cap together. */
  pthread_mutex_lock(&g_mem_mu);
  ocl_mem_stats *s = &d->stats;
  if (nbytes > limit || s->in_use > limit - nbytes) {
    st = ocl_error(HWP_ERROR_OUT_OF_MEMORY,
                   "allocate: out of memory on opencl device %d (%s): requested %llu bytes, "
                   "%llu in use, limit %llu (HWPORT_OPENCL_MEMORY_LIMIT)",
                   (int)device, d->name, (unsigned long long)nbytes,
                   (unsigned long long)s->in_use, (unsigned long long)limit);
    pthread_mutex_unlock(&g_mem_mu);
    return st;
  }
  s->in_use += nbytes;
  pthread_mutex_unlock(&g_mem_mu);

  cl_mem mem = NULL;
  if (d->max_alloc != 0 && nbytes > d->max_alloc) {
    st = ocl_error(HWP_ERROR_OUT_OF_MEMORY,
                   "allocate: %llu bytes exceed the largest single allocation of opencl device "
                   "%d (%s): CL_DEVICE_MAX_MEM_ALLOC_SIZE is %llu",
                   (unsigned long long)nbytes, (int)device, d->name,
                   (unsigned long long)d->max_alloc);
  } else if (nbytes > (uint64_t)SIZE_MAX) {
    st = ocl_error(HWP_ERROR_OUT_OF_MEMORY, "allocate: %llu bytes do not fit in size_t",
                   (unsigned long long)nbytes);
  } else {
    cl_context ctx;
    st = ocl_context(device, &ctx, "allocate");
    if (st == HWP_OK) {
      cl_int err = CL_SUCCESS;
      mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE, (size_t)nbytes, NULL, &err);
      if (err != CL_SUCCESS || mem == NULL) {
        if (err == CL_INVALID_BUFFER_SIZE) err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        st = ocl_cl_error(err != CL_SUCCESS ? err : CL_MEM_OBJECT_ALLOCATION_FAILURE,
                          "allocate", "clCreateBuffer");
        mem = NULL;
      }
    }
  }

  pthread_mutex_lock(&g_mem_mu);
  if (st == HWP_OK && !live_insert((uintptr_t)mem, nbytes, device))
    st = ocl_error(HWP_ERROR_OUT_OF_MEMORY, "allocate: no host memory for bookkeeping");
  if (st != HWP_OK) {
    s->in_use -= nbytes;
    pthread_mutex_unlock(&g_mem_mu);
    if (mem != NULL) clReleaseMemObject(mem);
    return st;
  }
  if (s->in_use > s->peak) s->peak = s->in_use;
  s->num_allocs += 1;
  pthread_mutex_unlock(&g_mem_mu);
  *out = (HWP_Buffer)mem;
  return HWP_OK;
}

static HWP_Status ocl_deallocate(int32_t device, HWP_Buffer buffer) {
  HWP_Status st = ocl_check_device(device, "deallocate");
  if (st != HWP_OK) return st;
  if (buffer == NULL) return HWP_OK;
  pthread_mutex_lock(&g_mem_mu);
  live_entry *e = live_find((uintptr_t)buffer);
  if (e == NULL || e->device != device) {
    int owner = e != NULL ? (int)e->device : -1;
    pthread_mutex_unlock(&g_mem_mu);
    if (owner >= 0)
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                       "deallocate: buffer %p belongs to opencl device %d, not %d",
                       (void *)buffer, owner, (int)device);
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "deallocate: buffer %p is not a live allocation of the opencl plugin (freed "
                     "twice, or a foreign handle)",
                     (void *)buffer);
  }
  ocl_mem_stats *s = &g_ocl.devices[device].stats;
  s->in_use -= e->size;
  s->num_frees += 1;
  live_remove(e);
  pthread_mutex_unlock(&g_mem_mu);
  cl_int err = clReleaseMemObject((cl_mem)buffer);
  if (err != CL_SUCCESS) return ocl_cl_error(err, "deallocate", "clReleaseMemObject");
  return HWP_OK;
}

void ocl_memory_shutdown(void) {
  pthread_mutex_lock(&g_mem_mu);
  for (size_t i = 0; i < g_live_cap; ++i)
    if (g_live[i].key > 1) clReleaseMemObject((cl_mem)g_live[i].key);
  free(g_live);
  g_live = NULL;
  g_live_cap = g_live_used = g_live_count = 0;
  pthread_mutex_unlock(&g_mem_mu);
}

/* ---- copies ------------------------------------------------------------------------------- */

#define OCL_REQUIRE(cond, fn, what)                                                            \
  do {                                                                                         \
    if (OCL_UNLIKELY(!(cond)))                                                                 \
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);                \
  } while (0)

enum copy_kind { COPY_H2D, COPY_D2H, COPY_D2D };

/* Enqueues one copy on `q` (blocking for h2d/d2h when `blocking`). */
static HWP_Status enqueue_copy(cl_command_queue q, int kind, cl_bool blocking, HWP_Buffer dbuf,
                               uint64_t doff, void *dhost, HWP_Buffer sbuf, uint64_t soff,
                               const void *shost, uint64_t nbytes, cl_event *ev,
                               const char *fn) {
  cl_int err;
  const char *call;
  if (kind == COPY_H2D) {
    call = "clEnqueueWriteBuffer";
    err = clEnqueueWriteBuffer(q, (cl_mem)dbuf, blocking, (size_t)doff, (size_t)nbytes, shost, 0,
                               NULL, ev);
  } else if (kind == COPY_D2H) {
    call = "clEnqueueReadBuffer";
    err = clEnqueueReadBuffer(q, (cl_mem)sbuf, blocking, (size_t)soff, (size_t)nbytes, dhost, 0,
                              NULL, ev);
  } else if (dbuf == sbuf && (doff < soff + nbytes && soff < doff + nbytes)) {
    /* clEnqueueCopyBuffer rejects overlapping ranges of one buffer (CL_MEM_COPY_OVERLAP): go
     * through a scratch buffer. */
    if (doff == soff) return HWP_OK;
    cl_context ctx = NULL;
    err = clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
    if (err != CL_SUCCESS) return ocl_cl_error(err, fn, "clGetCommandQueueInfo");
    cl_mem tmp = clCreateBuffer(ctx, CL_MEM_READ_WRITE, (size_t)nbytes, NULL, &err);
    if (err != CL_SUCCESS) return ocl_cl_error(err, fn, "clCreateBuffer");
    err = clEnqueueCopyBuffer(q, (cl_mem)sbuf, tmp, (size_t)soff, 0, (size_t)nbytes, 0, NULL,
                              NULL);
    if (err == CL_SUCCESS)
      err = clEnqueueCopyBuffer(q, tmp, (cl_mem)dbuf, 0, (size_t)doff, (size_t)nbytes, 0, NULL,
                                ev);
    clReleaseMemObject(tmp); /* OpenCL keeps it alive until the enqueued copies are done */
    call = "clEnqueueCopyBuffer";
  } else {
    call = "clEnqueueCopyBuffer";
    err = clEnqueueCopyBuffer(q, (cl_mem)sbuf, (cl_mem)dbuf, (size_t)soff, (size_t)doff,
                              (size_t)nbytes, 0, NULL, ev);
  }
  if (err != CL_SUCCESS) return ocl_cl_error(err, fn, call);
  return HWP_OK;
}

/* Synchronous copy: waits for the device's queues, then copies on the internal queue and
 * returns with the copy complete. */
static HWP_Status sync_copy(int32_t device, int kind, HWP_Buffer dbuf, uint64_t doff,
                            void *dhost, HWP_Buffer sbuf, uint64_t soff, const void *shost,
                            uint64_t nbytes, const char *fn) {
  HWP_Status st = ocl_synchronize_device(device, fn);
  if (st != HWP_OK || nbytes == 0) return st;
  cl_command_queue q = NULL;
  st = ocl_sync_queue(device, &q, fn);
  if (st != HWP_OK) return st;
  st = enqueue_copy(q, kind, CL_TRUE, dbuf, doff, dhost, sbuf, soff, shost, nbytes, NULL, fn);
  if (st != HWP_OK) return st;
  if (kind == COPY_D2D) {
    cl_int err = clFinish(q);
    if (err != CL_SUCCESS) return ocl_cl_error(err, fn, "clFinish");
  }
  return HWP_OK;
}

/* Stream-ordered copy: enqueued without blocking (a NULL stream is synchronous). */
static HWP_Status async_copy(int32_t device, HWP_Stream stream, int kind, HWP_Buffer dbuf,
                             uint64_t doff, void *dhost, HWP_Buffer sbuf, uint64_t soff,
                             const void *shost, uint64_t nbytes, const char *fn) {
  if (stream == NULL)
    return sync_copy(device, kind, dbuf, doff, dhost, sbuf, soff, shost, nbytes, fn);
  cl_command_queue q = NULL;
  HWP_Status st = ocl_stream_queue(device, stream, &q, fn);
  if (st != HWP_OK || nbytes == 0) return st;
  cl_event ev = NULL;
  st = enqueue_copy(q, kind, CL_FALSE, dbuf, doff, dhost, sbuf, soff, shost, nbytes, &ev, fn);
  if (st != HWP_OK) return st;
  ocl_stream_track(stream, ev);
  cl_int err = clFlush(q);
  if (err != CL_SUCCESS) return ocl_cl_error(err, fn, "clFlush");
  return HWP_OK;
}

#define OCL_CHECK(expr)                                                                        \
  do {                                                                                         \
    HWP_Status st_ = (expr);                                                                   \
    if (st_ != HWP_OK) return st_;                                                             \
  } while (0)

static HWP_Status ocl_copy_h2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset,
                               const void *src, uint64_t nbytes) {
  OCL_CHECK(ocl_check_device(device, "copy_h2d"));
  if (nbytes != 0) {
    OCL_REQUIRE(src != NULL, "copy_h2d", "src");
    OCL_CHECK(check_range(dst, dst_offset, nbytes, "copy_h2d", "dst"));
  }
  return sync_copy(device, COPY_H2D, dst, dst_offset, NULL, NULL, 0, src, nbytes, "copy_h2d");
}

static HWP_Status ocl_copy_d2h(int32_t device, void *dst, HWP_Buffer src, uint64_t src_offset,
                               uint64_t nbytes) {
  OCL_CHECK(ocl_check_device(device, "copy_d2h"));
  if (nbytes != 0) {
    OCL_REQUIRE(dst != NULL, "copy_d2h", "dst");
    OCL_CHECK(check_range(src, src_offset, nbytes, "copy_d2h", "src"));
  }
  return sync_copy(device, COPY_D2H, NULL, 0, dst, src, src_offset, NULL, nbytes, "copy_d2h");
}

static HWP_Status ocl_copy_d2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset,
                               HWP_Buffer src, uint64_t src_offset, uint64_t nbytes) {
  OCL_CHECK(ocl_check_device(device, "copy_d2d"));
  if (nbytes != 0) {
    OCL_CHECK(check_range(dst, dst_offset, nbytes, "copy_d2d", "dst"));
    OCL_CHECK(check_range(src, src_offset, nbytes, "copy_d2d", "src"));
  }
  return sync_copy(device, COPY_D2D, dst, dst_offset, NULL, src, src_offset, NULL, nbytes,
                   "copy_d2d");
}

static HWP_Status ocl_copy_h2d_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                     uint64_t dst_offset, const void *src, uint64_t nbytes) {
  OCL_CHECK(ocl_check_device(device, "copy_h2d_async"));
  if (nbytes != 0) {
    OCL_REQUIRE(src != NULL, "copy_h2d_async", "src");
    OCL_CHECK(check_range(dst, dst_offset, nbytes, "copy_h2d_async", "dst"));
  }
  return async_copy(device, stream, COPY_H2D, dst, dst_offset, NULL, NULL, 0, src, nbytes,
                    "copy_h2d_async");
}

static HWP_Status ocl_copy_d2h_async(int32_t device, HWP_Stream stream, void *dst,
                                     HWP_Buffer src, uint64_t src_offset, uint64_t nbytes) {
  OCL_CHECK(ocl_check_device(device, "copy_d2h_async"));
  if (nbytes != 0) {
    OCL_REQUIRE(dst != NULL, "copy_d2h_async", "dst");
    OCL_CHECK(check_range(src, src_offset, nbytes, "copy_d2h_async", "src"));
  }
  return async_copy(device, stream, COPY_D2H, NULL, 0, dst, src, src_offset, NULL, nbytes,
                    "copy_d2h_async");
}

static HWP_Status ocl_copy_d2d_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                     uint64_t dst_offset, HWP_Buffer src, uint64_t src_offset,
                                     uint64_t nbytes) {
  OCL_CHECK(ocl_check_device(device, "copy_d2d_async"));
  if (nbytes != 0) {
    OCL_CHECK(check_range(dst, dst_offset, nbytes, "copy_d2d_async", "dst"));
    OCL_CHECK(check_range(src, src_offset, nbytes, "copy_d2d_async", "src"));
  }
  return async_copy(device, stream, COPY_D2D, dst, dst_offset, NULL, src, src_offset, NULL,
                    nbytes, "copy_d2d_async");
}

static HWP_Status ocl_memset_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                   uint64_t dst_offset, uint8_t value, uint64_t nbytes) {
  OCL_CHECK(ocl_check_device(device, "memset_async"));
  if (nbytes == 0) return HWP_OK;
  OCL_CHECK(check_range(dst, dst_offset, nbytes, "memset_async", "dst"));
  cl_command_queue q = NULL;
  if (stream == NULL) {
    OCL_CHECK(ocl_synchronize_device(device, "memset_async"));
    OCL_CHECK(ocl_sync_queue(device, &q, "memset_async"));
  } else {
    OCL_CHECK(ocl_stream_queue(device, stream, &q, "memset_async"));
  }
  cl_uchar pattern = value;
  cl_event ev = NULL;
  cl_int err = clEnqueueFillBuffer(q, (cl_mem)dst, &pattern, 1, (size_t)dst_offset,
                                   (size_t)nbytes, 0, NULL, stream == NULL ? NULL : &ev);
  if (err != CL_SUCCESS) return ocl_cl_error(err, "memset_async", "clEnqueueFillBuffer");
  if (stream != NULL) ocl_stream_track(stream, ev);
  err = stream == NULL ? clFinish(q) : clFlush(q);
  if (err != CL_SUCCESS)
    return ocl_cl_error(err, "memset_async", stream == NULL ? "clFinish" : "clFlush");
  return HWP_OK;
}

/* ---- stats -------------------------------------------------------------------------------- */

static HWP_Status ocl_get_memory_stats(int32_t device, HWP_MemoryStats *stats) {
  OCL_CHECK(ocl_check_device(device, "get_memory_stats"));
  OCL_REQUIRE(stats != NULL, "get_memory_stats", "stats");
  size_t size = stats->struct_size;
  pthread_mutex_lock(&g_mem_mu);
  ocl_mem_stats s = g_ocl.devices[device].stats;
  pthread_mutex_unlock(&g_mem_mu);
#define OCL_SET_STAT(field, value)                                                             \
  do {                                                                                         \
    if (size >= offsetof(HWP_MemoryStats, field) + sizeof(stats->field))                       \
      stats->field = (value);                                                                  \
  } while (0)
  OCL_SET_STAT(bytes_in_use, s.in_use);
  OCL_SET_STAT(peak_bytes_in_use, s.peak);
  OCL_SET_STAT(bytes_limit, g_ocl.devices[device].memory_limit);
  OCL_SET_STAT(num_allocs, s.num_allocs);
  OCL_SET_STAT(num_frees, s.num_frees);
#undef OCL_SET_STAT
  return HWP_OK;
}

const HWP_MemoryTable ocl_memory_table = {
    .struct_size = sizeof(HWP_MemoryTable),
    .allocate = ocl_allocate,
    .deallocate = ocl_deallocate,
    .copy_h2d = ocl_copy_h2d,
    .copy_d2h = ocl_copy_d2h,
    .copy_d2d = ocl_copy_d2d,
    .copy_h2d_async = ocl_copy_h2d_async,
    .copy_d2h_async = ocl_copy_d2h_async,
    .copy_d2d_async = ocl_copy_d2d_async,
    .memset_async = ocl_memset_async,
    .get_memory_stats = ocl_get_memory_stats,
    .host_address = NULL,
    .wrap_host_memory = NULL,
    .release_host_buffer = NULL,
};
