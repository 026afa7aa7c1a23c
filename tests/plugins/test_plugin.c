/* The test-only plugin "zoo": one source compiled once per variant with
 * -DHWP_TEST_VARIANT=<variant>, giving libhwport_test_<variant>.so with device type
 * "test_<variant>". Every variant shares the runtime in test_runtime.h and one kernel ("add",
 * float32); each deviates from a valid plugin in exactly one way:
 *
 *   good             valid and minimal: required functions + get_properties + get_memory_stats,
 *                    no stream table, one kernel ("add" float32).
 *   missing_entry    exports its init under another name: no hwport_plugin_init.
 *   wrong_major      declares abi_major 2 (and, like a careless plugin, does not check the host).
 *   newer_minor      declares minor HWP_ABI_VERSION_MINOR + 1 with larger HWP_PluginApi and
 *                    HWP_MemoryTable (the current structs with a field appended); reads a
 *                    pretend next-minor host field only if host->struct_size covers it. Must
 *                    load and work.
 *   older_minor      declares minor 0; HWP_PluginApi / HWP_DeviceTable / HWP_MemoryTable
 *                    struct_size cover only the
 *                    required prefix; the memory beyond holds non-NULL trap pointers that abort
 *                    the process if the host ever uses them. Must load and work.
 *   codegen_11       declares minor 1 with a full HWP_PluginApi whose codegen table is a 1.1
 *                    one: struct_size only, the 1.2 functions beyond it trap pointers. Must
 *                    load and work, with no codegen target.
 *   short_struct     HWP_PluginApi.struct_size 16 (ends before device_type).
 *   short_table      HWP_MemoryTable.struct_size ends before the required copy_d2d.
 *   missing_required HWP_MemoryTable.copy_d2d is NULL.
 *   init_error       hwport_plugin_init fails with HWP_ERROR_DEVICE, last error
 *                    "simulated driver failure" (it sets *out so the host can read it).
 *   null_api         hwport_plugin_init returns HWP_OK but *out stays NULL.
 *   bad_device_type  device_type "Bad Type!".
 *   crash_init       dereferences NULL inside hwport_plugin_init (SIGSEGV).
 *   abort_init       calls abort() inside hwport_plugin_init (SIGABRT).
 *   hang_init        never returns from hwport_plugin_init.
 *   exit_constructor calls exit(0) in a constructor (__attribute__((constructor))), i.e. while
 *                    dlopen runs: before the host could call anything.
 *   exit0_init       calls exit(0) inside hwport_plugin_init.
 *   exit3_init       calls exit(3) inside hwport_plugin_init.
 *   garbage_device_type  HWP_PluginApi.device_type points to unmapped memory (0xbad0).
 *   garbage_last_error   get_last_error returns a pointer to unmapped memory (0xbad8).
 *                    These eight must be caught by the host's isolated probe, never reach the
 *                    host process itself (the last two are also caught by the host's
 *                    fault-free reads when the probe is off).
 *
 * Variants that load fine but misbehave at run time (what hwcheck must catch, each with the
 * right status on the right cases):
 *
 *   good_streams     valid and complete: good plus a stream table (one worker thread per
 *                    stream, work really asynchronous), stream-ordered copies and memset.
 *   stream_order     good_streams whose streams ignore submission order: nothing runs until the
 *                    host synchronizes or queries, then the pending work runs newest first.
 *   wrong_result     "add" computes a - b wherever b is negative.
 *   segfault_kernel  "add" dereferences NULL (SIGSEGV).
 *   hang_sync        synchronize_device never returns once the device has had an allocation
 *                    (so a host that never used the device can still shut down).
 *   leak             deallocate neither frees nor gives the bytes back in the memory stats.
 *   false_stats      get_memory_stats reports bytes_in_use 0 whatever is allocated.
 *   peak_forgets     deallocate sets peak_bytes_in_use back to bytes_in_use.
 *   refused_counts   a refused allocation is still counted in num_allocs.
 *   no_limit         allocate never checks the device limit (total_memory / bytes_limit, from
 *                    HWPORT_TEST_NO_LIMIT_MEMORY_LIMIT): only host malloc refuses.
 *   oom_drift        allocate reserves the bytes before checking the limit, and a refusal
 *                    forgets the reservation: each out-of-memory error leaks bytes_in_use.
 *   overrun          "add" stores whole 8-lane vectors: its last store writes up to 7 floats
 *                    past the end of the output (hidden by the host allocator's rounding).
 *   lazy_native_wait dlpack whose native_stream_wait returns HWP_OK without making the foreign
 *                    stream wait. Its streams run their work only when the host waits for them
 *                    (in order, oldest first: valid in itself), so the missing wait shows every
 *                    time rather than only when the streams happen to race.
 *
 * Profiler-table bugs (ABI 1.2; hwcheck's profiler suite and hwport.profiler must cope):
 *
 *   profiler_start_fails  a profiler table whose start always fails with HWP_ERROR_DEVICE
 *                    ("performance counters are in use"): hwport.profiler records host time
 *                    only, with a warning.
 *   profiler_ids     a profiler table that times "add" but reports every launch, profiled or
 *                    not, with correlation id 1 (it never reads ctx->correlation_id).
 *
 * Implicit-ordering bugs, each good_streams (real worker threads) with one rule broken, as a
 * port could ship it (the stream and device suites' ordering cases must catch each):
 *
 *   sync_h2d_nowait     copy_h2d copies at once, while streams may still write the buffer (a
 *                       CUDA port whose streams are non-blocking and whose copy_h2d is a plain
 *                       cudaMemcpy on the legacy default stream).
 *   sync_d2d_nowait     copy_d2d likewise.
 *   null_stream_nowait  the stream-ordered copies and memset given the NULL stream run at once
 *                       ("synchronous" taken as "now", not "after the device's work").
 *   sync_device_null_only  synchronize_device drains only the NULL stream (returns at once).
 *   sync_one_stream     the synchronous calls and synchronize_device wait only for the stream
 *                       last submitted to (a port that tracks one "current" stream).
 *   wait_last_event_only  a second stream_wait_event in a row replaces the first (one
 *                       dependency slot per stream).
 *   cross_device_wait_ignored  stream_wait_event for another device's event returns HWP_OK
 *                       without waiting (the runtime has two devices).
 *
 * And one more valid variant:
 *
 *   dlpack           good_streams plus the ABI 1.1 DLPack exchange of device memory: its
 *                    devices are DLPack device (kDLExtDev, 100 + index), with device_address,
 *                    wrap_device_memory / release_device_buffer and native streams.
 *
 * The broken variants still register their kernel before failing: the host must drop what a
 * rejected plugin registered. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>

/* ---- variant selection ------------------------------------------------------------------ */
#define TP_ID_good 1
#define TP_ID_missing_entry 2
#define TP_ID_wrong_major 3
#define TP_ID_newer_minor 4
#define TP_ID_older_minor 5
#define TP_ID_short_struct 6
#define TP_ID_short_table 7
#define TP_ID_missing_required 8
#define TP_ID_init_error 9
#define TP_ID_null_api 10
#define TP_ID_bad_device_type 11
#define TP_ID_crash_init 12
#define TP_ID_abort_init 13
#define TP_ID_hang_init 14
#define TP_ID_good_streams 15
#define TP_ID_stream_order 16
#define TP_ID_wrong_result 17
#define TP_ID_segfault_kernel 18
#define TP_ID_hang_sync 19
#define TP_ID_leak 20
#define TP_ID_false_stats 21
#define TP_ID_dlpack 22
#define TP_ID_lazy_native_wait 23
#define TP_ID_exit_constructor 24
#define TP_ID_exit0_init 25
#define TP_ID_exit3_init 26
#define TP_ID_garbage_device_type 27
#define TP_ID_garbage_last_error 28
/* Version negotiation of the codegen table (ids 260-269). */
#define TP_ID_codegen_11 260
/* Profiler-table bugs (ids 250-259). */
#define TP_ID_profiler_start_fails 250
#define TP_ID_profiler_ids 251
/* Memory accounting and guard-region bugs (ids 200-249). */
#define TP_ID_peak_forgets 200
#define TP_ID_refused_counts 201
#define TP_ID_no_limit 202
#define TP_ID_oom_drift 203
#define TP_ID_overrun 204
/* Implicit-ordering bugs (ids 100-149): good_streams with one ordering rule broken. */
#define TP_ID_sync_h2d_nowait 100
#define TP_ID_sync_d2d_nowait 101
#define TP_ID_null_stream_nowait 102
#define TP_ID_sync_device_null_only 103
#define TP_ID_sync_one_stream 104
#define TP_ID_wait_last_event_only 105
#define TP_ID_cross_device_wait_ignored 106
#define TP_ORDERING_BUG                                                                   \
  (TP_IS(sync_h2d_nowait) || TP_IS(sync_d2d_nowait) || TP_IS(null_stream_nowait) ||          \
   TP_IS(sync_device_null_only) || TP_IS(sync_one_stream) || TP_IS(wait_last_event_only) || \
   TP_IS(cross_device_wait_ignored))

