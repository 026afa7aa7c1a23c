// hwport_probe: loads a plugin and runs what the host will run at load (hwport_plugin_init,
// get_last_error, get_device_count, get_properties) and reads what the host will read (the
// HWP_PluginApi, its strings and tables) in a throwaway process, so that a plugin that crashes,
// hangs or exits there is reported instead of taking the host down.
// Usage: hwport_probe <plugin.so>. Before each stage it writes "stage <name>" on fd 3
// (probe_protocol.h); when every stage returned it writes "done" and exits with kProbeOkExit,
// whatever statuses the plugin returned: the in-process loader then validates the results and
// gives the precise reason (a library or entry point that cannot be found included).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "hwport/plugin.h"
#include "probe_protocol.h"

namespace {
HWP_Status accept_kernel(void*, const HWP_KernelRegistration*) { return HWP_OK; }
void ignore_log(void*, HWP_LogLevel, const char*) {}
void ignore_trace(void*, const char*, int32_t, uint64_t, uint64_t) {}

void report(const char* line) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof(buf), "%s\n", line);
  if (n > 0 && write(hwport::kProbeReportFd, buf, static_cast<size_t>(n)) < 0) {
    // fd 3 is not open when the probe is run by hand: the exit status still tells.
  }
}

void stage(const char* name) {
  char line[48];
  std::snprintf(line, sizeof(line), "stage %s", name);
  report(line);
}

[[noreturn]] void finish() {
  report(hwport::kProbeDone);
  // _exit: the plugin's destructors and atexit handlers belong to the host's shutdown, not to
  // whether it can be loaded.
  _exit(hwport::kProbeOkExit);
}

// Reads the string as far as the host will (a bad pointer crashes here, not in the host).
void touch_string(const char* s, size_t max) {
  if (!s) return;
  volatile size_t sink = 0;
  for (size_t i = 0; i <= max && s[i]; ++i) sink = sink + static_cast<unsigned char>(s[i]);
  (void)sink;
}

// Copies a table as the host does: struct_size first, then as much as both sides know.
template <typename Table>
Table read_table(const Table* src) {
  Table copy{};
  if (!src) return copy;
  const size_t declared = src->struct_size;
  std::memcpy(static_cast<void*>(&copy), src, declared < sizeof(Table) ? declared : sizeof(Table));
  if (declared < sizeof(Table))  // beyond what the plugin declares the host sees NULL
    std::memset(reinterpret_cast<char*>(&copy) + declared, 0, sizeof(Table) - declared);
  return copy;
}

void last_error(const HWP_PluginApi* api) {
  if (!HWP_HAS_FIELD(api, HWP_PluginApi, get_last_error) || !api->get_last_error) return;
  stage("get_last_error");
  touch_string(api->get_last_error(), hwport::kMaxPluginMessageLength);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hwport_probe <plugin.so>\n");
    return 64;
  }
  stage("load");
  void* handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!handle) finish();
  auto init = reinterpret_cast<HWP_PluginInitFn>(dlsym(handle, HWP_PLUGIN_INIT_SYMBOL));
  if (!init) finish();
  HWP_HostApi host{};
  host.struct_size = sizeof(host);
  host.abi_major = HWP_ABI_VERSION_MAJOR;
  host.abi_minor = HWP_ABI_VERSION_MINOR;
  host.register_kernel = accept_kernel;
  host.log = ignore_log;
  host.trace_event = ignore_trace;
  const HWP_PluginApi* out = nullptr;
  stage("init");
  const HWP_Status status = init(&host, &out);
  if (!out) finish();

  stage("api");
  const HWP_PluginApi api = read_table(out);
  if (status != HWP_OK || !HWP_HAS_FIELD(&api, HWP_PluginApi, abi_minor) ||
      api.abi_major != HWP_ABI_VERSION_MAJOR) {
    last_error(&api);  // all the host reads of a plugin it rejects
    finish();
  }
  if (HWP_HAS_FIELD(&api, HWP_PluginApi, device_type)) {
    stage("device_type");
    touch_string(api.device_type, hwport::kMaxDeviceTypeLength);
  }
  if (HWP_HAS_FIELD(&api, HWP_PluginApi, plugin_version)) {
    stage("plugin_version");
    touch_string(api.plugin_version, hwport::kMaxPluginVersionLength);
  }
  stage("tables");
  const HWP_DeviceTable device =
      HWP_HAS_FIELD(&api, HWP_PluginApi, device) ? read_table(api.device) : HWP_DeviceTable{};
  if (HWP_HAS_FIELD(&api, HWP_PluginApi, memory)) read_table(api.memory);
  if (HWP_HAS_FIELD(&api, HWP_PluginApi, stream)) read_table(api.stream);
  last_error(&api);
  if (!device.get_device_count) finish();
  stage("get_device_count");
  int32_t count = 0;
  if (device.get_device_count(&count) != HWP_OK) count = 0;
  last_error(&api);
  if (!device.get_properties) finish();
  for (int32_t i = 0; i < count && i < hwport::kProbePropertiesDevices; ++i) {
    stage("get_properties");
    HWP_DeviceProperties props{};
    props.struct_size = sizeof(props);
    device.get_properties(i, &props);
  }
  finish();
}
