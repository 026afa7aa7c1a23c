#include <dlfcn.h>

#include <cstring>
#include <mutex>

#include "errors.h"
#include "plugin.h"

namespace hwport {

const char* status_name(HWP_Status status) {
  switch (status) {
    case HWP_OK: return "HWP_OK";
    case HWP_ERROR_INVALID_ARGUMENT: return "HWP_ERROR_INVALID_ARGUMENT";
    case HWP_ERROR_OUT_OF_MEMORY: return "HWP_ERROR_OUT_OF_MEMORY";
    case HWP_ERROR_NOT_SUPPORTED: return "HWP_ERROR_NOT_SUPPORTED";
    case HWP_ERROR_NOT_READY: return "HWP_ERROR_NOT_READY";
    case HWP_ERROR_NOT_FOUND: return "HWP_ERROR_NOT_FOUND";
    case HWP_ERROR_DEVICE: return "HWP_ERROR_DEVICE";
    case HWP_ERROR_VERSION_MISMATCH: return "HWP_ERROR_VERSION_MISMATCH";
    case HWP_ERROR_INTERNAL: return "HWP_ERROR_INTERNAL";
    default: return "unknown HWP_Status";
  }
}

std::string Plugin::describe(const char* call, HWP_Status status) const {
  std::string msg = device_type + ": " + call + " failed with " + status_name(status) +
                    " (" + std::to_string(status) + ")";
  const char* detail = get_last_error_fn ? get_last_error_fn() : nullptr;
  if (detail && *detail) msg += std::string(": ") + detail;
  return msg;
}

void Plugin::check(HWP_Status status, const char* call) const {
  if (status == HWP_OK) return;
  raise(status == HWP_ERROR_OUT_OF_MEMORY ? ErrorKind::OutOfMemory : ErrorKind::Runtime,
        describe(call, status));
}

namespace {

std::mutex g_log_mutex;
std::vector<PluginLogEntry> g_log;

// What a plugin's init may touch through the host API.
struct LoadingState {
  std::string device_type_hint;  // file name until the plugin says its type
  bool accepting_kernels = true;
  struct Pending {
    std::string op;
    HWP_DType dtype;
    KernelEntry entry;
  };
  std::vector<Pending> kernels;
  std::vector<std::string> init_log;
  std::string registration_problems;
};

HWP_Status host_register_kernel(void* host_context, const HWP_KernelRegistration* reg) {
  auto* state = static_cast<LoadingState*>(host_context);
  if (!state || !state->accepting_kernels) return HWP_ERROR_INVALID_ARGUMENT;
  if (!reg || reg->struct_size < offsetof(HWP_KernelRegistration, user_data) + sizeof(void*) ||
      !reg->op_name || !*reg->op_name || !reg->fn || !valid_dtype_code(reg->dtype)) {
    state->registration_problems += "a kernel registration was rejected (NULL fn, empty op name, "
                                    "unknown dtype or short struct); ";
    return HWP_ERROR_INVALID_ARGUMENT;
  }
  state->kernels.push_back({reg->op_name, reg->dtype, KernelEntry{reg->fn, reg->flags,
                                                                  reg->user_data}});
  return HWP_OK;
}

void host_log(void* host_context, HWP_LogLevel level, const char* message) {
  auto* state = static_cast<LoadingState*>(host_context);
  std::string text = message ? message : "";
  std::lock_guard<std::mutex> lock(g_log_mutex);
  if (state && state->accepting_kernels) state->init_log.push_back(text);
  g_log.push_back({state ? state->device_type_hint : std::string(), level, text});
  if (g_log.size() > 4096) g_log.erase(g_log.begin(), g_log.begin() + 2048);
}

void host_trace_event(void*, const char*, int32_t, uint64_t, uint64_t) {}

// Copies a plugin table of `plugin_size` bytes into a host-sized zeroed struct: fields beyond
// what the plugin declares stay NULL, fields the host does not know are ignored.
template <typename Table>
void copy_table(const Table* src, Table* dst) {
  std::memset(dst, 0, sizeof(Table));
  size_t n = src->struct_size < sizeof(Table) ? src->struct_size : sizeof(Table);
  std::memcpy(static_cast<void*>(dst), src, n);
  dst->struct_size = sizeof(Table);
}

#define END_OF(type, field) (offsetof(type, field) + sizeof(((type*)nullptr)->field))

bool valid_device_type(const char* t) {
  if (!t || !*t) return false;
  for (const char* p = t; *p; ++p)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
  return true;
}

std::string file_stem(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct Required {
  const char* name;
  const void* fn;
};

}  // namespace

std::vector<PluginLogEntry> plugin_log() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  return g_log;
}

std::unique_ptr<Plugin> load_plugin(const std::string& path,
                                    const std::vector<std::string>& taken_types,
                                    std::string* reason) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    *reason = std::string("cannot load: ") + (err ? err : "dlopen failed");
    return nullptr;
  }
  // From here the library stays loaded even when rejected: its code may be referenced by
  // threads it started during init, so unloading could crash the host.
  auto init = reinterpret_cast<HWP_PluginInitFn>(dlsym(handle, HWP_PLUGIN_INIT_SYMBOL));
  if (!init) {
    *reason = "missing entry point 'hwport_plugin_init' (the one symbol a plugin must export)";
    return nullptr;
  }

  // The state must outlive init: a plugin may keep host->host_context for logging later.
  static std::vector<std::unique_ptr<LoadingState>> states;
  states.push_back(std::make_unique<LoadingState>());
  LoadingState* state = states.back().get();
  state->device_type_hint = file_stem(path);
  static std::vector<std::unique_ptr<HWP_HostApi>> host_apis;
  host_apis.push_back(std::make_unique<HWP_HostApi>());
  HWP_HostApi* host = host_apis.back().get();
  host->struct_size = sizeof(HWP_HostApi);
  host->abi_major = HWP_ABI_VERSION_MAJOR;
  host->abi_minor = HWP_ABI_VERSION_MINOR;
  host->host_context = state;
  host->register_kernel = host_register_kernel;
  host->log = host_log;
  host->trace_event = host_trace_event;

  const HWP_PluginApi* api = nullptr;
  HWP_Status status = init(host, &api);
  state->accepting_kernels = false;

  auto init_messages = [&]() {
    std::string out;
    if (api && api->struct_size >= END_OF(HWP_PluginApi, get_last_error) &&
        api->get_last_error) {
      const char* msg = api->get_last_error();
      if (msg && *msg) out += msg;
    }
    for (const auto& line : state->init_log) out += (out.empty() ? "" : "; ") + line;
    return out;
  };

  if (status != HWP_OK) {
    std::string detail = init_messages();
    *reason = std::string("hwport_plugin_init failed with ") + status_name(status) +
              (detail.empty() ? "" : ": " + detail);
    return nullptr;
  }
  if (!api) {
    *reason = "hwport_plugin_init returned no HWP_PluginApi (out pointer left NULL)";
    return nullptr;
  }
  if (api->struct_size < END_OF(HWP_PluginApi, abi_minor)) {
    *reason = "HWP_PluginApi.struct_size " + std::to_string(api->struct_size) +
              " is too small to hold the ABI version";
    return nullptr;
  }
  if (api->abi_major != HWP_ABI_VERSION_MAJOR) {
    *reason = "ABI major version " + std::to_string(api->abi_major) +
              " is not supported by this host (host ABI " +
              std::to_string(HWP_ABI_VERSION_MAJOR) + "." +
              std::to_string(HWP_ABI_VERSION_MINOR) + "; majors must match)";
    return nullptr;
  }
  const size_t api_required = END_OF(HWP_PluginApi, get_last_error);
  if (api->struct_size < api_required) {
    *reason = "HWP_PluginApi.struct_size " + std::to_string(api->struct_size) +
              " is smaller than the " + std::to_string(api_required) +
              " bytes that ABI 1.0 requires";
    return nullptr;
  }
  if (!valid_device_type(api->device_type)) {
    *reason = std::string("device type '") + (api->device_type ? api->device_type : "(null)") +
              "' is invalid: it must be non-empty and match [a-z0-9_]+";
    return nullptr;
  }
  for (const auto& t : taken_types) {
    if (t == api->device_type) {
      *reason = "device type '" + t + "' is already provided by another loaded plugin";
      return nullptr;
    }
  }
  if (!api->device) {
    *reason = "required table HWP_PluginApi.device is NULL";
    return nullptr;
  }
  if (!api->memory) {
    *reason = "required table HWP_PluginApi.memory is NULL";
    return nullptr;
  }
  const size_t device_required = END_OF(HWP_DeviceTable, synchronize_device);
  if (api->device->struct_size < device_required) {
    *reason = "HWP_DeviceTable.struct_size " + std::to_string(api->device->struct_size) +
              " is smaller than the " + std::to_string(device_required) +
              " bytes of its required functions";
    return nullptr;
  }
  const size_t memory_required = END_OF(HWP_MemoryTable, copy_d2d);
  if (api->memory->struct_size < memory_required) {
    *reason = "HWP_MemoryTable.struct_size " + std::to_string(api->memory->struct_size) +
              " is smaller than the " + std::to_string(memory_required) +
              " bytes of its required functions";
    return nullptr;
  }

  auto plugin = std::make_unique<Plugin>();
  plugin->path = path;
  plugin->handle = handle;
  plugin->device_type = api->device_type;
  plugin->plugin_version = api->plugin_version ? api->plugin_version : "";
  plugin->abi_major = api->abi_major;
  plugin->abi_minor = api->abi_minor;
  plugin->get_last_error_fn = api->get_last_error;
  copy_table(api->device, &plugin->device);
  copy_table(api->memory, &plugin->memory);
  if (HWP_HAS_FIELD(api, HWP_PluginApi, shutdown)) plugin->shutdown = api->shutdown;
  plugin->has_ccl = HWP_HAS_FIELD(api, HWP_PluginApi, ccl) && api->ccl;
  plugin->has_codegen = HWP_HAS_FIELD(api, HWP_PluginApi, codegen) && api->codegen;
  plugin->has_profiler = HWP_HAS_FIELD(api, HWP_PluginApi, profiler) && api->profiler;
  if (HWP_HAS_FIELD(api, HWP_PluginApi, stream) && api->stream) {
    copy_table(api->stream, &plugin->stream);
    const HWP_StreamTable& s = plugin->stream;
    // Streams are usable only as a whole; a partial table falls back to the implicit stream.
    plugin->has_streams = s.create_stream && s.destroy_stream && s.synchronize_stream &&
                          s.create_event && s.destroy_event && s.record_event &&
                          s.synchronize_event && s.stream_wait_event;
  }

  const Required required[] = {
      {"HWP_PluginApi.get_last_error", reinterpret_cast<const void*>(api->get_last_error)},
      {"HWP_DeviceTable.get_device_count",
       reinterpret_cast<const void*>(plugin->device.get_device_count)},
      {"HWP_DeviceTable.synchronize_device",
       reinterpret_cast<const void*>(plugin->device.synchronize_device)},
      {"HWP_MemoryTable.allocate", reinterpret_cast<const void*>(plugin->memory.allocate)},
      {"HWP_MemoryTable.deallocate", reinterpret_cast<const void*>(plugin->memory.deallocate)},
      {"HWP_MemoryTable.copy_h2d", reinterpret_cast<const void*>(plugin->memory.copy_h2d)},
      {"HWP_MemoryTable.copy_d2h", reinterpret_cast<const void*>(plugin->memory.copy_d2h)},
      {"HWP_MemoryTable.copy_d2d", reinterpret_cast<const void*>(plugin->memory.copy_d2d)},
  };
  for (const auto& r : required) {
    if (!r.fn) {
      *reason = std::string("required function ") + r.name + " is NULL";
      return nullptr;
    }
  }

  state->device_type_hint = plugin->device_type;
  int32_t count = 0;
  status = plugin->device.get_device_count(&count);
  if (status != HWP_OK) {
    *reason = plugin->describe("get_device_count", status);
    return nullptr;
  }
  if (count < 0) {
    *reason = "get_device_count returned a negative count (" + std::to_string(count) + ")";
    return nullptr;
  }
  plugin->device_count = count;
  if (count == 0) {
    const char* note = plugin->get_last_error_fn();
    plugin->device_count_note = note ? note : "";
  }
  for (const auto& k : state->kernels)
    plugin->kernels.add(op_id(k.op), static_cast<DType>(k.dtype), k.entry);
  if (!state->registration_problems.empty()) {
    host_log(state, HWP_LOG_WARNING, state->registration_problems.c_str());
  }
  return plugin;
}

}  // namespace hwport
