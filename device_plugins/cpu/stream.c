/* hwport CPU plugin — streams (one in-order worker thread each), events and task submission.
 *
 * Locking order: registry lock of a device -> stream lock -> event lock (g_ev_mu). A worker
 * runs tasks without holding its stream lock; an inline task runs on the submitting thread
 * while holding the stream lock, which keeps the worker (idle, queue empty) from starting
 * anything concurrently. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CPU_STREAM_MAGIC 0x5354524du /* "STRM" */
#define CPU_EVENT_MAGIC 0x45564e54u  /* "EVNT" */
#define CPU_TASK_FREE_LIST_MAX 64

typedef struct cpu_stream {
  uint32_t magic;
  int32_t device;
  pthread_mutex_t mu;
  pthread_cond_t cv_work; /* the worker waits for tasks */
  pthread_cond_t cv_idle; /* synchronizers wait for queue empty and worker idle */
  cpu_task *head, *tail;
  int busy; /* the worker is running a task */
  int stop;
  cpu_task *free_tasks; /* recycled task storage: no malloc per task in steady state */
  int num_free_tasks;
  HWP_Status sticky; /* first asynchronous failure, reported by the next synchronize */
  char sticky_msg[CPU_ERROR_LEN];
  pthread_t thread;
  struct cpu_stream *prev, *next; /* the device's registry of live streams */
} cpu_stream;

typedef struct cpu_registry {
  pthread_mutex_t mu;
  cpu_stream *streams;
} cpu_registry;

static cpu_registry g_registry[CPU_MAX_DEVICES] = {
    [0 ... CPU_MAX_DEVICES - 1] = {.mu = PTHREAD_MUTEX_INITIALIZER, .streams = NULL}};

/* ---- markers and events ------------------------------------------------------------------
 * A record creates a marker (unless the stream is idle: then the event is complete at once);
 * the event and the stream's RECORD task each hold a reference, and so does every WAIT task or
 * host waiter that captured it. Guarded by g_ev_mu; completion broadcasts g_ev_cv. */
struct cpu_marker {
  int refs;
  int done;
};

struct HWP_Event_st {
  uint32_t magic;
  int32_t device;
  cpu_marker *pending; /* NULL: complete (never recorded, or recorded on idle work) */
};

static pthread_mutex_t g_ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_ev_cv = PTHREAD_COND_INITIALIZER;

static void marker_release_locked(cpu_marker *m) {
  if (m != NULL && --m->refs == 0) free(m);
}

static void marker_wait_and_release(cpu_marker *m) {
  pthread_mutex_lock(&g_ev_mu);
  while (!m->done) pthread_cond_wait(&g_ev_cv, &g_ev_mu);
  marker_release_locked(m);
  pthread_mutex_unlock(&g_ev_mu);
}

/* ---- tasks ------------------------------------------------------------------------------ */

static HWP_Status task_run(const cpu_task *t) {
  switch (t->kind) {
  case CPU_TASK_ELEMENTWISE:
    cpu_elementwise_run(&t->u.ew);
    return HWP_OK;
  case CPU_TASK_COPY:
    memmove(t->u.copy.dst, t->u.copy.src, (size_t)t->u.copy.nbytes);
    return HWP_OK;
  case CPU_TASK_MEMSET:
    memset(t->u.set.dst, t->u.set.value, (size_t)t->u.set.nbytes);
    return HWP_OK;
  case CPU_TASK_RECORD:
    pthread_mutex_lock(&g_ev_mu);
    t->u.marker->done = 1;
    marker_release_locked(t->u.marker);
    pthread_cond_broadcast(&g_ev_cv);
    pthread_mutex_unlock(&g_ev_mu);
    return HWP_OK;
  case CPU_TASK_WAIT:
    marker_wait_and_release(t->u.marker);
    return HWP_OK;
  case CPU_TASK_CALLBACK: {
    HWP_Status st = t->u.call.run(t->u.call.payload);
    if (t->u.call.release != NULL) t->u.call.release(t->u.call.payload);
    return st;
  }
  default:
    return cpu_error(HWP_ERROR_INTERNAL, "cpu stream: unknown task kind %d", (int)t->kind);
  }
}

/* Takes task storage from the stream's free list (or malloc). Caller holds s->mu. */
static cpu_task *task_alloc_locked(cpu_stream *s) {
  cpu_task *t = s->free_tasks;
  if (t != NULL) {
    s->free_tasks = t->next;
    --s->num_free_tasks;
    t->correlation_id = 0;
    return t;
  }
  t = malloc(sizeof(cpu_task));
  if (t != NULL) t->correlation_id = 0;
  return t;
}

