/* hwport CUDA plugin — streams (non-blocking CUDA streams) and events (CUDA events without
 * timing). A handle is a small heap object tagged with a magic number and its device, so a
 * handle of another device or a destroyed one is an INVALID_ARGUMENT, not a CUDA crash.
 * An event may be waited on by a stream of another device (cudaStreamWaitEvent allows it). */
#include <stdlib.h>

#include "internal.h"

#define CU_STREAM_MAGIC 0x637564615354524dull /* "cudaSTRM" */
#define CU_EVENT_MAGIC 0x6375646145564e54ull  /* "cudaEVNT" */

typedef struct cu_stream {
  uint64_t magic;
  int32_t device;
  cudaStream_t s;
} cu_stream;

typedef struct cu_event {
  uint64_t magic;
  int32_t device;
  cudaEvent_t e;
} cu_event;

HWP_Status cu_stream_get(int32_t device, HWP_Stream stream, cudaStream_t *out, const char *fn) {
  if (stream == NULL) {
    *out = 0;
    return HWP_OK;
  }
  const cu_stream *cs = (const cu_stream *)stream;
  if (cs->magic != CU_STREAM_MAGIC || cs->device != device)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a live stream of device %d", fn,
                    (void *)stream, (int)device);
  *out = cs->s;
  return HWP_OK;
}

static HWP_Status get_event(int32_t device, HWP_Event event, cu_event **out, const char *fn) {
  cu_event *ce = (cu_event *)event;
  if (ce == NULL || ce->magic != CU_EVENT_MAGIC || ce->device != device)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a live event of device %d", fn,
                    (void *)event, (int)device);
  *out = ce;
  return HWP_OK;
}

#define CU_TRY(call, fn, name)                                                                 \
  do {                                                                                         \
    cudaError_t err_ = (call);                                                                 \
    if (err_ != cudaSuccess) return cu_cuda_error(err_, fn, name);                             \
  } while (0)

static HWP_Status cu_create_stream(int32_t device, HWP_Stream *out) {
  HWP_Status st = cu_enter(device, "create_stream");
  if (st != HWP_OK) return st;
  if (out == NULL) return cu_error(HWP_ERROR_INVALID_ARGUMENT, "create_stream: out is NULL");
  cu_stream *cs = calloc(1, sizeof *cs);
  if (cs == NULL) return cu_error(HWP_ERROR_OUT_OF_MEMORY, "create_stream: no host memory");
  cudaError_t err = cudaStreamCreateWithFlags(&cs->s, cudaStreamNonBlocking);
  if (err != cudaSuccess) {
    free(cs);
    return cu_cuda_error(err, "create_stream", "cudaStreamCreateWithFlags");
  }
  cs->magic = CU_STREAM_MAGIC;
  cs->device = device;
  *out = (HWP_Stream)cs;
  return HWP_OK;
}

static HWP_Status cu_destroy_stream(int32_t device, HWP_Stream stream) {
  if (stream == NULL) return HWP_OK;
  HWP_Status st = cu_enter(device, "destroy_stream");
  cudaStream_t s = 0;
  if (st == HWP_OK) st = cu_stream_get(device, stream, &s, "destroy_stream");
  if (st != HWP_OK) return st;
  cu_stream *cs = (cu_stream *)stream;
  cudaError_t err = cudaStreamSynchronize(s); /* destroying waits for pending work */
  cudaError_t err2 = cudaStreamDestroy(s);
  cs->magic = 0;
  free(cs);
  if (err != cudaSuccess) return cu_cuda_error(err, "destroy_stream", "cudaStreamSynchronize");
  return err2 == cudaSuccess ? HWP_OK : cu_cuda_error(err2, "destroy_stream", "cudaStreamDestroy");
}

static HWP_Status cu_synchronize_stream(int32_t device, HWP_Stream stream) {
  HWP_Status st = cu_enter(device, "synchronize_stream");
  cudaStream_t s = 0;
  if (st == HWP_OK) st = cu_stream_get(device, stream, &s, "synchronize_stream");
  if (st != HWP_OK) return st;
  if (stream == NULL) return cu_synchronize_device(device, "synchronize_stream");
  CU_TRY(cudaStreamSynchronize(s), "synchronize_stream", "cudaStreamSynchronize");
  return HWP_OK;
}

