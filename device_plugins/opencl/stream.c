/* hwport OpenCL plugin — streams (in-order command queues) and events (marker cl_events).
 *
 * A stream is an in-order cl_command_queue created in its platform's context. An event keeps
 * the cl_event of its last record: a marker enqueued on the stream, which completes when the
 * work before it has. An event never recorded (or recorded on the synchronous NULL stream)
 * holds no cl_event and is complete. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define OCL_STREAM_MAGIC 0x68777073747265ull /* "hwpstre" */
#define OCL_EVENT_MAGIC 0x68777065766e74ull  /* "hwpevnt" */
#define OCL_DEAD_MAGIC 0x68777064656164ull   /* "hwpdead" */

typedef struct ocl_event {
  uint64_t magic;
  int32_t device;
  pthread_mutex_t mu; /* guards ev and ctx */
  cl_event ev;        /* the last recorded marker, or NULL (complete) */
  cl_context ctx;     /* the context of ev */
} ocl_event;

#define OCL_CHECK(expr)                                                                        \
  do {                                                                                         \
    HWP_Status st_ = (expr);                                                                   \
    if (st_ != HWP_OK) return st_;                                                             \
  } while (0)

HWP_Status ocl_stream_queue_for_launch(int32_t device, HWP_Stream stream, cl_command_queue *out,
                                       const char *fn) {
  ocl_stream *s = (ocl_stream *)stream;
  if (s == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: stream is NULL", fn);
  if (s->magic != OCL_STREAM_MAGIC)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a live opencl stream", fn,
                     (void *)stream);
  if (s->device != device)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: the stream belongs to opencl device %d, not %d", fn, (int)s->device,
                     (int)device);
  *out = s->queue;
  return HWP_OK;
}

HWP_Status ocl_stream_queue(int32_t device, HWP_Stream stream, cl_command_queue *out,
                            const char *fn) {
  HWP_Status st = ocl_stream_queue_for_launch(device, stream, out, fn);
  if (st == HWP_OK) ocl_gate_open((ocl_stream *)stream);
  return st;
}

static ocl_event *as_event(HWP_Event event, int32_t device, const char *fn, HWP_Status *st) {
  ocl_event *e = (ocl_event *)event;
  if (e == NULL) {
    *st = ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: event is NULL", fn);
    return NULL;
  }
  if (e->magic != OCL_EVENT_MAGIC) {
    *st = ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a live opencl event", fn,
                    (void *)event);
    return NULL;
  }
  (void)device; /* an event may be used with a stream of another device of this plugin */
  *st = HWP_OK;
  return e;
}

HWP_Status ocl_synchronize_device(int32_t device, const char *fn) {
  ocl_device *d = &g_ocl.devices[device];
  cl_command_queue small[16];
  cl_command_queue *qs = small;
  size_t n = 0, cap = sizeof small / sizeof small[0];
  pthread_mutex_lock(&d->mu);
  for (ocl_stream *s = d->streams; s != NULL; s = s->next) ++n;
  if (d->sync_queue != NULL) ++n;
  if (n > cap) {
    qs = malloc(n * sizeof *qs);
    if (qs == NULL) {
      pthread_mutex_unlock(&d->mu);
      return ocl_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no host memory", fn);
    }
  }
  n = 0;
  for (ocl_stream *s = d->streams; s != NULL; s = s->next) {
    ocl_gate_open(s); /* the launches behind a gate run before the finish */
    qs[n++] = s->queue;
  }
  if (d->sync_queue != NULL) qs[n++] = d->sync_queue;
  for (size_t i = 0; i < n; ++i) clRetainCommandQueue(qs[i]); /* outlive a concurrent destroy */
  pthread_mutex_unlock(&d->mu);
  cl_int first = CL_SUCCESS;
  for (size_t i = 0; i < n; ++i) {
    cl_int err = clFinish(qs[i]);
    if (err != CL_SUCCESS && first == CL_SUCCESS) first = err;
    clReleaseCommandQueue(qs[i]);
  }
  if (qs != small) free(qs);
  if (first != CL_SUCCESS) return ocl_cl_error(first, fn, "clFinish");
  return HWP_OK;
}

/* ---- streams ------------------------------------------------------------------------------ */

void ocl_stream_track(HWP_Stream stream, cl_event ev) {
  /* The command's own event is not kept: with enqueues from several threads, the command
   * counted last need not be the one enqueued last; query_stream's marker, enqueued after the
   * count it covers was read, is exact. */
  if (ev != NULL) clReleaseEvent(ev);
  ocl_stream *s = (ocl_stream *)stream;
  if (s != NULL) __atomic_add_fetch(&s->submitted, 1, __ATOMIC_RELEASE);
}

