#include <dlfcn.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "errors.h"
#include "plugin.h"
#include "probe_protocol.h"

namespace hwport {

namespace {

// ---- reading plugin memory without trusting the pointer ----------------------------------
// process_vm_readv on our own pid fails with EFAULT on unmapped memory instead of faulting, so
// a garbage pointer from a plugin becomes a reason, not a crash (even without the probe).
// Where the kernel refuses the call (a seccomp filter), it falls back to a plain copy: the
// isolated probe has read the same bytes first.

size_t page_size() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// Copies n bytes that lie within one page; false when they cannot be read.
bool read_chunk(uintptr_t at, size_t n, void* dst) {
  iovec local{dst, n};
  iovec remote{reinterpret_cast<void*>(at), n};
  const ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (got == static_cast<ssize_t>(n)) return true;
  if (got < 0 && (errno == ENOSYS || errno == EPERM)) {
    std::memcpy(dst, reinterpret_cast<const void*>(at), n);
    return true;
  }
  return false;
}

// Calls fn(chunk, n) for the page-bounded pieces of [src, src + n) until it returns false;
// false when a piece cannot be read.
template <typename Fn>
bool read_pieces(const void* src, size_t n, char* buf, Fn&& fn) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(src);
  if (!src || start + n < start) return false;
  for (size_t done = 0; done < n;) {
    const uintptr_t at = start + done;
    const size_t chunk = std::min(n - done, page_size() - at % page_size());
    if (!read_chunk(at, chunk, buf + done)) return false;
    if (!fn(buf + done, chunk)) return true;
    done += chunk;
  }
  return true;
}

bool read_plugin_memory(const void* src, size_t n, void* dst) {
  return read_pieces(src, n, static_cast<char*>(dst), [](const char*, size_t) { return true; });
}

std::string hex_pointer(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

}  // namespace

StringRead read_plugin_string(const char* s, size_t max, std::string* out) {
  out->clear();
  if (!s) return StringRead::Null;
  std::string buf(max + 1, '\0');
  size_t length = max + 1;
  size_t seen = 0;
  const bool readable = read_pieces(s, max + 1, buf.data(), [&](const char* piece, size_t n) {
    const void* nul = std::memchr(piece, 0, n);
    if (nul) length = seen + static_cast<size_t>(static_cast<const char*>(nul) - piece);
    seen += n;
    return nul == nullptr;  // stop at the terminator: the page after it may be unmapped
  });
  if (!readable) return StringRead::Unreadable;
  out->assign(buf.data(), std::min(length, max));
  if (length > max) return StringRead::TooLong;
  return StringRead::Ok;
}

std::string plugin_last_error(const char* (*get_last_error)(void)) {
  if (!get_last_error) return "";
  const char* msg = get_last_error();
  std::string text;
  switch (read_plugin_string(msg, kMaxPluginMessageLength, &text)) {
    case StringRead::Ok: return text;
    case StringRead::Null: return "";
    case StringRead::TooLong: return text + "...";
    case StringRead::Unreadable: break;
  }
  return "(get_last_error returned an unreadable pointer " + hex_pointer(msg) + ")";
}

bool is_loadable_file(const std::string& path, std::string* reason) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return true;  // dlopen reports a missing file precisely
  if (S_ISREG(st.st_mode)) return true;
  const char* kind = S_ISFIFO(st.st_mode)  ? "a FIFO"
                     : S_ISDIR(st.st_mode) ? "a directory"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                     : S_ISCHR(st.st_mode) ? "a character device"
                     : S_ISBLK(st.st_mode) ? "a block device"
                                           : "an unknown file type";
  // Opening a FIFO blocks until a writer comes: the path is never opened, by us or the probe.
  *reason = std::string("not a regular file (") + kind + "); not opened, not loaded";
  return false;
}

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
  const std::string detail = plugin_last_error(get_last_error_fn);
  if (!detail.empty()) msg += ": " + detail;
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

// HWPORT_DISABLE_NATIVE_KERNELS: comma-separated device types whose hand-written kernels the
// host ignores (all but `copy`), so that their ops run compiled (docs/cinn.md).
bool native_kernels_disabled(const std::string& device_type) {
  const char* env = std::getenv("HWPORT_DISABLE_NATIVE_KERNELS");
  if (!env) return false;
  std::string list = env;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(start, end - start);
    const size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos && item.substr(b, e - b + 1) == device_type) return true;
    start = end + 1;
  }
  return false;
}