static HWP_Status cu_query_stream(int32_t device, HWP_Stream stream) {
  HWP_Status st = cu_enter(device, "query_stream");
  cudaStream_t s = 0;
  if (st == HWP_OK) st = cu_stream_get(device, stream, &s, "query_stream");
  if (st != HWP_OK) return st;
  cudaError_t err = cudaStreamQuery(s);
  if (err == cudaErrorNotReady) return HWP_ERROR_NOT_READY;
  return err == cudaSuccess ? HWP_OK : cu_cuda_error(err, "query_stream", "cudaStreamQuery");
}

static HWP_Status cu_create_event(int32_t device, HWP_Event *out) {
  HWP_Status st = cu_enter(device, "create_event");
  if (st != HWP_OK) return st;
  if (out == NULL) return cu_error(HWP_ERROR_INVALID_ARGUMENT, "create_event: out is NULL");
  cu_event *ce = calloc(1, sizeof *ce);
  if (ce == NULL) return cu_error(HWP_ERROR_OUT_OF_MEMORY, "create_event: no host memory");
  cudaError_t err = cudaEventCreateWithFlags(&ce->e, cudaEventDisableTiming);
  if (err != cudaSuccess) {
    free(ce);
    return cu_cuda_error(err, "create_event", "cudaEventCreateWithFlags");
  }
  ce->magic = CU_EVENT_MAGIC;
  ce->device = device;
  *out = (HWP_Event)ce;
  return HWP_OK;
}

static HWP_Status cu_destroy_event(int32_t device, HWP_Event event) {
  if (event == NULL) return HWP_OK;
  HWP_Status st = cu_enter(device, "destroy_event");
  cu_event *ce = NULL;
  if (st == HWP_OK) st = get_event(device, event, &ce, "destroy_event");
  if (st != HWP_OK) return st;
  cudaError_t err = cudaEventDestroy(ce->e);
  ce->magic = 0;
  free(ce);
  return err == cudaSuccess ? HWP_OK : cu_cuda_error(err, "destroy_event", "cudaEventDestroy");
}

static HWP_Status cu_record_event(int32_t device, HWP_Stream stream, HWP_Event event) {
  HWP_Status st = cu_enter(device, "record_event");
  cudaStream_t s = 0;
  cu_event *ce = NULL;
  if (st == HWP_OK) st = cu_stream_get(device, stream, &s, "record_event");
  if (st == HWP_OK) st = get_event(device, event, &ce, "record_event");
  if (st != HWP_OK) return st;
  /* The NULL stream is synchronous: everything submitted so far is complete after this. */
  if (stream == NULL && (st = cu_synchronize_device(device, "record_event")) != HWP_OK) return st;
  CU_TRY(cudaEventRecord(ce->e, s), "record_event", "cudaEventRecord");
  return HWP_OK;
}

static HWP_Status cu_synchronize_event(int32_t device, HWP_Event event) {
  HWP_Status st = cu_enter(device, "synchronize_event");
  cu_event *ce = NULL;
  if (st == HWP_OK) st = get_event(device, event, &ce, "synchronize_event");
  if (st != HWP_OK) return st;
  CU_TRY(cudaEventSynchronize(ce->e), "synchronize_event", "cudaEventSynchronize");
  return HWP_OK;
}

static HWP_Status cu_query_event(int32_t device, HWP_Event event) {
  HWP_Status st = cu_enter(device, "query_event");
  cu_event *ce = NULL;
  if (st == HWP_OK) st = get_event(device, event, &ce, "query_event");
  if (st != HWP_OK) return st;
  cudaError_t err = cudaEventQuery(ce->e);
  if (err == cudaErrorNotReady) return HWP_ERROR_NOT_READY;
  return err == cudaSuccess ? HWP_OK : cu_cuda_error(err, "query_event", "cudaEventQuery");
}

