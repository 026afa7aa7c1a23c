/* A tiny but real device runtime shared by every test-only plugin (tests/plugins).
 *
 * Two "devices" backed by host malloc: an HWP_Buffer is the host pointer of the allocation
 * (a small header in front of it records its size and device), copies are synchronous memcpy,
 * synchronize_device has nothing to wait for, get_memory_stats accounts live bytes, and the last
 * error is thread-local. There is no stream table: the host must use its implicit in-order
 * stream (ctx->stream == NULL).
 *
 * With TR_WITH_STREAMS defined it also has streams and events (tr_stream_table), stream-ordered
 * copies and memset: each stream is a FIFO of operations run by its own worker thread, so work
 * really is asynchronous (query may say NOT_READY) and must be ordered by the runtime. With
 * TR_STREAMS_OUT_OF_ORDER as well, streams have no worker: their operations run only when the
 * host synchronizes or queries, newest first (a plugin that ignores stream order).
 * With TR_STREAMS_DEFERRED instead, streams also have no worker but keep submission order: their
 * operations run, oldest first, only when the host waits for them (synchronize, query, an
 * event, a synchronous copy), and a stream's wait for an event runs the other stream first
 * (valid, and what makes a missing cross-stream wait show every time).
 * Ordering bugs of a port whose streams really run on worker threads (each one alone):
 * TR_SYNC_H2D_NO_WAIT / TR_SYNC_D2D_NO_WAIT: copy_h2d / copy_d2d copy at once, without waiting
 * for the device's queued stream work; TR_NULL_STREAM_NO_WAIT: the stream-ordered copies and
 * memset given the NULL stream run at once likewise; TR_SYNC_DEVICE_NULL_ONLY:
 * synchronize_device drains only the (synchronous) NULL stream, not the created streams;
 * TR_SYNC_WAITS_ONE_STREAM: "the device's work" is the stream last submitted to (the
 * synchronous calls and synchronize_device wait for that one only); TR_WAIT_LAST_EVENT_ONLY: a
 * stream_wait_event right after another on the same stream replaces the pending wait instead
 * of adding one (one dependency slot per stream); TR_CROSS_DEVICE_WAIT_IGNORED:
 * stream_wait_event for another device's event returns HWP_OK without waiting.
 * With TR_LEAK_ON_FREE, deallocate counts the free but neither frees nor gives the bytes back
 * in the stats (a leaking plugin).
 * The memory limit of each device is TR_TOTAL_MEMORY, or the byte count in the variable
 * HWPORT_<DEVICE TYPE>_MEMORY_LIMIT (the device type upper-cased, e.g.
 * HWPORT_TEST_GOOD_MEMORY_LIMIT), read once by tr_memory_init, as the CPU plugin reads
 * HWPORT_CPU_MEMORY_LIMIT; total_memory and bytes_limit report it. Accounting bugs (one each):
 * TR_PEAK_FORGETS (deallocate sets the peak back to bytes_in_use), TR_REFUSED_COUNTS (num_allocs
 * is counted before the allocation is known to succeed), TR_NO_LIMIT (allocate never checks
 * the limit: only host malloc can refuse), TR_OOM_DRIFT (allocate reserves the bytes, then
 * checks the limit, and a refusal forgets to give the reservation back; a request larger than
 * the whole limit is refused up front, cleanly).
 * With TR_WITH_DLPACK (needs TR_WITH_STREAMS), the ABI 1.1 exchange of device memory: the
 * devices call their memory DLPack device (kDLExtDev, 100 + index) (not host memory, as far
 * as the host knows), device_address gives the buffer address plus offset, wrap_device_memory
 * registers foreign memory (refcounted per address; not in the stats), and native streams are
 * the stream handles themselves (1 = the synchronous NULL-stream queue). With
 * TR_LAZY_NATIVE_WAIT as well, native_stream_wait checks its arguments and returns HWP_OK
 * without ordering anything (a plugin that forgets the foreign stream).
 *
 * Included by exactly one translation unit (test_plugin.c); everything is static. */
#ifndef HWPORT_TEST_RUNTIME_H
#define HWPORT_TEST_RUNTIME_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwport/hwport.h"

#define TR_NUM_DEVICES 2
#define TR_ALIGNMENT 64u
#define TR_HEADER_BYTES 64u /* keeps the user part aligned to TR_ALIGNMENT */
#define TR_TOTAL_MEMORY (UINT64_C(1) << 32)
#define TR_MAGIC 0x48575054u /* "HWPT" */

/* Not every variant uses every function (older_minor has no get_properties, say). */
#if defined(__GNUC__)
#define TR_MAYBE_UNUSED __attribute__((unused))
#else
#define TR_MAYBE_UNUSED
#endif

typedef struct tr_header {
  uint64_t nbytes;
  int32_t device;
  uint32_t magic;
} tr_header;

static __thread char tr_last_error[512];
static pthread_mutex_t tr_lock = PTHREAD_MUTEX_INITIALIZER;
static HWP_MemoryStats tr_stats[TR_NUM_DEVICES];
static uint64_t tr_memory_limit = TR_TOTAL_MEMORY;

/* ---- errors ---------------------------------------------------------------------------- */
TR_MAYBE_UNUSED
static HWP_Status tr_fail(HWP_Status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
TR_MAYBE_UNUSED
static HWP_Status tr_fail(HWP_Status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tr_last_error, sizeof tr_last_error, fmt, ap);
  va_end(ap);
  return status;
}

TR_MAYBE_UNUSED
static const char *tr_get_last_error(void) { return tr_last_error; }

TR_MAYBE_UNUSED
static HWP_Status tr_check_device(int32_t device, const char *fn) {
  if (device < 0 || device >= TR_NUM_DEVICES)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: device %d out of range [0, %d)", fn,
                   (int)device, TR_NUM_DEVICES);
  return HWP_OK;
}

