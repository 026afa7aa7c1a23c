/* hwport CUDA plugin — NVRTC and the driver API through dlopen (see codegen_loader.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_loader.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static cg_api g_api;
static int g_ok;
static char g_why[512];

static void *open_first(const char *const *names, size_t n) {
  void *lib = NULL;
  for (size_t i = 0; i < n && lib == NULL; ++i)
    if (names[i] != NULL && names[i][0] != '\0') lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  return lib;
}

/* dlsym into a function pointer (through memcpy: ISO C has no object -> function cast). */
#define CG_SYM(lib, field, name)                                                             \
  do {                                                                                       \
    void *sym_ = dlsym((lib), (name));                                                       \
    if (sym_ == NULL) {                                                                      \
      snprintf(g_why, sizeof g_why, "%s lacks %s", #lib, (name));                            \
      return;                                                                                \
    }                                                                                        \
    memcpy(&g_api.field, &sym_, sizeof sym_);                                                \
  } while (0)

/* <dir>/lib64/libnvrtc.so for the toolkit folder in environment variable `var` (else ""). */
static const char *toolkit_nvrtc(const char *var, char *buf, size_t cap) {
  const char *dir = getenv(var);
  if (dir == NULL || dir[0] == '\0' ||
      (size_t)snprintf(buf, cap, "%s/lib64/libnvrtc.so", dir) >= cap)
    return "";
  return buf;
}

static void load(void) {
  char home[1024], path[1024];
  const char *nvrtc_names[] = {getenv("HWPORT_NVRTC_LIBRARY"), "libnvrtc.so.13",
                               "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so",
                               toolkit_nvrtc("CUDA_HOME", home, sizeof home),
                               toolkit_nvrtc("CUDA_PATH", path, sizeof path),
                               "/usr/local/cuda/lib64/libnvrtc.so"};
  void *nvrtc = open_first(nvrtc_names, sizeof nvrtc_names / sizeof nvrtc_names[0]);
  if (nvrtc == NULL) {
    snprintf(g_why, sizeof g_why, "NVRTC (libnvrtc.so) not found: %s", dlerror());
    return;
  }
  const char *cuda_names[] = {"libcuda.so.1", "libcuda.so"};
  void *driver = open_first(cuda_names, 2);
  if (driver == NULL) {
    snprintf(g_why, sizeof g_why, "the CUDA driver (libcuda.so.1) not found: %s", dlerror());
    return;
  }
  CG_SYM(nvrtc, create_program, "nvrtcCreateProgram");
  CG_SYM(nvrtc, destroy_program, "nvrtcDestroyProgram");
  CG_SYM(nvrtc, compile_program, "nvrtcCompileProgram");
  CG_SYM(nvrtc, get_log_size, "nvrtcGetProgramLogSize");
  CG_SYM(nvrtc, get_log, "nvrtcGetProgramLog");
  CG_SYM(nvrtc, get_cubin_size, "nvrtcGetCUBINSize");
  CG_SYM(nvrtc, get_cubin, "nvrtcGetCUBIN");
  CG_SYM(nvrtc, get_ptx_size, "nvrtcGetPTXSize");
  CG_SYM(nvrtc, get_ptx, "nvrtcGetPTX");
  CG_SYM(nvrtc, error_string, "nvrtcGetErrorString");
  CG_SYM(driver, module_load_data, "cuModuleLoadData");
  CG_SYM(driver, module_unload, "cuModuleUnload");
  CG_SYM(driver, module_get_function, "cuModuleGetFunction");
  CG_SYM(driver, launch_kernel, "cuLaunchKernel");
  CG_SYM(driver, error_name, "cuGetErrorName");
  g_ok = 1; /* the libraries stay loaded until the process exits */
}

const cg_api *cg_api_get(const char **why) {
  pthread_once(&g_once, load);
  if (!g_ok) {
    if (why != NULL) *why = g_why;
    return NULL;
  }
  return &g_api;
}

const char *cg_cu_error_name(CUresult err, char *buf, size_t cap) {
  const char *name = NULL;
  if (g_ok && g_api.error_name(err, &name) == CUDA_SUCCESS && name != NULL) return name;
  snprintf(buf, cap, "CUresult %d", (int)err);
  return buf;
}