/* `event` may belong to another device of this plugin (device is the stream's). */
static HWP_Status cu_stream_wait_event(int32_t device, HWP_Stream stream, HWP_Event event) {
  HWP_Status st = cu_enter(device, "stream_wait_event");
  cudaStream_t s = 0;
  if (st == HWP_OK) st = cu_stream_get(device, stream, &s, "stream_wait_event");
  if (st != HWP_OK) return st;
  cu_event *ce = (cu_event *)event;
  if (ce == NULL || ce->magic != CU_EVENT_MAGIC || ce->device < 0 ||
      ce->device >= g_cu.num_devices)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "stream_wait_event: %p is not a live event",
                    (void *)event);
  if (stream == NULL) {
    CU_TRY(cudaEventSynchronize(ce->e), "stream_wait_event", "cudaEventSynchronize");
    return HWP_OK;
  }
  CU_TRY(cudaStreamWaitEvent(s, ce->e, 0), "stream_wait_event", "cudaStreamWaitEvent");
  return HWP_OK;
}

/* ---- ABI 1.1: native streams as DLPack names them ----------------------------------------- */

/* The NULL stream's work runs on the legacy default stream (then waits for the device). */
static HWP_Status cu_native_stream(int32_t device, HWP_Stream stream, uintptr_t *out) {
  HWP_Status st = cu_enter(device, "native_stream");
  cudaStream_t s = 0;
  if (st == HWP_OK) st = cu_stream_get(device, stream, &s, "native_stream");
  if (st != HWP_OK) return st;
  if (out == NULL) return cu_error(HWP_ERROR_INVALID_ARGUMENT, "native_stream: out is NULL");
  *out = stream == NULL ? (uintptr_t)1 : (uintptr_t)s;
  return HWP_OK;
}

/* `native` is DLPack's: 1 the legacy default stream, 2 the per-thread default stream, another
 * value a cudaStream_t of this device that the caller keeps alive (it cannot be validated);
 * 0 is ambiguous and refused. The event is destroyed at once: CUDA keeps it until the wait
 * has been resolved. */
static HWP_Status cu_native_stream_wait(int32_t device, uintptr_t native, HWP_Stream stream) {
  HWP_Status st = cu_enter(device, "native_stream_wait");
  cudaStream_t s = 0;
  if (st == HWP_OK) st = cu_stream_get(device, stream, &s, "native_stream_wait");
  if (st != HWP_OK) return st;
  if (native == 0)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                    "native_stream_wait: native stream 0 is ambiguous in DLPack (use 1 for the "
                    "legacy default stream, 2 for the per-thread one)");
  cudaStream_t theirs = native == 1   ? cudaStreamLegacy
                        : native == 2 ? cudaStreamPerThread
                                      : (cudaStream_t)native;
  cudaEvent_t ev;
  CU_TRY(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "native_stream_wait",
         "cudaEventCreateWithFlags");
  cudaError_t err = cudaEventRecord(ev, s);
  const char *call = "cudaEventRecord";
  if (err == cudaSuccess) {
    err = cudaStreamWaitEvent(theirs, ev, 0);
    call = "cudaStreamWaitEvent";
  }
  (void)cudaEventDestroy(ev);
  return err == cudaSuccess ? HWP_OK : cu_cuda_error(err, "native_stream_wait", call);
}

const HWP_StreamTable cu_stream_table = {
    .struct_size = sizeof(HWP_StreamTable),
    .create_stream = cu_create_stream,
    .destroy_stream = cu_destroy_stream,
    .synchronize_stream = cu_synchronize_stream,
    .query_stream = cu_query_stream,
    .create_event = cu_create_event,
    .destroy_event = cu_destroy_event,
    .record_event = cu_record_event,
    .synchronize_event = cu_synchronize_event,
    .query_event = cu_query_event,
    .stream_wait_event = cu_stream_wait_event,
    .native_stream = cu_native_stream,
    .native_stream_wait = cu_native_stream_wait,
};