/* Synchronous copies wait for the device's stream work first (device.h); without streams there
 * is none. */
#ifdef TR_WITH_STREAMS
static void tr_device_wait(int32_t device);
#else
#define tr_device_wait(device) ((void)(device))
#endif

/* Reads HWPORT_<DEVICE TYPE>_MEMORY_LIMIT (see the top of this file); an unset, empty or
 * malformed value leaves TR_TOTAL_MEMORY. */
TR_MAYBE_UNUSED
static void tr_memory_init(const char *device_type) {
  char name[96];
  const char *value;
  char *end = NULL;
  unsigned long long limit;
  size_t i, n = strlen(device_type);
  if (n + sizeof "HWPORT__MEMORY_LIMIT" > sizeof name) return;
  memcpy(name, "HWPORT_", 7);
  for (i = 0; i < n; ++i) {
    char c = device_type[i];
    name[7 + i] = (char)(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  }
  memcpy(name + 7 + n, "_MEMORY_LIMIT", sizeof "_MEMORY_LIMIT");
  value = getenv(name);
  if (value == NULL || *value == '\0') return;
  limit = strtoull(value, &end, 10);
  if (end != NULL && *end == '\0' && limit > 0) tr_memory_limit = (uint64_t)limit;
}

/* ---- device table ---------------------------------------------------------------------- */
TR_MAYBE_UNUSED
static HWP_Status tr_get_device_count(int32_t *count) {
  if (count == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "get_device_count: count is NULL");
  *count = TR_NUM_DEVICES;
  return HWP_OK;
}

TR_MAYBE_UNUSED
static HWP_Status tr_synchronize_device(int32_t device) {
  HWP_Status st = tr_check_device(device, "synchronize_device");
#ifdef TR_SYNC_DEVICE_NULL_ONLY
  return st; /* the bug: NULL-stream work is synchronous, so there is "nothing" to wait for */
#endif
  if (st == HWP_OK) tr_device_wait(device); /* without streams, nothing is ever pending */
  return st;
}

TR_MAYBE_UNUSED
static HWP_Status tr_get_properties(int32_t device, HWP_DeviceProperties *props) {
  HWP_DeviceProperties p;
  size_t n;
  HWP_Status st = tr_check_device(device, "get_properties");
  if (st != HWP_OK) return st;
  if (props == NULL || props->struct_size < sizeof(size_t))
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "get_properties: props is NULL or too small");
  memset(&p, 0, sizeof p);
  snprintf(p.name, sizeof p.name, "hwport test device %d", (int)device);
  snprintf(p.vendor, sizeof p.vendor, "hwport tests");
  snprintf(p.driver_version, sizeof p.driver_version, "1.0");
  p.total_memory = tr_memory_limit;
  p.memory_alignment = TR_ALIGNMENT;
  p.compute_units = 1;
  p.max_work_group_size = 1;
  p.flags = 0;
  p.max_allocation = tr_memory_limit;
  snprintf(p.architecture, sizeof p.architecture, "hwport-test-1");
  p.architecture_major = 1;
  p.simd_width = 1;
  p.max_threads_per_compute_unit = 1;
#ifdef TR_WITH_DLPACK
  p.dlpack_device_type = HWP_DLPACK_EXT_DEV;
  p.dlpack_device_id = 100 + device;
#endif
  /* Write only as far as the host's struct reaches (it may be older or newer than ours). */
  n = props->struct_size < sizeof p ? props->struct_size : sizeof p;
  p.struct_size = props->struct_size;
  memcpy(props, &p, n);
  return HWP_OK;
}

/* ---- memory table ---------------------------------------------------------------------- */
#ifdef TR_WITH_DLPACK
#define TR_MAX_WRAPPED 64
#define TR_WRAP_MAGIC 0x57524150u /* "WRAP" */
/* Foreign memory wrapped by wrap_device_memory: the buffer handle is its address, so the
 * header lives here rather than in front of it. Guarded by tr_lock. */
typedef struct tr_wrapped {
  char *addr;
  int refs;
  tr_header h;
} tr_wrapped;
static tr_wrapped tr_wraps[TR_MAX_WRAPPED];

/* Caller holds tr_lock. */
static tr_wrapped *tr_wrapped_find(const void *addr) {
  int i;
  for (i = 0; i < TR_MAX_WRAPPED; ++i)
    if (tr_wraps[i].refs > 0 && tr_wraps[i].addr == addr) return &tr_wraps[i];
  return NULL;
}
#endif

TR_MAYBE_UNUSED
static HWP_Status tr_header_of(int32_t device, HWP_Buffer buffer, const char *fn,
                               tr_header **out) {
  tr_header *h;
  HWP_Status st = tr_check_device(device, fn);
  if (st != HWP_OK) return st;
  if (buffer == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: buffer is NULL", fn);
#ifdef TR_WITH_DLPACK
  {
    tr_wrapped *w;
    pthread_mutex_lock(&tr_lock);
    w = tr_wrapped_find(buffer);
    pthread_mutex_unlock(&tr_lock);
    if (w != NULL) {
      if (w->h.device != device)
        return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: buffer belongs to device %d, not %d",
                       fn, (int)w->h.device, (int)device);
      *out = &w->h;
      return HWP_OK;
    }
  }
#endif
  h = (tr_header *)((char *)buffer - TR_HEADER_BYTES);
  if (h->magic != TR_MAGIC)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: not a live buffer of this plugin", fn);
  if (h->device != device)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: buffer belongs to device %d, not %d", fn,
                   (int)h->device, (int)device);
  *out = h;
  return HWP_OK;
}

