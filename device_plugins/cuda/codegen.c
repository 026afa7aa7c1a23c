/* hwport CUDA plugin — the codegen target (ABI 1.2, hwport/codegen.h): dialect "cuda-c++17"
 * through NVRTC, loaded with the driver API at first use (codegen_loader.c); without either,
 * get_target_info and compile return HWP_ERROR_NOT_SUPPORTED and the rest of the plugin works.
 *
 * compile: nvrtcCompileProgram with -arch=sm_XY (the device's compute capability), -std=c++17
 * and the host's options (-O levels dropped: NVRTC optimizes by default and takes no -O), then
 * the cubin (the PTX where NVRTC gives none) into cuModuleLoadData in the device's primary
 * context (cudart made it current). launch: cuLaunchKernel on the stream's cudaStream_t with the
 * arguments of codegen.h's CUDA convention (a buffer is its device address plus byte_offset,
 * an int64 a long long, a float64 a double); the NULL stream is the plugin's synchronous one.
 * serialize: a header (magic, image kind, compute capability, length) and the image. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_loader.h"
#include "kernels.h"

#define CG_DIALECT "cuda-c++17"
#define CG_MODULE_MAGIC 0x687763756d6f64ull   /* "hwcumod" */
#define CG_FUNCTION_MAGIC 0x68776375666e63ull /* "hwcufnc" */
#define CG_SER_MAGIC "HWPCUG01"
#define CG_SER_HEAD 24 /* magic, kind (4), compute capability (4), image length (8) */
#define CG_GRID_YZ 65535u

static const char *const k_dialects[] = {CG_DIALECT, NULL};
static char g_arch[CU_MAX_DEVICES][16];

typedef struct cg_function {
  uint64_t magic;
  int32_t device;
  CUfunction fn;
  char *name;
  struct cg_function *next;
} cg_function;

typedef struct cg_module {
  uint64_t magic;
  int32_t device;
  CUmodule mod;
  uint32_t kind; /* 1: cubin, 2: PTX */
  unsigned char *image;
  size_t image_size;
  pthread_mutex_t mu; /* guards functions */
  cg_function *functions;
} cg_module;

static void put_log(char *log, size_t cap, const char *text) {
  if (log != NULL && cap > 0) snprintf(log, cap, "%s", text);
}

/* Validates the device, makes it current and finds the loaded API (NOT_SUPPORTED without). */
static HWP_Status enter(int32_t device, const cg_api **api, const char *fn) {
  HWP_Status st = cu_enter(device, fn);
  if (st != HWP_OK) return st;
  const char *why = "";
  *api = cg_api_get(&why);
  if (*api == NULL)
    return cu_error(HWP_ERROR_NOT_SUPPORTED, "%s: no CUDA codegen target: %s", fn, why);
  return HWP_OK;
}

static HWP_Status cu_failed(CUresult err, HWP_Status status, const char *fn, const char *call) {
  char buf[32];
  return cu_error(status, "%s: %s failed: %s", fn, call, cg_cu_error_name(err, buf, sizeof buf));
}

static int compute_capability(int32_t device) {
  return g_cu.devices[device].cc_major * 10 + g_cu.devices[device].cc_minor;
}

/* ---- target info -------------------------------------------------------------------------- */

static HWP_Status cg_get_target_info(int32_t device, HWP_CodegenTargetInfo *info) {
  const char *fn = "codegen.get_target_info";
  if (info == NULL || info->struct_size < sizeof(size_t))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: info is NULL or its struct_size too small",
                    fn);
  const cg_api *api;
  HWP_Status st = enter(device, &api, fn);
  if (st != HWP_OK) return st;
  const cu_device *d = &g_cu.devices[device];
  int shared = 0;
  if (cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlock, d->ordinal) !=
      cudaSuccess)
    shared = 48 * 1024;
  snprintf(g_arch[device], sizeof g_arch[device], "sm_%d%d", d->cc_major, d->cc_minor);
  HWP_CodegenTargetInfo full;
  memset(&full, 0, sizeof full);
  full.dialects = k_dialects;
  full.architecture = g_arch[device];
  full.flags = HWP_CODEGEN_SIMT | HWP_CODEGEN_SUBGROUP_SHUFFLE | HWP_CODEGEN_FLOAT64 |
               HWP_CODEGEN_SERIALIZE | (d->has_fp16 ? HWP_CODEGEN_FLOAT16 : 0u);
  full.simd_width = d->warp_size > 0 ? (uint32_t)d->warp_size : 32;
  full.preferred_vector_width = 4; /* 128-bit loads */
  full.max_group_size = d->max_threads_per_block > 0 ? (uint32_t)d->max_threads_per_block : 1;
  full.compute_units = d->sm_count > 0 ? (uint32_t)d->sm_count : 1;
  full.local_memory_bytes = (uint64_t)shared;
  full.max_grid_size = 0; /* grid x goes to 2^31 - 1; y and z to 65535 (refused beyond) */
  size_t n = info->struct_size < sizeof full ? info->struct_size : sizeof full;
  memcpy((char *)info + sizeof(size_t), (const char *)&full + sizeof(size_t),
         n - sizeof(size_t));
  return HWP_OK;
}