#ifndef HWP_TEST_VARIANT
#error "compile with -DHWP_TEST_VARIANT=<variant> (see the list at the top of this file)"
#endif
#define TP_CAT_(a, b) a##b
#define TP_CAT(a, b) TP_CAT_(a, b)
#define TP_STR_(x) #x
#define TP_STR(x) TP_STR_(x)
#define TP_VARIANT TP_CAT(TP_ID_, HWP_TEST_VARIANT)
#define TP_VARIANT_NAME TP_STR(HWP_TEST_VARIANT)
#define TP_IS(v) (TP_VARIANT == TP_ID_##v)
/* An undefined TP_ID_<variant> reads as 0 in #if: unknown variants stop here. New variants get
 * ids of their own (any positive number not used above), so lists grow without renumbering. */
#if TP_VARIANT < TP_ID_good
#error "unknown HWP_TEST_VARIANT"
#endif

#if TP_IS(good_streams) || TP_IS(stream_order) || TP_IS(dlpack) || TP_IS(lazy_native_wait) || \
    TP_ORDERING_BUG
#define TR_WITH_STREAMS 1
#endif
#if TP_IS(sync_h2d_nowait)
#define TR_SYNC_H2D_NO_WAIT 1
#elif TP_IS(sync_d2d_nowait)
#define TR_SYNC_D2D_NO_WAIT 1
#elif TP_IS(null_stream_nowait)
#define TR_NULL_STREAM_NO_WAIT 1
#elif TP_IS(sync_device_null_only)
#define TR_SYNC_DEVICE_NULL_ONLY 1
#elif TP_IS(sync_one_stream)
#define TR_SYNC_WAITS_ONE_STREAM 1
#elif TP_IS(wait_last_event_only)
#define TR_WAIT_LAST_EVENT_ONLY 1
#elif TP_IS(cross_device_wait_ignored)
#define TR_CROSS_DEVICE_WAIT_IGNORED 1
#endif
#if TP_IS(dlpack) || TP_IS(lazy_native_wait)
#define TR_WITH_DLPACK 1
#endif
#if TP_IS(lazy_native_wait)
#define TR_STREAMS_DEFERRED 1
#define TR_LAZY_NATIVE_WAIT 1
#endif
#if TP_IS(stream_order)
#define TR_STREAMS_OUT_OF_ORDER 1
#endif
#if TP_IS(leak)
#define TR_LEAK_ON_FREE 1
#endif
#if TP_IS(peak_forgets)
#define TR_PEAK_FORGETS 1
#elif TP_IS(refused_counts)
#define TR_REFUSED_COUNTS 1
#elif TP_IS(no_limit)
#define TR_NO_LIMIT 1
#elif TP_IS(oom_drift)
#define TR_OOM_DRIFT 1
#endif
#include "test_runtime.h"

