/* hwport C ABI v1 — the plugin entry point and version negotiation.
 *
 * A plugin is a shared library exporting exactly one symbol:
 *
 *   HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host,
 *                                            const HWP_PluginApi **out);
 *
 * The host calls it once, on one thread, after dlopen(RTLD_NOW | RTLD_LOCAL). The plugin checks
 * host->abi_major, registers its kernels through host->register_kernel, and sets *out to a
 * HWP_PluginApi it owns and keeps valid until the process exits (a static const is typical).
 * On error it returns a status; the host then uses *out only to read get_last_error (when the
 * plugin set it), and includes what the plugin logged through host->log during init in the
 * reason it reports. The plugin is then never called again.
 *
 * Versions: majors must be equal. Minors are negotiated: each side reads the other's structs
 * only as far as their struct_size covers (HWP_HAS_FIELD), so an older plugin on a newer host
 * and a newer plugin on an older host both work for what both know. */
#ifndef HWPORT_PLUGIN_H
#define HWPORT_PLUGIN_H

#include "hwport/ccl.h"
#include "hwport/codegen.h"
#include "hwport/device.h"
#include "hwport/kernel.h"
#include "hwport/profiler.h"
#include "hwport/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t HWP_LogLevel;
enum HWP_LogLevelCode { HWP_LOG_DEBUG = 0, HWP_LOG_INFO = 1, HWP_LOG_WARNING = 2, HWP_LOG_ERROR = 3 };

/* What the host offers the plugin. Owned by the host; valid until the process exits. */
typedef struct HWP_HostApi {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  void *host_context; /* opaque; pass back to the callbacks */

  /* Registers a kernel. Only valid during hwport_plugin_init. Copies what `reg` points to.
   * HWP_ERROR_INVALID_ARGUMENT for an unknown dtype, a NULL fn or an empty op name. */
  HWP_Status (*register_kernel)(void *host_context, const HWP_KernelRegistration *reg);

  /* Logs a UTF-8 message through the host's logger. Thread-safe. */
  void (*log)(void *host_context, HWP_LogLevel level, const char *message);

  /* Reports a completed span of device work for the host's tracer. Thread-safe; may be a
   * no-op. Times are nanoseconds on CLOCK_MONOTONIC. */
  void (*trace_event)(void *host_context, const char *name, int32_t device, uint64_t begin_ns,
                      uint64_t end_ns);
} HWP_HostApi;

/* What the plugin provides. Owned by the plugin. Everything up to and including
 * get_last_error is required: a struct_size that covers it is valid for ABI 1.x. */
typedef struct HWP_PluginApi {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char *device_type;    /* e.g. "cpu": [a-z0-9_]+, used in "custom:<device_type>" */
  const char *plugin_version; /* free-form, e.g. "1.2.0" */

  /* REQUIRED tables. */
  const HWP_DeviceTable *device;
  const HWP_MemoryTable *memory;

  /* REQUIRED. The calling thread's message for the last failed call; never NULL (the empty
   * string when there is none). The pointer is valid until the next call on that thread. */
  const char *(*get_last_error)(void);

  /* Optional tables (NULL when absent). */
  const HWP_StreamTable *stream;
  const HWP_CclTable *ccl;
  const HWP_CodegenTable *codegen;
  const HWP_ProfilerTable *profiler;

  /* Optional. Called once at host shutdown after every device is synchronized. */
  void (*shutdown)(void);
} HWP_PluginApi;

typedef HWP_Status (*HWP_PluginInitFn)(const HWP_HostApi *host, const HWP_PluginApi **out);

#define HWP_PLUGIN_INIT_SYMBOL "hwport_plugin_init"

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_PLUGIN_H */
