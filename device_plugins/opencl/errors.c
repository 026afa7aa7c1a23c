/* hwport OpenCL plugin — the thread-local last-error message, OpenCL error names, and logging
 * through the host. */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

static __thread char t_last_error[OCL_ERROR_LEN];

/* Set once by hwport_plugin_init (the host keeps it valid until the process exits). */
static const HWP_HostApi *g_host;

HWP_Status ocl_error(HWP_Status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_last_error, sizeof t_last_error, fmt, ap);
  va_end(ap);
  return code;
}

const char *ocl_get_last_error(void) { return t_last_error; }

const char *ocl_cl_error_name(cl_int err) {
  switch (err) {
#define OCL_NAME(e) case e: return #e;
    OCL_NAME(CL_SUCCESS)
    OCL_NAME(CL_DEVICE_NOT_FOUND)
    OCL_NAME(CL_DEVICE_NOT_AVAILABLE)
    OCL_NAME(CL_COMPILER_NOT_AVAILABLE)
    OCL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    OCL_NAME(CL_OUT_OF_RESOURCES)
    OCL_NAME(CL_OUT_OF_HOST_MEMORY)
    OCL_NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
    OCL_NAME(CL_MEM_COPY_OVERLAP)
    OCL_NAME(CL_IMAGE_FORMAT_MISMATCH)
    OCL_NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    OCL_NAME(CL_BUILD_PROGRAM_FAILURE)
    OCL_NAME(CL_MAP_FAILURE)
    OCL_NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    OCL_NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    OCL_NAME(CL_COMPILE_PROGRAM_FAILURE)
    OCL_NAME(CL_LINKER_NOT_AVAILABLE)
    OCL_NAME(CL_LINK_PROGRAM_FAILURE)
    OCL_NAME(CL_DEVICE_PARTITION_FAILED)
    OCL_NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    OCL_NAME(CL_INVALID_VALUE)
    OCL_NAME(CL_INVALID_DEVICE_TYPE)
    OCL_NAME(CL_INVALID_PLATFORM)
    OCL_NAME(CL_INVALID_DEVICE)
    OCL_NAME(CL_INVALID_CONTEXT)
    OCL_NAME(CL_INVALID_QUEUE_PROPERTIES)
    OCL_NAME(CL_INVALID_COMMAND_QUEUE)
    OCL_NAME(CL_INVALID_HOST_PTR)
    OCL_NAME(CL_INVALID_MEM_OBJECT)
    OCL_NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    OCL_NAME(CL_INVALID_IMAGE_SIZE)
    OCL_NAME(CL_INVALID_SAMPLER)
    OCL_NAME(CL_INVALID_BINARY)
    OCL_NAME(CL_INVALID_BUILD_OPTIONS)
    OCL_NAME(CL_INVALID_PROGRAM)
    OCL_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
    OCL_NAME(CL_INVALID_KERNEL_NAME)
    OCL_NAME(CL_INVALID_KERNEL_DEFINITION)
    OCL_NAME(CL_INVALID_KERNEL)
    OCL_NAME(CL_INVALID_ARG_INDEX)
    OCL_NAME(CL_INVALID_ARG_VALUE)
    OCL_NAME(CL_INVALID_ARG_SIZE)
    OCL_NAME(CL_INVALID_KERNEL_ARGS)
    OCL_NAME(CL_INVALID_WORK_DIMENSION)
    OCL_NAME(CL_INVALID_WORK_GROUP_SIZE)
    OCL_NAME(CL_INVALID_WORK_ITEM_SIZE)
    OCL_NAME(CL_INVALID_GLOBAL_OFFSET)
    OCL_NAME(CL_INVALID_EVENT_WAIT_LIST)
    OCL_NAME(CL_INVALID_EVENT)
    OCL_NAME(CL_INVALID_OPERATION)
    OCL_NAME(CL_INVALID_GL_OBJECT)
    OCL_NAME(CL_INVALID_BUFFER_SIZE)
    OCL_NAME(CL_INVALID_MIP_LEVEL)
    OCL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
    OCL_NAME(CL_INVALID_PROPERTY)
    OCL_NAME(CL_INVALID_IMAGE_DESCRIPTOR)
    OCL_NAME(CL_INVALID_COMPILER_OPTIONS)
    OCL_NAME(CL_INVALID_LINKER_OPTIONS)
    OCL_NAME(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef OCL_NAME
  case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
  default: return "an unknown OpenCL error";
  }
}

HWP_Status ocl_cl_error(cl_int err, const char *fn, const char *call) {
  HWP_Status code = (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                     err == CL_OUT_OF_HOST_MEMORY)
                        ? HWP_ERROR_OUT_OF_MEMORY
                        : HWP_ERROR_DEVICE;
  return ocl_error(code, "%s: %s failed: %s (%d)", fn, call, ocl_cl_error_name(err), (int)err);
}

void ocl_set_host(const HWP_HostApi *host) { __atomic_store_n(&g_host, host, __ATOMIC_RELEASE); }

void ocl_log(HWP_LogLevel level, const char *fmt, ...) {
  char message[OCL_ERROR_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  const HWP_HostApi *host = __atomic_load_n(&g_host, __ATOMIC_ACQUIRE);
  if (HWP_HAS_FIELD(host, HWP_HostApi, log) && host->log != NULL) {
    host->log(host->host_context, level, message);
  } else if (level >= HWP_LOG_WARNING) {
    fprintf(stderr, "hwport opencl plugin: %s\n", message);
  }
}