/* Garbage pointers: below mmap_min_addr (64 KiB on Linux), so never mapped. */
#define TP_GARBAGE_POINTER(address) ((const char *)(uintptr_t)(address))
#if TP_IS(bad_device_type)
#define TP_DEVICE_TYPE "Bad Type!"
#elif TP_IS(garbage_device_type)
#define TP_DEVICE_TYPE TP_GARBAGE_POINTER(0xbad0)
#else
#define TP_DEVICE_TYPE "test_" TP_VARIANT_NAME
#endif

/* C99 compile-time assertion (no _Static_assert before C11). */
#define TP_ASSERT(cond, tag) typedef char tp_assert_##tag[(cond) ? 1 : -1]
#define TP_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* ---- the kernel: add, float32 ------------------------------------------------------------ *
 * out = in0 + in1. Inputs may be any strided view (stride 0 and negative included) whose shape
 * equals the output's; an input of lower rank or with size-1 dimensions is also broadcast
 * numpy-style, in case a host passes undimmed operands. The output is written through its
 * strides (contiguous per the ABI). Runs synchronously, inline, once the work submitted before
 * it (on its stream, or on the device for a NULL stream) is done. */
static HWP_Status tp_input_strides(const HWP_TensorView *in, const HWP_TensorView *out,
                                   int64_t *strides, const char *what) {
  int32_t k, lead = out->ndim - in->ndim;
  int64_t contiguous = 1;
  if (in->ndim < 0 || in->ndim > out->ndim)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "add: %s has rank %d but the output has rank %d",
                   what, (int)in->ndim, (int)out->ndim);
  for (k = out->ndim - 1; k >= 0; --k) {
    int32_t j = k - lead;
    if (j < 0) {
      strides[k] = 0;
      continue;
    }
    {
      int64_t size = in->shape[j];
      int64_t stride = in->strides ? in->strides[j] : contiguous;
      contiguous *= size;
      if (size == out->shape[k])
        strides[k] = size == 1 ? 0 : stride;
      else if (size == 1)
        strides[k] = 0;
      else
        return tr_fail(HWP_ERROR_INVALID_ARGUMENT,
                       "add: %s dimension %d has size %lld, the output %lld", what, (int)j,
                       (long long)size, (long long)out->shape[k]);
    }
  }
  return HWP_OK;
}

#if TP_IS(profiler_start_fails) || TP_IS(profiler_ids)
/* One device, launches run synchronously on the calling thread: the sink is called there. */
static HWP_DeviceSpanSink tp_sink;
static void *tp_sink_context;

static HWP_Status tp_profiler_start(int32_t device, HWP_DeviceSpanSink sink, void *context) {
  HWP_Status st = tr_check_device(device, "profiler.start");
  if (st != HWP_OK) return st;
  if (sink == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "profiler.start: sink is NULL");
#if TP_IS(profiler_start_fails)
  (void)context;
  return tr_fail(HWP_ERROR_DEVICE, "profiler.start: performance counters are in use");
#else
  tp_sink = sink;
  tp_sink_context = context;
  return HWP_OK;
#endif
}

static HWP_Status tp_profiler_stop(int32_t device) {
  HWP_Status st = tr_check_device(device, "profiler.stop");
  if (st != HWP_OK) return st;
  tp_sink = NULL;
  return HWP_OK;
}

static const HWP_ProfilerTable tp_profiler_table = {sizeof(HWP_ProfilerTable), tp_profiler_start,
                                                    tp_profiler_stop};
#endif

#if TP_IS(profiler_ids)
static uint64_t tp_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void tp_report(int32_t device, uint64_t begin, uint64_t end) {
  if (tp_sink == NULL) return;
  HWP_DeviceSpan span = {sizeof(HWP_DeviceSpan), 1 /* the bug: not ctx->correlation_id */,
                         device, "add", begin, end};
  tp_sink(tp_sink_context, &span);
}
#endif