TR_MAYBE_UNUSED
static HWP_Status tr_check_range(const tr_header *h, uint64_t offset, uint64_t nbytes,
                                 const char *fn) {
  if (offset > h->nbytes || nbytes > h->nbytes - offset)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT,
                   "%s: bytes [%llu, %llu) outside a buffer of %llu bytes", fn,
                   (unsigned long long)offset, (unsigned long long)(offset + nbytes),
                   (unsigned long long)h->nbytes);
  return HWP_OK;
}

TR_MAYBE_UNUSED
static HWP_Status tr_allocate(int32_t device, uint64_t nbytes, HWP_Buffer *out) {
  void *p = NULL;
  tr_header *h;
  HWP_MemoryStats *s;
  HWP_Status st = tr_check_device(device, "allocate");
  if (st != HWP_OK) return st;
  if (out == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "allocate: out is NULL");
  if (nbytes == 0) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "allocate: nbytes must be > 0");
  s = &tr_stats[device];
  pthread_mutex_lock(&tr_lock);
#ifdef TR_REFUSED_COUNTS
  s->num_allocs += 1; /* the bug: counted before the allocation is known to succeed */
#endif
#if defined(TR_OOM_DRIFT)
  if (nbytes > tr_memory_limit) {
    pthread_mutex_unlock(&tr_lock);
    return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "allocate: %llu bytes exceed the device limit",
                   (unsigned long long)nbytes);
  }
  s->bytes_in_use += nbytes; /* reserved first; the refusal below forgets to give it back */
  if (s->bytes_in_use > tr_memory_limit) {
    pthread_mutex_unlock(&tr_lock);
    return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "allocate: %llu bytes exceed the device limit",
                   (unsigned long long)nbytes);
  }
#elif !defined(TR_NO_LIMIT) /* TR_NO_LIMIT: only host malloc below can refuse */
  if (s->bytes_in_use > tr_memory_limit || nbytes > tr_memory_limit - s->bytes_in_use) {
    pthread_mutex_unlock(&tr_lock);
    return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "allocate: %llu bytes exceed the device limit",
                   (unsigned long long)nbytes);
  }
#endif
  if (nbytes > UINT64_MAX - TR_HEADER_BYTES ||
      posix_memalign(&p, TR_ALIGNMENT, (size_t)(TR_HEADER_BYTES + nbytes)) != 0 || p == NULL) {
#ifdef TR_OOM_DRIFT
    s->bytes_in_use -= nbytes;
#endif
    pthread_mutex_unlock(&tr_lock);
    return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "allocate: host malloc of %llu bytes failed",
                   (unsigned long long)nbytes);
  }
  h = (tr_header *)p;
  h->nbytes = nbytes;
  h->device = device;
  h->magic = TR_MAGIC;
#ifndef TR_OOM_DRIFT
  s->bytes_in_use += nbytes;
#endif
  if (s->bytes_in_use > s->peak_bytes_in_use) s->peak_bytes_in_use = s->bytes_in_use;
#ifndef TR_REFUSED_COUNTS
  s->num_allocs += 1;
#endif
  pthread_mutex_unlock(&tr_lock);
  *out = (HWP_Buffer)((char *)p + TR_HEADER_BYTES);
  return HWP_OK;
}

TR_MAYBE_UNUSED
static HWP_Status tr_deallocate(int32_t device, HWP_Buffer buffer) {
  tr_header *h = NULL;
  HWP_Status st;
  if (buffer == NULL) return tr_check_device(device, "deallocate"); /* NULL is a no-op */
  st = tr_header_of(device, buffer, "deallocate", &h);
  if (st != HWP_OK) return st;
#ifdef TR_WITH_DLPACK
  if (h->magic == TR_WRAP_MAGIC)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "deallocate: the buffer wraps foreign memory "
                   "(wrap_device_memory); release it with release_device_buffer");
#endif
  pthread_mutex_lock(&tr_lock);
  tr_stats[device].num_frees += 1;
#ifndef TR_LEAK_ON_FREE
  tr_stats[device].bytes_in_use -= h->nbytes;
#endif
#ifdef TR_PEAK_FORGETS
  tr_stats[device].peak_bytes_in_use = tr_stats[device].bytes_in_use; /* the bug */
#endif
  pthread_mutex_unlock(&tr_lock);
#ifndef TR_LEAK_ON_FREE
  h->magic = 0;
  free(h);
#endif
  return HWP_OK;
}

TR_MAYBE_UNUSED
static HWP_Status tr_copy_h2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset,
                              const void *src, uint64_t nbytes) {
  tr_header *h = NULL;
  HWP_Status st = tr_header_of(device, dst, "copy_h2d", &h);
  if (st != HWP_OK) return st;
  if ((st = tr_check_range(h, dst_offset, nbytes, "copy_h2d")) != HWP_OK) return st;
  if (nbytes == 0) return HWP_OK;
  if (src == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "copy_h2d: src is NULL");
#ifndef TR_SYNC_H2D_NO_WAIT /* the bug: the copy runs while streams still write dst */
  tr_device_wait(device);
#endif
  memcpy((char *)dst + dst_offset, src, (size_t)nbytes);
  return HWP_OK;
}

TR_MAYBE_UNUSED
static HWP_Status tr_copy_d2h(int32_t device, void *dst, HWP_Buffer src, uint64_t src_offset,
                              uint64_t nbytes) {
  tr_header *h = NULL;
  HWP_Status st = tr_header_of(device, src, "copy_d2h", &h);
  if (st != HWP_OK) return st;
  if ((st = tr_check_range(h, src_offset, nbytes, "copy_d2h")) != HWP_OK) return st;
  if (nbytes == 0) return HWP_OK;
  if (dst == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "copy_d2h: dst is NULL");
  tr_device_wait(device);
  memcpy(dst, (const char *)src + src_offset, (size_t)nbytes);
  return HWP_OK;
}

