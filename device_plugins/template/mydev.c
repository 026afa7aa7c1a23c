/* mydev.c — the template of a port: a device runtime, the `copy` kernel and the "c99" codegen
 * target, no other hand-written kernels: hwport's compiler generates every other op's kernel
 * (the eager JIT, docs/cinn.md) and compiles it through the codegen table below. The "device"
 * keeps its memory in host memory and compiles with the system C compiler: replace the bodies
 * marked DRIVER with calls into your driver and your device's compiler. */
#define _POSIX_C_SOURCE 200809L
#include <hwport/hwport.h>
#include <hwport/kernel_util.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define ALIGNMENT 64
static __thread char g_error[256];
static const char *last_error(void) { return g_error; }
static HWP_Status fail(HWP_Status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt), vsnprintf(g_error, sizeof g_error, fmt, ap), va_end(ap);
  return status;
}
static int threads(void) { /* the compute units: MYDEV_THREADS, else the host's cores */
  const char *env = getenv("MYDEV_THREADS");
  const long n = env && *env ? atol(env) : sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}
#define CHECK_DEVICE(d) \
  if ((d) != 0) return fail(HWP_ERROR_INVALID_ARGUMENT, "no device %d (mydev has 1)", (int)(d))
/* ---- device ------------------------------------------------------------------------------ */
static HWP_Status get_device_count(int32_t *count) {
  if (!count) return fail(HWP_ERROR_INVALID_ARGUMENT, "count is NULL");
  return *count = 1, HWP_OK; /* DRIVER: the number of devices */
}
static HWP_Status synchronize_device(int32_t device) {
  CHECK_DEVICE(device);
  return HWP_OK; /* DRIVER: wait for the device's queues; everything here is synchronous */
}
static HWP_Status get_properties(int32_t device, HWP_DeviceProperties *props) {
  CHECK_DEVICE(device);
  if (!props) return fail(HWP_ERROR_INVALID_ARGUMENT, "props is NULL");
  HWP_DeviceProperties p = {.total_memory = 1ull << 30, .memory_alignment = ALIGNMENT,
                            .compute_units = threads(), .max_work_group_size = 1,
                            .max_allocation = 1ull << 30, .simd_width = 1};
  snprintf(p.name, sizeof p.name, "mydev template device"), snprintf(p.vendor, 8, "you");
  /* the host's struct may be older (shorter) than these headers: fill only what it has */
  const size_t n = props->struct_size < sizeof p ? props->struct_size : sizeof p;
  p.struct_size = props->struct_size;
  return memcpy(props, &p, n), HWP_OK;
}
static const HWP_DeviceTable g_device = {
    .struct_size = sizeof(HWP_DeviceTable), .get_device_count = get_device_count,
    .synchronize_device = synchronize_device, .get_properties = get_properties};