/* Records that the first `seq` commands have completed. */
static void stream_done(ocl_stream *s, uint64_t seq) {
  pthread_mutex_lock(&s->mu);
  if (seq > s->done_seq) s->done_seq = seq;
  cl_event old = NULL;
  if (s->last != NULL && s->last_seq <= s->done_seq) {
    old = s->last;
    s->last = NULL;
  }
  pthread_mutex_unlock(&s->mu);
  if (old != NULL) clReleaseEvent(old);
}

static void stream_free(ocl_stream *s) {
  s->magic = OCL_DEAD_MAGIC;
  ocl_gate_open(s);
  pthread_mutex_destroy(&s->gate_mu);
  if (s->last != NULL) clReleaseEvent(s->last);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

static HWP_Status ocl_create_stream(int32_t device, HWP_Stream *out) {
  OCL_CHECK(ocl_check_device(device, "create_stream"));
  if (out == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "create_stream: out is NULL");
  ocl_device *d = &g_ocl.devices[device];
  cl_context ctx;
  OCL_CHECK(ocl_context(device, &ctx, "create_stream"));
  ocl_stream *s = calloc(1, sizeof *s);
  if (s == NULL) return ocl_error(HWP_ERROR_OUT_OF_MEMORY, "create_stream: no host memory");
  cl_int err = CL_SUCCESS;
  s->queue = clCreateCommandQueue(ctx, d->id, OCL_QUEUE_PROPERTIES, &err); /* in order */
  if (err != CL_SUCCESS || s->queue == NULL) {
    free(s);
    return ocl_cl_error(err != CL_SUCCESS ? err : CL_INVALID_COMMAND_QUEUE, "create_stream",
                        "clCreateCommandQueue");
  }
  s->device = device;
  s->ctx = ctx;
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->gate_mu, NULL);
  s->magic = OCL_STREAM_MAGIC;
  pthread_mutex_lock(&d->mu);
  s->next = d->streams;
  if (d->streams != NULL) d->streams->prev = s;
  d->streams = s;
  pthread_mutex_unlock(&d->mu);
  *out = (HWP_Stream)s;
  return HWP_OK;
}

static void unlink_stream(ocl_device *d, ocl_stream *s) {
  if (s->prev != NULL) s->prev->next = s->next;
  else d->streams = s->next;
  if (s->next != NULL) s->next->prev = s->prev;
  s->prev = s->next = NULL;
}

static HWP_Status ocl_destroy_stream(int32_t device, HWP_Stream stream) {
  OCL_CHECK(ocl_check_device(device, "destroy_stream"));
  if (stream == NULL) return HWP_OK;
  cl_command_queue q = NULL;
  OCL_CHECK(ocl_stream_queue(device, stream, &q, "destroy_stream"));
  ocl_stream *s = (ocl_stream *)stream;
  ocl_device *d = &g_ocl.devices[device];
  pthread_mutex_lock(&d->mu);
  unlink_stream(d, s);
  s->magic = OCL_DEAD_MAGIC;
  pthread_mutex_unlock(&d->mu);
  cl_int err = clFinish(q); /* destroying a stream waits for its pending work */
  clReleaseCommandQueue(q);
  stream_free(s);
  if (err != CL_SUCCESS) return ocl_cl_error(err, "destroy_stream", "clFinish");
  return HWP_OK;
}

void ocl_stream_shutdown(void) {
  for (int32_t i = 0; i < g_ocl.num_devices; ++i) {
    ocl_device *d = &g_ocl.devices[i];
    pthread_mutex_lock(&d->mu);
    while (d->streams != NULL) {
      ocl_stream *s = d->streams;
      unlink_stream(d, s);
      ocl_gate_open(s);
      clFinish(s->queue);
      clReleaseCommandQueue(s->queue);
      stream_free(s);
    }
    pthread_mutex_unlock(&d->mu);
  }
}

static HWP_Status ocl_synchronize_stream(int32_t device, HWP_Stream stream) {
  OCL_CHECK(ocl_check_device(device, "synchronize_stream"));
  if (stream == NULL) return ocl_synchronize_device(device, "synchronize_stream");
  cl_command_queue q = NULL;
  OCL_CHECK(ocl_stream_queue(device, stream, &q, "synchronize_stream"));
  ocl_stream *s = (ocl_stream *)stream;
  uint64_t seq = __atomic_load_n(&s->submitted, __ATOMIC_ACQUIRE);
  cl_int err = clFinish(q);
  if (err != CL_SUCCESS) return ocl_cl_error(err, "synchronize_stream", "clFinish");
  stream_done(s, seq);
  return HWP_OK;
}