TR_MAYBE_UNUSED
static HWP_Status tr_copy_d2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset,
                              HWP_Buffer src, uint64_t src_offset, uint64_t nbytes) {
  tr_header *hd = NULL, *hs = NULL;
  HWP_Status st = tr_header_of(device, dst, "copy_d2d", &hd);
  if (st != HWP_OK) return st;
  if ((st = tr_header_of(device, src, "copy_d2d", &hs)) != HWP_OK) return st;
  if ((st = tr_check_range(hd, dst_offset, nbytes, "copy_d2d")) != HWP_OK) return st;
  if ((st = tr_check_range(hs, src_offset, nbytes, "copy_d2d")) != HWP_OK) return st;
  if (nbytes == 0) return HWP_OK;
#ifndef TR_SYNC_D2D_NO_WAIT /* the bug: the copy runs while streams still use dst or src */
  tr_device_wait(device);
#endif
  memmove((char *)dst + dst_offset, (const char *)src + src_offset, (size_t)nbytes);
  return HWP_OK;
}

TR_MAYBE_UNUSED
static HWP_Status tr_get_memory_stats(int32_t device, HWP_MemoryStats *stats) {
  HWP_MemoryStats s;
  size_t n;
  HWP_Status st = tr_check_device(device, "get_memory_stats");
  if (st != HWP_OK) return st;
  if (stats == NULL || stats->struct_size < sizeof(size_t))
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "get_memory_stats: stats is NULL or too small");
  pthread_mutex_lock(&tr_lock);
  s = tr_stats[device];
  pthread_mutex_unlock(&tr_lock);
  s.bytes_limit = tr_memory_limit;
  n = stats->struct_size < sizeof s ? stats->struct_size : sizeof s;
  s.struct_size = stats->struct_size;
  memcpy(stats, &s, n);
  return HWP_OK;
}

#ifdef TR_WITH_STREAMS
/* ---- streams and events ------------------------------------------------------------------- *
 * Streams live in a fixed table of slots; a handle is a slot pointer, and a generation count
 * tells a live stream from a destroyed one (an event recorded on a destroyed stream is
 * complete: destroying waited for its work). One lock and one condition variable guard all. */
#define TR_MAX_STREAMS 64
#define TR_STREAM_MAGIC 0x53545257u /* "STRW" */
#define TR_EVENT_MAGIC 0x45565457u  /* "EVTW" */

typedef enum { TR_OP_COPY, TR_OP_MEMSET, TR_OP_WAIT, TR_OP_ADD_F32 } tr_op_kind;

typedef struct tr_op {
  tr_op_kind kind;
  void *dst;
  const void *src;
  const void *src2; /* TR_OP_ADD_F32: dst = src + src2, nbytes / 4 floats */
  uint64_t nbytes;
  uint8_t value;
  int32_t wait_slot; /* TR_OP_WAIT: the event's stream as recorded when the wait was enqueued */
  uint64_t wait_generation, wait_ticket;
  struct tr_op *prev, *next;
} tr_op;

typedef struct tr_stream {
  uint32_t magic;
  int32_t device;
  int32_t slot;
  uint64_t generation;
  int live, stop;
  pthread_t worker;
  tr_op *head, *tail;
  uint64_t submitted, completed;
} tr_stream;

typedef struct tr_event {
  uint32_t magic;
  int32_t device;
  int32_t slot; /* -1: never recorded, complete */
  uint64_t generation, ticket;
} tr_event;

static tr_stream tr_streams[TR_MAX_STREAMS];
static pthread_cond_t tr_stream_cond = PTHREAD_COND_INITIALIZER;

/* Caller holds tr_lock. */
static int tr_captured_complete(int32_t slot, uint64_t generation, uint64_t ticket) {
  const tr_stream *s;
  if (slot < 0) return 1;
  s = &tr_streams[slot];
  return !s->live || s->generation != generation || s->completed >= ticket;
}

static void tr_run_op(tr_op *op) {
  if (op->kind == TR_OP_COPY) {
    memmove(op->dst, op->src, (size_t)op->nbytes);
  } else if (op->kind == TR_OP_MEMSET) {
    memset(op->dst, op->value, (size_t)op->nbytes);
  } else if (op->kind == TR_OP_ADD_F32) {
    uint64_t i;
    for (i = 0; i < op->nbytes / sizeof(float); ++i)
      ((float *)op->dst)[i] = ((const float *)op->src)[i] + ((const float *)op->src2)[i];
  }
}

#if defined(TR_STREAMS_OUT_OF_ORDER) || defined(TR_STREAMS_DEFERRED)
#define TR_STREAMS_NO_WORKER 1
#endif

#ifdef TR_STREAMS_NO_WORKER
static void tr_flush_locked(tr_stream *s);
/* Runs everything pending on `s` in the calling thread: newest first (out of order), or oldest
 * first (deferred). Caller holds tr_lock. */
static void tr_flush_locked(tr_stream *s) {
  while (s->tail != NULL) {
#ifdef TR_STREAMS_OUT_OF_ORDER
    tr_op *op = s->tail;
    s->tail = op->prev;
    if (s->tail) s->tail->next = NULL; else s->head = NULL;
#else
    tr_op *op = s->head;
    s->head = op->next;
    if (s->head) s->head->prev = NULL; else s->tail = NULL;
#endif
    if (op->kind == TR_OP_WAIT && op->wait_slot >= 0 &&
        tr_streams[op->wait_slot].generation == op->wait_generation)
      tr_flush_locked(&tr_streams[op->wait_slot]); /* "waits" by running the other stream */
    else
      tr_run_op(op);
    free(op);
    s->completed += 1;
  }
}
#define TR_FLUSH(s) tr_flush_locked(s)
#else
#define TR_FLUSH(s) ((void)(s))
static void *tr_worker(void *arg) {
  tr_stream *s = (tr_stream *)arg;
  pthread_mutex_lock(&tr_lock);
  for (;;) {
    tr_op *op;
    while (s->head == NULL && !s->stop) pthread_cond_wait(&tr_stream_cond, &tr_lock);
    if (s->head == NULL) break; /* stop requested and nothing left */
    op = s->head;
    if (op->kind == TR_OP_WAIT) {
      while (!tr_captured_complete(op->wait_slot, op->wait_generation, op->wait_ticket))
        pthread_cond_wait(&tr_stream_cond, &tr_lock);
    } else {
      pthread_mutex_unlock(&tr_lock);
      tr_run_op(op);
      pthread_mutex_lock(&tr_lock);
    }
    s->head = op->next;
    if (s->head) s->head->prev = NULL; else s->tail = NULL;
    free(op);
    s->completed += 1;
    pthread_cond_broadcast(&tr_stream_cond);
  }
  pthread_mutex_unlock(&tr_lock);
  return NULL;
}
#endif

