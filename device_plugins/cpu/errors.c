/* hwport CPU plugin — the thread-local last-error message and logging through the host. */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

static __thread char t_last_error[CPU_ERROR_LEN];

/* Set once by hwport_plugin_init (the host keeps it valid until the process exits). */
static const HWP_HostApi *g_host;

HWP_Status cpu_error(HWP_Status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_last_error, sizeof t_last_error, fmt, ap);
  va_end(ap);
  return code;
}

const char *cpu_get_last_error(void) { return t_last_error; }

void cpu_set_host(const HWP_HostApi *host) { __atomic_store_n(&g_host, host, __ATOMIC_RELEASE); }

void cpu_log(HWP_LogLevel level, const char *fmt, ...) {
  char message[CPU_ERROR_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  const HWP_HostApi *host = __atomic_load_n(&g_host, __ATOMIC_ACQUIRE);
  if (HWP_HAS_FIELD(host, HWP_HostApi, log) && host->log != NULL) {
    host->log(host->host_context, level, message);
  } else if (level >= HWP_LOG_WARNING) {
    fprintf(stderr, "hwport cpu plugin: %s\n", message);
  }
}
