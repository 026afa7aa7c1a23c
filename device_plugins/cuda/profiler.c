/* hwport CUDA plugin — the profiler table (ABI 1.2): device time from CUDA events.
 *
 * While a device is profiled, cu_kernel_begin records an event before a profiled launch's
 * kernels on its stream and cu_kernel_end one after them; the pair is kept with the
 * correlation id and the op's name. start() records a reference event on the device and waits
 * for it, taking the host time right after as its CLOCK_MONOTONIC time; stop() (after the host
 * synchronized the device) turns each pair into host times by cudaEventElapsedTime from the
 * reference (0.5 µs resolution) and reports it. The reference is late by the wait's return
 * latency (µs), which every span shares. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "kernels.h"

typedef struct cu_timed {
  cudaEvent_t begin, end;
  uint64_t correlation_id;
  const char *name; /* the op's name: a literal of the kernel families */
} cu_timed;

typedef struct cu_profiled {
  pthread_mutex_t mu;
  int active; /* read without the lock on every launch (relaxed atomics) */
  HWP_DeviceSpanSink sink;
  void *sink_context;
  cudaEvent_t reference;
  uint64_t reference_ns;
  cu_timed *timed;
  size_t count, cap;
} cu_profiled;

static cu_profiled g_prof[CU_MAX_DEVICES] = {
    [0 ... CU_MAX_DEVICES - 1] = {.mu = PTHREAD_MUTEX_INITIALIZER}};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cu_profile_begin(const HWP_KernelContext *ctx, cu_kctx *k) {
  k->timed_begin = NULL;
  k->correlation_id =
      HWP_HAS_FIELD(ctx, HWP_KernelContext, correlation_id) ? ctx->correlation_id : 0;
  if (k->correlation_id == 0 || !__atomic_load_n(&g_prof[k->device].active, __ATOMIC_RELAXED))
    return;
  cudaEvent_t ev = NULL;
  if (cudaEventCreate(&ev) != cudaSuccess) {
    (void)cudaGetLastError();
    return; /* untimed */
  }
  if (cudaEventRecord(ev, k->stream) != cudaSuccess) {
    (void)cudaGetLastError();
    cudaEventDestroy(ev);
    return;
  }
  k->timed_begin = ev;
}

void cu_profile_end(const cu_kctx *k, const char *op) {
  if (k->timed_begin == NULL) return;
  cu_profiled *p = &g_prof[k->device];
  cudaEvent_t end = NULL;
  int kept = 0;
  if (cudaEventCreate(&end) == cudaSuccess && cudaEventRecord(end, k->stream) == cudaSuccess) {
    pthread_mutex_lock(&p->mu);
    if (p->active && p->count == p->cap) {
      size_t cap = p->cap ? 2 * p->cap : 256;
      cu_timed *grown = realloc(p->timed, cap * sizeof *grown);
      if (grown != NULL) {
        p->timed = grown;
        p->cap = cap;
      }
    }
    if (p->active && p->count < p->cap) {
      p->timed[p->count++] = (cu_timed){k->timed_begin, end, k->correlation_id, op};
      kept = 1;
    }
    pthread_mutex_unlock(&p->mu);
  }
  if (!kept) {
    (void)cudaGetLastError();
    cudaEventDestroy(k->timed_begin);
    if (end != NULL) cudaEventDestroy(end);
  }
}

static HWP_Status cu_profiler_start(int32_t device, HWP_DeviceSpanSink sink,
                                    void *sink_context) {
  HWP_Status st = cu_enter(device, "profiler.start");
  if (st != HWP_OK) return st;
  if (sink == NULL) return cu_error(HWP_ERROR_INVALID_ARGUMENT, "profiler.start: sink is NULL");
  cu_profiled *p = &g_prof[device];
  pthread_mutex_lock(&p->mu);
  cudaError_t err = cudaSuccess;
  if (p->reference == NULL) err = cudaEventCreate(&p->reference);
  if (err == cudaSuccess) err = cudaEventRecord(p->reference, 0);
  if (err == cudaSuccess) err = cudaEventSynchronize(p->reference);
  if (err == cudaSuccess) {
    p->reference_ns = now_ns();
    p->sink = sink;
    p->sink_context = sink_context;
    __atomic_store_n(&p->active, 1, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&p->mu);
  return err == cudaSuccess ? HWP_OK : cu_cuda_error(err, "profiler.start", "reference event");
}

/* Host time of `ev`: the reference's plus the elapsed time between them. */
static uint64_t host_time(const cu_profiled *p, cudaEvent_t ev, cudaError_t *err) {
  float ms = 0.0f;
  cudaError_t e = cudaEventElapsedTime(&ms, p->reference, ev);
  if (e != cudaSuccess && *err == cudaSuccess) *err = e;
  const double ns = (double)ms * 1e6;
  return ns <= -(double)p->reference_ns ? 0 : (uint64_t)((double)p->reference_ns + ns);
}

static HWP_Status cu_profiler_stop(int32_t device) {
  HWP_Status st = cu_enter(device, "profiler.stop");
  if (st != HWP_OK) return st;
  cu_profiled *p = &g_prof[device];
  pthread_mutex_lock(&p->mu);
  __atomic_store_n(&p->active, 0, __ATOMIC_RELAXED);
  cudaError_t failed = cudaSuccess;
  for (size_t i = 0; i < p->count; ++i) {
    cu_timed *t = &p->timed[i];
    cudaError_t err = cudaEventSynchronize(t->end);
    if (err == cudaSuccess) {
      uint64_t b = host_time(p, t->begin, &err), e = host_time(p, t->end, &err);
      if (err == cudaSuccess && p->sink != NULL) {
        HWP_DeviceSpan span = {.struct_size = sizeof(HWP_DeviceSpan),
                               .correlation_id = t->correlation_id,
                               .device = device,
                               .name = t->name != NULL ? t->name : "",
                               .begin_ns = b,
                               .end_ns = e < b ? b : e};
        p->sink(p->sink_context, &span);
      }
    }
    if (err != cudaSuccess && failed == cudaSuccess) failed = err;
    cudaEventDestroy(t->begin);
    cudaEventDestroy(t->end);
  }
  p->count = 0;
  p->sink = NULL;
  p->sink_context = NULL;
  pthread_mutex_unlock(&p->mu);
  if (failed != cudaSuccess) {
    (void)cudaGetLastError();
    return cu_cuda_error(failed, "profiler.stop", "reading event times");
  }
  return HWP_OK;
}

const HWP_ProfilerTable cu_profiler_table = {
    .struct_size = sizeof(HWP_ProfilerTable),
    .start = cu_profiler_start,
    .stop = cu_profiler_stop,
};
