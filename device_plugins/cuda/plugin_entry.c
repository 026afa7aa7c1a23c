/* hwport CUDA plugin — the one exported symbol: version check, device enumeration, kernel
 * registration and the plugin's tables: a kernel for every primitive of phi_ops/ops.yaml and
 * the fused nn composites, for the dtypes of HWPORT_CUDA_DTYPES; other dtypes (by default
 * int8/uint8/int16) run through the host's counted CPU fallback. Without a driver or a device
 * the plugin still loads: it reports zero devices with the reason. */
#include <stddef.h>

#include "codegen_loader.h"
#include "kernels.h"

static void cu_shutdown(void) {
  for (int32_t d = 0; d < g_cu.num_devices; ++d) (void)cu_synchronize_device(d, "shutdown");
  cu_cublas_shutdown();
  cu_staging_shutdown();
  cu_memory_shutdown();
}

static const HWP_PluginApi g_api = {
    .struct_size = sizeof(HWP_PluginApi),
    .abi_major = HWP_ABI_VERSION_MAJOR,
    .abi_minor = HWP_ABI_VERSION_MINOR,
    .device_type = "cuda",
    .plugin_version = CU_PLUGIN_VERSION,
    .device = &cu_device_table,
    .memory = &cu_memory_table,
    .get_last_error = cu_get_last_error,
    .stream = &cu_stream_table,
    .ccl = NULL,
    .codegen = &cu_codegen_table,
    .profiler = &cu_profiler_table,
    .shutdown = cu_shutdown,
};

HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out) {
  if (host == NULL || out == NULL)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "hwport_plugin_init: %s is NULL",
                    host == NULL ? "host" : "out");
  if (!HWP_HAS_FIELD(host, HWP_HostApi, abi_minor))
    return cu_error(HWP_ERROR_INVALID_ARGUMENT,
                    "hwport_plugin_init: host struct_size %zu is too small", host->struct_size);
  if (host->abi_major != HWP_ABI_VERSION_MAJOR)
    return cu_error(HWP_ERROR_VERSION_MISMATCH,
                    "hwport_plugin_init: the cuda plugin implements ABI %d.%d, the host "
                    "offers %u.%u (majors must match)",
                    HWP_ABI_VERSION_MAJOR, HWP_ABI_VERSION_MINOR, (unsigned)host->abi_major,
                    (unsigned)host->abi_minor);
  if (!HWP_HAS_FIELD(host, HWP_HostApi, register_kernel) || host->register_kernel == NULL)
    return cu_error(HWP_ERROR_INVALID_ARGUMENT, "hwport_plugin_init: host has no register_kernel");
  hwps_set_host(host, "cuda");
  cu_config_init();
  if (g_cu.num_devices == 0) cu_log(HWP_LOG_INFO, "cuda: no device: %s", g_cu.why_none);
  HWP_Status st = cu_register_elementwise_kernels(host);
  if (st == HWP_OK) st = cu_register_reduce_kernels(host);
  if (st == HWP_OK) st = cu_register_nn_kernels(host);
  if (st == HWP_OK) st = cu_register_matmul_kernels(host);
  if (st == HWP_OK) st = cu_register_scan_kernels(host);
  if (st == HWP_OK) st = cu_register_random_kernels(host);
  if (st == HWP_OK) st = cu_register_index_kernels(host);
  if (st == HWP_OK) st = cu_register_sort_kernels(host);
  if (st != HWP_OK) return st;
  *out = &g_api;
  return HWP_OK;
}
