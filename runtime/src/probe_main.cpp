// hwport_probe: runs a plugin's hwport_plugin_init and get_device_count in a throwaway process,
// so that a plugin that crashes or hangs there is reported instead of taking the host down.
// Usage: hwport_probe <plugin.so>. Exit 0 when both calls returned (whatever their status:
// the in-process loader validates the results and gives the precise reason); 2 when the
// library or its entry point cannot be found (the loader reports that too).
#include <dlfcn.h>

#include <cstdio>

#include "hwport/plugin.h"

namespace {
HWP_Status accept_kernel(void*, const HWP_KernelRegistration*) { return HWP_OK; }
void ignore_log(void*, HWP_LogLevel, const char*) {}
void ignore_trace(void*, const char*, int32_t, uint64_t, uint64_t) {}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hwport_probe <plugin.so>\n");
    return 64;
  }
  void* handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!handle) return 2;
  auto init = reinterpret_cast<HWP_PluginInitFn>(dlsym(handle, HWP_PLUGIN_INIT_SYMBOL));
  if (!init) return 2;
  HWP_HostApi host{};
  host.struct_size = sizeof(host);
  host.abi_major = HWP_ABI_VERSION_MAJOR;
  host.abi_minor = HWP_ABI_VERSION_MINOR;
  host.register_kernel = accept_kernel;
  host.log = ignore_log;
  host.trace_event = ignore_trace;
  const HWP_PluginApi* api = nullptr;
  if (init(&host, &api) != HWP_OK || !api) return 0;
  if (HWP_HAS_FIELD(api, HWP_PluginApi, device) && api->abi_major == HWP_ABI_VERSION_MAJOR &&
      api->device && HWP_HAS_FIELD(api->device, HWP_DeviceTable, get_device_count) &&
      api->device->get_device_count) {
    int32_t count = 0;
    api->device->get_device_count(&count);
  }
  return 0;
}
