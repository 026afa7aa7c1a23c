/* hwport OpenCL plugin — batched kernel submission: a stream's launches wait behind a gate.
 *
 * Measured on PoCL 3.1 here (benchmarks/opencl_launch_floor.c): every clEnqueueNDRangeKernel
 * whose command is ready at once wakes PoCL's worker threads, 3-4 us per launch on the host.
 * A command that waits on an incomplete user event is only queued: ~1.4 us. So a kernel launch
 * on a stream first puts a gate there (a marker waiting on a user event) when none is, and the
 * launches after it wait behind that marker (the queue is in order); PoCL then takes the batch
 * at once when the gate opens.
 *
 * Only long bursts of small launches are gated: the first OCL_GATE_AFTER launches after
 * anything else on the stream (a copy, a record, a wait: whatever opens the gate) or after a
 * pause of OCL_GATE_BURST_US go straight to the device, so a few ops followed by a
 * synchronize or a host read are not delayed; a launch of more than OCL_GATE_ITEMS
 * work-items opens the gate and goes at once, so the device works while the host enqueues
 * (measured here: gating bursts of 20-64 ops of 64K elements took 5-15% longer, the device
 * idle behind the gate; bursts of 16-40 1-element ops gained nothing, the gate's own cost,
 * a user event, a marker and a wake-up of the gate thread, not paid back).
 *
 * A gate opens (ocl_gate_open):
 *  - before anything else is enqueued on the stream or waits on it: every other path gets the
 *    queue through ocl_stream_queue, which opens the gate (copies, fills, markers, barriers,
 *    synchronize, query, record); ocl_read_now (a blocking read inside an op) opens it; so does
 *    ocl_synchronize_device (host copies on the NULL stream synchronize the device first);
 *  - after OCL_GATE_MAX launches behind it;
 *  - at the latest OCL_GATE_US microseconds after it was put there, by the gate thread: the
 *    device never idles long while the host does something else, and a gate put there by one
 *    thread while another waits on the stream cannot block that wait for good.
 * HWPORT_OPENCL_BATCH=0 turns gating off (every launch is submitted at once). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define OCL_GATE_MAX 256
#define OCL_GATE_US 200
#define OCL_GATE_BURST_US 50 /* a launch this soon after the previous one is in its burst */
#define OCL_GATE_AFTER 32    /* launches of a burst submitted at once before a gate */
#define OCL_GATE_ITEMS 4096  /* launches of more work-items are never gated */

static pthread_once_t g_gate_once = PTHREAD_ONCE_INIT;
static int g_gate_on;           /* gating enabled and the gate thread running */
static pthread_t g_gate_thread;
static pthread_mutex_t g_gate_mu = PTHREAD_MUTEX_INITIALIZER; /* guards the two below */
static pthread_cond_t g_gate_cv = PTHREAD_COND_INITIALIZER;
static uint64_t g_gates_put;    /* gates put since start: the thread's wake-up condition */
static int g_gate_stop;

static uint64_t now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* Opens s's gate when it is older than `older_than_us` (0: any). Takes s->gate_mu. */
static void gate_open_if(ocl_stream *s, uint64_t older_than_us, uint64_t now) {
  pthread_mutex_lock(&s->gate_mu);
  cl_event g = NULL;
  if (s->gate != NULL && (older_than_us == 0 || now - s->gate_since >= older_than_us)) {
    g = s->gate;
    s->gate = NULL;
    s->gated = 0;
  }
  pthread_mutex_unlock(&s->gate_mu);
  if (g != NULL) {
    clSetUserEventStatus(g, CL_COMPLETE);
    clReleaseEvent(g);
    clFlush(s->queue); /* the launches behind the gate were not flushed (ocl_launch_done) */
  }
}

/* Opens every gate older than OCL_GATE_US; returns whether any gate is still closed. */
static int sweep(uint64_t now) {
  int left = 0;
  for (int32_t i = 0; i < g_ocl.num_devices; ++i) {
    ocl_device *d = &g_ocl.devices[i];
    pthread_mutex_lock(&d->mu); /* streams are unlinked under it before they are freed */
    for (ocl_stream *s = d->streams; s != NULL; s = s->next) {
      gate_open_if(s, OCL_GATE_US, now);
      left |= __atomic_load_n(&s->gate, __ATOMIC_RELAXED) != NULL;
    }
    pthread_mutex_unlock(&d->mu);
  }
  return left;
}

