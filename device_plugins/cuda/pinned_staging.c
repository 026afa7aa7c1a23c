/* hwport CUDA plugin — pinned (page-locked) host staging for the stream-ordered host copies.
 *
 * cudaMemcpyAsync from or to pageable memory is not asynchronous: a device-to-host copy blocks
 * the host until the stream has reached it and the copy is done, and a host-to-device copy
 * returns only once the driver has staged it. Through a pinned chunk both become stream work:
 *   H2D: memcpy into the chunk (host), then cudaMemcpyAsync chunk -> device;
 *   D2H: cudaMemcpyAsync device -> chunk, then a host function on the stream copies the chunk
 *        into the caller's memory (the ABI keeps that memory alive until the stream passes).
 * A chunk is reusable once the event recorded after its last use has completed. Chunks are
 * cudaHostAlloc'd on demand (sizes rounded up to a power of two, at least 1 MiB), at most
 * HWPORT_CUDA_PINNED_MIB in all (default 256; 0 turns staging off); a copy larger than a
 * quarter of that, or one that finds no chunk, goes straight through cudaMemcpyAsync. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct cu_chunk {
  void *host;
  size_t size;
  int32_t device;     /* its event belongs to this device */
  cudaEvent_t done;   /* recorded after the chunk's last use */
  int busy;           /* acquired, its copy not yet enqueued */
  struct cu_chunk *next;
} cu_chunk;

typedef struct cu_host_copy {
  void *dst;
  const void *src;
  size_t nbytes;
} cu_host_copy;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cu_chunk *g_chunks;
static size_t g_pinned_bytes;
static size_t g_limit = (size_t)-1; /* read from the environment on first use */

static size_t staging_limit(void) {
  if (g_limit == (size_t)-1) {
    const char *env = getenv("HWPORT_CUDA_PINNED_MIB");
    long mib = env && *env ? strtol(env, NULL, 10) : 256;
    g_limit = mib > 0 ? (size_t)mib << 20 : 0;
  }
  return g_limit;
}

/* A free chunk of at least `n` bytes for `device` (the device is current), marked busy; NULL
 * when staging is off, the copy is too large, or no pinned memory can be had. */
static cu_chunk *acquire(int32_t device, size_t n) {
  pthread_mutex_lock(&g_mu);
  const size_t limit = staging_limit();
  cu_chunk *found = NULL;
  if (limit == 0 || n > limit / 4) goto out;
  for (cu_chunk *c = g_chunks; c != NULL && found == NULL; c = c->next)
    if (!c->busy && c->device == device && c->size >= n && cudaEventQuery(c->done) == cudaSuccess)
      found = c;
  if (found == NULL) {
    size_t size = (size_t)1 << 20;
    while (size < n) size <<= 1;
    if (g_pinned_bytes + size > limit) goto out;
    cu_chunk *c = calloc(1, sizeof *c);
    if (c == NULL) goto out;
    if (cudaEventCreateWithFlags(&c->done, cudaEventDisableTiming) != cudaSuccess) {
      free(c);
      goto out;
    }
    if (cudaHostAlloc(&c->host, size, cudaHostAllocPortable) != cudaSuccess) {
      (void)cudaGetLastError(); /* not sticky: fall back to a direct copy */
      (void)cudaEventDestroy(c->done);
      free(c);
      goto out;
    }
    c->size = size;
    c->device = device;
    c->next = g_chunks;
    g_chunks = c;
    g_pinned_bytes += size;
    found = c;
  }
  found->busy = 1;
out:
  pthread_mutex_unlock(&g_mu);
  return found;
}

/* Records the chunk's release point on `s` (after the work enqueued so far) and frees it for
 * reuse once that point has passed. */
static cudaError_t release_after(cu_chunk *c, cudaStream_t s) {
  cudaError_t err = cudaEventRecord(c->done, s);
  pthread_mutex_lock(&g_mu);
  c->busy = 0;
  pthread_mutex_unlock(&g_mu);
  return err;
}

static void CUDART_CB copy_out(void *arg) {
  cu_host_copy *job = arg;
  memcpy(job->dst, job->src, job->nbytes);
  free(job);
}

cudaError_t cu_staged_copy_h2d(int32_t device, void *dst, const void *src, size_t nbytes,
                               cudaStream_t s) {
  cu_chunk *c = acquire(device, nbytes);
  if (c == NULL) return cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, s);
  memcpy(c->host, src, nbytes);
  cudaError_t err = cudaMemcpyAsync(dst, c->host, nbytes, cudaMemcpyHostToDevice, s);
  cudaError_t rel = release_after(c, s);
  return err != cudaSuccess ? err : rel;
}

cudaError_t cu_staged_copy_d2h(int32_t device, void *dst, const void *src, size_t nbytes,
                               cudaStream_t s) {
  cu_host_copy *job = malloc(sizeof *job);
  cu_chunk *c = job != NULL ? acquire(device, nbytes) : NULL;
  if (c == NULL) {
    free(job);
    return cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, s);
  }
  *job = (cu_host_copy){dst, c->host, nbytes};
  cudaError_t err = cudaMemcpyAsync(c->host, src, nbytes, cudaMemcpyDeviceToHost, s);
  if (err == cudaSuccess) err = cudaLaunchHostFunc(s, copy_out, job);
  if (err != cudaSuccess) free(job); /* nothing enqueued will touch it */
  cudaError_t rel = release_after(c, s);
  return err != cudaSuccess ? err : rel;
}

void cu_staging_shutdown(void) {
  pthread_mutex_lock(&g_mu);
  while (g_chunks != NULL) {
    cu_chunk *c = g_chunks;
    g_chunks = c->next;
    (void)cudaEventSynchronize(c->done);
    (void)cudaEventDestroy(c->done);
    (void)cudaFreeHost(c->host);
    free(c);
  }
  g_pinned_bytes = 0;
  pthread_mutex_unlock(&g_mu);
}