/* Caller holds tr_lock. */
static void tr_wait_stream_locked(tr_stream *s) {
  TR_FLUSH(s);
  while (s->completed < s->submitted) pthread_cond_wait(&tr_stream_cond, &tr_lock);
}

#ifdef TR_SYNC_WAITS_ONE_STREAM
static int32_t tr_last_slot[TR_NUM_DEVICES] = {-1, -1}; /* the stream last submitted to */
#endif

static void tr_device_wait(int32_t device) {
  int i;
  pthread_mutex_lock(&tr_lock);
  for (i = 0; i < TR_MAX_STREAMS; ++i) {
#ifdef TR_SYNC_WAITS_ONE_STREAM
    if (i != tr_last_slot[device]) continue; /* the bug: only the "current" stream */
#endif
    if (tr_streams[i].live && tr_streams[i].device == device) tr_wait_stream_locked(&tr_streams[i]);
  }
  pthread_mutex_unlock(&tr_lock);
}

/* With HWPORT_TEST_STRICT_STREAMS=1 in the environment, a call naming a destroyed stream aborts
 * the process with a message instead of failing with an error that a host may swallow (its
 * fallback for a failed record_event is to synchronize), so a test sees a host that keeps using
 * a stream after destroying it. */
static void tr_strict_stream_check(const tr_stream *s, const char *fn) {
  const char *strict = getenv("HWPORT_TEST_STRICT_STREAMS");
  if (s < tr_streams || s >= tr_streams + TR_MAX_STREAMS || s->live || strict == NULL ||
      strcmp(strict, "1") != 0)
    return;
  fprintf(stderr, "hwport test plugin: %s on a destroyed stream (slot %d)\n", fn, (int)s->slot);
  fflush(stderr);
  abort();
}

static HWP_Status tr_stream_of(int32_t device, HWP_Stream stream, const char *fn,
                               tr_stream **out) {
  tr_stream *s = (tr_stream *)stream;
  HWP_Status st = tr_check_device(device, fn);
  if (st != HWP_OK) return st;
  if (s == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: stream is NULL", fn);
  tr_strict_stream_check(s, fn);
  if (s < tr_streams || s >= tr_streams + TR_MAX_STREAMS || s->magic != TR_STREAM_MAGIC ||
      !s->live)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: not a live stream of this plugin", fn);
  if (s->device != device)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: stream belongs to device %d, not %d", fn,
                   (int)s->device, (int)device);
  *out = s;
  return HWP_OK;
}

static HWP_Status tr_event_of(int32_t device, HWP_Event event, const char *fn, tr_event **out) {
  tr_event *e = (tr_event *)event;
  HWP_Status st = tr_check_device(device, fn);
  if (st != HWP_OK) return st;
  if (e == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: event is NULL", fn);
  if (e->magic != TR_EVENT_MAGIC)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: not a live event of this plugin", fn);
  *out = e;
  return HWP_OK;
}

static HWP_Status tr_create_stream(int32_t device, HWP_Stream *out) {
  int i;
  HWP_Status st = tr_check_device(device, "create_stream");
  if (st != HWP_OK) return st;
  if (out == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "create_stream: out is NULL");
  pthread_mutex_lock(&tr_lock);
  for (i = 0; i < TR_MAX_STREAMS && tr_streams[i].live; ++i) {
  }
  if (i == TR_MAX_STREAMS) {
    pthread_mutex_unlock(&tr_lock);
    return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "create_stream: all %d streams are in use",
                   TR_MAX_STREAMS);
  }
  {
    tr_stream *s = &tr_streams[i];
    uint64_t generation = s->generation + 1;
    memset(s, 0, sizeof *s);
    s->magic = TR_STREAM_MAGIC;
    s->device = device;
    s->slot = i;
    s->generation = generation;
    s->live = 1;
#ifndef TR_STREAMS_NO_WORKER
    if (pthread_create(&s->worker, NULL, tr_worker, s) != 0) {
      s->live = 0;
      pthread_mutex_unlock(&tr_lock);
      return tr_fail(HWP_ERROR_DEVICE, "create_stream: could not start a worker thread");
    }
#endif
    pthread_mutex_unlock(&tr_lock);
    *out = (HWP_Stream)s;
  }
  return HWP_OK;
}

static HWP_Status tr_destroy_stream(int32_t device, HWP_Stream stream) {
  tr_stream *s = NULL;
  HWP_Status st;
  if (stream == NULL) return tr_check_device(device, "destroy_stream");
  if ((st = tr_stream_of(device, stream, "destroy_stream", &s)) != HWP_OK) return st;
  pthread_mutex_lock(&tr_lock);
  tr_wait_stream_locked(s);
  s->stop = 1;
  pthread_cond_broadcast(&tr_stream_cond);
  pthread_mutex_unlock(&tr_lock);
#ifndef TR_STREAMS_NO_WORKER
  pthread_join(s->worker, NULL);
#endif
  pthread_mutex_lock(&tr_lock);
  s->live = 0;
  s->magic = 0;
  pthread_cond_broadcast(&tr_stream_cond);
  pthread_mutex_unlock(&tr_lock);
  return HWP_OK;
}