/* ---- modules ------------------------------------------------------------------------------ */

static HWP_Status new_module(int32_t device, const cg_api *api, uint32_t kind,
                             unsigned char *image, size_t size, HWP_CodegenModule *out,
                             HWP_Status bad, const char *fn) {
  CUmodule mod = NULL;
  CUresult err = api->module_load_data(&mod, image);
  if (err != CUDA_SUCCESS) {
    free(image);
    int refused = err == CUDA_ERROR_INVALID_IMAGE || err == CUDA_ERROR_INVALID_PTX ||
                  err == CUDA_ERROR_NO_BINARY_FOR_GPU ||
                  err == CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    return cu_failed(err, refused ? bad : HWP_ERROR_DEVICE, fn, "cuModuleLoadData");
  }
  cg_module *m = (cg_module *)calloc(1, sizeof *m);
  if (m == NULL) {
    api->module_unload(mod);
    free(image);
    return cu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no host memory", fn);
  }
  m->magic = CG_MODULE_MAGIC;
  m->device = device;
  m->mod = mod;
  m->kind = kind;
  m->image = image;
  m->image_size = size;
  pthread_mutex_init(&m->mu, NULL);
  *out = (HWP_CodegenModule)m;
  return HWP_OK;
}

/* The NVRTC options: -arch, -std, then the host's (`copy`, split at blanks in place; -O levels
 * dropped). */
static int make_options(int32_t device, char *arch, char *copy, const char **argv, int cap) {
  int n = 0;
  snprintf(arch, 32, "-arch=sm_%d", compute_capability(device));
  argv[n++] = arch;
  argv[n++] = "-std=c++17";
  for (char *p = copy; *p != '\0' && n < cap;) {
    while (*p == ' ' || *p == '\t' || *p == '\n') *p++ = '\0';
    if (*p == '\0') break;
    char *tok = p;
    while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\n') ++p;
    if (*p != '\0') *p++ = '\0';
    if (!(tok[0] == '-' && tok[1] == 'O')) argv[n++] = tok;
  }
  return n;
}

static HWP_Status nvrtc_failed(const cg_api *api, cg_nvrtc_program prog, cg_nvrtc_result r,
                               char *log, size_t cap, const char *fn) {
  size_t n = 0;
  char *text = NULL;
  if (api->get_log_size(prog, &n) == CG_NVRTC_SUCCESS && n > 0 &&
      (text = (char *)malloc(n + 1)) != NULL && api->get_log(prog, text) == CG_NVRTC_SUCCESS)
    text[n] = '\0';
  else if (text != NULL)
    text[0] = '\0';
  const char *shown = text != NULL && text[0] ? text : api->error_string(r);
  put_log(log, cap, shown);
  HWP_Status bad = r == CG_NVRTC_ERROR_COMPILATION || r == CG_NVRTC_ERROR_INVALID_OPTION
                       ? HWP_ERROR_INVALID_ARGUMENT
                       : HWP_ERROR_DEVICE;
  HWP_Status st = cu_error(bad, "%s: nvrtcCompileProgram failed: %s: %.1500s", fn,
                           api->error_string(r), shown);
  free(text);
  return st;
}