/* ---- memory: a buffer is whatever handle the driver gives; here an aligned block ---------- */
static HWP_Status allocate(int32_t device, uint64_t nbytes, HWP_Buffer *out) {
  CHECK_DEVICE(device);
  void *p = NULL;
  if (nbytes == 0 || !out) return fail(HWP_ERROR_INVALID_ARGUMENT, "allocate: bad argument");
  if (nbytes > (1ull << 30) || posix_memalign(&p, ALIGNMENT, (size_t)nbytes) != 0)
    return fail(HWP_ERROR_OUT_OF_MEMORY, "allocate: %llu bytes", (unsigned long long)nbytes);
  return *out = (HWP_Buffer)p, HWP_OK;
}
static HWP_Status deallocate(int32_t device, HWP_Buffer buffer) {
  CHECK_DEVICE(device);
  return free(buffer), HWP_OK;
}
static HWP_Status copy_h2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset, const void *src,
                           uint64_t nbytes) {
  CHECK_DEVICE(device);
  if (!dst || (!src && nbytes)) return fail(HWP_ERROR_INVALID_ARGUMENT, "copy_h2d: NULL");
  return nbytes ? memcpy((char *)dst + dst_offset, src, (size_t)nbytes) : NULL, HWP_OK;
}
static HWP_Status copy_d2h(int32_t device, void *dst, HWP_Buffer src, uint64_t src_offset,
                           uint64_t nbytes) {
  CHECK_DEVICE(device);
  if (!src || (!dst && nbytes)) return fail(HWP_ERROR_INVALID_ARGUMENT, "copy_d2h: NULL");
  return nbytes ? memcpy(dst, (const char *)src + src_offset, (size_t)nbytes) : NULL, HWP_OK;
}
static HWP_Status copy_d2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset, HWP_Buffer src,
                           uint64_t src_offset, uint64_t nbytes) {
  CHECK_DEVICE(device);
  if (!dst || !src) return fail(HWP_ERROR_INVALID_ARGUMENT, "copy_d2d: NULL");
  return memmove((char *)dst + dst_offset, (const char *)src + src_offset, nbytes), HWP_OK;
}
static const HWP_MemoryTable g_memory = {
    .struct_size = sizeof(HWP_MemoryTable), .allocate = allocate, .deallocate = deallocate,
    .copy_h2d = copy_h2d, .copy_d2h = copy_d2h, .copy_d2d = copy_d2d};
/* ---- the copy kernel: any strided view (strides 0 or negative) into a contiguous output,
 * item by item; the host also uses it to make strided inputs contiguous ---------------------- */
static HWP_Status copy_kernel(const HWP_KernelContext *ctx) {
  if (ctx->num_inputs != 1 || ctx->num_outputs != 1)
    return fail(HWP_ERROR_INVALID_ARGUMENT, "copy: expected 1 input and 1 output");
  const HWP_TensorView *x = &ctx->inputs[0], *out = &ctx->outputs[0];
  int64_t n = 0, index[HWP_MAX_NDIM] = {0};
  const char *bad = hwp_view_size_error(x, &n);
  if (bad) return fail(HWP_ERROR_INVALID_ARGUMENT, "copy: the input has %s", bad);
  const size_t size = hwp_dtype_size(x->dtype);
  const char *src = (const char *)x->buffer + x->byte_offset;
  char *dst = (char *)out->buffer + out->byte_offset;
  if (!x->strides) return memcpy(dst, src, (size_t)n * size), HWP_OK; /* NULL: contiguous */
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = 0;
    for (int32_t k = 0; k < x->ndim; ++k) at += index[k] * x->strides[k];
    memcpy(dst + (size_t)i * size, src + at * (int64_t)size, size);
    for (int32_t k = x->ndim - 1; k >= 0 && ++index[k] == x->shape[k]; --k) index[k] = 0;
  }
  return HWP_OK;
}

/* ---- the codegen target (hwport/codegen.h): "c99" source -> a shared object (DRIVER: your
 * compiler), a kernel NAME(gx, gy, gz, args) called once per group of the grid, in any order */
