/* hwport CUDA plugin — NVRTC and the CUDA driver API loaded with dlopen at first use
 * (codegen_loader.c), so that the plugin loads and runs without them: the codegen target then
 * reports HWP_ERROR_NOT_SUPPORTED. Only the entry points the codegen target needs; NVRTC's are
 * declared here with the values of nvrtc.h (stable C ABI), the driver's types come from cuda.h.
 *
 * Where they are looked for: $HWPORT_NVRTC_LIBRARY (a path), then libnvrtc.so.13, .12, .11.2,
 * libnvrtc.so through the loader's search path, then lib64/libnvrtc.so of $CUDA_HOME,
 * $CUDA_PATH and /usr/local/cuda; libcuda.so.1, then libcuda.so (the driver, which cudart
 * loads too). */
#ifndef HWPORT_CUDA_CODEGEN_LOADER_H
#define HWPORT_CUDA_CODEGEN_LOADER_H

#include <cuda.h>

#include "internal.h"

typedef int cg_nvrtc_result; /* nvrtcResult */
typedef struct cg_nvrtc_program_st *cg_nvrtc_program;
enum { CG_NVRTC_SUCCESS = 0, CG_NVRTC_ERROR_INVALID_OPTION = 5, CG_NVRTC_ERROR_COMPILATION = 6 };

typedef struct cg_api {
  /* NVRTC */
  cg_nvrtc_result (*create_program)(cg_nvrtc_program *prog, const char *src, const char *name,
                                    int num_headers, const char *const *headers,
                                    const char *const *include_names);
  cg_nvrtc_result (*destroy_program)(cg_nvrtc_program *prog);
  cg_nvrtc_result (*compile_program)(cg_nvrtc_program prog, int num_options,
                                     const char *const *options);
  cg_nvrtc_result (*get_log_size)(cg_nvrtc_program prog, size_t *size);
  cg_nvrtc_result (*get_log)(cg_nvrtc_program prog, char *log);
  cg_nvrtc_result (*get_cubin_size)(cg_nvrtc_program prog, size_t *size);
  cg_nvrtc_result (*get_cubin)(cg_nvrtc_program prog, char *cubin);
  cg_nvrtc_result (*get_ptx_size)(cg_nvrtc_program prog, size_t *size);
  cg_nvrtc_result (*get_ptx)(cg_nvrtc_program prog, char *ptx);
  const char *(*error_string)(cg_nvrtc_result result);
  /* the driver API */
  CUresult (*module_load_data)(CUmodule *module, const void *image);
  CUresult (*module_unload)(CUmodule module);
  CUresult (*module_get_function)(CUfunction *fn, CUmodule module, const char *name);
  CUresult (*launch_kernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                            void **params, void **extra);
  CUresult (*error_name)(CUresult error, const char **name);
} cg_api;

/* The loaded entry points, or NULL with *why saying what is missing (both loaded once). */
const cg_api *cg_api_get(const char **why);
/* The driver's name for `err` ("CUDA_ERROR_..."), or "CUresult <n>". */
const char *cg_cu_error_name(CUresult err, char *buf, size_t cap);

/* codegen.c: the codegen table. */
extern const HWP_CodegenTable cu_codegen_table;

#endif /* HWPORT_CUDA_CODEGEN_LOADER_H */
