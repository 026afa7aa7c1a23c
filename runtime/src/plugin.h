// A loaded plugin: its validated tables (copied at the host's struct sizes, so fields a plugin
// predates read as NULL) and its kernels. Loading never throws: failures become LoadErrors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hwport/plugin.h"
#include "kernel_registry.h"

namespace hwport {

struct Plugin {
  std::string path;
  std::string device_type;
  std::string plugin_version;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  void* handle = nullptr;
  HWP_DeviceTable device{};
  HWP_MemoryTable memory{};
  HWP_StreamTable stream{};
  bool has_streams = false;
  // Which optional tables the plugin filled (ccl, codegen, profiler), for `hwcheck list`.
  bool has_ccl = false;
  bool has_codegen = false;
  bool has_profiler = false;
  // The codegen table at the host's size (fields beyond the plugin's struct_size are NULL);
  // has_codegen_target: it covers and fills every required function (compile .. unload).
  HWP_CodegenTable codegen{};
  bool has_codegen_target = false;
  // The CCL table at the host's size; has_ccl_table: a 1.2 table with every required
  // function (otherwise collectives go through the host's adapter).
  HWP_CclTable ccl{};
  bool has_ccl_table = false;
  HWP_ProfilerTable profiler{};
  bool has_device_timing = false;  // profiler.start and profiler.stop (ABI 1.2)
  const char* (*get_last_error_fn)(void) = nullptr;
  void (*shutdown)(void) = nullptr;
  int32_t device_count = 0;
  std::string device_count_note;  // why the plugin reports zero devices, when it says
  KernelTable kernels;
  // HWPORT_DISABLE_NATIVE_KERNELS names this device type: the host kept only the plugin's
  // `copy` kernels (transfers and contiguous copies need them); every other op goes through
  // the eager JIT, a decomposition or the CPU fallback.
  bool native_kernels_disabled = false;

  // "<call> failed with HWP_ERROR_X: <plugin message>" for a failed status.
  std::string describe(const char* call, HWP_Status status) const;
  // Throws hwport::Error (OutOfMemory for HWP_ERROR_OUT_OF_MEMORY) when status != HWP_OK.
  void check(HWP_Status status, const char* call) const;
};

struct LoadError {
  std::string path;
  std::string reason;
};

struct PluginLogEntry {
  std::string device_type;
  int32_t level;
  std::string message;
};

// Loads the plugin at `path`. On success returns it; on failure returns nullptr and sets
// `reason`. `taken_types` lists device types already provided (for the duplicate check).
std::unique_ptr<Plugin> load_plugin(const std::string& path,
                                    const std::vector<std::string>& taken_types,
                                    std::string* reason);

std::vector<PluginLogEntry> plugin_log();

// Reading a string a plugin returned, which may point anywhere: at most `max` characters,
// never faulting (Unreadable instead). `out` holds what was read (the first `max` when TooLong).
enum class StringRead { Ok, Null, TooLong, Unreadable };
StringRead read_plugin_string(const char* s, size_t max, std::string* out);

// The plugin's message for its last failed call, read as above ("" when there is none; a note
// saying so when it returned an unreadable pointer).
std::string plugin_last_error(const char* (*get_last_error)(void));

// False, with `reason`, for a path that exists but is no regular file (a FIFO, socket, device,
// directory): it is never opened, since opening a FIFO blocks. A missing path passes (dlopen
// then says what is wrong).
bool is_loadable_file(const std::string& path, std::string* reason);

// Runs `probe_exe path` (hwport_probe) in a child process with a time limit. False, with
// `reason`, when the plugin's init or device count crashed or hung there.
bool probe_plugin(const std::string& probe_exe, const std::string& path, double timeout_s,
                  std::string* reason);

}  // namespace hwport