static HWP_Status tp_add_f32(const HWP_KernelContext *ctx) {
  const HWP_TensorView *a, *b, *out;
  int64_t sa[HWP_MAX_NDIM], sb[HWP_MAX_NDIM], so[HWP_MAX_NDIM], idx[HWP_MAX_NDIM];
  int64_t numel = 1, i, contiguous = 1;
  const float *pa, *pb;
  float *po;
  int32_t k;
  HWP_Status st;
#if TP_IS(segfault_kernel)
  {
    volatile float *volatile nowhere = NULL;
    *nowhere = 1.0f;
  }
#endif
  if (ctx == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "add: ctx is NULL");
  if ((st = tr_check_device(ctx->device, "add")) != HWP_OK) return st;
  if (ctx->num_inputs != 2 || ctx->num_outputs != 1 || !ctx->inputs || !ctx->outputs)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "add: expected 2 inputs and 1 output, got %d, %d",
                   (int)ctx->num_inputs, (int)ctx->num_outputs);
  a = &ctx->inputs[0];
  b = &ctx->inputs[1];
  out = &ctx->outputs[0];
  if (a->dtype != HWP_DTYPE_FLOAT32 || b->dtype != HWP_DTYPE_FLOAT32 ||
      out->dtype != HWP_DTYPE_FLOAT32)
    return tr_fail(HWP_ERROR_NOT_SUPPORTED, "add: only float32 (dtypes %d, %d -> %d)",
                   (int)a->dtype, (int)b->dtype, (int)out->dtype);
  if (out->ndim < 0 || out->ndim > HWP_MAX_NDIM)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "add: output rank %d", (int)out->ndim);
  if (!a->buffer || !b->buffer || !out->buffer)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "add: a tensor has a NULL buffer");
  if ((st = tp_input_strides(a, out, sa, "input 0")) != HWP_OK) return st;
  if ((st = tp_input_strides(b, out, sb, "input 1")) != HWP_OK) return st;
  for (k = out->ndim - 1; k >= 0; --k) {
    if (out->shape[k] < 0)
      return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "add: negative output dimension");
    so[k] = out->strides ? out->strides[k] : contiguous;
    contiguous *= out->shape[k];
    numel *= out->shape[k];
    idx[k] = 0;
  }
  /* HWP_Buffer is the host pointer of the allocation in this runtime. */
  pa = (const float *)((const char *)a->buffer + a->byte_offset);
  pb = (const float *)((const char *)b->buffer + b->byte_offset);
  po = (float *)((char *)out->buffer + out->byte_offset);
  tr_kernel_wait(ctx->device, ctx->stream);
#if TP_IS(profiler_ids)
  const uint64_t tp_begin = tp_now_ns();
#endif
  for (i = 0; i < numel; ++i) {
    int64_t oa = 0, ob = 0, oo = 0;
    for (k = 0; k < out->ndim; ++k) {
      oa += idx[k] * sa[k];
      ob += idx[k] * sb[k];
      oo += idx[k] * so[k];
    }
#if TP_IS(wrong_result)
    po[oo] = pb[ob] < 0.0f ? pa[oa] - pb[ob] : pa[oa] + pb[ob]; /* the bug: a sign slip */
#else
    po[oo] = pa[oa] + pb[ob];
#endif
#if TP_IS(overrun)
    /* the bug: the last element of a partial 8-lane vector stores the whole vector */
    if (i == numel - 1 && oo == numel - 1)
      for (k = 1; (i + k) % 8 != 0; ++k) po[oo + k] = po[oo];
#endif
    for (k = out->ndim - 1; k >= 0; --k) { /* odometer increment */
      if (++idx[k] < out->shape[k]) break;
      idx[k] = 0;
    }
  }
#if TP_IS(profiler_ids)
  tp_report(ctx->device, tp_begin, tp_now_ns());
#endif
  return HWP_OK;
}

/* ---- tables ----------------------------------------------------------------------------- */
#if TP_IS(older_minor) || TP_IS(codegen_11)
/* Pointers placed beyond a declared struct_size: a host that respects struct_size never reads
 * them. If one is ever called, the process aborts with a message naming the field. */
static void tp_trap(const char *field) {
  fprintf(stderr,
          "hwport test plugin " TP_VARIANT_NAME ": the host used %s, which lies beyond the "
          "declared struct_size\n",
          field);
  fflush(stderr);
  abort();
}
#define TP_TRAP_BODY(field)  \
  do {                       \
    tp_trap(field);          \
    return HWP_ERROR_INTERNAL; \
  } while (0)
