/* hwport OpenCL plugin — the codegen target (ABI 1.2, hwport/codegen.h): dialect
 * "opencl-c-1.2", built with clBuildProgram.
 *
 * Programs are cached per process by (device, source, options): compiling the same source
 * again hands out the program already built (one build per process, concurrent compiles of
 * one source wait for the first), and the build itself goes through program_cache.c's on-disk
 * binary cache (across processes). A module holds a reference on its cache entry; entries no
 * module holds are released when the cache grows past OCG_MAX_ENTRIES, and at shutdown.
 *
 * Options: "-O0" becomes -cl-opt-disable, other -O levels are dropped (OpenCL optimizes by
 * default), anything else goes to clBuildProgram as is; "-cl-std=CL1.2" is added unless the
 * options name a -cl-std. serialize writes a header (magic, the device's identity, length,
 * checksum) and CL_PROGRAM_BINARIES; deserialize refuses bytes of another device or corrupt
 * ones before the driver sees them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_codegen.h"

#define OCG_DIALECT "opencl-c-1.2"
#define OCG_MAX_ENTRIES 256
#define OCG_SER_MAGIC "HWPOCG01"
#define OCG_SER_HEAD 32 /* magic, device identity, binary length, binary checksum */

static const char *const k_dialects[] = {OCG_DIALECT, NULL};

/* ---- helpers ------------------------------------------------------------------------------ */

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
#define FNV0 1469598103934665603ull

static uint64_t device_identity(int32_t device) {
  const ocl_device *d = &g_ocl.devices[device];
  uint64_t h = fnv(FNV0, d->name, strlen(d->name) + 1);
  h = fnv(h, d->vendor, strlen(d->vendor) + 1);
  h = fnv(h, d->driver_version, strlen(d->driver_version) + 1);
  return fnv(h, d->platform_name, strlen(d->platform_name) + 1);
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void put_log(char *log, size_t cap, const char *text) {
  if (log != NULL && cap > 0) snprintf(log, cap, "%s", text);
}

int ocg_has_fp64(int32_t device) { return ocl_dev_fp64(device); }

/* ---- target info -------------------------------------------------------------------------- */

typedef struct ocg_target {
  int ready;
  HWP_Status status; /* HWP_ERROR_NOT_SUPPORTED: no OpenCL C 1.2 */
  char why[512];
  char arch[400]; /* name (255) + driver version (63) */
  HWP_CodegenTargetInfo info;
} ocg_target;

static pthread_mutex_t g_target_mu = PTHREAD_MUTEX_INITIALIZER;
static ocg_target g_targets[OCL_MAX_DEVICES]; /* guarded by g_target_mu */

/* Whether a program binary of `device` loads back (clCreateProgramWithBinary + build). */
static int binaries_round_trip(int32_t device) {
  static const char *src = "__kernel void hwp_probe(__global int *p) { p[0] = 1; }";
  cl_program prog = NULL, back = NULL;
  if (ocl_program_build(device, src, "-cl-std=CL1.2", HWP_ERROR_DEVICE, NULL, 0, &prog,
                        "codegen.get_target_info") != HWP_OK)
    return 0;
  size_t n = 0;
  unsigned char *bin = NULL;
  int ok = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) == CL_SUCCESS &&
           n > 0 && (bin = (unsigned char *)malloc(n)) != NULL;
  if (ok) {
    unsigned char *bins[1] = {bin};
    ok = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS;
  }
  cl_context ctx;
  if (ok) ok = ocl_context(device, &ctx, "codegen.get_target_info") == HWP_OK;
  if (ok) {
    const unsigned char *bins[1] = {bin};
    cl_int bst = CL_SUCCESS, err = CL_SUCCESS;
    back = clCreateProgramWithBinary(ctx, 1, &g_ocl.devices[device].id, &n, bins, &bst, &err);
    ok = back != NULL && err == CL_SUCCESS && bst == CL_SUCCESS &&
         clBuildProgram(back, 1, &g_ocl.devices[device].id, "", NULL, NULL) == CL_SUCCESS;
    if (ok) {
      cl_int kerr = CL_SUCCESS;
      cl_kernel k = clCreateKernel(back, "hwp_probe", &kerr);
      ok = k != NULL && kerr == CL_SUCCESS;
      if (k != NULL) clReleaseKernel(k);
    }
  }
  if (back != NULL) clReleaseProgram(back);
  free(bin);
  clReleaseProgram(prog);
  return ok;
}

