/* hwport reference plugins — what every plugin needs besides its device code: the
 * thread-local last-error message behind HWP_PluginApi.get_last_error, logging through the
 * host, and parsing of size settings. Compiled into each plugin (hidden symbols), so plugins
 * stay independent shared libraries that only include the ABI headers. */
#ifndef HWPORT_PLUGIN_SUPPORT_H
#define HWPORT_PLUGIN_SUPPORT_H

#include <stdint.h>

#include "hwport/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HWPS_ERROR_LEN 512

#if defined(__GNUC__)
#define HWPS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define HWPS_PRINTF(f, a)
#endif

/* Formats the calling thread's last-error message and returns `code`. */
HWP_Status hwps_error(HWP_Status code, const char *fmt, ...) HWPS_PRINTF(2, 3);
/* The calling thread's message (empty when none): the plugin's get_last_error. */
const char *hwps_last_error(void);
/* Remembers the host (for logging) and the plugin's name (for stderr without a host logger). */
void hwps_set_host(const HWP_HostApi *host, const char *plugin_name);
void hwps_log(HWP_LogLevel level, const char *fmt, ...) HWPS_PRINTF(2, 3);
/* Registers fn for (op, dtype) with the host; on failure sets the last error
 * ("hwport_plugin_init: registering <op>[dtype <d>] failed") and returns the host's status. */
HWP_Status hwps_register_kernel(const HWP_HostApi *host, const char *op, HWP_DType dtype,
                                uint32_t flags, HWP_KernelFn fn, void *user_data);
/* "1048576", "64M", "2G", "512k", "1GiB", "8MB" (binary multiples) -> bytes; 0 on a bad value. */
int hwps_parse_bytes(const char *s, uint64_t *out);
/* Copies `src` (a struct of `full_size` bytes whose first member is its size_t struct_size, as
 * HWP_DeviceProperties) into `dst` as far as dst->struct_size (set by the host) reaches, keeping
 * that size: a host built against an older minor gets the fields it knows. */
void hwps_copy_sized(void *dst, const void *src, size_t full_size);
/* A copy of `name` that stays valid until the plugin is unloaded (one per distinct name, kept
 * for the process): what a profiler reports as a span's name when the name's owner, e.g. a
 * codegen function, may be gone by then. NULL when out of host memory. Thread-safe. */
const char *hwps_intern(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* HWPORT_PLUGIN_SUPPORT_H */