static HWP_Status trap_cg_target_info(int32_t d, HWP_CodegenTargetInfo *i) {
  (void)d; (void)i; TP_TRAP_BODY("HWP_CodegenTable.get_target_info");
}
static HWP_Status trap_cg_compile(int32_t d, const char *dialect, const char *src,
                                  const char *options, HWP_CodegenModule *out, char *log,
                                  size_t cap) {
  (void)d; (void)dialect; (void)src; (void)options; (void)out; (void)log; (void)cap;
  TP_TRAP_BODY("HWP_CodegenTable.compile");
}
static HWP_Status trap_cg_get_function(HWP_CodegenModule m, const char *name,
                                       HWP_CodegenFunction *out) {
  (void)m; (void)name; (void)out; TP_TRAP_BODY("HWP_CodegenTable.get_function");
}
static HWP_Status trap_cg_launch(int32_t d, HWP_CodegenFunction f, HWP_Stream s,
                                 const HWP_CodegenLaunch *l) {
  (void)d; (void)f; (void)s; (void)l; TP_TRAP_BODY("HWP_CodegenTable.launch");
}
static HWP_Status trap_cg_unload(HWP_CodegenModule m) {
  (void)m; TP_TRAP_BODY("HWP_CodegenTable.unload");
}
static HWP_Status trap_cg_serialize(HWP_CodegenModule m, void *data, size_t cap, size_t *size) {
  (void)m; (void)data; (void)cap; (void)size; TP_TRAP_BODY("HWP_CodegenTable.serialize");
}
static HWP_Status trap_cg_deserialize(int32_t d, const char *dialect, const void *data,
                                      size_t size, HWP_CodegenModule *out) {
  (void)d; (void)dialect; (void)data; (void)size; (void)out;
  TP_TRAP_BODY("HWP_CodegenTable.deserialize");
}
/* A 1.0/1.1 codegen table: struct_size only; the 1.2 functions lie beyond it. */
static const HWP_CodegenTable tp_trap_codegen_table = {
    TP_END(HWP_CodegenTable, struct_size), trap_cg_target_info, trap_cg_compile,
    trap_cg_get_function, trap_cg_launch, trap_cg_unload, trap_cg_serialize,
    trap_cg_deserialize};
#endif
#if TP_IS(older_minor)
static HWP_Status trap_get_properties(int32_t d, HWP_DeviceProperties *p) {
  (void)d; (void)p; TP_TRAP_BODY("HWP_DeviceTable.get_properties");
}
static HWP_Status trap_init_device(int32_t d) {
  (void)d; TP_TRAP_BODY("HWP_DeviceTable.init_device");
}
static HWP_Status trap_deinit_device(int32_t d) {
  (void)d; TP_TRAP_BODY("HWP_DeviceTable.deinit_device");
}
static HWP_Status trap_set_device(int32_t d) {
  (void)d; TP_TRAP_BODY("HWP_DeviceTable.set_device");
}
static HWP_Status trap_copy_h2d_async(int32_t d, HWP_Stream s, HWP_Buffer dst, uint64_t o,
                                      const void *src, uint64_t n) {
  (void)d; (void)s; (void)dst; (void)o; (void)src; (void)n;
  TP_TRAP_BODY("HWP_MemoryTable.copy_h2d_async");
}
static HWP_Status trap_copy_d2h_async(int32_t d, HWP_Stream s, void *dst, HWP_Buffer src,
                                      uint64_t o, uint64_t n) {
  (void)d; (void)s; (void)dst; (void)src; (void)o; (void)n;
  TP_TRAP_BODY("HWP_MemoryTable.copy_d2h_async");
}
static HWP_Status trap_copy_d2d_async(int32_t d, HWP_Stream s, HWP_Buffer dst, uint64_t od,
                                      HWP_Buffer src, uint64_t os, uint64_t n) {
  (void)d; (void)s; (void)dst; (void)od; (void)src; (void)os; (void)n;
  TP_TRAP_BODY("HWP_MemoryTable.copy_d2d_async");
}
static HWP_Status trap_memset_async(int32_t d, HWP_Stream s, HWP_Buffer dst, uint64_t o,
                                    uint8_t v, uint64_t n) {
  (void)d; (void)s; (void)dst; (void)o; (void)v; (void)n;
  TP_TRAP_BODY("HWP_MemoryTable.memset_async");
}
static HWP_Status trap_get_memory_stats(int32_t d, HWP_MemoryStats *s) {
  (void)d; (void)s; TP_TRAP_BODY("HWP_MemoryTable.get_memory_stats");
}
static HWP_Status trap_host_address(int32_t d, HWP_Buffer b, uint64_t o, void **out) {
  (void)d; (void)b; (void)o; (void)out; TP_TRAP_BODY("HWP_MemoryTable.host_address");
}
static HWP_Status trap_wrap_host_memory(int32_t d, void *p, uint64_t n, HWP_Buffer *out) {
  (void)d; (void)p; (void)n; (void)out; TP_TRAP_BODY("HWP_MemoryTable.wrap_host_memory");
}
static HWP_Status trap_release_host_buffer(int32_t d, HWP_Buffer b) {
  (void)d; (void)b; TP_TRAP_BODY("HWP_MemoryTable.release_host_buffer");
}
static HWP_Status trap_stream_create(int32_t d, HWP_Stream *out) {
  (void)d; (void)out; TP_TRAP_BODY("HWP_PluginApi.stream->create_stream");
}
static HWP_Status trap_stream_destroy(int32_t d, HWP_Stream s) {
  (void)d; (void)s; TP_TRAP_BODY("HWP_PluginApi.stream->destroy_stream");
}
static HWP_Status trap_stream_sync(int32_t d, HWP_Stream s) {
  (void)d; (void)s; TP_TRAP_BODY("HWP_PluginApi.stream->synchronize_stream/query_stream");
}
static HWP_Status trap_event_create(int32_t d, HWP_Event *out) {
  (void)d; (void)out; TP_TRAP_BODY("HWP_PluginApi.stream->create_event");
}
static HWP_Status trap_event_op(int32_t d, HWP_Event e) {
  (void)d; (void)e; TP_TRAP_BODY("HWP_PluginApi.stream->(destroy|synchronize|query)_event");
}
static HWP_Status trap_stream_event(int32_t d, HWP_Stream s, HWP_Event e) {
  (void)d; (void)s; (void)e; TP_TRAP_BODY("HWP_PluginApi.stream->record_event/stream_wait_event");
}
static void trap_shutdown(void) { tp_trap("HWP_PluginApi.shutdown"); }