typedef void (*KernelFn)(int64_t gx, int64_t gy, int64_t gz, void *const *args);
static const char *const g_dialects[] = {"c99", NULL};
static const char *c_compiler(void) { /* DRIVER: your device's compiler and its flags */
  return getenv("HWPORT_CC") && *getenv("HWPORT_CC") ? getenv("HWPORT_CC") : "cc";
}
#if defined(__x86_64__) /* GCC and Clang prefer 256-bit vectors even where there are 512 */
#define HOST_FLAGS "-march=native -mprefer-vector-width=512"
#define LANES (__builtin_cpu_supports("avx512f") ? 16 : 8) /* float32 lanes of a vector */
#else
#define HOST_FLAGS "-march=native"
#define LANES 8
#endif
static int shell_safe(const char *s) { /* compiler and options reach a shell: no metacharacters */
  return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_=+.,/") ==
         strlen(s);
}
static HWP_Status get_target_info(int32_t device, HWP_CodegenTargetInfo *info) {
  CHECK_DEVICE(device);
  if (!info) return fail(HWP_ERROR_INVALID_ARGUMENT, "get_target_info: info is NULL");
  static int have_cc = -1; /* asked once: is there a C compiler? */
  char cmd[512];
  if (have_cc < 0 && shell_safe(c_compiler()) &&
      snprintf(cmd, sizeof cmd, "%s --version >/dev/null 2>&1", c_compiler()) > 0)
    have_cc = system(cmd) == 0;
  if (have_cc != 1) return fail(HWP_ERROR_NOT_SUPPORTED, "no C compiler (%s)", c_compiler());
  HWP_CodegenTargetInfo t = {.dialects = g_dialects, .architecture = "mydev-c99",
                             .flags = HWP_CODEGEN_FLOAT64 | HWP_CODEGEN_SERIALIZE,
                             .simd_width = LANES, .preferred_vector_width = LANES,
                             .max_group_size = 1, .compute_units = threads()};
  const size_t n = info->struct_size < sizeof t ? info->struct_size : sizeof t;
  t.struct_size = info->struct_size;
  return memcpy(info, &t, n), HWP_OK;
}
/* A module: the loaded shared object and its bytes (serialize hands them to the host's disk
 * cache, so a later process loads them instead of compiling: DRIVER, your binary format) */
struct HWP_CodegenModule_st { void *so; char *bytes; long size; };
static HWP_Status load(const char *dir, const void *bytes, long size, HWP_CodegenModule *out) {
  char path[64];
  snprintf(path, sizeof path, "%s/k.so", dir);
  FILE *f = fopen(path, bytes ? "wb" : "rb"); /* bytes: written there first; else read */
  struct HWP_CodegenModule_st *m = calloc(1, sizeof *m);
  if (f && m && !bytes && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0) rewind(f);
  if (f && m && size > 0 && (m->bytes = malloc(size)))
    m->size = bytes ? (long)fwrite(memcpy(m->bytes, bytes, size), 1, size, f)
                    : (long)fread(m->bytes, 1, size, f);
  if (f && fclose(f) == 0 && m && m->size == size && size > 0)
    m->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  unlink(path), rmdir(dir);
  if (m && m->so) return *out = m, HWP_OK;
  if (m) free(m->bytes), free(m);
  return fail(HWP_ERROR_INVALID_ARGUMENT, "cannot write, read or load the kernels in %s", dir);
}
static HWP_Status compile(int32_t device, const char *dialect, const char *source,
                          const char *options, HWP_CodegenModule *out, char *log, size_t cap) {
  CHECK_DEVICE(device);
  if (!dialect || !source || !out) return fail(HWP_ERROR_INVALID_ARGUMENT, "compile: NULL");
  if (strcmp(dialect, "c99") != 0)
    return fail(HWP_ERROR_NOT_SUPPORTED, "compile: dialect %s (mydev takes c99)", dialect);
  if (!options) options = "";
  if (!shell_safe(options) || !shell_safe(c_compiler()))
    return fail(HWP_ERROR_INVALID_ARGUMENT, "compile: options hold unexpected characters");
  char dir[] = "/tmp/hwport-mydev-XXXXXX", c_path[64], cmd[4096];
  if (!mkdtemp(dir)) return fail(HWP_ERROR_INTERNAL, "compile: no temporary directory");
  snprintf(c_path, sizeof c_path, "%s/k.c", dir);
  FILE *f = fopen(c_path, "w");
  int written = f && fputs(source, f) >= 0;
  if (f && fclose(f) != 0) written = 0;
  snprintf(cmd, sizeof cmd, "%s -std=c99 -O3 " HOST_FLAGS " -fPIC -shared %s -o %s/k.so %s -lm "
           "2>&1", c_compiler(), options, dir, c_path); /* HOST_FLAGS: the host runs them */
  FILE *p = written ? popen(cmd, "r") : NULL;
  size_t used = 0;
  while (p && fgets(cmd, sizeof cmd, p)) /* the build log (cmd reused), truncated to cap */
    for (const char *c = cmd; *c && log && used + 1 < cap; ++c) log[used++] = *c;
  if (log && cap) log[used] = '\0';
  const int rc = p ? pclose(p) : -1;
  unlink(c_path);
  if (rc == 0) return load(dir, NULL, 0, out);
  snprintf(cmd, sizeof cmd, "%s/k.so", dir);
  unlink(cmd), rmdir(dir);
  return fail(HWP_ERROR_INVALID_ARGUMENT, "compile: %s failed", c_compiler());
}
static HWP_Status serialize(HWP_CodegenModule m, void *data, size_t capacity, size_t *size) {
  if (!m || !size) return fail(HWP_ERROR_INVALID_ARGUMENT, "serialize: NULL");
  if (data && capacity < (size_t)m->size)
    return fail(HWP_ERROR_INVALID_ARGUMENT, "serialize: %zu bytes, need %ld", capacity, m->size);
  return *size = m->size, data ? memcpy(data, m->bytes, m->size) : NULL, HWP_OK;
}
static HWP_Status deserialize(int32_t device, const char *dialect, const void *data, size_t size,
                              HWP_CodegenModule *out) {
  CHECK_DEVICE(device);
  char dir[] = "/tmp/hwport-mydev-XXXXXX";
  if (!dialect || strcmp(dialect, "c99") || !data || !size || !out || !mkdtemp(dir))
    return fail(HWP_ERROR_INVALID_ARGUMENT, "deserialize: not c99 bytes, or no temporary dir");
  return load(dir, data, (long)size, out); /* DRIVER: load your binary */
}
static HWP_Status get_function(HWP_CodegenModule module, const char *name,
                               HWP_CodegenFunction *out) {
  if (!module || !name || !out) return fail(HWP_ERROR_INVALID_ARGUMENT, "get_function: NULL");
  void *fn = dlsym(module->so, name);
  if (!fn) return fail(HWP_ERROR_NOT_FOUND, "get_function: no kernel %s", name);
  return *out = (HWP_CodegenFunction)fn, HWP_OK;
}
/* The device's compute units: threads that run a launch's groups, each claiming one at a time,
 * so a thread the OS has not scheduled yet delays nothing (DRIVER: your device's queues) */
