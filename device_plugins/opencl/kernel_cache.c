/* hwport OpenCL plugin — cl_kernel objects reused across launches.
 *
 * Measured on PoCL 3.1 (benchmarks/opencl_launch_floor.c, bursts of launches + clFinish): a
 * launch with a kernel object fresh from clCreateKernel cost 1.3-2.5x one with a kernel already
 * enqueued before (PoCL sets up a kernel object's launch data on its first enqueue; 5-8 us
 * against 2-3 us on a quiet machine). So kernels are kept per (program, name).
 *
 * OpenCL lets one thread at a time set a kernel's arguments and enqueue it, so a cached kernel
 * is borrowed for one launch (ocl_kernel_borrow) and given back after its enqueue
 * (ocl_kernel_release): the command captured the argument values then. A launch that finds
 * every kernel of its key borrowed creates one; a given-back kernel for which there is no room
 * is released. Every launch sets every argument (as with a fresh kernel), so no stale argument
 * of an earlier launch is ever used. Guarded by one mutex, held for a hash probe only. */
#include <stdint.h>
#include <string.h>

#include "kernels.h"

#define KC_ENTRIES 2048 /* (program, name) keys; power of two */
#define KC_PER_KEY 2    /* idle kernels kept per key: one per concurrently launching thread */
#define KC_NAME 56

typedef struct kc_entry {
  cl_program prog; /* NULL: empty */
  char name[KC_NAME];
  cl_kernel k[KC_PER_KEY];
  unsigned char lent[KC_PER_KEY]; /* k[i] is borrowed */
} kc_entry;

static pthread_mutex_t g_kc_mu = PTHREAD_MUTEX_INITIALIZER;
static kc_entry g_kc[KC_ENTRIES]; /* guarded by g_kc_mu */

static size_t kc_hash(cl_program prog, const char *name) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)prog;
  for (const unsigned char *p = (const unsigned char *)name; *p; ++p) {
    h ^= *p;
    h *= 1099511628211ull;
  }
  return (size_t)(h ^ (h >> 29)) & (KC_ENTRIES - 1);
}

/* The entry of (prog, name), made when `make`; NULL when absent or the table is full (or the
 * name too long to keep). Caller holds g_kc_mu. */
static kc_entry *kc_find(cl_program prog, const char *name, int make) {
  if (strlen(name) >= KC_NAME) return NULL;
  size_t i = kc_hash(prog, name);
  for (size_t probes = 0; probes < KC_ENTRIES; ++probes, i = (i + 1) & (KC_ENTRIES - 1)) {
    kc_entry *e = &g_kc[i];
    if (e->prog == NULL) {
      if (!make) return NULL;
      e->prog = prog;
      strcpy(e->name, name);
      return e;
    }
    if (e->prog == prog && strcmp(e->name, name) == 0) return e;
  }
  return NULL;
}

HWP_Status ocl_kernel_borrow(cl_program prog, const char *name, cl_kernel *out,
                             const char *fn) {
  pthread_mutex_lock(&g_kc_mu);
  kc_entry *e = kc_find(prog, name, 1);
  if (e != NULL) {
    for (int i = 0; i < KC_PER_KEY; ++i) {
      if (e->k[i] != NULL && !e->lent[i]) {
        e->lent[i] = 1;
        *out = e->k[i];
        pthread_mutex_unlock(&g_kc_mu);
        return HWP_OK;
      }
    }
  }
  pthread_mutex_unlock(&g_kc_mu);
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(prog, name, &err);
  if (k == NULL || err != CL_SUCCESS) return ocl_cl_error(err, fn, "clCreateKernel");
  *out = k; /* adopted into the cache when it is given back, if there is room */
  return HWP_OK;
}

void ocl_kernel_release(cl_kernel k) {
  if (k == NULL) return;
  cl_program prog = NULL;
  char name[KC_NAME];
  size_t got = 0;
  if (clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof prog, &prog, NULL) != CL_SUCCESS ||
      clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, &got) != CL_SUCCESS ||
      got == 0 || got > sizeof name) {
    clReleaseKernel(k);
    return;
  }
  name[sizeof name - 1] = '\0';
  pthread_mutex_lock(&g_kc_mu);
  kc_entry *e = kc_find(prog, name, 0);
  int kept = 0;
  if (e != NULL) {
    for (int i = 0; i < KC_PER_KEY && !kept; ++i)
      if (e->k[i] == k) e->lent[i] = 0, kept = 1;
    for (int i = 0; i < KC_PER_KEY && !kept; ++i)
      if (e->k[i] == NULL) e->k[i] = k, e->lent[i] = 0, kept = 1;
  }
  pthread_mutex_unlock(&g_kc_mu);
  if (!kept) clReleaseKernel(k);
}

void ocl_kernel_cache_shutdown(void) {
  pthread_mutex_lock(&g_kc_mu);
  for (size_t i = 0; i < KC_ENTRIES; ++i) {
    for (int j = 0; j < KC_PER_KEY; ++j)
      if (g_kc[i].k[j] != NULL) clReleaseKernel(g_kc[i].k[j]);
    memset(&g_kc[i], 0, sizeof g_kc[i]);
  }
  pthread_mutex_unlock(&g_kc_mu);
}