static const HWP_StreamTable tp_trap_stream_table = {
    sizeof(HWP_StreamTable), trap_stream_create, trap_stream_destroy, trap_stream_sync,
    trap_stream_sync,        trap_event_create,  trap_event_op,       trap_stream_event,
    trap_event_op,           trap_event_op,      trap_stream_event, NULL, NULL};
static HWP_Status trap_ccl_unique_id(void *id) {
  (void)id; TP_TRAP_BODY("HWP_CclTable.get_unique_id");
}
static HWP_Status trap_ccl_comm_init(int32_t n, int32_t r, const void *id, int32_t d,
                                     HWP_CclComm *out) {
  (void)n; (void)r; (void)id; (void)d; (void)out; TP_TRAP_BODY("HWP_CclTable.comm_init");
}
/* A 1.0/1.1 CCL table: struct_size only; the 1.2 functions lie beyond it (the host's MPI
 * adapter must serve the plugin without ever calling them). */
static const HWP_CclTable tp_trap_ccl_table = {sizeof(size_t), 128, trap_ccl_unique_id,
                                               trap_ccl_comm_init};
static HWP_Status trap_profiler_start(int32_t d, HWP_DeviceSpanSink sink, void *context) {
  (void)d; (void)sink; (void)context; TP_TRAP_BODY("HWP_PluginApi.profiler->start");
}
static HWP_Status trap_profiler_stop(int32_t d) {
  (void)d; TP_TRAP_BODY("HWP_PluginApi.profiler->stop");
}
/* A 1.0 profiler table: struct_size only; the 1.2 functions lie beyond it. */
static const HWP_ProfilerTable tp_trap_profiler_table = {
    TP_END(HWP_ProfilerTable, struct_size), trap_profiler_start, trap_profiler_stop};

/* Declared sizes: exactly the required prefix of each struct. */
#define TP_DEVICE_TABLE_SIZE TP_END(HWP_DeviceTable, synchronize_device)
#define TP_MEMORY_TABLE_SIZE TP_END(HWP_MemoryTable, copy_d2d)
#define TP_PLUGIN_API_SIZE TP_END(HWP_PluginApi, get_last_error)
TP_ASSERT(TP_DEVICE_TABLE_SIZE < sizeof(HWP_DeviceTable), device_table_is_a_prefix);
TP_ASSERT(TP_MEMORY_TABLE_SIZE < sizeof(HWP_MemoryTable), memory_table_is_a_prefix);
TP_ASSERT(TP_PLUGIN_API_SIZE < sizeof(HWP_PluginApi), plugin_api_is_a_prefix);
#endif /* older_minor */

#if TP_IS(older_minor)
static const HWP_DeviceTable tp_device_table = {
    TP_DEVICE_TABLE_SIZE, tr_get_device_count, tr_synchronize_device,
    /* beyond struct_size: */ trap_get_properties, trap_init_device, trap_deinit_device,
    trap_set_device};
#else
#if TP_IS(hang_sync)
static HWP_Status tp_hanging_synchronize_device(int32_t device) {
  HWP_Status st = tr_check_device(device, "synchronize_device");
  int used;
  if (st != HWP_OK) return st;
  pthread_mutex_lock(&tr_lock);
  used = tr_stats[device].num_allocs > 0;
  pthread_mutex_unlock(&tr_lock);
  while (used) sleep(1); /* the bug: waits for work that never completes */
  return HWP_OK;
}
#define TP_SYNCHRONIZE_DEVICE tp_hanging_synchronize_device
#else
#define TP_SYNCHRONIZE_DEVICE tr_synchronize_device
#endif
static const HWP_DeviceTable tp_device_table = {
    sizeof(HWP_DeviceTable), tr_get_device_count, TP_SYNCHRONIZE_DEVICE, tr_get_properties,
    NULL, NULL, NULL};
#endif

#if TP_IS(newer_minor)
/* A pretend next minor of the headers: each struct is the current one with one field
 * appended (the current struct as its first member, so the prefix is identical by
 * construction; checked below: the appended field starts at the current sizeof). */
typedef struct TP_MemoryTable_next {
  HWP_MemoryTable base;
  HWP_Status (*prefetch)(int32_t device, HWP_Buffer buffer, uint64_t offset, uint64_t nbytes);
} TP_MemoryTable_next;

typedef struct TP_PluginApi_next {
  HWP_PluginApi base;
  const char *(*get_build_info)(void);
} TP_PluginApi_next;

