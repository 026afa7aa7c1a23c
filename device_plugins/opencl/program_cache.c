/* hwport OpenCL plugin — the program cache: OpenCL C programs built lazily per (device, slot),
 * with an on-disk cache of program binaries.
 *
 * Disk entries live under $HWPORT_CACHE_DIR/opencl (else ~/.cache/hwport/opencl), one file per
 * key: <fnv1a64 hex>.bin, where the key hashes the source, the device name, vendor, driver
 * version, platform name and the build options. A file holds a header (magic, key, binary
 * length, FNV-1a of the binary) and the binary from CL_PROGRAM_BINARIES; one that is short,
 * corrupt, for another key or that the driver refuses is ignored and the source compiled (and
 * the entry rewritten). Files are written to a temporary name and renamed (atomic for readers).
 * Every compilation from source is logged at DEBUG as "opencl: compiled program <hash>". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "kernels.h"

#define OCL_CACHE_MAGIC "HWPOCLB1"

static pthread_mutex_t g_prog_mu = PTHREAD_MUTEX_INITIALIZER;
static cl_program g_programs[OCL_MAX_DEVICES][OCL_MAX_PROGRAMS]; /* guarded by g_prog_mu */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}
static uint64_t fnv1a_str(uint64_t h, const char *s) {
  return fnv1a(h, s, strlen(s) + 1); /* the NUL separates the fields */
}

/* The cache directory, created if needed; 0 when there is none. */
static int cache_dir(char *out, size_t cap) {
  const char *base = getenv("HWPORT_CACHE_DIR");
  int n;
  if (base != NULL && base[0] != '\0') {
    n = snprintf(out, cap, "%s/opencl", base);
  } else {
    const char *home = getenv("HOME");
    if (home == NULL || home[0] == '\0') return 0;
    n = snprintf(out, cap, "%s/.cache/hwport/opencl", home);
  }
  if (n <= 0 || (size_t)n >= cap) return 0;
  for (char *p = out + 1; *p; ++p) { /* mkdir -p */
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(out, 0755) != 0 && errno != EEXIST) { *p = '/'; return 0; }
    *p = '/';
  }
  if (mkdir(out, 0755) != 0 && errno != EEXIST) return 0;
  return 1;
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* The binary of a valid entry for `key` (malloc'd) or NULL. */
static unsigned char *cache_read(const char *path, uint64_t key, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  unsigned char head[32];
  unsigned char *bin = NULL;
  if (fread(head, 1, sizeof head, f) != sizeof head) goto bad;
  if (memcmp(head, OCL_CACHE_MAGIC, 8) != 0 || get_u64(head + 8) != key) goto bad;
  uint64_t n = get_u64(head + 16), sum = get_u64(head + 24);
  if (n == 0 || n > ((uint64_t)1 << 31)) goto bad;
  bin = (unsigned char *)malloc((size_t)n);
  if (bin == NULL || fread(bin, 1, (size_t)n, f) != (size_t)n) goto bad;
  if (fgetc(f) != EOF) goto bad; /* trailing garbage */
  if (fnv1a(1469598103934665603ull, bin, (size_t)n) != sum) goto bad;
  fclose(f);
  *len = (size_t)n;
  return bin;
bad:
  free(bin);
  fclose(f);
  return NULL;
}

static void cache_write(const char *path, uint64_t key, cl_program prog) {
  size_t n = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS ||
      n == 0)
    return;
  unsigned char *bin = (unsigned char *)malloc(n);
  if (bin == NULL) return;
  unsigned char *bins[1] = {bin};
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) != CL_SUCCESS) {
    free(bin);
    return;
  }
  unsigned char head[32];
  memcpy(head, OCL_CACHE_MAGIC, 8);
  put_u64(head + 8, key);
  put_u64(head + 16, (uint64_t)n);
  put_u64(head + 24, fnv1a(1469598103934665603ull, bin, n));
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%lx", path, (long)getpid(),
           (unsigned long)(uintptr_t)pthread_self());
  FILE *f = fopen(tmp, "wb");
  int ok = f != NULL && fwrite(head, 1, sizeof head, f) == sizeof head &&
           fwrite(bin, 1, n, f) == n;
  if (f != NULL && fclose(f) != 0) ok = 0;
  if (ok && rename(tmp, path) == 0) {
    ocl_log(HWP_LOG_DEBUG, "opencl: stored program binary %s", path);
  } else {
    unlink(tmp);
  }
  free(bin);
}

/* Builds prog for dev. A failure is reported with `bad` (the caller's status for a program that
 * does not compile) and the build log, which also goes into log (NUL-terminated, at most cap
 * bytes) when log is not NULL. */
static HWP_Status build(cl_program prog, cl_device_id dev, const char *options, const char *fn,
                        const char *what, HWP_Status bad, char *log, size_t cap) {
  cl_int err = clBuildProgram(prog, 1, &dev, options, NULL, NULL);
  if (err == CL_SUCCESS) return HWP_OK;
  char text[8192] = "";
  size_t got = 0; /* the whole log's size: a buffer smaller than it gets nothing */
  if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &got) == CL_SUCCESS &&
      got > 0) {
    char *whole = (char *)malloc(got + 1);
    if (whole != NULL &&
        clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, got, whole, NULL) == CL_SUCCESS) {
      whole[got] = '\0';
      snprintf(text, sizeof text, "%s", whole);
    }
    free(whole);
  }
  if (text[0] == '\0')
    snprintf(text, sizeof text, "clBuildProgram failed with %s (the driver gave no build log)",
             ocl_cl_error_name(err));
  if (log != NULL && cap > 0) snprintf(log, cap, "%s", text);
  int source_error = err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS ||
                     err == CL_COMPILE_PROGRAM_FAILURE || err == CL_INVALID_COMPILER_OPTIONS;
  return ocl_error(source_error ? bad : HWP_ERROR_DEVICE,
                   "%s: clBuildProgram (%s) failed: %s: %.1500s", fn, what,
                   ocl_cl_error_name(err), text);
}