static HWP_Status tr_create_event(int32_t device, HWP_Event *out) {
  tr_event *e;
  HWP_Status st = tr_check_device(device, "create_event");
  if (st != HWP_OK) return st;
  if (out == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "create_event: out is NULL");
  e = (tr_event *)calloc(1, sizeof *e);
  if (e == NULL) return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "create_event: out of host memory");
  e->magic = TR_EVENT_MAGIC;
  e->device = device;
  e->slot = -1;
  *out = (HWP_Event)e;
  return HWP_OK;
}

static HWP_Status tr_destroy_event(int32_t device, HWP_Event event) {
  tr_event *e = NULL;
  HWP_Status st;
  if (event == NULL) return tr_check_device(device, "destroy_event");
  if ((st = tr_event_of(device, event, "destroy_event", &e)) != HWP_OK) return st;
  e->magic = 0;
  free(e);
  return HWP_OK;
}

static HWP_Status tr_record_event(int32_t device, HWP_Stream stream, HWP_Event event) {
  tr_stream *s = NULL;
  tr_event *e = NULL;
  HWP_Status st = tr_stream_of(device, stream, "record_event", &s);
  if (st != HWP_OK) return st;
  if ((st = tr_event_of(device, event, "record_event", &e)) != HWP_OK) return st;
  pthread_mutex_lock(&tr_lock);
  e->slot = s->slot;
  e->generation = s->generation;
  e->ticket = s->submitted;
  pthread_mutex_unlock(&tr_lock);
  return HWP_OK;
}

/* Caller holds tr_lock. HWP_OK once the stream in `slot` (if still of `generation`) has
 * completed `ticket` operations, else HWP_ERROR_NOT_READY; with `wait`, blocks until then. */
static HWP_Status tr_await_locked(int32_t slot, uint64_t generation, uint64_t ticket, int wait) {
  if (!tr_captured_complete(slot, generation, ticket)) TR_FLUSH(&tr_streams[slot]);
  while (wait && !tr_captured_complete(slot, generation, ticket))
    pthread_cond_wait(&tr_stream_cond, &tr_lock);
  return tr_captured_complete(slot, generation, ticket) ? HWP_OK : HWP_ERROR_NOT_READY;
}

/* synchronize_* (wait) and query_* (!wait) of a stream, or of an event (`is_event`). */
static HWP_Status tr_finish(int32_t device, void *handle, int is_event, int wait,
                            const char *fn) {
  tr_stream *s = NULL;
  tr_event *e = NULL;
  HWP_Status st = is_event ? tr_event_of(device, (HWP_Event)handle, fn, &e)
                           : tr_stream_of(device, (HWP_Stream)handle, fn, &s);
  if (st != HWP_OK) return st;
  pthread_mutex_lock(&tr_lock);
  st = e ? tr_await_locked(e->slot, e->generation, e->ticket, wait)
         : tr_await_locked(s->slot, s->generation, s->submitted, wait);
  pthread_mutex_unlock(&tr_lock);
  return st;
}

static HWP_Status tr_synchronize_stream(int32_t device, HWP_Stream stream) {
  return tr_finish(device, stream, 0, 1, "synchronize_stream");
}

static HWP_Status tr_query_stream(int32_t device, HWP_Stream stream) {
  return tr_finish(device, stream, 0, 0, "query_stream");
}

static HWP_Status tr_synchronize_event(int32_t device, HWP_Event event) {
  return tr_finish(device, event, 1, 1, "synchronize_event");
}

static HWP_Status tr_query_event(int32_t device, HWP_Event event) {
  return tr_finish(device, event, 1, 0, "query_event");
}

/* Appends `op` (heap-allocated, fields set) to the stream's queue. Takes ownership. */
static HWP_Status tr_enqueue(tr_stream *s, tr_op *op) {
  pthread_mutex_lock(&tr_lock);
  op->next = NULL;
  op->prev = s->tail;
  if (s->tail) s->tail->next = op; else s->head = op;
  s->tail = op;
  s->submitted += 1;
#ifdef TR_SYNC_WAITS_ONE_STREAM
  tr_last_slot[s->device] = s->slot;
#endif
  pthread_cond_broadcast(&tr_stream_cond);
  pthread_mutex_unlock(&tr_lock);
  return HWP_OK;
}

static HWP_Status tr_stream_wait_event(int32_t device, HWP_Stream stream, HWP_Event event) {
  tr_stream *s = NULL;
  tr_event *e = NULL;
  tr_op *op;
  HWP_Status st = tr_stream_of(device, stream, "stream_wait_event", &s);
  if (st != HWP_OK) return st;
  if ((st = tr_event_of(device, event, "stream_wait_event", &e)) != HWP_OK)
    return st;
#ifdef TR_CROSS_DEVICE_WAIT_IGNORED
  if (e->device != device) return HWP_OK; /* the bug: "another device's event cannot apply" */
#endif
#ifdef TR_WAIT_LAST_EVENT_ONLY
  pthread_mutex_lock(&tr_lock);
  if (s->tail != NULL && s->tail->kind == TR_OP_WAIT) { /* the bug: one dependency slot */
    s->tail->wait_slot = e->slot;
    s->tail->wait_generation = e->generation;
    s->tail->wait_ticket = e->ticket;
    pthread_cond_broadcast(&tr_stream_cond);
    pthread_mutex_unlock(&tr_lock);
    return HWP_OK;
  }
  pthread_mutex_unlock(&tr_lock);
#endif
  op = (tr_op *)calloc(1, sizeof *op);
  if (op == NULL) return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "stream_wait_event: no host memory");
  op->kind = TR_OP_WAIT;
  pthread_mutex_lock(&tr_lock);
  op->wait_slot = e->slot; /* as recorded now */
  op->wait_generation = e->generation;
  op->wait_ticket = e->ticket;
  pthread_mutex_unlock(&tr_lock);
  return tr_enqueue(s, op);
}