typedef struct TP_HostApi_next {
  HWP_HostApi base;
  /* a pretend host callback that the current host does not have */
  HWP_Status (*get_config)(void *host_context, const char *key, const char **value);
} TP_HostApi_next;

TP_ASSERT(offsetof(TP_MemoryTable_next, prefetch) == sizeof(HWP_MemoryTable), mem_appended);
TP_ASSERT(offsetof(TP_PluginApi_next, get_build_info) == sizeof(HWP_PluginApi), api_appended);
TP_ASSERT(offsetof(TP_HostApi_next, get_config) == sizeof(HWP_HostApi), host_appended);

static HWP_Status tp_prefetch(int32_t device, HWP_Buffer buffer, uint64_t offset,
                              uint64_t nbytes) {
  (void)buffer; (void)offset; (void)nbytes;
  return tr_check_device(device, "prefetch");
}
static const char *tp_get_build_info(void) { return "hwport test plugin newer_minor"; }

static const TP_MemoryTable_next tp_memory_table_next = {
    {sizeof(TP_MemoryTable_next), tr_allocate, tr_deallocate, tr_copy_h2d, tr_copy_d2h,
     tr_copy_d2d, NULL, NULL, NULL, NULL, tr_get_memory_stats, NULL, NULL, NULL, NULL, NULL,
     NULL},
    tp_prefetch};
#define tp_memory_table tp_memory_table_next.base

#define TP_PLUGIN_API_SIZE sizeof(TP_PluginApi_next)
#define TP_ABI_MINOR (HWP_ABI_VERSION_MINOR + 1)
#define TP_OPTIONAL_TABLES NULL, NULL, NULL, NULL, NULL

#else /* every other variant uses the current structs */

#if TP_IS(older_minor)
static const HWP_MemoryTable tp_memory_table = {
    TP_MEMORY_TABLE_SIZE, tr_allocate, tr_deallocate, tr_copy_h2d, tr_copy_d2h, tr_copy_d2d,
    /* beyond struct_size: */ trap_copy_h2d_async, trap_copy_d2h_async, trap_copy_d2d_async,
    trap_memset_async, trap_get_memory_stats, trap_host_address, trap_wrap_host_memory,
    trap_release_host_buffer, NULL, NULL, NULL};
#define TP_OPTIONAL_TABLES \
  &tp_trap_stream_table, &tp_trap_ccl_table, &tp_trap_codegen_table, &tp_trap_profiler_table, \
      trap_shutdown
#else
#if TP_IS(short_table)
#define TP_MEMORY_TABLE_SIZE offsetof(HWP_MemoryTable, copy_d2d) /* covers copy_d2h, not d2d */
#else
#define TP_MEMORY_TABLE_SIZE sizeof(HWP_MemoryTable)
#endif
#if TP_IS(missing_required)
#define TP_COPY_D2D NULL
#else
#define TP_COPY_D2D tr_copy_d2d
#endif
#if TP_IS(false_stats)
/* The bug: the accounting is right but the report says nothing is in use. */
static HWP_Status tp_false_memory_stats(int32_t device, HWP_MemoryStats *stats) {
  HWP_Status st = tr_get_memory_stats(device, stats);
  if (st == HWP_OK && HWP_HAS_FIELD(stats, HWP_MemoryStats, bytes_in_use)) stats->bytes_in_use = 0;
  return st;
}
#define TP_MEMORY_STATS tp_false_memory_stats
#else
#define TP_MEMORY_STATS tr_get_memory_stats
#endif
#ifdef TR_WITH_STREAMS
#define TP_ASYNC_COPIES tr_copy_h2d_async, tr_copy_d2h_async, tr_copy_d2d_async, tr_memset_async
#define TP_OPTIONAL_TABLES &tr_stream_table, NULL, NULL, NULL, NULL
#elif TP_IS(profiler_start_fails) || TP_IS(profiler_ids)
#define TP_ASYNC_COPIES NULL, NULL, NULL, NULL
#define TP_OPTIONAL_TABLES NULL, NULL, NULL, &tp_profiler_table, NULL
#elif TP_IS(codegen_11)
#define TP_ASYNC_COPIES NULL, NULL, NULL, NULL
#define TP_OPTIONAL_TABLES NULL, NULL, &tp_trap_codegen_table, NULL, NULL
#else
#define TP_ASYNC_COPIES NULL, NULL, NULL, NULL
#define TP_OPTIONAL_TABLES NULL, NULL, NULL, NULL, NULL
#endif
static const HWP_MemoryTable tp_memory_table = {
    TP_MEMORY_TABLE_SIZE, tr_allocate,     tr_deallocate, tr_copy_h2d, tr_copy_d2h, TP_COPY_D2D,
    TP_ASYNC_COPIES,      TP_MEMORY_STATS, NULL,          NULL,        NULL,
    TR_DLPACK_MEMORY};
#endif

#if TP_IS(short_struct)
#define TP_PLUGIN_API_SIZE offsetof(HWP_PluginApi, device_type) /* 16: versions only */
#elif !TP_IS(older_minor)
#define TP_PLUGIN_API_SIZE sizeof(HWP_PluginApi)
#endif
#if TP_IS(older_minor)
#define TP_ABI_MINOR 0
#elif TP_IS(codegen_11)
#define TP_ABI_MINOR 1
#else
#define TP_ABI_MINOR HWP_ABI_VERSION_MINOR
#endif
#endif /* newer_minor */