static struct {
  pthread_mutex_t mu, launching; /* mu: the job's fields; launching: one launch at a time */
  pthread_cond_t wake, idle;
  KernelFn fn; /* the job: fn(args) on groups [0, n): the next to claim; how many run now */
  void *const *args;
  int64_t gx, gxy, n, next, busy;
} g_pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .launching = PTHREAD_MUTEX_INITIALIZER,
            .wake = PTHREAD_COND_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER};
static void run_groups(void) { /* holding g_pool.mu: claims groups until none is left */
  while (g_pool.next < g_pool.n) {
    const int64_t i = g_pool.next++;
    ++g_pool.busy; /* the job's fields stay as they are until no group runs */
    pthread_mutex_unlock(&g_pool.mu);
    g_pool.fn(i % g_pool.gx, i % g_pool.gxy / g_pool.gx, i / g_pool.gxy, g_pool.args);
    pthread_mutex_lock(&g_pool.mu);
    if (--g_pool.busy == 0) pthread_cond_signal(&g_pool.idle);
  }
}
static void *worker(void *unused) {
  for (pthread_mutex_lock(&g_pool.mu);; pthread_cond_wait(&g_pool.wake, &g_pool.mu)) run_groups();
  return unused;
}
static HWP_Status launch(int32_t device, HWP_CodegenFunction function, HWP_Stream stream,
                         const HWP_CodegenLaunch *l) {
  CHECK_DEVICE(device);
  (void)stream; /* DRIVER: enqueue on the stream; here every launch runs now, in order */
  if (!function || !l || (l->num_args && !l->args) || l->num_args < 0 || l->num_args > 64)
    return fail(HWP_ERROR_INVALID_ARGUMENT, "launch: NULL function, launch or args");
  if (!l->grid[0] || !l->grid[1] || !l->grid[2] || l->group[0] * l->group[1] * l->group[2] != 1)
    return fail(HWP_ERROR_INVALID_ARGUMENT, "launch: zero grid, or a group other than 1x1x1");
  void *args[64];
  for (int32_t i = 0; i < l->num_args; ++i) {
    const HWP_CodegenArg *a = &l->args[i];
    if (a->kind == HWP_CODEGEN_ARG_BUFFER)
      args[i] = (char *)a->value.buffer.buffer + a->value.buffer.byte_offset;
    else if (a->kind == HWP_CODEGEN_ARG_INT64 || a->kind == HWP_CODEGEN_ARG_FLOAT64)
      args[i] = (void *)&a->value;
    else
      return fail(HWP_ERROR_INVALID_ARGUMENT, "launch: argument %d has kind %d", i, a->kind);
  }
  static int started = 0; /* threads: this one, then workers started on the first launch */
  pthread_mutex_lock(&g_pool.launching);
  for (pthread_t t; started < threads();)
    if (started++ && pthread_create(&t, NULL, worker, NULL) == 0) pthread_detach(t);
  pthread_mutex_lock(&g_pool.mu);
  *(void **)&g_pool.fn = (void *)function; /* POSIX: dlsym's object pointer as a function */
  g_pool.args = args, g_pool.gx = l->grid[0], g_pool.gxy = g_pool.gx * l->grid[1];
  g_pool.n = g_pool.gxy * l->grid[2], g_pool.next = 0;
  if (g_pool.n > 1) pthread_cond_broadcast(&g_pool.wake);
  run_groups(); /* this thread runs groups too, then waits for those others still run */
  while (g_pool.busy) pthread_cond_wait(&g_pool.idle, &g_pool.mu);
  pthread_mutex_unlock(&g_pool.mu);
  pthread_mutex_unlock(&g_pool.launching);
  return HWP_OK;
}
static HWP_Status unload(HWP_CodegenModule module) {
  if (!module) return fail(HWP_ERROR_INVALID_ARGUMENT, "unload: NULL module");
  return dlclose(module->so), free(module->bytes), free(module), HWP_OK;
}
static const HWP_CodegenTable g_codegen = {
    .struct_size = sizeof(HWP_CodegenTable), .get_target_info = get_target_info,
    .compile = compile, .get_function = get_function, .launch = launch, .unload = unload,
    .serialize = serialize, .deserialize = deserialize};

