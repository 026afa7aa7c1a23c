/* A tiny but real device runtime shared by every test-only plugin (tests/plugins).
 *
 * Two "devices" backed by host malloc: an HWP_Buffer is the host pointer of the allocation
 * (a small header in front of it records its size and device), copies are synchronous memcpy,
 * synchronize_device has nothing to wait for, get_memory_stats accounts live bytes, and the last
 * error is thread-local. There is no stream table: the host must use its implicit in-order
 * stream (ctx->stream == NULL).
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

/* ---- device table ---------------------------------------------------------------------- */
TR_MAYBE_UNUSED
static HWP_Status tr_get_device_count(int32_t *count) {
  if (count == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "get_device_count: count is NULL");
  *count = TR_NUM_DEVICES;
  return HWP_OK;
}

TR_MAYBE_UNUSED
static HWP_Status tr_synchronize_device(int32_t device) {
  /* Every operation completes before it returns: nothing to wait for. */
  return tr_check_device(device, "synchronize_device");
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
  p.total_memory = TR_TOTAL_MEMORY;
  p.memory_alignment = TR_ALIGNMENT;
  p.compute_units = 1;
  p.max_work_group_size = 1;
  p.flags = 0;
  /* Write only as far as the host's struct reaches (it may be older or newer than ours). */
  n = props->struct_size < sizeof p ? props->struct_size : sizeof p;
  p.struct_size = props->struct_size;
  memcpy(props, &p, n);
  return HWP_OK;
}

/* ---- memory table ---------------------------------------------------------------------- */
TR_MAYBE_UNUSED
static HWP_Status tr_header_of(int32_t device, HWP_Buffer buffer, const char *fn,
                               tr_header **out) {
  tr_header *h;
  HWP_Status st = tr_check_device(device, fn);
  if (st != HWP_OK) return st;
  if (buffer == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: buffer is NULL", fn);
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
  if (nbytes > TR_TOTAL_MEMORY - s->bytes_in_use) {
    pthread_mutex_unlock(&tr_lock);
    return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "allocate: %llu bytes exceed the device limit",
                   (unsigned long long)nbytes);
  }
  if (posix_memalign(&p, TR_ALIGNMENT, (size_t)(TR_HEADER_BYTES + nbytes)) != 0 || p == NULL) {
    pthread_mutex_unlock(&tr_lock);
    return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "allocate: host malloc of %llu bytes failed",
                   (unsigned long long)nbytes);
  }
  h = (tr_header *)p;
  h->nbytes = nbytes;
  h->device = device;
  h->magic = TR_MAGIC;
  s->bytes_in_use += nbytes;
  if (s->bytes_in_use > s->peak_bytes_in_use) s->peak_bytes_in_use = s->bytes_in_use;
  s->num_allocs += 1;
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
  pthread_mutex_lock(&tr_lock);
  tr_stats[device].bytes_in_use -= h->nbytes;
  tr_stats[device].num_frees += 1;
  pthread_mutex_unlock(&tr_lock);
  h->magic = 0;
  free(h);
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
  s.bytes_limit = TR_TOTAL_MEMORY;
  n = stats->struct_size < sizeof s ? stats->struct_size : sizeof s;
  s.struct_size = stats->struct_size;
  memcpy(stats, &s, n);
  return HWP_OK;
}

#endif /* HWPORT_TEST_RUNTIME_H */