static void task_recycle_locked(cpu_stream *s, cpu_task *t) {
  if (s->num_free_tasks < CPU_TASK_FREE_LIST_MAX) {
    t->next = s->free_tasks;
    s->free_tasks = t;
    ++s->num_free_tasks;
  } else {
    free(t);
  }
}

static void enqueue_locked(cpu_stream *s, cpu_task *t) {
  t->next = NULL;
  if (s->tail != NULL) {
    s->tail->next = t;
  } else {
    s->head = t;
    pthread_cond_signal(&s->cv_work);
  }
  s->tail = t;
}

static int idle_locked(const cpu_stream *s) { return s->head == NULL && !s->busy; }

/* ---- worker ----------------------------------------------------------------------------- */

static void *worker_main(void *arg) {
  cpu_stream *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (s->head == NULL && !s->stop) pthread_cond_wait(&s->cv_work, &s->mu);
    cpu_task *t = s->head;
    if (t == NULL) break; /* stopping, and drained */
    s->head = t->next;
    if (s->head == NULL) s->tail = NULL;
    s->busy = 1;
    pthread_mutex_unlock(&s->mu);

    HWP_Status st = cpu_run_timed(task_run, t, s->device, t->correlation_id, t->name);

    pthread_mutex_lock(&s->mu);
    s->busy = 0;
    if (st != HWP_OK && s->sticky == HWP_OK) {
      s->sticky = st;
      strncpy(s->sticky_msg, cpu_get_last_error(), sizeof s->sticky_msg - 1);
      s->sticky_msg[sizeof s->sticky_msg - 1] = '\0';
    }
    task_recycle_locked(s, t);
    if (s->head == NULL) pthread_cond_broadcast(&s->cv_idle);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* Reports and clears a sticky asynchronous error. Caller holds s->mu. */
static HWP_Status take_sticky_locked(cpu_stream *s, const char *fn) {
  if (s->sticky == HWP_OK) return HWP_OK;
  s->sticky = HWP_OK;
  return cpu_error(HWP_ERROR_DEVICE, "%s: earlier asynchronous work on cpu stream %p failed: %s",
                   fn, (void *)s, s->sticky_msg);
}

static HWP_Status stream_sync(cpu_stream *s, const char *fn) {
  pthread_mutex_lock(&s->mu);
  while (!idle_locked(s)) pthread_cond_wait(&s->cv_idle, &s->mu);
  HWP_Status st = take_sticky_locked(s, fn);
  pthread_mutex_unlock(&s->mu);
  return st;
}

HWP_Status cpu_synchronize_device(int32_t device) {
  cpu_registry *r = &g_registry[device];
  HWP_Status first = HWP_OK;
  char msg[CPU_ERROR_LEN];
  pthread_mutex_lock(&r->mu);
  for (cpu_stream *s = r->streams; s != NULL; s = s->next) {
    HWP_Status st = stream_sync(s, "synchronize_device");
    if (st != HWP_OK && first == HWP_OK) {
      first = st;
      strncpy(msg, cpu_get_last_error(), sizeof msg - 1);
      msg[sizeof msg - 1] = '\0';
    }
  }
  pthread_mutex_unlock(&r->mu);
  if (first != HWP_OK) return cpu_error(first, "%s", msg);
  return HWP_OK;
}

/* ---- handle validation ------------------------------------------------------------------ */

static HWP_Status get_stream(int32_t device, HWP_Stream handle, const char *fn,
                             cpu_stream **out) {
  cpu_stream *s = (cpu_stream *)handle;
  if (CPU_UNLIKELY(s == NULL))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: stream is NULL", fn);
  if (CPU_UNLIKELY(s->magic != CPU_STREAM_MAGIC))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a live cpu stream", fn,
                     (void *)handle);
  if (CPU_UNLIKELY(s->device != device))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: stream %p belongs to device %d, not %d", fn,
                     (void *)handle, (int)s->device, (int)device);
  *out = s;
  return HWP_OK;
}

static HWP_Status get_event(int32_t device, HWP_Event ev, const char *fn, int any_device) {
  if (ev == NULL) return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: event is NULL", fn);
  if (ev->magic != CPU_EVENT_MAGIC)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a live cpu event", fn,
                     (void *)ev);
  if (!any_device && ev->device != device)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: event %p belongs to device %d, not %d", fn,
                     (void *)ev, (int)ev->device, (int)device);
  return HWP_OK;
}

