/* hwport OpenCL plugin — the codegen target's shared declarations (not part of any ABI).
 *
 * codegen.c: the table, target info, compile (a per-process cache of programs by source, over
 * program_cache.c's on-disk binary cache), unload, serialize/deserialize. codegen_launch.c:
 * functions (a small pool of cl_kernel objects each, so that several threads can launch one
 * function at once) and launches. */
#ifndef HWPORT_OPENCL_CODEGEN_H
#define HWPORT_OPENCL_CODEGEN_H

#include "hwport/codegen.h"
#include "kernels.h"

#define OCG_MODULE_MAGIC 0x68776f63676d6f64ull   /* "hwocgmod" */
#define OCG_FUNCTION_MAGIC 0x68776f6367666e63ull /* "hwocgfnc" */
#define OCG_DEAD_MAGIC 0x68776f6367646561ull     /* "hwocgdea" */
#define OCG_IDLE_KERNELS 4 /* kernels kept per function for the next launches */

typedef struct ocg_entry ocg_entry;
typedef struct ocg_function ocg_function;

/* A module: a built program (one reference of its own) and the functions asked of it. */
typedef struct ocg_module {
  uint64_t magic;
  int32_t device;
  cl_program prog;
  ocg_entry *entry;        /* the source-cache entry it holds a reference on, or NULL */
  pthread_mutex_t mu;      /* guards functions */
  ocg_function *functions; /* singly linked, owned */
} ocg_module;

struct ocg_function {
  uint64_t magic;
  ocg_module *module;
  char *name;
  cl_uint num_params;      /* CL_KERNEL_NUM_ARGS */
  size_t max_group;        /* CL_KERNEL_WORK_GROUP_SIZE for the module's device */
  pthread_mutex_t mu;      /* guards idle, num_idle */
  cl_kernel idle[OCG_IDLE_KERNELS];
  int num_idle;
  ocg_function *next;
};

/* Whether `device` computes in double for kernels (HWP_CODEGEN_FLOAT64). */
int ocg_has_fp64(int32_t device);

/* codegen_launch.c */
HWP_Status ocg_get_function(HWP_CodegenModule module, const char *name,
                            HWP_CodegenFunction *out);
HWP_Status ocg_launch(int32_t device, HWP_CodegenFunction function, HWP_Stream stream,
                      const HWP_CodegenLaunch *launch);
/* Releases the module's functions and their kernels (unload). */
void ocg_free_functions(ocg_module *m);

/* The table (codegen.c); released entries at shutdown, before the program cache's. */
extern const HWP_CodegenTable ocl_codegen_table;
void ocl_codegen_shutdown(void);

#endif /* HWPORT_OPENCL_CODEGEN_H */