static void *gate_main(void *arg) {
  (void)arg;
  uint64_t seen = 0;
  pthread_mutex_lock(&g_gate_mu);
  while (!g_gate_stop) {
    while (!g_gate_stop && g_gates_put == seen) pthread_cond_wait(&g_gate_cv, &g_gate_mu);
    if (g_gate_stop) break;
    seen = g_gates_put;
    pthread_mutex_unlock(&g_gate_mu);
    int left = 1;
    while (left) { /* sleep while gates are closed, opening each once it is old enough */
      struct timespec ts = {0, OCL_GATE_US * 1000 / 2};
      nanosleep(&ts, NULL);
      left = sweep(now_us());
    }
    pthread_mutex_lock(&g_gate_mu);
  }
  pthread_mutex_unlock(&g_gate_mu);
  return NULL;
}

static void gate_init(void) {
  const char *env = getenv("HWPORT_OPENCL_BATCH");
  if (env != NULL && strcmp(env, "0") == 0) return;
  if (pthread_create(&g_gate_thread, NULL, gate_main, NULL) != 0) return; /* ungated */
  g_gate_on = 1;
}

int ocl_gate_closed(const ocl_stream *s) {
  return s != NULL && __atomic_load_n(&s->gate, __ATOMIC_ACQUIRE) != NULL;
}

void ocl_gate_open(ocl_stream *s) {
  if (s == NULL) return;
  if (__atomic_load_n(&s->in_burst, __ATOMIC_RELAXED)) __atomic_store_n(&s->in_burst, 0, __ATOMIC_RELAXED);
  if (__atomic_load_n(&s->gate, __ATOMIC_ACQUIRE) != NULL) gate_open_if(s, 0, 0);
}

int ocl_gate_before_launch(ocl_stream *s, cl_command_queue q, uint64_t items) {
  pthread_once(&g_gate_once, gate_init);
  if (!g_gate_on || s == NULL) return 0;
  if (items > OCL_GATE_ITEMS) { /* real work: to the device at once, after what is gated */
    ocl_gate_open(s);
    return 0;
  }
  pthread_mutex_lock(&s->gate_mu);
  if (s->gate != NULL) {
    const int full = ++s->gated >= OCL_GATE_MAX;
    pthread_mutex_unlock(&s->gate_mu);
    return full;
  }
  /* Only a burst is gated: launches each right after another launch on the stream (nothing
   * else enqueued, no wait in between: ocl_gate_open clears in_burst) and soon after it, from
   * the OCL_GATE_AFTER-th on. The first ones go to the device at once, so a few ops followed
   * by a synchronize or a host read cost what they did without gates (a gate's own cost, a
   * user event, a marker and a wake-up of the gate thread, is paid back over a long burst
   * only), and the device starts while the host works. */
  const uint64_t now = now_us();
  const int burst = s->in_burst && now - s->last_launch_us < OCL_GATE_BURST_US;
  s->burst_len = burst ? s->burst_len + 1 : 0;
  s->in_burst = 1;
  s->last_launch_us = now;
  if (s->burst_len < OCL_GATE_AFTER) {
    pthread_mutex_unlock(&s->gate_mu);
    return 0;
  }
  cl_int err = CL_SUCCESS;
  cl_event g = clCreateUserEvent(s->ctx, &err);
  if (g == NULL || err != CL_SUCCESS) {
    pthread_mutex_unlock(&s->gate_mu);
    return 0; /* no gate: the launch is submitted at once */
  }
  err = clEnqueueMarkerWithWaitList(q, 1, &g, NULL);
  if (err != CL_SUCCESS) {
    pthread_mutex_unlock(&s->gate_mu);
    clSetUserEventStatus(g, CL_COMPLETE);
    clReleaseEvent(g);
    return 0;
  }
  ocl_stream_track((HWP_Stream)s, NULL); /* the marker is a command on the queue too */
  s->gate_since = now;
  s->gated = 1;
  __atomic_store_n(&s->gate, g, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&s->gate_mu);
  pthread_mutex_lock(&g_gate_mu);
  ++g_gates_put;
  pthread_cond_signal(&g_gate_cv);
  pthread_mutex_unlock(&g_gate_mu);
  return 0;
}

void ocl_gate_shutdown(void) {
  if (!g_gate_on) return;
  pthread_mutex_lock(&g_gate_mu);
  g_gate_stop = 1;
  pthread_cond_signal(&g_gate_cv);
  pthread_mutex_unlock(&g_gate_mu);
  pthread_join(g_gate_thread, NULL);
  g_gate_on = 0;
}