static void compute_target(int32_t device, ocg_target *t) {
  ocl_device *d = &g_ocl.devices[device];
  char cver[128] = "";
  int major = 0, minor = 0;
  if (clGetDeviceInfo(d->id, CL_DEVICE_OPENCL_C_VERSION, sizeof cver - 1, cver, NULL) !=
          CL_SUCCESS ||
      sscanf(cver, "OpenCL C %d.%d", &major, &minor) != 2)
    major = 1, minor = 0;
  if (major * 10 + minor < 12) {
    t->status = HWP_ERROR_NOT_SUPPORTED;
    snprintf(t->why, sizeof t->why, "device %d (%s) compiles %s, not OpenCL C 1.2",
             (int)device, d->name, cver[0] ? cver : "an unknown OpenCL C version");
    return;
  }
  HWP_CodegenTargetInfo *in = &t->info;
  memset(in, 0, sizeof *in);
  in->struct_size = sizeof *in;
  in->dialects = k_dialects;
  snprintf(t->arch, sizeof t->arch, "%s (driver %s)", d->name, d->driver_version);
  in->architecture = t->arch;
  in->flags = HWP_CODEGEN_SIMT;
  if (ocl_device_has_extension(d->id, "cl_khr_subgroup_shuffle") ||
      ocl_device_has_extension(d->id, "cl_intel_subgroups"))
    in->flags |= HWP_CODEGEN_SUBGROUP_SHUFFLE;
  if (ocl_device_has_extension(d->id, "cl_khr_fp16")) in->flags |= HWP_CODEGEN_FLOAT16;
  if (ocg_has_fp64(device)) in->flags |= HWP_CODEGEN_FLOAT64;
  if (binaries_round_trip(device)) in->flags |= HWP_CODEGEN_SERIALIZE;
  int32_t multiple = ocl_ew_preferred_multiple(device);
  in->simd_width = multiple > 0 ? (uint32_t)multiple : 1;
  cl_uint vec = 0;
  if (clGetDeviceInfo(d->id, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof vec, &vec, NULL) !=
          CL_SUCCESS ||
      vec == 0)
    vec = 1;
  in->preferred_vector_width = vec;
  in->max_group_size = d->max_work_group_size > 0 ? (uint32_t)d->max_work_group_size : 1;
  in->compute_units = d->compute_units > 0 ? (uint32_t)d->compute_units : 1;
  in->local_memory_bytes = ocl_dev_local_mem(device);
  in->max_grid_size = 0;
  t->status = HWP_OK;
}

static HWP_Status target_of(int32_t device, const ocg_target **out, const char *fn) {
  HWP_Status st = ocl_check_device(device, fn);
  if (st != HWP_OK) return st;
  pthread_mutex_lock(&g_target_mu);
  ocg_target *t = &g_targets[device];
  if (!t->ready) {
    compute_target(device, t);
    t->ready = 1;
  }
  pthread_mutex_unlock(&g_target_mu);
  if (t->status != HWP_OK) return ocl_error(t->status, "%s: %s", fn, t->why);
  *out = t;
  return HWP_OK;
}

static HWP_Status ocg_get_target_info(int32_t device, HWP_CodegenTargetInfo *info) {
  const char *fn = "codegen.get_target_info";
  if (info == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: info is NULL", fn);
  if (info->struct_size < sizeof(size_t))
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: info->struct_size %zu is too small", fn,
                     info->struct_size);
  const ocg_target *t = NULL;
  HWP_Status st = target_of(device, &t, fn);
  if (st != HWP_OK) return st;
  size_t n = info->struct_size < sizeof t->info ? info->struct_size : sizeof t->info;
  memcpy((char *)info + sizeof(size_t), (const char *)&t->info + sizeof(size_t),
         n - sizeof(size_t));
  return HWP_OK;
}

/* ---- the per-process program cache -------------------------------------------------------- */

struct ocg_entry {
  int32_t device;
  uint64_t hash;
  char *key; /* source, NUL, options, NUL */
  size_t key_len;
  cl_program prog; /* NULL while its first compile runs */
  int refs;        /* modules holding it */
  ocg_entry *next;
};

