/* hwport OpenCL plugin — the profiler table (ABI 1.2): device time from OpenCL's event
 * profiling.
 *
 * Every queue is created with CL_QUEUE_PROFILING_ENABLE. While a device is profiled, a launch
 * with a nonzero correlation id asks clEnqueueNDRangeKernel for an event, kept with the id and
 * the op's name; stop() (after the host synchronized the device) reads each event's
 * CL_PROFILING_COMMAND_START/END and reports it. OpenCL's device clock is its own (PoCL's is
 * ~0.2 s off CLOCK_MONOTONIC here) and clGetDeviceAndHostTimer is an OpenCL 2.1 function PoCL
 * does not provide, so start() measures the offset: it enqueues markers and takes, of several
 * tries, the one whose host round trip was shortest; the offset is the middle of that window,
 * so a span is off by at most half of it (tens of µs). */
#include <stdlib.h>
#include <time.h>

#include "internal.h"

typedef struct ocl_timed {
  cl_event event;
  uint64_t correlation_id;
  const char *name; /* the op's name: a string literal of the kernel families */
} ocl_timed;

typedef struct ocl_profiled {
  pthread_mutex_t mu;
  int active; /* read without the lock on every launch (a relaxed atomic) */
  HWP_DeviceSpanSink sink;
  void *sink_context;
  int64_t offset_ns; /* host CLOCK_MONOTONIC - device profiling clock */
  ocl_timed *timed;
  size_t count, cap;
} ocl_profiled;

static ocl_profiled g_prof[OCL_MAX_DEVICES] = {
    [0 ... OCL_MAX_DEVICES - 1] = {.mu = PTHREAD_MUTEX_INITIALIZER}};

#define OCL_CALIBRATION_TRIES 8

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ocl_profiling(int32_t device, uint64_t correlation_id) {
  return correlation_id != 0 && device >= 0 && device < OCL_MAX_DEVICES &&
         __atomic_load_n(&g_prof[device].active, __ATOMIC_RELAXED);
}

void ocl_profiler_track(int32_t device, uint64_t correlation_id, const char *name,
                        cl_event event) {
  ocl_profiled *p = &g_prof[device];
  pthread_mutex_lock(&p->mu);
  if (p->active && p->count == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 256;
    ocl_timed *grown = realloc(p->timed, cap * sizeof *grown);
    if (grown != NULL) {
      p->timed = grown;
      p->cap = cap;
    }
  }
  if (p->active && p->count < p->cap) {
    p->timed[p->count++] = (ocl_timed){event, correlation_id, name};
    event = NULL;
  }
  pthread_mutex_unlock(&p->mu);
  if (event != NULL) clReleaseEvent(event); /* stopped meanwhile, or no host memory: untimed */
}

/* Host minus device clock, from the marker whose round trip was shortest. */
static HWP_Status calibrate(int32_t device, int64_t *offset) {
  cl_command_queue q;
  HWP_Status st = ocl_sync_queue(device, &q, "profiler.start");
  if (st != HWP_OK) return st;
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < OCL_CALIBRATION_TRIES; ++i) {
    cl_event ev = NULL;
    uint64_t t0 = now_ns();
    cl_int err = clEnqueueMarkerWithWaitList(q, 0, NULL, &ev);
    if (err == CL_SUCCESS) err = clWaitForEvents(1, &ev);
    uint64_t t1 = now_ns();
    cl_ulong end = 0;
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
    if (ev != NULL) clReleaseEvent(ev);
    if (err != CL_SUCCESS) return ocl_cl_error(err, "profiler.start", "calibrating the clock");
    if (t1 - t0 < best) {
      best = t1 - t0;
      *offset = (int64_t)(t0 + (t1 - t0) / 2) - (int64_t)end;
    }
  }
  return HWP_OK;
}

static HWP_Status ocl_profiler_start(int32_t device, HWP_DeviceSpanSink sink,
                                     void *sink_context) {
  HWP_Status st = ocl_check_device(device, "profiler.start");
  if (st != HWP_OK) return st;
  if (sink == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "profiler.start: sink is NULL");
  int64_t offset = 0;
  st = calibrate(device, &offset);
  if (st != HWP_OK) return st;
  ocl_profiled *p = &g_prof[device];
  pthread_mutex_lock(&p->mu);
  p->sink = sink;
  p->sink_context = sink_context;
  p->offset_ns = offset;
  __atomic_store_n(&p->active, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&p->mu);
  return HWP_OK;
}

static uint64_t to_host(cl_ulong t, int64_t offset) {
  int64_t h = (int64_t)t + offset;
  return h > 0 ? (uint64_t)h : 0;
}

static HWP_Status ocl_profiler_stop(int32_t device) {
  HWP_Status st = ocl_check_device(device, "profiler.stop");
  if (st != HWP_OK) return st;
  ocl_profiled *p = &g_prof[device];
  pthread_mutex_lock(&p->mu);
  __atomic_store_n(&p->active, 0, __ATOMIC_RELAXED);
  cl_int failed = CL_SUCCESS;
  for (size_t i = 0; i < p->count; ++i) {
    ocl_timed *t = &p->timed[i];
    cl_ulong begin = 0, end = 0;
    cl_int err = clWaitForEvents(1, &t->event);
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(t->event, CL_PROFILING_COMMAND_START, sizeof begin, &begin,
                                    NULL);
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(t->event, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
    clReleaseEvent(t->event);
    if (err != CL_SUCCESS) {
      if (failed == CL_SUCCESS) failed = err;
      continue;
    }
    if (p->sink != NULL) {
      HWP_DeviceSpan span = {.struct_size = sizeof(HWP_DeviceSpan),
                             .correlation_id = t->correlation_id,
                             .device = device,
                             .name = t->name != NULL ? t->name : "",
                             .begin_ns = to_host(begin, p->offset_ns),
                             .end_ns = to_host(end < begin ? begin : end, p->offset_ns)};
      p->sink(p->sink_context, &span);
    }
  }
  p->count = 0;
  p->sink = NULL;
  p->sink_context = NULL;
  pthread_mutex_unlock(&p->mu);
  if (failed != CL_SUCCESS) return ocl_cl_error(failed, "profiler.stop", "reading event times");
  return HWP_OK;
}

const HWP_ProfilerTable ocl_profiler_table = {
    .struct_size = sizeof(HWP_ProfilerTable),
    .start = ocl_profiler_start,
    .stop = ocl_profiler_stop,
};