HWP_Status ocl_program_build(int32_t device, const char *source, const char *options,
                             HWP_Status bad, char *log, size_t log_cap, cl_program *out,
                             const char *fn) {
  HWP_Status st = ocl_check_device(device, fn);
  if (st != HWP_OK) return st;
  if (options == NULL) options = "";
  ocl_device *d = &g_ocl.devices[device];
  cl_context ctx;
  st = ocl_context(device, &ctx, fn);
  if (st != HWP_OK) return st;

  uint64_t key = fnv1a_str(1469598103934665603ull, source);
  key = fnv1a_str(key, d->name);
  key = fnv1a_str(key, d->vendor);
  key = fnv1a_str(key, d->driver_version);
  key = fnv1a_str(key, d->platform_name);
  key = fnv1a_str(key, options);

  char dir[4096], path[4160];
  int have_dir = cache_dir(dir, sizeof dir);
  if (have_dir) snprintf(path, sizeof path, "%s/%016llx.bin", dir, (unsigned long long)key);

  cl_program prog = NULL;
  cl_int err;
  if (have_dir) {
    size_t len = 0;
    unsigned char *bin = cache_read(path, key, &len);
    if (bin != NULL) {
      const unsigned char *bins[1] = {bin};
      cl_int bst = CL_SUCCESS;
      prog = clCreateProgramWithBinary(ctx, 1, &d->id, &len, bins, &bst, &err);
      free(bin);
      if (prog != NULL &&
          (err != CL_SUCCESS || bst != CL_SUCCESS ||
           build(prog, d->id, options, fn, "cached binary", HWP_ERROR_DEVICE, NULL, 0) !=
               HWP_OK)) {
        clReleaseProgram(prog);
        prog = NULL;
      }
      if (prog == NULL)
        ocl_log(HWP_LOG_DEBUG, "opencl: cached program %016llx unusable, recompiling",
                (unsigned long long)key);
      else
        ocl_log(HWP_LOG_DEBUG, "opencl: loaded program %016llx from the cache",
                (unsigned long long)key);
    } else if (access(path, F_OK) == 0) {
      ocl_log(HWP_LOG_DEBUG, "opencl: cached program %016llx corrupt or stale, recompiling",
              (unsigned long long)key);
    }
  }
  if (prog == NULL) {
    prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    if (prog == NULL || err != CL_SUCCESS)
      return ocl_cl_error(err, fn, "clCreateProgramWithSource");
    st = build(prog, d->id, options, fn, "source", bad, log, log_cap);
    if (st != HWP_OK) {
      clReleaseProgram(prog);
      return st;
    }
    ocl_log(HWP_LOG_DEBUG, "opencl: compiled program %016llx for device %d (%s)",
            (unsigned long long)key, (int)device, d->name);
    if (have_dir) cache_write(path, key, prog);
  }
  *out = prog;
  return HWP_OK;
}

HWP_Status ocl_program_get(int32_t device, int slot, const char *source, const char *options,
                           cl_program *out, const char *fn) {
  HWP_Status st = ocl_check_device(device, fn);
  if (st != HWP_OK) return st;
  if (slot < 0 || slot >= OCL_MAX_PROGRAMS || source == NULL)
    return ocl_error(HWP_ERROR_INTERNAL, "%s: bad program slot %d", fn, slot);
  pthread_mutex_lock(&g_prog_mu);
  if (g_programs[device][slot] == NULL) {
    cl_program prog = NULL;
    st = ocl_program_build(device, source, options, HWP_ERROR_DEVICE, NULL, 0, &prog, fn);
    if (st == HWP_OK) g_programs[device][slot] = prog;
  }
  if (st == HWP_OK) *out = g_programs[device][slot];
  pthread_mutex_unlock(&g_prog_mu);
  return st;
}

void ocl_program_cache_shutdown(void) {
  ocl_kernel_cache_shutdown(); /* the cached kernels of these programs first */
  pthread_mutex_lock(&g_prog_mu);
  for (int d = 0; d < OCL_MAX_DEVICES; ++d)
    for (int s = 0; s < OCL_MAX_PROGRAMS; ++s)
      if (g_programs[d][s] != NULL) {
        clReleaseProgram(g_programs[d][s]);
        g_programs[d][s] = NULL;
      }
  pthread_mutex_unlock(&g_prog_mu);
}

int ocl_device_has_fp64(cl_device_id id) {
  cl_device_fp_config cfg = 0;
  if (clGetDeviceInfo(id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof cfg, &cfg, NULL) == CL_SUCCESS &&
      cfg != 0)
    return 1;
  return ocl_device_has_extension(id, "cl_khr_fp64");
}

HWP_Status ocl_launch_done(const HWP_KernelContext *ctx, cl_command_queue q, const char *fn) {
  /* Launches behind a stream's gate are flushed when it opens (stream_gate.c). */
  if (ctx->stream != NULL && ocl_gate_closed((const ocl_stream *)ctx->stream)) return HWP_OK;
  cl_int err = ctx->stream != NULL ? clFlush(q) : clFinish(q);
  if (err != CL_SUCCESS)
    return ocl_cl_error(err, fn, ctx->stream != NULL ? "clFlush" : "clFinish");
  return HWP_OK;
}
