/* hwport CPU plugin — the profiler table (ABI 1.2): device time for hwport.profiler.
 *
 * While a device is profiled, every stream task a launch with a nonzero correlation id queued
 * (or ran inline) is timed where it runs and reported through the host's sink as soon as it
 * completes, so stop() has nothing left to flush. The sink is called under the device's lock:
 * stop() takes that lock too, so no report reaches the sink after stop() returns. */
#include <stdatomic.h>
#include <time.h>

#include "internal.h"

typedef struct cpu_profiled_device {
  pthread_mutex_t mu;
  atomic_int active; /* read without the lock on every task: the common case is 0 */
  HWP_DeviceSpanSink sink;
  void *sink_context;
} cpu_profiled_device;

static cpu_profiled_device g_profiled[CPU_MAX_DEVICES] = {
    [0 ... CPU_MAX_DEVICES - 1] = {.mu = PTHREAD_MUTEX_INITIALIZER}};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

HWP_Status cpu_run_timed(HWP_Status (*run)(const cpu_task *), const cpu_task *task,
                         int32_t device, uint64_t correlation_id, const char *name) {
  if (CPU_LIKELY(correlation_id == 0) || device < 0 || device >= CPU_MAX_DEVICES ||
      !atomic_load_explicit(&g_profiled[device].active, memory_order_relaxed))
    return run(task);
  uint64_t begin = now_ns();
  HWP_Status st = run(task);
  uint64_t end = now_ns();
  cpu_profiled_device *p = &g_profiled[device];
  pthread_mutex_lock(&p->mu);
  if (atomic_load_explicit(&p->active, memory_order_relaxed) && p->sink != NULL) {
    HWP_DeviceSpan span = {.struct_size = sizeof(HWP_DeviceSpan),
                           .correlation_id = correlation_id,
                           .device = device,
                           .name = name != NULL ? name : "",
                           .begin_ns = begin,
                           .end_ns = end};
    p->sink(p->sink_context, &span);
  }
  pthread_mutex_unlock(&p->mu);
  return st;
}

static HWP_Status cpu_profiler_start(int32_t device, HWP_DeviceSpanSink sink,
                                     void *sink_context) {
  HWP_Status st = cpu_check_device(device, "profiler.start");
  if (st != HWP_OK) return st;
  if (sink == NULL) return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "profiler.start: sink is NULL");
  cpu_profiled_device *p = &g_profiled[device];
  pthread_mutex_lock(&p->mu);
  p->sink = sink;
  p->sink_context = sink_context;
  atomic_store(&p->active, 1);
  pthread_mutex_unlock(&p->mu);
  return HWP_OK;
}

static HWP_Status cpu_profiler_stop(int32_t device) {
  HWP_Status st = cpu_check_device(device, "profiler.stop");
  if (st != HWP_OK) return st;
  cpu_profiled_device *p = &g_profiled[device];
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->active, 0);
  p->sink = NULL;
  p->sink_context = NULL;
  pthread_mutex_unlock(&p->mu);
  return HWP_OK;
}

const HWP_ProfilerTable cpu_profiler_table = {
    .struct_size = sizeof(HWP_ProfilerTable),
    .start = cpu_profiler_start,
    .stop = cpu_profiler_stop,
};
