/* hwport OpenCL plugin — the one exported symbol: version check, device discovery, kernel
 * registration (the generated elementwise kernels, kernels_elementwise.c) and the plugin's
 * tables. Every other op runs through the host's counted CPU fallback. */
#include <stddef.h>

#include "ocl_codegen.h"

static void ocl_shutdown(void) {
  ocl_gate_shutdown();
  for (int32_t d = 0; d < g_ocl.num_devices; ++d) (void)ocl_synchronize_device(d, "shutdown");
  ocl_stream_shutdown();
  ocl_memory_shutdown();
  ocl_codegen_shutdown();
  ocl_program_cache_shutdown();
}

static const HWP_PluginApi g_api = {
    .struct_size = sizeof(HWP_PluginApi),
    .abi_major = HWP_ABI_VERSION_MAJOR,
    .abi_minor = HWP_ABI_VERSION_MINOR,
    .device_type = "opencl",
    .plugin_version = OCL_PLUGIN_VERSION,
    .device = &ocl_device_table,
    .memory = &ocl_memory_table,
    .get_last_error = ocl_get_last_error,
    .stream = &ocl_stream_table,
    .ccl = NULL,
    .codegen = &ocl_codegen_table,
    .profiler = &ocl_profiler_table,
    .shutdown = ocl_shutdown,
};

HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out) {
  if (host == NULL || out == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "hwport_plugin_init: %s is NULL",
                     host == NULL ? "host" : "out");
  if (!HWP_HAS_FIELD(host, HWP_HostApi, abi_minor))
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "hwport_plugin_init: host struct_size %zu is too small", host->struct_size);
  if (host->abi_major != HWP_ABI_VERSION_MAJOR)
    return ocl_error(HWP_ERROR_VERSION_MISMATCH,
                     "hwport_plugin_init: the opencl plugin implements ABI %d.%d, the host "
                     "offers %u.%u (majors must match)",
                     HWP_ABI_VERSION_MAJOR, HWP_ABI_VERSION_MINOR, (unsigned)host->abi_major,
                     (unsigned)host->abi_minor);
  ocl_set_host(host);
  ocl_config_init();
  HWP_Status st = ocl_register_elementwise_kernels(host);
  if (st != HWP_OK) return st;
  if ((st = ocl_register_reduce_kernels(host)) != HWP_OK) return st;
  if ((st = ocl_register_arg_scan_kernels(host)) != HWP_OK) return st;
  if ((st = ocl_register_matmul_kernels(host)) != HWP_OK) return st;
  if ((st = ocl_register_nn_kernels(host)) != HWP_OK) return st;
  if ((st = ocl_register_index_kernels(host)) != HWP_OK) return st;
  if ((st = ocl_register_random_kernels(host)) != HWP_OK) return st;
  if ((st = ocl_register_optim_kernels(host)) != HWP_OK) return st;
  *out = &g_api;
  return HWP_OK;
}