static pthread_mutex_t g_cache_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cache_cv = PTHREAD_COND_INITIALIZER;
static ocg_entry *g_entries; /* guarded by g_cache_mu */
static int g_num_entries;

static ocg_entry *cache_find(int32_t device, uint64_t hash, const char *key, size_t len) {
  for (ocg_entry *e = g_entries; e != NULL; e = e->next)
    if (e->device == device && e->hash == hash && e->key_len == len &&
        memcmp(e->key, key, len) == 0)
      return e;
  return NULL;
}

static void cache_unlink(ocg_entry *gone) {
  for (ocg_entry **p = &g_entries; *p != NULL; p = &(*p)->next)
    if (*p == gone) {
      *p = gone->next;
      --g_num_entries;
      return;
    }
}

/* Releases the built entries no module holds (caller holds g_cache_mu). */
static void cache_trim(void) {
  ocg_entry **p = &g_entries;
  while (*p != NULL) {
    ocg_entry *e = *p;
    if (e->refs == 0 && e->prog != NULL) {
      *p = e->next;
      --g_num_entries;
      clReleaseProgram(e->prog);
      free(e->key);
      free(e);
    } else {
      p = &e->next;
    }
  }
}

/* The options clBuildProgram gets for the host's `options` (see the file comment). */
static char *translate_options(const char *options) {
  size_t n = options != NULL ? strlen(options) : 0;
  char *out = (char *)malloc(2 * n + 32), *copy = (char *)malloc(n + 1);
  if (out == NULL || copy == NULL) {
    free(out);
    free(copy);
    return NULL;
  }
  out[0] = '\0';
  memcpy(copy, options != NULL ? options : "", n + 1);
  int has_std = 0;
  for (char *p = copy; *p != '\0';) { /* split at blanks in place (strtok is not thread-safe) */
    while (*p == ' ' || *p == '\t' || *p == '\n') *p++ = '\0';
    if (*p == '\0') break;
    const char *tok = p;
    while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\n') ++p;
    if (*p != '\0') *p++ = '\0';
    if (strcmp(tok, "-O0") == 0) {
      tok = "-cl-opt-disable";
    } else if (tok[0] == '-' && tok[1] == 'O') {
      continue;
    }
    if (strncmp(tok, "-cl-std=", 8) == 0) has_std = 1;
    strcat(out, out[0] ? " " : "");
    strcat(out, tok);
  }
  if (!has_std) strcat(out, out[0] ? " -cl-std=CL1.2" : "-cl-std=CL1.2");
  free(copy);
  return out;
}

/* The cache's program for (device, source, cl_opts), built on first use; one reference on its
 * entry for the caller. */
static HWP_Status cache_get(int32_t device, const char *source, const char *cl_opts,
                            char *log, size_t log_cap, ocg_entry **out) {
  size_t slen = strlen(source), olen = strlen(cl_opts), len = slen + olen + 2;
  char *key = (char *)malloc(len);
  if (key == NULL) return ocl_error(HWP_ERROR_OUT_OF_MEMORY, "codegen.compile: no host memory");
  memcpy(key, source, slen + 1);
  memcpy(key + slen + 1, cl_opts, olen + 1);
  uint64_t hash = fnv(FNV0, key, len);
  pthread_mutex_lock(&g_cache_mu);
  for (;;) {
    ocg_entry *e = cache_find(device, hash, key, len);
    if (e != NULL && e->prog != NULL) { /* built: a cache hit */
      ++e->refs;
      pthread_mutex_unlock(&g_cache_mu);
      free(key);
      *out = e;
      return HWP_OK;
    }
    if (e == NULL) break;
    pthread_cond_wait(&g_cache_cv, &g_cache_mu); /* another thread builds it */
  }
  if (g_num_entries >= OCG_MAX_ENTRIES) cache_trim();
  ocg_entry *e = (ocg_entry *)calloc(1, sizeof *e);
  if (e == NULL) {
    pthread_mutex_unlock(&g_cache_mu);
    free(key);
    return ocl_error(HWP_ERROR_OUT_OF_MEMORY, "codegen.compile: no host memory");
  }
  e->device = device;
  e->hash = hash;
  e->key = key;
  e->key_len = len;
  e->next = g_entries;
  g_entries = e;
  ++g_num_entries;
  pthread_mutex_unlock(&g_cache_mu);

  cl_program prog = NULL;
  HWP_Status st = ocl_program_build(device, source, cl_opts, HWP_ERROR_INVALID_ARGUMENT, log,
                                    log_cap, &prog, "codegen.compile");
  pthread_mutex_lock(&g_cache_mu);
  if (st == HWP_OK) {
    e->prog = prog;
    e->refs = 1;
  } else { /* not cached: a waiter compiles it again and gets its own log */
    cache_unlink(e);
  }
  pthread_cond_broadcast(&g_cache_cv);
  pthread_mutex_unlock(&g_cache_mu);
  if (st != HWP_OK) {
    free(e->key);
    free(e);
    return st;
  }
  *out = e;
  return HWP_OK;
}