/* A stream-ordered copy, fill or add (src2: the add's second operand): on a NULL stream,
 * synchronous (after the device's work). */
static HWP_Status tr_submit_op(int32_t device, HWP_Stream stream, tr_op_kind kind, void *dst,
                               const void *src, const void *src2, uint8_t value,
                               uint64_t nbytes, const char *fn) {
  tr_stream *s = NULL;
  tr_op *op;
  HWP_Status st;
  if (nbytes == 0) return HWP_OK;
  if (stream == NULL) {
    tr_op now;
    memset(&now, 0, sizeof now);
    now.kind = kind;
    now.dst = dst;
    now.src = src;
    now.src2 = src2;
    now.value = value;
    now.nbytes = nbytes;
#ifndef TR_NULL_STREAM_NO_WAIT /* the bug: "synchronous" taken as "run it now" */
    tr_device_wait(device);
#endif
    tr_run_op(&now);
    return HWP_OK;
  }
  if ((st = tr_stream_of(device, stream, fn, &s)) != HWP_OK) return st;
  op = (tr_op *)calloc(1, sizeof *op);
  if (op == NULL) return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "%s: no host memory", fn);
  op->kind = kind;
  op->dst = dst;
  op->src = src;
  op->src2 = src2;
  op->value = value;
  op->nbytes = nbytes;
  return tr_enqueue(s, op);
}

static HWP_Status tr_submit(int32_t device, HWP_Stream stream, tr_op_kind kind, void *dst,
                            const void *src, uint8_t value, uint64_t nbytes, const char *fn) {
  return tr_submit_op(device, stream, kind, dst, src, NULL, value, nbytes, fn);
}

/* out = a + b over n floats as stream work (a plugin whose kernels are stream operations, as
 * a GPU's are). */
static HWP_Status tr_submit_add_f32(int32_t device, HWP_Stream stream, float *out,
                                    const float *a, const float *b, uint64_t n) {
  return tr_submit_op(device, stream, TR_OP_ADD_F32, out, a, b, 0, n * sizeof(float), "add");
}

static HWP_Status tr_copy_h2d_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                    uint64_t dst_offset, const void *src, uint64_t nbytes) {
  tr_header *h = NULL;
  HWP_Status st = tr_header_of(device, dst, "copy_h2d_async", &h);
  if (st != HWP_OK) return st;
  if ((st = tr_check_range(h, dst_offset, nbytes, "copy_h2d_async")) != HWP_OK) return st;
  if (src == NULL && nbytes) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "copy_h2d_async: src is NULL");
  return tr_submit(device, stream, TR_OP_COPY, (char *)dst + dst_offset, src, 0, nbytes,
                   "copy_h2d_async");
}

static HWP_Status tr_copy_d2h_async(int32_t device, HWP_Stream stream, void *dst, HWP_Buffer src,
                                    uint64_t src_offset, uint64_t nbytes) {
  tr_header *h = NULL;
  HWP_Status st = tr_header_of(device, src, "copy_d2h_async", &h);
  if (st != HWP_OK) return st;
  if ((st = tr_check_range(h, src_offset, nbytes, "copy_d2h_async")) != HWP_OK) return st;
  if (dst == NULL && nbytes) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "copy_d2h_async: dst is NULL");
  return tr_submit(device, stream, TR_OP_COPY, dst, (const char *)src + src_offset, 0, nbytes,
                   "copy_d2h_async");
}

static HWP_Status tr_copy_d2d_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                    uint64_t dst_offset, HWP_Buffer src, uint64_t src_offset,
                                    uint64_t nbytes) {
  tr_header *hd = NULL, *hs = NULL;
  HWP_Status st = tr_header_of(device, dst, "copy_d2d_async", &hd);
  if (st != HWP_OK) return st;
  if ((st = tr_header_of(device, src, "copy_d2d_async", &hs)) != HWP_OK) return st;
  if ((st = tr_check_range(hd, dst_offset, nbytes, "copy_d2d_async")) != HWP_OK) return st;
  if ((st = tr_check_range(hs, src_offset, nbytes, "copy_d2d_async")) != HWP_OK) return st;
  return tr_submit(device, stream, TR_OP_COPY, (char *)dst + dst_offset,
                   (const char *)src + src_offset, 0, nbytes, "copy_d2d_async");
}

static HWP_Status tr_memset_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                  uint64_t dst_offset, uint8_t value, uint64_t nbytes) {
  tr_header *h = NULL;
  HWP_Status st = tr_header_of(device, dst, "memset_async", &h);
  if (st != HWP_OK) return st;
  if ((st = tr_check_range(h, dst_offset, nbytes, "memset_async")) != HWP_OK) return st;
  return tr_submit(device, stream, TR_OP_MEMSET, (char *)dst + dst_offset, NULL, value, nbytes,
                   "memset_async");
}

/* A kernel launched on `stream` runs inline once the stream's earlier work is done. */
static void tr_kernel_wait(int32_t device, HWP_Stream stream) {
  tr_stream *s = NULL;
  if (stream == NULL) {
    tr_device_wait(device);
    return;
  }
  if (tr_stream_of(device, stream, "kernel", &s) != HWP_OK) return;
  pthread_mutex_lock(&tr_lock);
  tr_wait_stream_locked(s);
  pthread_mutex_unlock(&tr_lock);
}

#else
#define tr_kernel_wait(device, stream) ((void)(device), (void)(stream))
#endif /* TR_WITH_STREAMS */

