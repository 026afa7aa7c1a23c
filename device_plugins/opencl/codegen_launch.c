/* hwport OpenCL plugin — the codegen target's functions and launches (hwport/codegen.h).
 *
 * A function is a kernel name checked against its module's program (clCreateKernel), with a
 * few idle cl_kernel objects: OpenCL lets one thread at a time set a kernel's arguments and
 * enqueue it, so a launch takes an idle kernel (or creates one), sets every argument, enqueues
 * and gives it back (the command captured the argument values then). Arguments follow
 * codegen.h's OpenCL convention: a buffer is two parameters (its cl_mem, then its byte offset as
 * `ulong`), an int64 a `long`, a float64 a `double`, or a `float` on a device without fp64.
 * global size = grid * group, local size = group, on the stream's in-order queue behind its
 * gate like every other kernel of the plugin (kernel_launch.c: ocl_enqueue_nd); the NULL stream
 * is the plugin's synchronous one (the launch has completed when it returns). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_codegen.h"

#define OCG_MAX_GRID 2147483647u

static ocg_module *live_module(HWP_CodegenModule module, const char *fn, HWP_Status *st) {
  ocg_module *m = (ocg_module *)module;
  if (m == NULL || m->magic != OCG_MODULE_MAGIC) {
    *st = ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a live opencl codegen module",
                    fn, (void *)module);
    return NULL;
  }
  *st = HWP_OK;
  return m;
}

static void free_function(ocg_function *f) {
  for (int i = 0; i < f->num_idle; ++i) clReleaseKernel(f->idle[i]);
  f->magic = OCG_DEAD_MAGIC;
  pthread_mutex_destroy(&f->mu);
  free(f->name);
  free(f);
}

void ocg_free_functions(ocg_module *m) {
  pthread_mutex_lock(&m->mu);
  ocg_function *f = m->functions;
  m->functions = NULL;
  pthread_mutex_unlock(&m->mu);
  while (f != NULL) {
    ocg_function *next = f->next;
    free_function(f);
    f = next;
  }
}

/* A new function for kernel `name` of m (its first kernel made to check the name). */
static HWP_Status make_function(ocg_module *m, const char *name, ocg_function **out,
                                const char *fn) {
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(m->prog, name, &err);
  if (k == NULL || err != CL_SUCCESS) {
    if (k != NULL) clReleaseKernel(k);
    if (err == CL_INVALID_KERNEL_NAME || err == CL_INVALID_KERNEL_DEFINITION ||
        err == CL_INVALID_VALUE)
      return ocl_error(HWP_ERROR_NOT_FOUND, "%s: the module has no kernel \"%s\" (%s)", fn,
                       name, ocl_cl_error_name(err));
    return ocl_cl_error(err, fn, "clCreateKernel");
  }
  ocg_function *f = (ocg_function *)calloc(1, sizeof *f);
  char *copy = (char *)malloc(strlen(name) + 1);
  if (f == NULL || copy == NULL) {
    free(f);
    free(copy);
    clReleaseKernel(k);
    return ocl_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no host memory", fn);
  }
  strcpy(copy, name);
  f->name = copy;
  f->module = m;
  if (clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof f->num_params, &f->num_params, NULL) !=
      CL_SUCCESS)
    f->num_params = 0;
  f->max_group = 0;
  if (clGetKernelWorkGroupInfo(k, g_ocl.devices[m->device].id, CL_KERNEL_WORK_GROUP_SIZE,
                               sizeof f->max_group, &f->max_group, NULL) != CL_SUCCESS)
    f->max_group = 0;
  pthread_mutex_init(&f->mu, NULL);
  f->idle[0] = k;
  f->num_idle = 1;
  f->magic = OCG_FUNCTION_MAGIC;
  *out = f;
  return HWP_OK;
}