static void cache_release(ocg_entry *e) {
  pthread_mutex_lock(&g_cache_mu);
  --e->refs;
  pthread_mutex_unlock(&g_cache_mu);
}

void ocl_codegen_shutdown(void) {
  pthread_mutex_lock(&g_cache_mu);
  for (ocg_entry *e = g_entries; e != NULL; e = e->next) e->refs = 0;
  cache_trim();
  pthread_mutex_unlock(&g_cache_mu);
}

/* ---- modules ------------------------------------------------------------------------------ */

static HWP_Status new_module(int32_t device, cl_program prog, ocg_entry *entry,
                             HWP_CodegenModule *out, const char *fn) {
  ocg_module *m = (ocg_module *)calloc(1, sizeof *m);
  if (m == NULL) return ocl_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no host memory", fn);
  m->magic = OCG_MODULE_MAGIC;
  m->device = device;
  m->prog = prog;
  m->entry = entry;
  pthread_mutex_init(&m->mu, NULL);
  *out = (HWP_CodegenModule)m;
  return HWP_OK;
}

static HWP_Status check_dialect(int32_t device, const char *dialect, char *log, size_t cap,
                                const char *fn) {
  const ocg_target *t = NULL;
  HWP_Status st = target_of(device, &t, fn);
  if (st != HWP_OK) {
    put_log(log, cap, ocl_get_last_error());
    return st;
  }
  if (dialect == NULL || strcmp(dialect, OCG_DIALECT) != 0) {
    st = ocl_error(HWP_ERROR_NOT_SUPPORTED, "%s: dialect \"%s\" is not accepted by the opencl "
                   "plugin (it accepts \"" OCG_DIALECT "\")", fn,
                   dialect != NULL ? dialect : "(null)");
    put_log(log, cap, ocl_get_last_error());
  }
  return st;
}

static HWP_Status ocg_compile(int32_t device, const char *dialect, const char *source,
                              const char *options, HWP_CodegenModule *out, char *log,
                              size_t log_capacity) {
  const char *fn = "codegen.compile";
  if (source == NULL || out == NULL) {
    HWP_Status st = ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                              source == NULL ? "source" : "out");
    put_log(log, log_capacity, ocl_get_last_error());
    return st;
  }
  HWP_Status st = check_dialect(device, dialect, log, log_capacity, fn);
  if (st != HWP_OK) return st;
  char *cl_opts = translate_options(options);
  if (cl_opts == NULL) return ocl_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no host memory", fn);
  ocg_entry *e = NULL;
  st = cache_get(device, source, cl_opts, log, log_capacity, &e);
  free(cl_opts);
  if (st != HWP_OK) return st;
  clRetainProgram(e->prog);
  st = new_module(device, e->prog, e, out, fn);
  if (st != HWP_OK) {
    clReleaseProgram(e->prog);
    cache_release(e);
  }
  return st;
}

static ocg_module *as_module(HWP_CodegenModule module, const char *fn, HWP_Status *st) {
  ocg_module *m = (ocg_module *)module;
  if (m == NULL || m->magic != OCG_MODULE_MAGIC) {
    *st = ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a live opencl codegen module",
                    fn, (void *)module);
    return NULL;
  }
  *st = HWP_OK;
  return m;
}

static HWP_Status ocg_unload(HWP_CodegenModule module) {
  HWP_Status st;
  ocg_module *m = as_module(module, "codegen.unload", &st);
  if (m == NULL) return st;
  m->magic = OCG_DEAD_MAGIC;
  ocg_free_functions(m);
  clReleaseProgram(m->prog);
  if (m->entry != NULL) cache_release(m->entry);
  pthread_mutex_destroy(&m->mu);
  free(m);
  return HWP_OK;
}