/* HWP_OK when `ev` has completed, HWP_ERROR_NOT_READY when not; a failed command is an error. */
static HWP_Status event_status(cl_event ev, const char *fn) {
  cl_int status = CL_COMPLETE;
  cl_int err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
  if (err != CL_SUCCESS) return ocl_cl_error(err, fn, "clGetEventInfo");
  if (status < 0)
    return ocl_error(HWP_ERROR_DEVICE, "%s: the device's work failed: %s (%d)", fn,
                     ocl_cl_error_name(status), (int)status);
  return status == CL_COMPLETE ? HWP_OK : HWP_ERROR_NOT_READY;
}

static HWP_Status ocl_query_stream(int32_t device, HWP_Stream stream) {
  OCL_CHECK(ocl_check_device(device, "query_stream"));
  if (stream == NULL) return ocl_synchronize_device(device, "query_stream");
  cl_command_queue q = NULL;
  OCL_CHECK(ocl_stream_queue(device, stream, &q, "query_stream"));
  ocl_stream *s = (ocl_stream *)stream;
  /* Every command counted in seq was enqueued before this load (it is counted after its
   * enqueue), so a marker enqueued now completes after all of them (the queue is in order). */
  uint64_t seq = __atomic_load_n(&s->submitted, __ATOMIC_ACQUIRE);
  pthread_mutex_lock(&s->mu);
  if (s->done_seq >= seq) {
    pthread_mutex_unlock(&s->mu);
    return HWP_OK; /* nothing enqueued since the stream was last seen idle */
  }
  cl_int err = CL_SUCCESS;
  if (s->last == NULL || s->last_seq < seq) { /* commands since the last marker: mark them */
    cl_event marker = NULL;
    err = clEnqueueMarkerWithWaitList(q, 0, NULL, &marker);
    if (err != CL_SUCCESS) {
      pthread_mutex_unlock(&s->mu);
      return ocl_cl_error(err, "query_stream", "clEnqueueMarkerWithWaitList");
    }
    if (s->last != NULL) clReleaseEvent(s->last);
    s->last = marker;
    s->last_seq = seq; /* the marker itself is not counted: it does no work */
  }
  cl_event last = s->last;
  uint64_t last_seq = s->last_seq;
  clRetainEvent(last);
  pthread_mutex_unlock(&s->mu);
  err = clFlush(q);
  HWP_Status st = err != CL_SUCCESS ? ocl_cl_error(err, "query_stream", "clFlush")
                                    : event_status(last, "query_stream");
  if (st == HWP_OK) stream_done(s, last_seq);
  clReleaseEvent(last);
  return st;
}

/* ---- events ------------------------------------------------------------------------------- */

static HWP_Status ocl_create_event(int32_t device, HWP_Event *out) {
  OCL_CHECK(ocl_check_device(device, "create_event"));
  if (out == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "create_event: out is NULL");
  ocl_event *e = calloc(1, sizeof *e);
  if (e == NULL) return ocl_error(HWP_ERROR_OUT_OF_MEMORY, "create_event: no host memory");
  pthread_mutex_init(&e->mu, NULL);
  e->device = device;
  e->magic = OCL_EVENT_MAGIC;
  *out = (HWP_Event)e;
  return HWP_OK;
}

static HWP_Status ocl_destroy_event(int32_t device, HWP_Event event) {
  OCL_CHECK(ocl_check_device(device, "destroy_event"));
  if (event == NULL) return HWP_OK;
  HWP_Status st;
  ocl_event *e = as_event(event, device, "destroy_event", &st);
  if (e == NULL) return st;
  e->magic = OCL_DEAD_MAGIC;
  if (e->ev != NULL) clReleaseEvent(e->ev);
  pthread_mutex_destroy(&e->mu);
  free(e);
  return HWP_OK;
}

/* Replaces what `e` waits for (takes ownership of `ev`, which may be NULL = complete). */
static void event_set(ocl_event *e, cl_event ev, cl_context ctx) {
  pthread_mutex_lock(&e->mu);
  cl_event old = e->ev;
  e->ev = ev;
  e->ctx = ctx;
  pthread_mutex_unlock(&e->mu);
  if (old != NULL) clReleaseEvent(old);
}

/* The event's current cl_event, retained (the caller releases it), or NULL when complete. */
static cl_event event_get(ocl_event *e, cl_context *ctx) {
  pthread_mutex_lock(&e->mu);
  cl_event ev = e->ev;
  if (ev != NULL) clRetainEvent(ev);
  if (ctx != NULL) *ctx = e->ctx;
  pthread_mutex_unlock(&e->mu);
  return ev;
}