#if TP_IS(wrong_major)
#define TP_ABI_MAJOR 2
#else
#define TP_ABI_MAJOR HWP_ABI_VERSION_MAJOR
#endif

#if TP_IS(garbage_last_error)
static const char *tp_garbage_last_error(void) { return TP_GARBAGE_POINTER(0xbad8); }
#define TP_GET_LAST_ERROR tp_garbage_last_error
#else
#define TP_GET_LAST_ERROR tr_get_last_error
#endif

#if TP_IS(exit_constructor)
/* Runs inside dlopen, before the host can call anything. */
__attribute__((constructor)) static void tp_exit_on_load(void) { exit(0); }
#endif

#define TP_API_FIELDS                                                                  \
  TP_PLUGIN_API_SIZE, TP_ABI_MAJOR, TP_ABI_MINOR, TP_DEVICE_TYPE, "1.0.0", &tp_device_table, \
      &tp_memory_table, TP_GET_LAST_ERROR, TP_OPTIONAL_TABLES

/* Not const: newer_minor records in plugin_version whether it found the next-minor host
 * field. */
#if TP_IS(newer_minor)
static TP_PluginApi_next tp_api_next = {{TP_API_FIELDS}, tp_get_build_info};
#define tp_api tp_api_next.base
#else
TR_MAYBE_UNUSED
static HWP_PluginApi tp_api = {TP_API_FIELDS};
#endif

/* ---- entry point ------------------------------------------------------------------------- */
static HWP_Status tp_init(const HWP_HostApi *host, const HWP_PluginApi **out) {
  HWP_KernelRegistration reg;
  HWP_Status st;
  if (host == NULL || out == NULL)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "hwport_plugin_init: NULL argument");
  if (!HWP_HAS_FIELD(host, HWP_HostApi, abi_minor))
    return tr_fail(HWP_ERROR_VERSION_MISMATCH, "host API struct too small to hold versions");
#if !TP_IS(wrong_major) /* a careless major-2 plugin: it skips this check */
  if (host->abi_major != HWP_ABI_VERSION_MAJOR)
    return tr_fail(HWP_ERROR_VERSION_MISMATCH, "host ABI major %u, plugin %d",
                   (unsigned)host->abi_major, HWP_ABI_VERSION_MAJOR);
#endif
  if (!HWP_HAS_FIELD(host, HWP_HostApi, register_kernel) || host->register_kernel == NULL)
    return tr_fail(HWP_ERROR_VERSION_MISMATCH, "host API has no register_kernel");
#if !TP_IS(garbage_device_type)
  tr_memory_init(TP_DEVICE_TYPE); /* HWPORT_<DEVICE TYPE>_MEMORY_LIMIT */
#endif

  memset(&reg, 0, sizeof reg);
  reg.struct_size = sizeof reg;
  reg.op_name = "add";
  reg.dtype = HWP_DTYPE_FLOAT32;
  reg.flags = HWP_KERNEL_ACCEPTS_STRIDED;
  reg.fn = tp_add_f32;
  reg.user_data = NULL;
  st = host->register_kernel(host->host_context, &reg);
  if (st != HWP_OK) return tr_fail(st, "register_kernel(add, float32) failed with %d", (int)st);

#if TP_IS(newer_minor)
  /* Negotiation the other way round: use the pretend next-minor host field only if the host's
   * struct is large enough to hold it; the current host's struct is not, so do without. */
  if (HWP_HAS_FIELD(host, TP_HostApi_next, get_config) &&
      ((const TP_HostApi_next *)host)->get_config != NULL) {
    const char *value = NULL;
    ((const TP_HostApi_next *)host)->get_config(host->host_context, "test.greeting", &value);
    tp_api.plugin_version = "next minor (host extension: used)";
  } else {
    tp_api.plugin_version = "next minor (host extension: absent)";
  }
#endif

#if TP_IS(crash_init)
  {
    volatile int *volatile nowhere = NULL;
    *nowhere = 1;
  }
#elif TP_IS(abort_init)
  abort();
#elif TP_IS(hang_init)
  for (;;) sleep(1);
#elif TP_IS(exit0_init)
  exit(0);
#elif TP_IS(exit3_init)
  exit(3);
#endif

#if TP_IS(init_error)
  /* *out is set so that the host can read get_last_error (plugin.h: on error the host uses *out
   * only for that). */
  *out = (const HWP_PluginApi *)&tp_api;
  return tr_fail(HWP_ERROR_DEVICE, "simulated driver failure");
#elif TP_IS(null_api)
  *out = NULL;
  return HWP_OK;
#else
  *out = (const HWP_PluginApi *)&tp_api;
  return HWP_OK;
#endif
}

#if TP_IS(missing_entry)
/* Exported, but under the wrong name. */
HWP_EXPORT HWP_Status hwport_plugin_init_renamed(const HWP_HostApi *host,
                                                 const HWP_PluginApi **out);
HWP_EXPORT HWP_Status hwport_plugin_init_renamed(const HWP_HostApi *host,
                                                 const HWP_PluginApi **out) {
  return tp_init(host, out);
}
#else
HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out);
HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out) {
  return tp_init(host, out);
}
#endif