HWP_Status ocg_get_function(HWP_CodegenModule module, const char *name,
                            HWP_CodegenFunction *out) {
  const char *fn = "codegen.get_function";
  HWP_Status st;
  ocg_module *m = live_module(module, fn, &st);
  if (m == NULL) return st;
  if (name == NULL || out == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                     name == NULL ? "name" : "out");
  pthread_mutex_lock(&m->mu);
  for (ocg_function *f = m->functions; f != NULL; f = f->next)
    if (strcmp(f->name, name) == 0) {
      pthread_mutex_unlock(&m->mu);
      *out = (HWP_CodegenFunction)f;
      return HWP_OK;
    }
  ocg_function *f = NULL;
  st = make_function(m, name, &f, fn);
  if (st == HWP_OK) {
    f->next = m->functions;
    m->functions = f;
    *out = (HWP_CodegenFunction)f;
  }
  pthread_mutex_unlock(&m->mu);
  return st;
}

/* ---- launch -------------------------------------------------------------------------------- */

static HWP_Status borrow(ocg_function *f, cl_kernel *out, const char *fn) {
  pthread_mutex_lock(&f->mu);
  cl_kernel k = f->num_idle > 0 ? f->idle[--f->num_idle] : NULL;
  pthread_mutex_unlock(&f->mu);
  if (k == NULL) {
    cl_int err = CL_SUCCESS;
    k = clCreateKernel(f->module->prog, f->name, &err);
    if (k == NULL || err != CL_SUCCESS) return ocl_cl_error(err, fn, "clCreateKernel");
  }
  *out = k;
  return HWP_OK;
}

static void give_back(ocg_function *f, cl_kernel k) {
  pthread_mutex_lock(&f->mu);
  int kept = f->num_idle < OCG_IDLE_KERNELS;
  if (kept) f->idle[f->num_idle++] = k;
  pthread_mutex_unlock(&f->mu);
  if (!kept) clReleaseKernel(k);
}

/* Checks the launch's shape and arguments (their count against the kernel's parameters). */
static HWP_Status check_launch(int32_t device, const ocg_function *f, const HWP_CodegenLaunch *l,
                               const char *fn) {
  if (l == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: launch is NULL", fn);
  if (!HWP_HAS_FIELD(l, HWP_CodegenLaunch, args))
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: launch->struct_size %zu is too small", fn,
                     l->struct_size);
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (l->grid[i] == 0 || l->grid[i] > OCG_MAX_GRID || l->group[i] == 0)
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: grid {%u, %u, %u}, group {%u, %u, %u}: "
                       "every size must be in [1, 2^31 - 1]", fn, l->grid[0], l->grid[1],
                       l->grid[2], l->group[0], l->group[1], l->group[2]);
    threads *= l->group[i];
  }
  uint64_t most = (uint64_t)g_ocl.devices[device].max_work_group_size;
  if (f->max_group > 0 && f->max_group < most) most = f->max_group;
  if (most > 0 && threads > most)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: a group of %llu threads, more than the "
                     "%llu kernel \"%s\" allows on device %d", fn, (unsigned long long)threads,
                     (unsigned long long)most, f->name, (int)device);
  if (l->num_args < 0 || (l->num_args > 0 && l->args == NULL))
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %d arguments at %p", fn, (int)l->num_args,
                     (const void *)l->args);
  cl_uint n = 0;
  for (int32_t i = 0; i < l->num_args; ++i) {
    const HWP_CodegenArg *a = &l->args[i];
    if (!HWP_HAS_FIELD(a, HWP_CodegenArg, value))
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: argument %d: struct_size %zu is too "
                       "small", fn, (int)i, a->struct_size);
    if (a->kind == HWP_CODEGEN_ARG_BUFFER) {
      char what[32];
      snprintf(what, sizeof what, "argument %d", (int)i);
      HWP_Status st = ocl_buffer_range(a->value.buffer.buffer, a->value.buffer.byte_offset, 0,
                                       fn, what);
      if (st != HWP_OK) return st;
      n += 2;
    } else if (a->kind == HWP_CODEGEN_ARG_INT64 || a->kind == HWP_CODEGEN_ARG_FLOAT64) {
      n += 1;
    } else {
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: argument %d has unknown kind %d", fn,
                       (int)i, (int)a->kind);
    }
  }
  if (f->num_params != 0 && n != f->num_params)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: kernel \"%s\" has %u parameters, the %d "
                     "arguments make %u (a buffer is two: __global T *, ulong byte offset)", fn,
                     f->name, (unsigned)f->num_params, (int)l->num_args, (unsigned)n);
  return HWP_OK;
}