static HWP_Status cg_compile(int32_t device, const char *dialect, const char *source,
                             const char *options, HWP_CodegenModule *out, char *log,
                             size_t log_capacity) {
  const char *fn = "codegen.compile";
  const cg_api *api = NULL;
  HWP_Status st = source == NULL || out == NULL
                      ? cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: source or out is NULL", fn)
                      : enter(device, &api, fn);
  if (st == HWP_OK && (dialect == NULL || strcmp(dialect, CG_DIALECT) != 0))
    st = cu_error(HWP_ERROR_NOT_SUPPORTED, "%s: dialect \"%s\" is not accepted by the cuda "
                  "plugin (it accepts \"" CG_DIALECT "\")", fn, dialect ? dialect : "(null)");
  if (st != HWP_OK) {
    put_log(log, log_capacity, cu_get_last_error());
    return st;
  }
  size_t olen = options != NULL ? strlen(options) : 0;
  char *copy = (char *)malloc(olen + 1), arch[32];
  const char *argv[64];
  if (copy == NULL) return cu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no host memory", fn);
  memcpy(copy, options != NULL ? options : "", olen + 1);
  int argc = make_options(device, arch, copy, argv, 64);
  cg_nvrtc_program prog = NULL;
  cg_nvrtc_result r = api->create_program(&prog, source, "hwport_codegen.cu", 0, NULL, NULL);
  if (r != CG_NVRTC_SUCCESS) {
    free(copy);
    return cu_error(HWP_ERROR_DEVICE, "%s: nvrtcCreateProgram failed: %s", fn,
                    api->error_string(r));
  }
  r = api->compile_program(prog, argc, argv);
  free(copy);
  if (r != CG_NVRTC_SUCCESS) {
    st = nvrtc_failed(api, prog, r, log, log_capacity, fn);
    api->destroy_program(&prog);
    return st;
  }
  size_t n = 0;
  uint32_t kind = 1;
  if (api->get_cubin_size(prog, &n) != CG_NVRTC_SUCCESS || n == 0) {
    kind = 2;
    if (api->get_ptx_size(prog, &n) != CG_NVRTC_SUCCESS) n = 0;
  }
  unsigned char *image = n > 0 ? (unsigned char *)malloc(n) : NULL;
  if (image == NULL ||
      (kind == 1 ? api->get_cubin(prog, (char *)image) : api->get_ptx(prog, (char *)image)) !=
          CG_NVRTC_SUCCESS) {
    free(image);
    api->destroy_program(&prog);
    return cu_error(HWP_ERROR_DEVICE, "%s: NVRTC gave no cubin or PTX", fn);
  }
  api->destroy_program(&prog);
  return new_module(device, api, kind, image, n, out, HWP_ERROR_DEVICE, fn);
}

static cg_module *live_module(HWP_CodegenModule module, const char *fn, HWP_Status *st) {
  cg_module *m = (cg_module *)module;
  *st = m != NULL && m->magic == CG_MODULE_MAGIC
            ? HWP_OK
            : cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a live cuda codegen module",
                       fn, (void *)module);
  return *st == HWP_OK ? m : NULL;
}

static HWP_Status cg_get_function(HWP_CodegenModule module, const char *name,
                                  HWP_CodegenFunction *out) {
  const char *fn = "codegen.get_function";
  HWP_Status st;
  cg_module *m = live_module(module, fn, &st);
  if (m == NULL) return st;
  if (name == NULL || out == NULL)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: name or out is NULL", fn);
  const cg_api *api;
  if ((st = enter(m->device, &api, fn)) != HWP_OK) return st;
  pthread_mutex_lock(&m->mu);
  cg_function *f = m->functions;
  while (f != NULL && strcmp(f->name, name) != 0) f = f->next;
  if (f == NULL) {
    CUfunction cf = NULL;
    CUresult err = api->module_get_function(&cf, m->mod, name);
    if (err != CUDA_SUCCESS) {
      pthread_mutex_unlock(&m->mu);
      if (err == CUDA_ERROR_NOT_FOUND)
        return cu_error(HWP_ERROR_NOT_FOUND, "%s: the module has no kernel \"%s\" (is it "
                        "extern \"C\"?)", fn, name);
      return cu_failed(err, HWP_ERROR_DEVICE, fn, "cuModuleGetFunction");
    }
    f = (cg_function *)calloc(1, sizeof *f);
    char *copy = (char *)malloc(strlen(name) + 1);
    if (f == NULL || copy == NULL) {
      pthread_mutex_unlock(&m->mu);
      free(f);
      free(copy);
      return cu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no host memory", fn);
    }
    strcpy(copy, name);
    f->magic = CG_FUNCTION_MAGIC;
    f->device = m->device;
    f->fn = cf;
    f->name = copy;
    f->next = m->functions;
    m->functions = f;
  }
  pthread_mutex_unlock(&m->mu);
  *out = (HWP_CodegenFunction)f;
  return HWP_OK;
}

static HWP_Status cg_unload(HWP_CodegenModule module) {
  const char *fn = "codegen.unload";
  HWP_Status st;
  cg_module *m = live_module(module, fn, &st);
  if (m == NULL) return st;
  const cg_api *api;
  if ((st = enter(m->device, &api, fn)) != HWP_OK) return st;
  CUresult err = api->module_unload(m->mod);
  m->magic = 0;
  for (cg_function *f = m->functions, *next; f != NULL; f = next) {
    next = f->next;
    f->magic = 0;
    free(f->name);
    free(f);
  }
  pthread_mutex_destroy(&m->mu);
  free(m->image);
  free(m);
  return err == CUDA_SUCCESS ? HWP_OK : cu_failed(err, HWP_ERROR_DEVICE, fn, "cuModuleUnload");
}

