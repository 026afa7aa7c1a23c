#include "plugin_support.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __thread char t_last_error[HWPS_ERROR_LEN];

/* Set once by hwport_plugin_init (the host keeps it valid until the process exits). */
static const HWP_HostApi *g_host;
static const char *g_plugin_name = "plugin";

HWP_Status hwps_error(HWP_Status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_last_error, sizeof t_last_error, fmt, ap);
  va_end(ap);
  return code;
}

const char *hwps_last_error(void) { return t_last_error; }

void hwps_set_host(const HWP_HostApi *host, const char *plugin_name) {
  g_plugin_name = plugin_name;
  __atomic_store_n(&g_host, host, __ATOMIC_RELEASE);
}

void hwps_log(HWP_LogLevel level, const char *fmt, ...) {
  char message[HWPS_ERROR_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  const HWP_HostApi *host = __atomic_load_n(&g_host, __ATOMIC_ACQUIRE);
  if (HWP_HAS_FIELD(host, HWP_HostApi, log) && host->log != NULL) {
    host->log(host->host_context, level, message);
  } else if (level >= HWP_LOG_WARNING) {
    fprintf(stderr, "hwport %s plugin: %s\n", g_plugin_name, message);
  }
}

int hwps_parse_bytes(const char *s, uint64_t *out) {
  if (s == NULL || !isdigit((unsigned char)*s)) return 0;
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s) return 0;
  uint64_t mult = 1;
  switch (*end) {
  case 'k': case 'K': mult = 1ull << 10; ++end; break;
  case 'm': case 'M': mult = 1ull << 20; ++end; break;
  case 'g': case 'G': mult = 1ull << 30; ++end; break;
  case 't': case 'T': mult = 1ull << 40; ++end; break;
  default: break;
  }
  if (mult != 1 && *end == 'i') ++end;
  if (*end == 'b' || *end == 'B') ++end;
  if (*end != '\0') return 0;
  if (v != 0 && mult > UINT64_MAX / v) return 0;
  *out = (uint64_t)v * mult;
  return 1;
}

HWP_Status hwps_register_kernel(const HWP_HostApi *host, const char *op, HWP_DType dtype,
                                uint32_t flags, HWP_KernelFn fn, void *user_data) {
  HWP_KernelRegistration reg;
  memset(&reg, 0, sizeof reg);
  reg.struct_size = sizeof reg;
  reg.op_name = op;
  reg.dtype = dtype;
  reg.flags = flags;
  reg.fn = fn;
  reg.user_data = user_data;
  HWP_Status st = host->register_kernel(host->host_context, &reg);
  if (st != HWP_OK)
    return hwps_error(st, "hwport_plugin_init: registering %s[dtype %d] failed", op, (int)dtype);
  return HWP_OK;
}

void hwps_copy_sized(void *dst, const void *src, size_t full_size) {
  size_t n;
  memcpy(&n, dst, sizeof n);
  if (n > full_size) n = full_size;
  if (n > sizeof(size_t))
    memcpy((char *)dst + sizeof(size_t), (const char *)src + sizeof(size_t), n - sizeof(size_t));
}

/* The interned names: a list that lives as long as the plugin (profilers keep span names until
 * stop(), which can come after the module that named them was unloaded). */
typedef struct hwps_name {
  struct hwps_name *next;
  char text[]; /* NUL-terminated */
} hwps_name;

static hwps_name *g_names;
static pthread_mutex_t g_names_mu = PTHREAD_MUTEX_INITIALIZER;

const char *hwps_intern(const char *name) {
  if (name == NULL) return NULL;
  pthread_mutex_lock(&g_names_mu);
  const hwps_name *n = g_names;
  while (n != NULL && strcmp(n->text, name) != 0) n = n->next;
  if (n == NULL) {
    size_t len = strlen(name);
    hwps_name *added = malloc(sizeof *added + len + 1);
    if (added != NULL) {
      memcpy(added->text, name, len + 1);
      added->next = g_names;
      g_names = added;
      n = added;
    }
  }
  pthread_mutex_unlock(&g_names_mu);
  return n != NULL ? n->text : NULL;
}
