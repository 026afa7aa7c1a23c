/* hwport CPU plugin — the one exported symbol: version check, configuration, kernel
 * registration, and the plugin's tables. */
#include <stddef.h>

#include "internal.h"

static void cpu_shutdown(void) {
  for (int32_t d = 0; d < g_cpu.num_devices; ++d) cpu_synchronize_device(d);
}

static const HWP_PluginApi g_api = {
    .struct_size = sizeof(HWP_PluginApi),
    .abi_major = HWP_ABI_VERSION_MAJOR,
    .abi_minor = HWP_ABI_VERSION_MINOR,
    .device_type = "cpu",
    .plugin_version = CPU_PLUGIN_VERSION,
    .device = &cpu_device_table,
    .memory = &cpu_memory_table,
    .get_last_error = cpu_get_last_error,
    .stream = &cpu_stream_table,
    .ccl = NULL,
    .codegen = &cpu_codegen_table,
    .profiler = &cpu_profiler_table,
    .shutdown = cpu_shutdown,
};

HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out) {
  if (host == NULL || out == NULL)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "hwport_plugin_init: %s is NULL",
                     host == NULL ? "host" : "out");
  if (!HWP_HAS_FIELD(host, HWP_HostApi, abi_minor))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "hwport_plugin_init: host struct_size %zu is too small", host->struct_size);
  if (host->abi_major != HWP_ABI_VERSION_MAJOR)
    return cpu_error(HWP_ERROR_VERSION_MISMATCH,
                     "hwport_plugin_init: the cpu plugin implements ABI %d.%d, the host offers "
                     "%u.%u (majors must match)",
                     HWP_ABI_VERSION_MAJOR, HWP_ABI_VERSION_MINOR, (unsigned)host->abi_major,
                     (unsigned)host->abi_minor);
  cpu_set_host(host);
  cpu_config_init();
  cpu_register_kernels(host);
  *out = &g_api;
  return HWP_OK;
}