/* ---- launch -------------------------------------------------------------------------------- */

static HWP_Status check_launch(const cg_function *f, int32_t device,
                               const HWP_CodegenLaunch *l, const char *fn) {
  if (f == NULL || f->magic != CG_FUNCTION_MAGIC)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a live cuda codegen function",
                    fn, (const void *)f);
  if (f->device != device)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the function is of cuda device %d, not %d",
                    fn, (int)f->device, (int)device);
  if (l == NULL || !HWP_HAS_FIELD(l, HWP_CodegenLaunch, args))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: launch is NULL or too small", fn);
  uint64_t threads = (uint64_t)l->group[0] * l->group[1] * l->group[2];
  int bad = threads == 0 || threads > (uint64_t)g_cu.devices[device].max_threads_per_block;
  for (int i = 0; i < 3; ++i)
    bad |= l->grid[i] == 0 || l->grid[i] > (i == 0 ? 2147483647u : CG_GRID_YZ);
  if (bad)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: grid {%u, %u, %u}, group {%u, %u, %u}: "
                    "sizes must be >= 1, grid x <= 2^31 - 1, y and z <= 65535, and a group at "
                    "most %d threads", fn, l->grid[0], l->grid[1], l->grid[2], l->group[0],
                    l->group[1], l->group[2], g_cu.devices[device].max_threads_per_block);
  if (l->num_args < 0 || (l->num_args > 0 && l->args == NULL))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %d arguments at %p", fn, (int)l->num_args,
                    (const void *)l->args);
  for (int32_t i = 0; i < l->num_args; ++i) {
    const HWP_CodegenArg *a = &l->args[i];
    if (!HWP_HAS_FIELD(a, HWP_CodegenArg, value) || a->kind < HWP_CODEGEN_ARG_BUFFER ||
        a->kind > HWP_CODEGEN_ARG_FLOAT64 ||
        (a->kind == HWP_CODEGEN_ARG_BUFFER && a->value.buffer.buffer == NULL))
      return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: argument %d: a bad struct_size, kind "
                      "%d or a NULL buffer", fn, (int)i, (int)a->kind);
  }
  return HWP_OK;
}

typedef union cg_slot {
  void *ptr;
  long long i64;
  double f64;
} cg_slot;

static HWP_Status cg_launch(int32_t device, HWP_CodegenFunction function, HWP_Stream stream,
                            const HWP_CodegenLaunch *launch) {
  const char *fn = "codegen.launch";
  const cg_function *f = (const cg_function *)function;
  HWP_Status st = check_launch(f, device, launch, fn);
  const cg_api *api = NULL;
  if (st == HWP_OK) st = enter(device, &api, fn);
  cudaStream_t s = 0;
  if (st == HWP_OK) st = cu_stream_get(device, stream, &s, fn);
  if (st != HWP_OK) return st;
  int n = launch->num_args;
  cg_slot small[16];
  void *small_params[16];
  cg_slot *slots = n <= 16 ? small : (cg_slot *)malloc((size_t)n * sizeof *slots);
  void **params = n <= 16 ? small_params : (void **)malloc((size_t)n * sizeof *params);
  if (slots == NULL || params == NULL) {
    if (slots != small) free(slots);
    if (params != small_params) free(params);
    return cu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no host memory", fn);
  }
  for (int i = 0; i < n; ++i) {
    const HWP_CodegenArg *a = &launch->args[i];
    if (a->kind == HWP_CODEGEN_ARG_BUFFER)
      slots[i].ptr = cu_addr(a->value.buffer.buffer, a->value.buffer.byte_offset);
    else if (a->kind == HWP_CODEGEN_ARG_INT64)
      slots[i].i64 = (long long)a->value.i64;
    else
      slots[i].f64 = a->value.f64;
    params[i] = &slots[i];
  }
  /* A profiled launch (ABI 1.2 correlation id) is timed between two events on its stream, as
   * the hand-written kernels are; its span is named after the function, in a copy that outlives
   * the module (the profiler reports at stop()). */
  HWP_KernelContext ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.struct_size = sizeof ctx;
  ctx.correlation_id =
      HWP_HAS_FIELD(launch, HWP_CodegenLaunch, correlation_id) ? launch->correlation_id : 0;
  cu_kctx timing;
  memset(&timing, 0, sizeof timing);
  timing.device = device;
  timing.stream = s;
  cu_profile_begin(&ctx, &timing);
  CUresult err = api->launch_kernel(f->fn, launch->grid[0], launch->grid[1], launch->grid[2],
                                    launch->group[0], launch->group[1], launch->group[2], 0,
                                    (CUstream)s, n > 0 ? params : NULL, NULL);
  if (timing.timed_begin != NULL) {
    const char *name = hwps_intern(f->name);
    cu_profile_end(&timing, name != NULL ? name : fn);
  }
  if (slots != small) free(slots);
  if (params != small_params) free(params);
  if (err != CUDA_SUCCESS)
    return cu_failed(err, err == CUDA_ERROR_INVALID_VALUE ? HWP_ERROR_INVALID_ARGUMENT
                                                          : HWP_ERROR_DEVICE,
                     fn, "cuLaunchKernel");
  if (stream == NULL) { /* the plugin's NULL stream is synchronous */
    cudaError_t e = cudaStreamSynchronize(0);
    if (e != cudaSuccess) return cu_cuda_error(e, fn, "cudaStreamSynchronize");
  }
  return HWP_OK;
}