/* ---- the plugin table and the one exported symbol ------------------------------------------ */
static const HWP_PluginApi g_api = {
    .struct_size = sizeof(HWP_PluginApi), .abi_major = HWP_ABI_VERSION_MAJOR,
    .abi_minor = HWP_ABI_VERSION_MINOR, .device_type = "mydev", .plugin_version = "0.1.0",
    .device = &g_device, .memory = &g_memory, .codegen = &g_codegen, .get_last_error = last_error};
HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out) {
  if (!host || !out) return fail(HWP_ERROR_INVALID_ARGUMENT, "init: NULL argument");
  if (host->abi_major != HWP_ABI_VERSION_MAJOR)
    return fail(HWP_ERROR_VERSION_MISMATCH, "built for ABI %d, host has %u",
                HWP_ABI_VERSION_MAJOR, (unsigned)host->abi_major);
  for (HWP_DType dtype = 0; dtype < HWP_DTYPE_COUNT; ++dtype) {
    const HWP_KernelRegistration reg = {.struct_size = sizeof(HWP_KernelRegistration),
                                        .op_name = "copy", .dtype = dtype,
                                        .flags = HWP_KERNEL_ACCEPTS_STRIDED, .fn = copy_kernel};
    const HWP_Status st = host->register_kernel(host->host_context, &reg);
    if (st != HWP_OK) return fail(st, "register_kernel(copy, dtype %d) failed", (int)dtype);
  }
  return *out = &g_api, HWP_OK;
}