/* ---- submission ------------------------------------------------------------------------- */

/* *taken is set once the task has run or been queued (it then owns what it carries). */
static HWP_Status submit(int32_t device, HWP_Stream handle, const cpu_task *task, uint64_t work,
                         const char *fn, uint64_t correlation_id, int *taken) {
  *taken = 0;
  if (handle == NULL) { /* the synchronous default stream */
    HWP_Status st = cpu_synchronize_device(device);
    if (st != HWP_OK) return st;
    *taken = 1;
    return cpu_run_timed(task_run, task, device, correlation_id, fn);
  }
  cpu_stream *s = NULL;
  HWP_Status st = get_stream(device, handle, fn, &s);
  if (st != HWP_OK) return st;
  pthread_mutex_lock(&s->mu);
  if (idle_locked(s) && work <= g_cpu.inline_elements) {
    *taken = 1;
    /* small work on an idle stream: run it here, in order */
    st = cpu_run_timed(task_run, task, device, correlation_id, fn);
    pthread_mutex_unlock(&s->mu);
    return st;
  }
  cpu_task *t = task_alloc_locked(s);
  if (t == NULL) {
    pthread_mutex_unlock(&s->mu);
    return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no host memory for a stream task", fn);
  }
  memcpy(t, task, sizeof *t);
  t->correlation_id = correlation_id;
  t->name = fn;
  enqueue_locked(s, t);
  *taken = 1;
  pthread_mutex_unlock(&s->mu);
  return HWP_OK;
}

HWP_Status cpu_submit(int32_t device, HWP_Stream handle, const cpu_task *task, uint64_t work,
                      const char *fn) {
  int taken;
  return submit(device, handle, task, work, fn, 0, &taken);
}

HWP_Status cpu_submit_launch(const HWP_KernelContext *ctx, const cpu_task *task, uint64_t work,
                             const char *op) {
  int taken;
  return submit(ctx->device, ctx->stream, task, work, op, cpu_correlation_id(ctx), &taken);
}

HWP_Status cpu_submit_call(const HWP_KernelContext *ctx, const char *op,
                           HWP_Status (*run)(void *payload), void (*release)(void *payload),
                           void *payload, uint64_t work) {
  cpu_task task;
  memset(&task, 0, sizeof task);
  task.kind = CPU_TASK_CALLBACK;
  task.u.call.run = run;
  task.u.call.release = release;
  task.u.call.payload = payload;
  int taken;
  HWP_Status st = submit(ctx->device, ctx->stream, &task, work, op, cpu_correlation_id(ctx),
                         &taken);
  if (!taken && release != NULL) release(payload); /* never ran: release it here, once */
  return st;
}

HWP_Status cpu_submit_callback(int32_t device, HWP_Stream stream, const char *name,
                               uint64_t correlation_id, HWP_Status (*run)(void *payload),
                               void (*release)(void *payload), void *payload, uint64_t work) {
  cpu_task task;
  memset(&task, 0, sizeof task);
  task.kind = CPU_TASK_CALLBACK;
  task.u.call.run = run;
  task.u.call.release = release;
  task.u.call.payload = payload;
  int taken;
  HWP_Status st = submit(device, stream, &task, work, name, correlation_id, &taken);
  if (!taken && release != NULL) release(payload); /* never ran: release it here, once */
  return st;
}

/* ---- stream table ----------------------------------------------------------------------- */