/* ---- serialize / deserialize -------------------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= (uint32_t)p[i] << (8 * i);
  return v;
}

static HWP_Status cg_serialize(HWP_CodegenModule module, void *data, size_t capacity,
                               size_t *size) {
  const char *fn = "codegen.serialize";
  HWP_Status st;
  cg_module *m = live_module(module, fn, &st);
  if (m == NULL) return st;
  if (size == NULL) return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: size is NULL", fn);
  size_t total = CG_SER_HEAD + m->image_size;
  if (data != NULL) {
    if (capacity < total)
      return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: capacity %zu < the %zu bytes needed", fn,
                      capacity, total);
    unsigned char *p = (unsigned char *)data;
    memcpy(p, CG_SER_MAGIC, 8);
    put_u32(p + 8, m->kind);
    put_u32(p + 12, (uint32_t)compute_capability(m->device));
    put_u32(p + 16, (uint32_t)m->image_size);
    put_u32(p + 20, (uint32_t)((uint64_t)m->image_size >> 32));
    memcpy(p + CG_SER_HEAD, m->image, m->image_size);
  }
  *size = total;
  return HWP_OK;
}

static HWP_Status cg_deserialize(int32_t device, const char *dialect, const void *data,
                                 size_t size, HWP_CodegenModule *out) {
  const char *fn = "codegen.deserialize";
  if (data == NULL || out == NULL)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: data or out is NULL", fn);
  const cg_api *api;
  HWP_Status st = enter(device, &api, fn);
  if (st != HWP_OK) return st;
  if (dialect == NULL || strcmp(dialect, CG_DIALECT) != 0)
    return cu_error(HWP_ERROR_NOT_SUPPORTED, "%s: dialect \"%s\" is not the cuda plugin's", fn,
                    dialect ? dialect : "(null)");
  const unsigned char *p = (const unsigned char *)data;
  if (size < CG_SER_HEAD || memcmp(p, CG_SER_MAGIC, 8) != 0)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: not bytes of the cuda plugin's serialize",
                    fn);
  uint32_t kind = get_u32(p + 8), cc = get_u32(p + 12);
  uint64_t n = get_u32(p + 16) | ((uint64_t)get_u32(p + 20) << 32);
  if ((kind != 1 && kind != 2) || n != size - CG_SER_HEAD)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the bytes are truncated or corrupt", fn);
  if (kind == 1 && cc != (uint32_t)compute_capability(device))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: a cubin for sm_%u, device %d is sm_%d", fn,
                    (unsigned)cc, (int)device, compute_capability(device));
  unsigned char *image = (unsigned char *)malloc((size_t)n + 1);
  if (image == NULL) return cu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no host memory", fn);
  memcpy(image, p + CG_SER_HEAD, (size_t)n);
  image[n] = 0; /* PTX is text */
  return new_module(device, api, kind, image, (size_t)n, out, HWP_ERROR_INVALID_ARGUMENT, fn);
}

const HWP_CodegenTable cu_codegen_table = {
    .struct_size = sizeof(HWP_CodegenTable),
    .get_target_info = cg_get_target_info,
    .compile = cg_compile,
    .get_function = cg_get_function,
    .launch = cg_launch,
    .unload = cg_unload,
    .serialize = cg_serialize,
    .deserialize = cg_deserialize,
};