static HWP_Status set_args(cl_kernel k, int32_t device, const ocg_function *f,
                           const HWP_CodegenLaunch *l, const char *fn) {
  const int fp64 = ocg_has_fp64(device);
  cl_uint p = 0;
  for (int32_t i = 0; i < l->num_args; ++i) {
    const HWP_CodegenArg *a = &l->args[i];
    cl_int err;
    if (a->kind == HWP_CODEGEN_ARG_BUFFER) {
      cl_mem mem = (cl_mem)a->value.buffer.buffer;
      cl_ulong off = (cl_ulong)a->value.buffer.byte_offset;
      err = clSetKernelArg(k, p++, sizeof mem, &mem);
      if (err == CL_SUCCESS) err = clSetKernelArg(k, p++, sizeof off, &off);
    } else if (a->kind == HWP_CODEGEN_ARG_INT64) {
      cl_long v = (cl_long)a->value.i64;
      err = clSetKernelArg(k, p++, sizeof v, &v);
    } else if (fp64) {
      cl_double v = a->value.f64;
      err = clSetKernelArg(k, p++, sizeof v, &v);
    } else {
      cl_float v = (cl_float)a->value.f64;
      err = clSetKernelArg(k, p++, sizeof v, &v);
    }
    if (err != CL_SUCCESS)
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: kernel \"%s\", argument %d (parameter "
                       "%u): clSetKernelArg failed: %s (does the parameter's type follow "
                       "codegen.h's OpenCL convention?)", fn, f->name, (int)i, (unsigned)p - 1,
                       ocl_cl_error_name(err));
  }
  return HWP_OK;
}

HWP_Status ocg_launch(int32_t device, HWP_CodegenFunction function, HWP_Stream stream,
                      const HWP_CodegenLaunch *launch) {
  const char *fn = "codegen.launch";
  HWP_Status st = ocl_check_device(device, fn);
  if (st != HWP_OK) return st;
  ocg_function *f = (ocg_function *)function;
  if (f == NULL || f->magic != OCG_FUNCTION_MAGIC)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a live opencl codegen function",
                     fn, (void *)function);
  if (f->module->device != device)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the function was compiled for opencl "
                     "device %d, not %d", fn, (int)f->module->device, (int)device);
  if ((st = check_launch(device, f, launch, fn)) != HWP_OK) return st;

  HWP_KernelContext ctx; /* what kernel_launch.c's enqueue reads: device, stream, the id */
  memset(&ctx, 0, sizeof ctx);
  ctx.struct_size = sizeof ctx;
  ctx.device = device;
  ctx.stream = stream;
  ctx.correlation_id =
      HWP_HAS_FIELD(launch, HWP_CodegenLaunch, correlation_id) ? launch->correlation_id : 0;
  /* A profiled launch's span is named after the function; the profiler reports it at stop(),
   * maybe after the module is gone, so it gets a name that lives as long as the plugin. */
  const char *what = fn;
  if (ocl_profiling(device, ctx.correlation_id)) {
    const char *name = hwps_intern(f->name);
    if (name != NULL) what = name;
  }
  cl_command_queue q;
  if ((st = ocl_ctx_queue(&ctx, &q, fn)) != HWP_OK) return st;
  size_t global[3], local[3];
  for (int i = 0; i < 3; ++i) {
    local[i] = launch->group[i];
    global[i] = (size_t)launch->grid[i] * launch->group[i];
  }
  cl_kernel k = NULL;
  if ((st = borrow(f, &k, fn)) != HWP_OK) return st;
  st = set_args(k, device, f, launch, fn);
  if (st == HWP_OK) st = ocl_enqueue_nd(&ctx, q, k, 3, global, local, what);
  give_back(f, k); /* the enqueued command captured the arguments */
  if (st == HWP_OK) st = ocl_launch_done(&ctx, q, fn);
  return st;
}
