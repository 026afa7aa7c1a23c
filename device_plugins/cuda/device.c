/* hwport CUDA plugin — device enumeration (once, at init) and the device table.
 *
 * Without a driver or a device, cudaGetDeviceCount fails (cudaErrorInsufficientDriver,
 * cudaErrorNoDevice, ...): the plugin then reports zero devices, and get_device_count leaves
 * the reason as the thread's last error, which the host shows as the plugin's device note. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

cu_config g_cu;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void cu_why_none(cudaError_t err) {
  const char *what = err == cudaErrorInsufficientDriver ? "CUDA driver not found or too old"
                     : err == cudaErrorNoDevice         ? "no CUDA device"
                                                        : "CUDA is unusable";
  snprintf(g_cu.why_none, sizeof g_cu.why_none,
           "%s: cudaGetDeviceCount failed: %s (%s); CUDA runtime %d, driver %d", what,
           cudaGetErrorName(err), cudaGetErrorString(err), g_cu.runtime_version,
           g_cu.driver_version);
}

static void cu_enumerate(void) {
  (void)cudaRuntimeGetVersion(&g_cu.runtime_version);
  (void)cudaDriverGetVersion(&g_cu.driver_version);
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError(); /* not sticky: clear it for later calls */
    cu_why_none(err);
    return;
  }
  if (count == 0) {
    snprintf(g_cu.why_none, sizeof g_cu.why_none, "no CUDA device (driver %d)",
             g_cu.driver_version);
    return;
  }
  if (count > CU_MAX_DEVICES) count = CU_MAX_DEVICES;
  for (int d = 0; d < count; ++d) {
    struct cudaDeviceProp p;
    err = cudaGetDeviceProperties(&p, d);
    if (err != cudaSuccess) {
      cu_log(HWP_LOG_WARNING, "cuda: device %d skipped: cudaGetDeviceProperties: %s (%s)", d,
             cudaGetErrorName(err), cudaGetErrorString(err));
      continue;
    }
    cu_device *dev = &g_cu.devices[g_cu.num_devices++];
    dev->ordinal = d;
    snprintf(dev->name, sizeof dev->name, "%s", p.name);
    dev->cc_major = p.major;
    dev->cc_minor = p.minor;
    dev->total_memory = (uint64_t)p.totalGlobalMem;
    dev->sm_count = p.multiProcessorCount;
    dev->max_threads_per_block = p.maxThreadsPerBlock;
    dev->warp_size = p.warpSize;
    dev->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    dev->has_fp16 = p.major * 10 + p.minor >= 53;
    dev->has_bf16 = p.major >= 8;
    int pools = 0;
    (void)cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, d);
    dev->memory_pools = pools;
    cu_log(HWP_LOG_INFO,
           "cuda: device %d (CUDA %d): %s, compute capability %d.%d, %llu MiB, %d SMs, "
           "%d threads/block, warp %d, fp16 %s, bf16 %s",
           g_cu.num_devices - 1, d, dev->name, dev->cc_major, dev->cc_minor,
           (unsigned long long)(dev->total_memory >> 20), dev->sm_count,
           dev->max_threads_per_block, dev->warp_size, dev->has_fp16 ? "yes" : "no",
           dev->has_bf16 ? "yes" : "storage only");
  }
  if (g_cu.num_devices == 0)
    snprintf(g_cu.why_none, sizeof g_cu.why_none,
             "none of the %d CUDA devices could be queried (see the log)", count);
}

void cu_config_init(void) { pthread_once(&g_once, cu_enumerate); }

HWP_Status cu_enter(int32_t device, const char *fn) {
  if (device < 0 || device >= g_cu.num_devices)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: device %d out of range [0, %d)%s%s", fn,
                    (int)device, (int)g_cu.num_devices, g_cu.num_devices == 0 ? ": " : "",
                    g_cu.num_devices == 0 ? g_cu.why_none : "");
  cudaError_t err = cudaSetDevice(g_cu.devices[device].ordinal);
  return err == cudaSuccess ? HWP_OK : cu_cuda_error(err, fn, "cudaSetDevice");
}

static HWP_Status cu_get_device_count(int32_t *count) {
  if (count == NULL)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "get_device_count: count is NULL");
  cu_config_init();
  *count = g_cu.num_devices;
  if (g_cu.num_devices == 0) (void)cu_error(HWP_OK, "%s", g_cu.why_none);
  return HWP_OK;
}

HWP_Status cu_synchronize_device(int32_t device, const char *fn) {
  HWP_Status st = cu_enter(device, fn);
  if (st != HWP_OK) return st;
  cudaError_t err = cudaDeviceSynchronize();
  return err == cudaSuccess ? HWP_OK : cu_cuda_error(err, fn, "cudaDeviceSynchronize");
}

static HWP_Status cu_sync_device_fn(int32_t device) {
  return cu_synchronize_device(device, "synchronize_device");
}

static HWP_Status cu_get_properties(int32_t device, HWP_DeviceProperties *props) {
  if (device < 0 || device >= g_cu.num_devices) return cu_enter(device, "get_properties");
  if (props == NULL || props->struct_size < sizeof(size_t))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "get_properties: props is NULL or too small");
  const cu_device *d = &g_cu.devices[device];
  HWP_DeviceProperties full;
  memset(&full, 0, sizeof full);
  snprintf(full.name, sizeof full.name, "%s", d->name);
  snprintf(full.vendor, sizeof full.vendor, "NVIDIA");
  snprintf(full.driver_version, sizeof full.driver_version, "driver %d runtime %d",
           g_cu.driver_version, g_cu.runtime_version);
  full.total_memory = d->total_memory;
  full.memory_alignment = 256; /* cudaMalloc guarantees at least 256 bytes */
  full.compute_units = d->sm_count;
  full.max_work_group_size = d->max_threads_per_block;
  full.flags = (d->has_fp16 ? HWP_DEVICE_FLOAT16_ARITHMETIC : 0u) |
               (d->has_bf16 ? HWP_DEVICE_BFLOAT16_ARITHMETIC : 0u);
  full.max_allocation = d->total_memory;
  snprintf(full.architecture, sizeof full.architecture, "sm_%d%d", d->cc_major, d->cc_minor);
  full.architecture_major = d->cc_major;
  full.architecture_minor = d->cc_minor;
  full.simd_width = d->warp_size;
  full.max_threads_per_compute_unit = d->max_threads_per_sm;
  full.dlpack_device_type = HWP_DLPACK_CUDA;
  full.dlpack_device_id = d->ordinal;
  hwps_copy_sized(props, &full, sizeof full);
  return HWP_OK;
}

static HWP_Status cu_init_device(int32_t device) { return cu_enter(device, "init_device"); }
static HWP_Status cu_deinit_device(int32_t device) {
  return cu_synchronize_device(device, "deinit_device");
}
static HWP_Status cu_set_device(int32_t device) { return cu_enter(device, "set_device"); }

const HWP_DeviceTable cu_device_table = {
    .struct_size = sizeof(HWP_DeviceTable),
    .get_device_count = cu_get_device_count,
    .synchronize_device = cu_sync_device_fn,
    .get_properties = cu_get_properties,
    .init_device = cu_init_device,
    .deinit_device = cu_deinit_device,
    .set_device = cu_set_device,
};