static HWP_Status cpu_create_stream(int32_t device, HWP_Stream *out) {
  HWP_Status st = cpu_check_device(device, "create_stream");
  if (st != HWP_OK) return st;
  if (out == NULL) return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "create_stream: out is NULL");
  cpu_stream *s = calloc(1, sizeof *s);
  if (s == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "create_stream: out of host memory");
  s->magic = CPU_STREAM_MAGIC;
  s->device = device;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv_work, NULL);
  pthread_cond_init(&s->cv_idle, NULL);

  /* The worker blocks every signal: they belong to the host's threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&s->thread, NULL, worker_main, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    pthread_cond_destroy(&s->cv_idle);
    pthread_cond_destroy(&s->cv_work);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return cpu_error(HWP_ERROR_DEVICE, "create_stream: could not start a worker thread (error %d)",
                     rc);
  }
  cpu_registry *r = &g_registry[device];
  pthread_mutex_lock(&r->mu);
  s->next = r->streams;
  if (r->streams != NULL) r->streams->prev = s;
  r->streams = s;
  pthread_mutex_unlock(&r->mu);
  *out = (HWP_Stream)s;
  return HWP_OK;
}

static HWP_Status cpu_destroy_stream(int32_t device, HWP_Stream handle) {
  HWP_Status st = cpu_check_device(device, "destroy_stream");
  if (st != HWP_OK || handle == NULL) return st;
  cpu_stream *s = NULL;
  st = get_stream(device, handle, "destroy_stream", &s);
  if (st != HWP_OK) return st;

  cpu_registry *r = &g_registry[device];
  pthread_mutex_lock(&r->mu);
  if (s->prev != NULL) s->prev->next = s->next;
  else r->streams = s->next;
  if (s->next != NULL) s->next->prev = s->prev;
  pthread_mutex_unlock(&r->mu);

  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_signal(&s->cv_work);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL); /* the worker drains the queue before it exits */

  if (s->sticky != HWP_OK)
    cpu_log(HWP_LOG_WARNING, "destroy_stream: asynchronous work on the stream failed: %s",
            s->sticky_msg);
  while (s->free_tasks != NULL) {
    cpu_task *t = s->free_tasks;
    s->free_tasks = t->next;
    free(t);
  }
  pthread_cond_destroy(&s->cv_idle);
  pthread_cond_destroy(&s->cv_work);
  pthread_mutex_destroy(&s->mu);
  s->magic = 0;
  free(s);
  return HWP_OK;
}

static HWP_Status cpu_synchronize_stream(int32_t device, HWP_Stream handle) {
  HWP_Status st = cpu_check_device(device, "synchronize_stream");
  if (st != HWP_OK) return st;
  if (handle == NULL) return cpu_synchronize_device(device);
  cpu_stream *s = NULL;
  st = get_stream(device, handle, "synchronize_stream", &s);
  if (st != HWP_OK) return st;
  return stream_sync(s, "synchronize_stream");
}

static HWP_Status query_one_locked(cpu_stream *s) {
  if (!idle_locked(s)) return HWP_ERROR_NOT_READY;
  return take_sticky_locked(s, "query_stream");
}

static HWP_Status cpu_query_stream(int32_t device, HWP_Stream handle) {
  HWP_Status st = cpu_check_device(device, "query_stream");
  if (st != HWP_OK) return st;
  if (handle == NULL) { /* the default stream: every stream of the device */
    cpu_registry *r = &g_registry[device];
    pthread_mutex_lock(&r->mu);
    for (cpu_stream *s = r->streams; s != NULL && st == HWP_OK; s = s->next) {
      pthread_mutex_lock(&s->mu);
      st = query_one_locked(s);
      pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return st;
  }
  cpu_stream *s = NULL;
  st = get_stream(device, handle, "query_stream", &s);
  if (st != HWP_OK) return st;
  pthread_mutex_lock(&s->mu);
  st = query_one_locked(s);
  pthread_mutex_unlock(&s->mu);
  return st;
}

static HWP_Status cpu_create_event(int32_t device, HWP_Event *out) {
  HWP_Status st = cpu_check_device(device, "create_event");
  if (st != HWP_OK) return st;
  if (out == NULL) return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "create_event: out is NULL");
  HWP_Event ev = malloc(sizeof *ev);
  if (ev == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "create_event: out of host memory");
  ev->magic = CPU_EVENT_MAGIC;
  ev->device = device;
  ev->pending = NULL;
  *out = ev;
  return HWP_OK;
}

static HWP_Status cpu_destroy_event(int32_t device, HWP_Event ev) {
  HWP_Status st = cpu_check_device(device, "destroy_event");
  if (st != HWP_OK || ev == NULL) return st;
  st = get_event(device, ev, "destroy_event", 0);
  if (st != HWP_OK) return st;
  pthread_mutex_lock(&g_ev_mu);
  marker_release_locked(ev->pending); /* a queued RECORD/WAIT keeps its own reference */
  ev->pending = NULL;
  ev->magic = 0;
  pthread_mutex_unlock(&g_ev_mu);
  free(ev);
  return HWP_OK;
}

static void set_pending(HWP_Event ev, cpu_marker *m) {
  pthread_mutex_lock(&g_ev_mu);
  marker_release_locked(ev->pending);
  ev->pending = m;
  pthread_mutex_unlock(&g_ev_mu);
}