// Copies a plugin struct through read_plugin_memory: its struct_size first, then as many bytes
// as both the plugin declares and the host knows; fields beyond what the plugin declares stay
// NULL. The copy keeps the declared struct_size (HWP_HAS_FIELD works on it). False, with
// `reason`, when the pointer does not point to readable memory.
template <typename Table>
bool read_struct(const Table* src, const char* what, Table* dst, std::string* reason) {
  std::memset(static_cast<void*>(dst), 0, sizeof(Table));
  size_t declared = 0;
  if (!read_plugin_memory(src, sizeof(declared), &declared) ||
      !read_plugin_memory(src, std::min(declared, sizeof(Table)), dst)) {
    *reason = std::string(what) + " at " + hex_pointer(src) + " is not readable memory";
    return false;
  }
  dst->struct_size = declared;
  return true;
}

#define END_OF(type, field) (offsetof(type, field) + sizeof(((type*)nullptr)->field))

bool valid_device_type(const std::string& t) {
  if (t.empty()) return false;
  for (char c : t)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
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

  const HWP_PluginApi* out = nullptr;
  HWP_Status status = init(host, &out);
  state->accepting_kernels = false;

  // Everything the plugin returned is read through read_struct / read_plugin_string: nothing
  // it points to is trusted to be readable or terminated.
  HWP_PluginApi copy{};
  const HWP_PluginApi* api = &copy;
  std::string unreadable;
  const bool api_readable = out && read_struct(out, "the HWP_PluginApi", &copy, &unreadable);
  auto init_messages = [&]() {
    std::string text = api_readable && HWP_HAS_FIELD(api, HWP_PluginApi, get_last_error)
                           ? plugin_last_error(api->get_last_error)
                           : std::string();
    for (const auto& line : state->init_log) text += (text.empty() ? "" : "; ") + line;
    return text;
  };

  if (status != HWP_OK) {
    std::string detail = init_messages();
    *reason = std::string("hwport_plugin_init failed with ") + status_name(status) +
              (detail.empty() ? "" : ": " + detail);
    return nullptr;
  }
  if (!out) {
    *reason = "hwport_plugin_init returned no HWP_PluginApi (out pointer left NULL)";
    return nullptr;
  }
  if (!api_readable) {
    *reason = "hwport_plugin_init returned " + unreadable;
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
  std::string device_type;
  switch (read_plugin_string(api->device_type, kMaxDeviceTypeLength, &device_type)) {
    case StringRead::Ok: break;
    case StringRead::Null:
      *reason = "device type is NULL: HWP_PluginApi.device_type must match [a-z0-9_]+";
      return nullptr;
    case StringRead::TooLong:
      *reason = "device type '" + device_type + "...' is longer than " +
                std::to_string(kMaxDeviceTypeLength) + " characters";
      return nullptr;
    case StringRead::Unreadable:
      *reason = "HWP_PluginApi.device_type " + hex_pointer(api->device_type) +
                " does not point to a readable NUL-terminated string";
      return nullptr;
  }
  if (!valid_device_type(device_type)) {
    *reason = "device type '" + device_type +
              "' is invalid: it must be non-empty and match [a-z0-9_]+";
    return nullptr;
  }
  for (const auto& t : taken_types) {
    if (t == device_type) {
      *reason = "device type '" + t + "' is already provided by another loaded plugin";
      return nullptr;
    }
  }
  std::string plugin_version;
  const StringRead version_read =
      read_plugin_string(api->plugin_version, kMaxPluginVersionLength, &plugin_version);
  if (version_read == StringRead::Unreadable || version_read == StringRead::TooLong) {
    *reason = "HWP_PluginApi.plugin_version " + hex_pointer(api->plugin_version) +
              (version_read == StringRead::TooLong
                   ? " is longer than " + std::to_string(kMaxPluginVersionLength) + " characters"
                   : " does not point to a readable NUL-terminated string");
    return nullptr;
  }
  if (!api->device) {
    *reason = "required table HWP_PluginApi.device is NULL";
    return nullptr;
  }
  if (!api->memory) {
    *reason = "required table HWP_PluginApi.memory is NULL";
    return nullptr;
  }
  HWP_DeviceTable device{};
  HWP_MemoryTable memory{};
  HWP_StreamTable stream{};
  HWP_ProfilerTable profiler{};
  HWP_CodegenTable codegen{};
  HWP_CclTable ccl{};
  const bool has_ccl_table = HWP_HAS_FIELD(api, HWP_PluginApi, ccl) && api->ccl;
  const bool has_codegen_table = HWP_HAS_FIELD(api, HWP_PluginApi, codegen) && api->codegen;
  const bool has_stream_table = HWP_HAS_FIELD(api, HWP_PluginApi, stream) && api->stream;
  const bool has_profiler_table = HWP_HAS_FIELD(api, HWP_PluginApi, profiler) && api->profiler;
  if (!read_struct(api->device, "HWP_PluginApi.device (the HWP_DeviceTable)", &device, reason) ||
      !read_struct(api->memory, "HWP_PluginApi.memory (the HWP_MemoryTable)", &memory, reason) ||
      (has_stream_table &&
       !read_struct(api->stream, "HWP_PluginApi.stream (the HWP_StreamTable)", &stream,
                    reason)) ||
      (has_profiler_table && !read_struct(api->profiler,
                                          "HWP_PluginApi.profiler (the HWP_ProfilerTable)",
                                          &profiler, reason)) ||
      (has_codegen_table && !read_struct(api->codegen,
                                         "HWP_PluginApi.codegen (the HWP_CodegenTable)",
                                         &codegen, reason)) ||
      (has_ccl_table &&
       !read_struct(api->ccl, "HWP_PluginApi.ccl (the HWP_CclTable)", &ccl, reason)))
    return nullptr;
  const size_t device_required = END_OF(HWP_DeviceTable, synchronize_device);
  if (device.struct_size < device_required) {
    *reason = "HWP_DeviceTable.struct_size " + std::to_string(device.struct_size) +
              " is smaller than the " + std::to_string(device_required) +
              " bytes of its required functions";
    return nullptr;
  }
  const size_t memory_required = END_OF(HWP_MemoryTable, copy_d2d);
  if (memory.struct_size < memory_required) {
    *reason = "HWP_MemoryTable.struct_size " + std::to_string(memory.struct_size) +
              " is smaller than the " + std::to_string(memory_required) +
              " bytes of its required functions";
    return nullptr;
  }
  // Checked as the probe does: a plugin whose messages cannot be read is not loaded (every
  // error the host reports would read them).
  if (api->get_last_error) {
    const char* msg = api->get_last_error();
    std::string text;
    if (read_plugin_string(msg, kMaxPluginMessageLength, &text) == StringRead::Unreadable) {
      *reason = "HWP_PluginApi.get_last_error returned " + hex_pointer(msg) +
                ", which does not point to a readable NUL-terminated string";
      return nullptr;
    }
  }

  auto plugin = std::make_unique<Plugin>();
  plugin->path = path;
  plugin->handle = handle;
  plugin->device_type = device_type;
  plugin->plugin_version = plugin_version;
  plugin->abi_major = api->abi_major;
  plugin->abi_minor = api->abi_minor;
  plugin->get_last_error_fn = api->get_last_error;
  // The host reads every field it knows: those beyond the declared size are zero (NULL).
  device.struct_size = sizeof(device);
  memory.struct_size = sizeof(memory);
  plugin->device = device;
  plugin->memory = memory;
  if (HWP_HAS_FIELD(api, HWP_PluginApi, shutdown)) plugin->shutdown = api->shutdown;
  plugin->has_ccl = has_ccl_table;
  if (has_ccl_table) {
    // A 1.0/1.1 table (struct_size only), or one missing a required function: the host's
    // adapter serves the plugin instead (docs/abi.md, "The CCL table").
    plugin->has_ccl_table = ccl.struct_size >= END_OF(HWP_CclTable, group_end) &&
                            ccl.unique_id_size > 0 &&
                            ccl.unique_id_size <= HWP_CCL_UNIQUE_ID_MAX_BYTES &&
                            ccl.get_unique_id && ccl.comm_init && ccl.comm_split &&
                            ccl.comm_destroy && ccl.comm_abort && ccl.comm_get_async_error &&
                            ccl.all_reduce && ccl.broadcast && ccl.all_gather && ccl.send &&
                            ccl.recv && ccl.group_start && ccl.group_end;
    ccl.struct_size = sizeof(ccl);
    plugin->ccl = ccl;
  }
  plugin->has_codegen = has_codegen_table;
  if (has_codegen_table) {
    // A 1.0/1.1 table (struct_size only), or one missing a required function: no target.
    plugin->has_codegen_target = codegen.struct_size >= END_OF(HWP_CodegenTable, unload) &&
                                 codegen.get_target_info && codegen.compile &&
                                 codegen.get_function && codegen.launch && codegen.unload;
    codegen.struct_size = sizeof(codegen);
    plugin->codegen = codegen;
  }
  plugin->has_profiler = has_profiler_table;
  if (has_profiler_table) {
    profiler.struct_size = sizeof(profiler);
    plugin->profiler = profiler;
    // Device timing needs both halves (a 1.0/1.1 table holds only struct_size).
    plugin->has_device_timing = profiler.start && profiler.stop;
  }
  if (has_stream_table) {
    stream.struct_size = sizeof(stream);
    plugin->stream = stream;
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
  if (count == 0) plugin->device_count_note = plugin_last_error(plugin->get_last_error_fn);
  plugin->native_kernels_disabled = native_kernels_disabled(plugin->device_type);
  for (const auto& k : state->kernels) {
    if (plugin->native_kernels_disabled && k.op != "copy") continue;
    plugin->kernels.add(op_id(k.op), static_cast<DType>(k.dtype), k.entry);
  }
  if (!state->registration_problems.empty()) {
    host_log(state, HWP_LOG_WARNING, state->registration_problems.c_str());
  }
  return plugin;
}

}  // namespace hwport
