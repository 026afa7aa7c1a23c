/* hwport OpenCL plugin — device discovery (environment, platforms, devices) and the device
 * table. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl_ext.h>

#include "internal.h"

ocl_config g_ocl = {.context_mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t g_config_once = PTHREAD_ONCE_INIT;

/* Case-insensitive substring search. */
static int contains_ci(const char *hay, const char *needle, size_t n) {
  if (n == 0) return 0;
  for (; *hay != '\0'; ++hay) {
    size_t i = 0;
    while (i < n && hay[i] != '\0' &&
           tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      ++i;
    if (i == n) return 1;
  }
  return 0;
}

/* HWPORT_OPENCL_DEVICES: a comma list of indices (into the enumeration over all platforms) or
 * substrings of "platform name / device name"; a device is selected when any entry matches. */
static int selected(const char *filter, int index, const char *label) {
  if (filter == NULL || *filter == '\0') return 1;
  const char *p = filter;
  while (*p != '\0') {
    while (*p == ' ' || *p == ',') ++p;
    const char *start = p;
    while (*p != '\0' && *p != ',') ++p;
    const char *end = p;
    while (end > start && end[-1] == ' ') --end;
    size_t n = (size_t)(end - start);
    if (n == 0) continue;
    int all_digits = 1;
    for (size_t i = 0; i < n; ++i) all_digits &= isdigit((unsigned char)start[i]) != 0;
    if (all_digits) {
      if (atoi(start) == index) return 1;
    } else if (contains_ci(label, start, n)) {
      return 1;
    }
  }
  return 0;
}

static void info_string(cl_device_id dev, cl_device_info what, char *dst, size_t n) {
  dst[0] = '\0';
  if (clGetDeviceInfo(dev, what, n, dst, NULL) != CL_SUCCESS) snprintf(dst, n, "unknown");
  dst[n - 1] = '\0';
  size_t len = strlen(dst);
  while (len > 0 && isspace((unsigned char)dst[len - 1])) dst[--len] = '\0';
}

int ocl_device_has_extension(cl_device_id id, const char *name) {
  char ext[8192] = "";
  if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL) != CL_SUCCESS)
    return 0;
  size_t n = strlen(name);
  for (const char *p = ext; (p = strstr(p, name)) != NULL; p += n)
    if ((p == ext || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
  return 0;
}

/* The architecture property. Core OpenCL has no query for the instruction-set generation: the
 * device and OpenCL C versions are API levels, and PoCL's "HSTR:" build key is free text, so
 * none of them is reported as one. NVIDIA's cl_nv_device_attribute_query gives the compute
 * capability, reported as CUDA names it ("sm_90", 9.0); every other device reports "", 0.0. */
static void arch_of(ocl_device *d) {
  cl_uint major = 0, minor = 0;
  if (ocl_device_has_extension(d->id, "cl_nv_device_attribute_query") &&
      clGetDeviceInfo(d->id, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof major, &major,
                      NULL) == CL_SUCCESS &&
      clGetDeviceInfo(d->id, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof minor, &minor,
                      NULL) == CL_SUCCESS &&
      major < 100 && minor < 10) {
    snprintf(d->architecture, sizeof d->architecture, "sm_%u%u", major, minor);
    d->arch_major = (int32_t)major;
    d->arch_minor = (int32_t)minor;
  }
}

static void config_init_once(void) {
  const char *filter = getenv("HWPORT_OPENCL_DEVICES");
  uint64_t limit_env = 0;
  const char *s = getenv("HWPORT_OPENCL_MEMORY_LIMIT");
  if (s != NULL && *s != '\0' && !(hwps_parse_bytes(s, &limit_env) && limit_env > 0)) {
    ocl_log(HWP_LOG_WARNING,
            "HWPORT_OPENCL_MEMORY_LIMIT='%s' is not a positive byte count (e.g. 1048576, 64M, "
            "2G); using each device's global memory",
            s);
    limit_env = 0;
  }

  cl_uint nplat = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &nplat);
  if (err != CL_SUCCESS || nplat == 0) {
    snprintf(g_ocl.why_none, sizeof g_ocl.why_none,
             "opencl: no OpenCL platform found (clGetPlatformIDs: %s); install an OpenCL ICD "
             "such as pocl-opencl-icd",
             err != CL_SUCCESS ? ocl_cl_error_name(err) : "0 platforms");
    return;
  }
  if (nplat > OCL_MAX_PLATFORMS) nplat = OCL_MAX_PLATFORMS;
  cl_platform_id plats[OCL_MAX_PLATFORMS];
  err = clGetPlatformIDs(nplat, plats, NULL);
  if (err != CL_SUCCESS) {
    snprintf(g_ocl.why_none, sizeof g_ocl.why_none, "opencl: clGetPlatformIDs failed: %s",
             ocl_cl_error_name(err));
    return;
  }
  int index = 0, total = 0;
  for (cl_uint p = 0; p < nplat; ++p) {
    char pname[128] = "";
    if (clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL) != CL_SUCCESS)
      snprintf(pname, sizeof pname, "unknown platform");
    pname[sizeof pname - 1] = '\0';
    cl_uint ndev = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &ndev) != CL_SUCCESS || ndev == 0)
      continue;
    cl_device_id *ids = malloc(ndev * sizeof *ids);
    if (ids == NULL) continue;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, ndev, ids, NULL) != CL_SUCCESS) {
      free(ids);
      continue;
    }
    int32_t slot = -1;
    for (cl_uint i = 0; i < ndev; ++i, ++index) {
      ++total;
      char dname[256];
      info_string(ids[i], CL_DEVICE_NAME, dname, sizeof dname);
      char label[400];
      snprintf(label, sizeof label, "%s / %s", pname, dname);
      if (!selected(filter, index, label)) continue;
      if (g_ocl.num_devices >= OCL_MAX_DEVICES) {
        ocl_log(HWP_LOG_WARNING, "more than %d OpenCL devices: '%s' is not used",
                OCL_MAX_DEVICES, label);
        continue;
      }
      if (slot < 0) {
        slot = g_ocl.num_platforms++;
        g_ocl.platforms[slot] = plats[p];
      }
      ocl_device *d = &g_ocl.devices[g_ocl.num_devices++];
      memset(d, 0, sizeof *d);
      pthread_mutex_init(&d->mu, NULL);
      d->platform = plats[p];
      d->id = ids[i];
      d->platform_slot = slot;
      snprintf(d->name, sizeof d->name, "%s", dname);
      snprintf(d->platform_name, sizeof d->platform_name, "%s", pname);
      info_string(ids[i], CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
      info_string(ids[i], CL_DRIVER_VERSION, d->driver_version, sizeof d->driver_version);
      cl_ulong gmem = 0, maxalloc = 0;
      cl_uint align_bits = 0, cu = 0;
      size_t wg = 0;
      clGetDeviceInfo(ids[i], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL);
      clGetDeviceInfo(ids[i], CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof maxalloc, &maxalloc, NULL);
      clGetDeviceInfo(ids[i], CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits,
                      NULL);
      clGetDeviceInfo(ids[i], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
      clGetDeviceInfo(ids[i], CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
      d->global_memory = gmem;
      d->max_alloc = maxalloc;
      d->alignment = align_bits >= 8 ? align_bits / 8 : 1;
      d->compute_units = (int32_t)(cu > INT32_MAX ? INT32_MAX : cu);
      d->max_work_group_size = (int32_t)(wg > INT32_MAX ? INT32_MAX : wg);
      d->memory_limit = limit_env != 0 ? limit_env : gmem;
      d->has_fp16 = ocl_device_has_extension(ids[i], "cl_khr_fp16");
      arch_of(d);
    }
    free(ids);
  }
  if (g_ocl.num_devices == 0) {
    if (total == 0)
      snprintf(g_ocl.why_none, sizeof g_ocl.why_none,
               "opencl: %u OpenCL platform(s) but no OpenCL device", (unsigned)nplat);
    else
      snprintf(g_ocl.why_none, sizeof g_ocl.why_none,
               "opencl: none of the %d OpenCL device(s) matches HWPORT_OPENCL_DEVICES='%s'",
               total, filter != NULL ? filter : "");
  }
}

void ocl_config_init(void) { pthread_once(&g_config_once, config_init_once); }

HWP_Status ocl_context(int32_t device, cl_context *out, const char *fn) {
  ocl_device *d = &g_ocl.devices[device];
  int32_t slot = d->platform_slot;
  pthread_mutex_lock(&g_ocl.context_mu);
  cl_context ctx = g_ocl.contexts[slot];
  if (ctx == NULL) {
    cl_device_id ids[OCL_MAX_DEVICES];
    cl_uint n = 0;
    for (int32_t i = 0; i < g_ocl.num_devices; ++i)
      if (g_ocl.devices[i].platform_slot == slot) ids[n++] = g_ocl.devices[i].id;
    cl_context_properties props[3] = {CL_CONTEXT_PLATFORM,
                                      (cl_context_properties)g_ocl.platforms[slot], 0};
    cl_int err = CL_SUCCESS;
    ctx = clCreateContext(props, n, ids, NULL, NULL, &err);
    if (err != CL_SUCCESS || ctx == NULL) {
      pthread_mutex_unlock(&g_ocl.context_mu);
      return ocl_cl_error(err != CL_SUCCESS ? err : CL_INVALID_CONTEXT, fn, "clCreateContext");
    }
    g_ocl.contexts[slot] = ctx;
  }
  pthread_mutex_unlock(&g_ocl.context_mu);
  *out = ctx;
  return HWP_OK;
}

HWP_Status ocl_sync_queue(int32_t device, cl_command_queue *out, const char *fn) {
  ocl_device *d = &g_ocl.devices[device];
  pthread_mutex_lock(&d->mu);
  cl_command_queue q = d->sync_queue;
  pthread_mutex_unlock(&d->mu);
  if (q != NULL) {
    *out = q;
    return HWP_OK;
  }
  cl_context ctx;
  HWP_Status st = ocl_context(device, &ctx, fn);
  if (st != HWP_OK) return st;
  cl_int err = CL_SUCCESS;
  q = clCreateCommandQueue(ctx, d->id, OCL_QUEUE_PROPERTIES, &err);
  if (err != CL_SUCCESS || q == NULL)
    return ocl_cl_error(err != CL_SUCCESS ? err : CL_INVALID_COMMAND_QUEUE, fn,
                        "clCreateCommandQueue");
  pthread_mutex_lock(&d->mu);
  if (d->sync_queue == NULL) {
    d->sync_queue = q;
  } else { /* another thread won the race */
    clReleaseCommandQueue(q);
    q = d->sync_queue;
  }
  pthread_mutex_unlock(&d->mu);
  *out = q;
  return HWP_OK;
}

/* ---- device table ------------------------------------------------------------------------- */

static HWP_Status ocl_get_device_count(int32_t *count) {
  if (count == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "get_device_count: count is NULL");
  ocl_config_init();
  *count = g_ocl.num_devices;
  if (g_ocl.num_devices == 0) (void)ocl_error(HWP_OK, "%s", g_ocl.why_none);
  return HWP_OK;
}

static HWP_Status ocl_synchronize_device_fn(int32_t device) {
  HWP_Status st = ocl_check_device(device, "synchronize_device");
  if (st != HWP_OK) return st;
  return ocl_synchronize_device(device, "synchronize_device");
}

static HWP_Status ocl_get_properties(int32_t device, HWP_DeviceProperties *props) {
  HWP_Status st = ocl_check_device(device, "get_properties");
  if (st != HWP_OK) return st;
  if (props == NULL) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "get_properties: props is NULL");
  size_t size = props->struct_size;
  if (size < sizeof(size_t))
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "get_properties: props->struct_size is %zu",
                     size);
  const ocl_device *d = &g_ocl.devices[device];
  HWP_DeviceProperties p;
  memset(&p, 0, sizeof p);
  snprintf(p.name, sizeof p.name, "%s", d->name);
  snprintf(p.vendor, sizeof p.vendor, "%s", d->vendor);
  snprintf(p.driver_version, sizeof p.driver_version, "%s", d->driver_version);
  p.total_memory = d->memory_limit < d->global_memory ? d->memory_limit : d->global_memory;
  p.max_allocation = d->max_alloc < p.total_memory ? d->max_alloc : p.total_memory;
  p.memory_alignment = d->alignment;
  p.compute_units = d->compute_units;
  p.max_work_group_size = d->max_work_group_size;
  /* Buffers are cl_mem objects, not host memory. float16 is stored everywhere and computed in
   * float; the flag says the device itself has half arithmetic. OpenCL has no bfloat16. */
  p.flags = d->has_fp16 ? HWP_DEVICE_FLOAT16_ARITHMETIC : 0;
  snprintf(p.architecture, sizeof p.architecture, "%s", d->architecture);
  p.architecture_major = d->arch_major;
  p.architecture_minor = d->arch_minor;
  p.simd_width = ocl_ew_preferred_multiple(device);
  p.max_threads_per_compute_unit = 0; /* core OpenCL does not say */
  /* No DLPack device: a cl_mem is an opaque handle, not an address another framework can use,
   * so memory.device_address / wrap_device_memory and the native-stream calls stay NULL (the
   * host copies through host memory instead). */
  p.dlpack_device_type = HWP_DLPACK_NONE;
  hwps_copy_sized(props, &p, sizeof p);
  return HWP_OK;
}

static HWP_Status ocl_init_device(int32_t device) {
  HWP_Status st = ocl_check_device(device, "init_device");
  if (st != HWP_OK) return st;
  cl_command_queue q = NULL;
  return ocl_sync_queue(device, &q, "init_device");
}

static HWP_Status ocl_deinit_device(int32_t device) {
  HWP_Status st = ocl_check_device(device, "deinit_device");
  if (st != HWP_OK) return st;
  return ocl_synchronize_device(device, "deinit_device");
}

static HWP_Status ocl_set_device(int32_t device) { return ocl_check_device(device, "set_device"); }

const HWP_DeviceTable ocl_device_table = {
    .struct_size = sizeof(HWP_DeviceTable),
    .get_device_count = ocl_get_device_count,
    .synchronize_device = ocl_synchronize_device_fn,
    .get_properties = ocl_get_properties,
    .init_device = ocl_init_device,
    .deinit_device = ocl_deinit_device,
    .set_device = ocl_set_device,
};