static HWP_Status cpu_record_event(int32_t device, HWP_Stream handle, HWP_Event ev) {
  HWP_Status st = cpu_check_device(device, "record_event");
  if (st != HWP_OK) return st;
  st = get_event(device, ev, "record_event", 0);
  if (st != HWP_OK) return st;
  if (handle == NULL) { /* default stream: everything on the device so far */
    st = cpu_synchronize_device(device);
    if (st == HWP_OK) set_pending(ev, NULL);
    return st;
  }
  cpu_stream *s = NULL;
  st = get_stream(device, handle, "record_event", &s);
  if (st != HWP_OK) return st;
  pthread_mutex_lock(&s->mu);
  if (idle_locked(s)) { /* nothing pending: the event is complete now */
    set_pending(ev, NULL);
    pthread_mutex_unlock(&s->mu);
    return HWP_OK;
  }
  cpu_marker *m = malloc(sizeof *m);
  cpu_task *t = m != NULL ? task_alloc_locked(s) : NULL;
  if (t == NULL) {
    pthread_mutex_unlock(&s->mu);
    free(m);
    return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "record_event: out of host memory");
  }
  m->refs = 2; /* the event and the RECORD task */
  m->done = 0;
  set_pending(ev, m);
  t->kind = CPU_TASK_RECORD;
  t->u.marker = m;
  enqueue_locked(s, t);
  pthread_mutex_unlock(&s->mu);
  return HWP_OK;
}

/* Captures the event's marker with a reference, or NULL when it is complete. */
static cpu_marker *capture_marker(HWP_Event ev) {
  pthread_mutex_lock(&g_ev_mu);
  cpu_marker *m = ev->pending;
  if (m != NULL && !m->done) ++m->refs;
  else m = NULL;
  pthread_mutex_unlock(&g_ev_mu);
  return m;
}

static HWP_Status cpu_synchronize_event(int32_t device, HWP_Event ev) {
  HWP_Status st = cpu_check_device(device, "synchronize_event");
  if (st != HWP_OK) return st;
  st = get_event(device, ev, "synchronize_event", 0);
  if (st != HWP_OK) return st;
  cpu_marker *m = capture_marker(ev);
  if (m != NULL) marker_wait_and_release(m);
  return HWP_OK;
}

static HWP_Status cpu_query_event(int32_t device, HWP_Event ev) {
  HWP_Status st = cpu_check_device(device, "query_event");
  if (st != HWP_OK) return st;
  st = get_event(device, ev, "query_event", 0);
  if (st != HWP_OK) return st;
  pthread_mutex_lock(&g_ev_mu);
  int done = ev->pending == NULL || ev->pending->done;
  pthread_mutex_unlock(&g_ev_mu);
  return done ? HWP_OK : HWP_ERROR_NOT_READY;
}

static HWP_Status cpu_stream_wait_event(int32_t device, HWP_Stream handle, HWP_Event ev) {
  HWP_Status st = cpu_check_device(device, "stream_wait_event");
  if (st != HWP_OK) return st;
  st = get_event(device, ev, "stream_wait_event", 1); /* the event may be another device's */
  if (st != HWP_OK) return st;
  cpu_stream *s = NULL;
  if (handle != NULL) {
    st = get_stream(device, handle, "stream_wait_event", &s);
    if (st != HWP_OK) return st;
  }
  cpu_marker *m = capture_marker(ev);
  if (m == NULL) return HWP_OK; /* already complete: nothing to wait for */
  if (s == NULL) { /* the synchronous default stream waits on the host */
    marker_wait_and_release(m);
    return HWP_OK;
  }
  pthread_mutex_lock(&s->mu);
  cpu_task *t = task_alloc_locked(s);
  if (t == NULL) {
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&g_ev_mu);
    marker_release_locked(m);
    pthread_mutex_unlock(&g_ev_mu);
    return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "stream_wait_event: out of host memory");
  }
  t->kind = CPU_TASK_WAIT;
  t->u.marker = m;
  enqueue_locked(s, t);
  pthread_mutex_unlock(&s->mu);
  return HWP_OK;
}

const HWP_StreamTable cpu_stream_table = {
    .struct_size = sizeof(HWP_StreamTable),
    .create_stream = cpu_create_stream,
    .destroy_stream = cpu_destroy_stream,
    .synchronize_stream = cpu_synchronize_stream,
    .query_stream = cpu_query_stream,
    .create_event = cpu_create_event,
    .destroy_event = cpu_destroy_event,
    .record_event = cpu_record_event,
    .synchronize_event = cpu_synchronize_event,
    .query_event = cpu_query_event,
    .stream_wait_event = cpu_stream_wait_event,
};