static HWP_Status ocl_record_event(int32_t device, HWP_Stream stream, HWP_Event event) {
  OCL_CHECK(ocl_check_device(device, "record_event"));
  HWP_Status st;
  ocl_event *e = as_event(event, device, "record_event", &st);
  if (e == NULL) return st;
  if (stream == NULL) { /* the NULL stream is synchronous: its work is already complete */
    OCL_CHECK(ocl_synchronize_device(device, "record_event"));
    event_set(e, NULL, NULL);
    return HWP_OK;
  }
  cl_command_queue q = NULL;
  OCL_CHECK(ocl_stream_queue(device, stream, &q, "record_event"));
  ocl_stream *s = (ocl_stream *)stream;
  /* As in query_stream: every command counted in seq was enqueued before this marker. */
  uint64_t seq = __atomic_load_n(&s->submitted, __ATOMIC_ACQUIRE);
  cl_event ev = NULL;
  cl_int err = clEnqueueMarkerWithWaitList(q, 0, NULL, &ev);
  if (err != CL_SUCCESS) return ocl_cl_error(err, "record_event", "clEnqueueMarkerWithWaitList");
  err = clFlush(q);
  if (err != CL_SUCCESS) {
    clReleaseEvent(ev);
    return ocl_cl_error(err, "record_event", "clFlush");
  }
  cl_context ctx = NULL;
  clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
  /* The marker is also the stream's latest mark (it does no work, so it is not counted): once
   * the event is seen complete, query_stream reads that marker rather than enqueueing one that
   * would not be complete yet (and say NOT_READY for an idle stream). */
  pthread_mutex_lock(&s->mu);
  if (s->last == NULL || s->last_seq <= seq) {
    clRetainEvent(ev);
    if (s->last != NULL) clReleaseEvent(s->last);
    s->last = ev;
    s->last_seq = seq;
  }
  pthread_mutex_unlock(&s->mu);
  event_set(e, ev, ctx); /* the event keeps ev */
  return HWP_OK;
}

static HWP_Status ocl_synchronize_event(int32_t device, HWP_Event event) {
  OCL_CHECK(ocl_check_device(device, "synchronize_event"));
  HWP_Status st;
  ocl_event *e = as_event(event, device, "synchronize_event", &st);
  if (e == NULL) return st;
  cl_event ev = event_get(e, NULL);
  if (ev == NULL) return HWP_OK;
  cl_int err = clWaitForEvents(1, &ev);
  st = err != CL_SUCCESS ? ocl_cl_error(err, "synchronize_event", "clWaitForEvents")
                         : event_status(ev, "synchronize_event");
  clReleaseEvent(ev);
  return st;
}

static HWP_Status ocl_query_event(int32_t device, HWP_Event event) {
  OCL_CHECK(ocl_check_device(device, "query_event"));
  HWP_Status st;
  ocl_event *e = as_event(event, device, "query_event", &st);
  if (e == NULL) return st;
  cl_event ev = event_get(e, NULL);
  if (ev == NULL) return HWP_OK;
  st = event_status(ev, "query_event");
  clReleaseEvent(ev);
  return st;
}

static HWP_Status ocl_stream_wait_event(int32_t device, HWP_Stream stream, HWP_Event event) {
  OCL_CHECK(ocl_check_device(device, "stream_wait_event"));
  HWP_Status st;
  ocl_event *e = as_event(event, device, "stream_wait_event", &st);
  if (e == NULL) return st;
  cl_command_queue q = NULL;
  if (stream != NULL) OCL_CHECK(ocl_stream_queue(device, stream, &q, "stream_wait_event"));
  cl_context ev_ctx = NULL;
  cl_event ev = event_get(e, &ev_ctx);
  if (ev == NULL) return HWP_OK; /* never recorded: complete */
  cl_context q_ctx = NULL;
  if (q != NULL) clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof q_ctx, &q_ctx, NULL);
  cl_int err;
  const char *call;
  if (q != NULL && q_ctx == ev_ctx) {
    call = "clEnqueueBarrierWithWaitList";
    cl_event barrier = NULL;
    err = clEnqueueBarrierWithWaitList(q, 1, &ev, &barrier);
    if (err == CL_SUCCESS) {
      ocl_stream_track(stream, barrier);
      err = clFlush(q);
    }
  } else {
    /* The NULL stream (synchronous), or an event of another platform's context, which an
     * OpenCL queue cannot wait on: wait on the host. */
    call = "clWaitForEvents";
    err = clWaitForEvents(1, &ev);
  }
  clReleaseEvent(ev);
  if (err != CL_SUCCESS) return ocl_cl_error(err, "stream_wait_event", call);
  return HWP_OK;
}

const HWP_StreamTable ocl_stream_table = {
    .struct_size = sizeof(HWP_StreamTable),
    .create_stream = ocl_create_stream,
    .destroy_stream = ocl_destroy_stream,
    .synchronize_stream = ocl_synchronize_stream,
    .query_stream = ocl_query_stream,
    .create_event = ocl_create_event,
    .destroy_event = ocl_destroy_event,
    .record_event = ocl_record_event,
    .synchronize_event = ocl_synchronize_event,
    .query_event = ocl_query_event,
    .stream_wait_event = ocl_stream_wait_event,
};