#ifdef TR_WITH_DLPACK
/* ---- ABI 1.1: DLPack exchange of device memory and streams ------------------------------ */
static HWP_Status tr_device_address(int32_t device, HWP_Buffer buffer, uint64_t offset,
                                    void **out) {
  tr_header *h = NULL;
  HWP_Status st = tr_header_of(device, buffer, "device_address", &h);
  if (st != HWP_OK) return st;
  if ((st = tr_check_range(h, offset, 0, "device_address")) != HWP_OK) return st;
  if (out == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "device_address: out is NULL");
  *out = (char *)buffer + offset;
  return HWP_OK;
}

static HWP_Status tr_wrap_device_memory(int32_t device, void *address, uint64_t nbytes,
                                        HWP_Buffer *out) {
  tr_wrapped *w;
  int i;
  HWP_Status st = tr_check_device(device, "wrap_device_memory");
  if (st != HWP_OK) return st;
  if (address == NULL || out == NULL || nbytes == 0)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT,
                   "wrap_device_memory: address and out must be non-NULL and nbytes > 0");
  pthread_mutex_lock(&tr_lock);
  w = tr_wrapped_find(address);
  if (w != NULL && w->h.device != device) {
    pthread_mutex_unlock(&tr_lock);
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT,
                   "wrap_device_memory: %p is wrapped on device %d already", address,
                   (int)w->h.device);
  }
  for (i = 0; w == NULL && i < TR_MAX_WRAPPED; ++i)
    if (tr_wraps[i].refs == 0) {
      w = &tr_wraps[i];
      w->addr = (char *)address;
      w->h.nbytes = 0;
      w->h.device = device;
      w->h.magic = TR_WRAP_MAGIC;
    }
  if (w == NULL) {
    pthread_mutex_unlock(&tr_lock);
    return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "wrap_device_memory: all %d wrap slots are in use",
                   TR_MAX_WRAPPED);
  }
  w->refs += 1;
  if (nbytes > w->h.nbytes) w->h.nbytes = nbytes;
  pthread_mutex_unlock(&tr_lock);
  *out = (HWP_Buffer)address;
  return HWP_OK;
}

static HWP_Status tr_release_device_buffer(int32_t device, HWP_Buffer buffer) {
  tr_wrapped *w;
  HWP_Status st = tr_check_device(device, "release_device_buffer");
  if (st != HWP_OK || buffer == NULL) return st;
  pthread_mutex_lock(&tr_lock);
  w = tr_wrapped_find(buffer);
  if (w == NULL || w->h.device != device) {
    pthread_mutex_unlock(&tr_lock);
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT,
                   "release_device_buffer: %p is no wrapped buffer of device %d", (void *)buffer,
                   (int)device);
  }
  w->refs -= 1;
  pthread_mutex_unlock(&tr_lock);
  return HWP_OK;
}

#define TR_NATIVE_SYNC_QUEUE ((uintptr_t)1) /* the NULL stream's (synchronous) queue */

static HWP_Status tr_native_stream(int32_t device, HWP_Stream stream, uintptr_t *out) {
  tr_stream *s = NULL;
  HWP_Status st = tr_check_device(device, "native_stream");
  if (st != HWP_OK) return st;
  if (out == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "native_stream: out is NULL");
  if (stream != NULL && (st = tr_stream_of(device, stream, "native_stream", &s)) != HWP_OK)
    return st;
  *out = stream == NULL ? TR_NATIVE_SYNC_QUEUE : (uintptr_t)s;
  return HWP_OK;
}

static HWP_Status tr_native_stream_wait(int32_t device, uintptr_t native, HWP_Stream stream) {
  HWP_Event ev = NULL;
  HWP_Status st = tr_check_device(device, "native_stream_wait");
  if (st != HWP_OK) return st;
  if (native == 0)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "native_stream_wait: native stream 0 is "
                   "ambiguous (DLPack forbids it); use 1 for the synchronous queue");
  if (stream == NULL) return HWP_OK; /* NULL-stream work is complete when its call returns */
  if (native == TR_NATIVE_SYNC_QUEUE) return tr_synchronize_stream(device, stream);
  /* Validate both streams before enqueueing anything. */
  {
    tr_stream *s = NULL;
    if ((st = tr_stream_of(device, (HWP_Stream)native, "native_stream_wait", &s)) != HWP_OK ||
        (st = tr_stream_of(device, stream, "native_stream_wait", &s)) != HWP_OK)
      return st;
  }
#ifdef TR_LAZY_NATIVE_WAIT
  return HWP_OK; /* the bug: the foreign stream is not made to wait */
#endif
  if ((st = tr_create_event(device, &ev)) != HWP_OK) return st;
  st = tr_record_event(device, stream, ev);
  if (st == HWP_OK) st = tr_stream_wait_event(device, (HWP_Stream)native, ev);
  tr_destroy_event(device, ev); /* the wait captured what the event recorded */
  return st;
}
#define TR_DLPACK_MEMORY tr_device_address, tr_wrap_device_memory, tr_release_device_buffer
#define TR_DLPACK_STREAMS tr_native_stream, tr_native_stream_wait
#else
#define TR_DLPACK_MEMORY NULL, NULL, NULL
#define TR_DLPACK_STREAMS NULL, NULL
#endif /* TR_WITH_DLPACK */

#ifdef TR_WITH_STREAMS
static const HWP_StreamTable tr_stream_table = {
    sizeof(HWP_StreamTable), tr_create_stream, tr_destroy_stream, tr_synchronize_stream,
    tr_query_stream,         tr_create_event,  tr_destroy_event,  tr_record_event,
    tr_synchronize_event,    tr_query_event,   tr_stream_wait_event, TR_DLPACK_STREAMS};
#endif

#endif /* HWPORT_TEST_RUNTIME_H */