/* ---- serialize / deserialize -------------------------------------------------------------- */

static HWP_Status ocg_serialize(HWP_CodegenModule module, void *data, size_t capacity,
                                size_t *size) {
  const char *fn = "codegen.serialize";
  HWP_Status st;
  ocg_module *m = as_module(module, fn, &st);
  if (m == NULL) return st;
  if (size == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: size is NULL", fn);
  size_t n = 0;
  cl_int err = clGetProgramInfo(m->prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL);
  if (err != CL_SUCCESS) return ocl_cl_error(err, fn, "clGetProgramInfo(BINARY_SIZES)");
  if (n == 0) return ocl_error(HWP_ERROR_DEVICE, "%s: the driver gives no program binary", fn);
  if (data == NULL) {
    *size = OCG_SER_HEAD + n;
    return HWP_OK;
  }
  if (capacity < OCG_SER_HEAD + n)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: capacity %zu < the %zu bytes needed", fn,
                     capacity, (size_t)OCG_SER_HEAD + n);
  unsigned char *p = (unsigned char *)data, *bins[1] = {p + OCG_SER_HEAD};
  err = clGetProgramInfo(m->prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL);
  if (err != CL_SUCCESS) return ocl_cl_error(err, fn, "clGetProgramInfo(BINARIES)");
  memcpy(p, OCG_SER_MAGIC, 8);
  put_u64(p + 8, device_identity(m->device));
  put_u64(p + 16, (uint64_t)n);
  put_u64(p + 24, fnv(FNV0, p + OCG_SER_HEAD, n));
  *size = OCG_SER_HEAD + n;
  return HWP_OK;
}

static HWP_Status ocg_deserialize(int32_t device, const char *dialect, const void *data,
                                  size_t size, HWP_CodegenModule *out) {
  const char *fn = "codegen.deserialize";
  if (data == NULL || out == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                     data == NULL ? "data" : "out");
  HWP_Status st = check_dialect(device, dialect, NULL, 0, fn);
  if (st != HWP_OK) return st;
  const unsigned char *p = (const unsigned char *)data;
  if (size < OCG_SER_HEAD || memcmp(p, OCG_SER_MAGIC, 8) != 0)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: not bytes of the opencl plugin's "
                     "serialize", fn);
  if (get_u64(p + 8) != device_identity(device))
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the bytes are for another device or "
                     "driver than opencl device %d (%s)", fn, (int)device,
                     g_ocl.devices[device].name);
  size_t n = (size_t)get_u64(p + 16);
  if (n != size - OCG_SER_HEAD || fnv(FNV0, p + OCG_SER_HEAD, n) != get_u64(p + 24))
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the bytes are truncated or corrupt", fn);
  cl_context ctx;
  if ((st = ocl_context(device, &ctx, fn)) != HWP_OK) return st;
  const unsigned char *bins[1] = {p + OCG_SER_HEAD};
  cl_int bst = CL_SUCCESS, err = CL_SUCCESS;
  cl_device_id id = g_ocl.devices[device].id;
  cl_program prog = clCreateProgramWithBinary(ctx, 1, &id, &n, bins, &bst, &err);
  if (prog == NULL || err != CL_SUCCESS || bst != CL_SUCCESS) {
    if (prog != NULL) clReleaseProgram(prog);
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the driver refuses the binary: %s", fn,
                     ocl_cl_error_name(err != CL_SUCCESS ? err : bst));
  }
  err = clBuildProgram(prog, 1, &id, "", NULL, NULL);
  if (err != CL_SUCCESS) {
    clReleaseProgram(prog);
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: building the binary failed: %s", fn,
                     ocl_cl_error_name(err));
  }
  st = new_module(device, prog, NULL, out, fn);
  if (st != HWP_OK) clReleaseProgram(prog);
  return st;
}

const HWP_CodegenTable ocl_codegen_table = {
    .struct_size = sizeof(HWP_CodegenTable),
    .get_target_info = ocg_get_target_info,
    .compile = ocg_compile,
    .get_function = ocg_get_function,
    .launch = ocg_launch,
    .unload = ocg_unload,
    .serialize = ocg_serialize,
    .deserialize = ocg_deserialize,
};
