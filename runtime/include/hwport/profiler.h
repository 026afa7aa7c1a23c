/* hwport C ABI v1 — profiler table (optional; filled since 1.2): device time for
 * hwport.profiler.
 *
 * While the host profiles a device it calls start(device, sink, sink_context) and gives every
 * kernel launch on that device a nonzero HWP_KernelContext.correlation_id (the op call the
 * launch belongs to). The plugin times the device work each such launch enqueues and reports
 * one HWP_DeviceSpan per piece of work it timed, with the launch's correlation id, through the
 * sink. Before stop(device) the host synchronizes the device; stop reports whatever timed work
 * is still unreported and returns, and the sink is never called for `device` after that.
 *
 * Times are nanoseconds on CLOCK_MONOTONIC, the host's clock, so device spans line up with the
 * host's op spans: a plugin whose device has its own clock converts (e.g. from an offset
 * measured at start). The table grows by appending functions. */
#ifndef HWPORT_PROFILER_H
#define HWPORT_PROFILER_H

#include "hwport/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One timed piece of device work. Filled by the plugin (struct_size = sizeof). */
typedef struct HWP_DeviceSpan {
  size_t struct_size;
  uint64_t correlation_id; /* the launch's ctx->correlation_id (never 0) */
  int32_t device;
  const char *name;        /* what ran, e.g. the op or the device kernel; valid during the call */
  uint64_t begin_ns;       /* CLOCK_MONOTONIC; begin_ns <= end_ns */
  uint64_t end_ns;
} HWP_DeviceSpan;

/* The host's receiver. Thread-safe: the plugin may call it from any of its threads, also
 * concurrently, between start and the return of stop. */
typedef void (*HWP_DeviceSpanSink)(void *sink_context, const HWP_DeviceSpan *span);

typedef struct HWP_ProfilerTable {
  size_t struct_size;
  /* Since 1.2; both required when the table is present. start begins timing the work launched
   * on `device` with a nonzero correlation id (HWP_ERROR_INVALID_ARGUMENT for a NULL sink or
   * a bad device; starting a started device replaces its sink). stop ends it, after reporting
   * every timed span not yet reported (a device not started: HWP_OK, nothing to do). */
  HWP_Status (*start)(int32_t device, HWP_DeviceSpanSink sink, void *sink_context);
  HWP_Status (*stop)(int32_t device);
} HWP_ProfilerTable;

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_PROFILER_H */
