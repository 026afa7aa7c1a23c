/* The entry library of a Python plugin: exports hwport_plugin_init, as every plugin does, and
 * hands the call to the Python plugin runtime (_hwport_pyembed, cffi's embedding of the
 * interpreter), which builds the plugin's C tables from its Python class.
 *
 * Which Python plugin this library stands for is written into g_payload of a copy of this
 * file by hwport.device_plugins.python.loader.prepare(): the marker, then the path of the
 * embedding library on one line, then a JSON document naming the plugin. Keeping it in the
 * library's own bytes (not next to it) makes a copy of the file the same plugin, as the host's
 * isolated probe and hwcheck's direct loads (of a private copy) need. */
#define _GNU_SOURCE
#include <hwport/hwport.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAYLOAD_MARKER "HWPORT-PYTHON-PLUGIN-PAYLOAD:"
#define PAYLOAD_CAPACITY 16384

/* volatile: the compiler must read the patched bytes, not fold in the initializer. */
__attribute__((used)) static volatile char g_payload[PAYLOAD_CAPACITY] = PAYLOAD_MARKER;

static __thread char g_last_error[4096];

static const char *shim_last_error(void) { return g_last_error; }

/* What *out points to when init fails: enough for the host to read the reason. */
static const HWP_PluginApi g_failed = {
    .struct_size = sizeof(HWP_PluginApi),
    .abi_major = HWP_ABI_VERSION_MAJOR,
    .abi_minor = HWP_ABI_VERSION_MINOR,
    .device_type = "python",
    .plugin_version = "",
    .get_last_error = shim_last_error,
};

typedef HWP_Status (*PyPluginInitFn)(const char *payload, const HWP_HostApi *host,
                                     const HWP_PluginApi **out, char *error, size_t error_size);

static HWP_Status fail(const HWP_PluginApi **out, HWP_Status status, const char *what,
                       const char *detail) {
  snprintf(g_last_error, sizeof g_last_error, "%s%s", what, detail ? detail : "");
  if (out) *out = &g_failed;
  return status;
}

HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out) {
  static char payload[PAYLOAD_CAPACITY];
  const size_t marker = sizeof(PAYLOAD_MARKER) - 1;
  size_t n = 0;
  if (!host || !out) return fail(out, HWP_ERROR_INVALID_ARGUMENT, "init: NULL argument", NULL);
  while (n + 1 < PAYLOAD_CAPACITY && (payload[n] = g_payload[n]) != '\0') ++n;
  payload[n] = '\0';
  if (n <= marker || memcmp(payload, PAYLOAD_MARKER, marker) != 0)
    return fail(out, HWP_ERROR_NOT_FOUND,
                "this is the unconfigured Python plugin shim: it names no Python plugin "
                "(load the plugin's .py file, or prepare a copy with "
                "hwport.device_plugins.python.prepare())", NULL);
  char *embed = payload + marker, *doc = strchr(embed, '\n');
  if (!doc) return fail(out, HWP_ERROR_INTERNAL, "the plugin payload has no JSON line", NULL);
  *doc++ = '\0';
  void *lib = dlopen(embed, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *err = dlerror();
    return fail(out, HWP_ERROR_NOT_FOUND, "cannot load the Python plugin runtime: ",
                err ? err : embed);
  }
  PyPluginInitFn init = (PyPluginInitFn)(void (*)(void))dlsym(lib, "hwport_pyplugin_init");
  if (!init) return fail(out, HWP_ERROR_NOT_FOUND, "no hwport_pyplugin_init in ", embed);
  const HWP_PluginApi *api = NULL;
  g_last_error[0] = '\0';
  HWP_Status status = init(doc, host, &api, g_last_error, sizeof g_last_error);
  if (status != HWP_OK || !api) {
    if (status == HWP_OK) { /* cffi's answer when the interpreter could not start */
      snprintf(g_last_error, sizeof g_last_error, "the embedded Python interpreter could not "
               "start or run the plugin runtime %s (its traceback went to stderr)", embed);
      status = HWP_ERROR_INTERNAL;
    }
    *out = &g_failed;
    return status;
  }
  *out = api;
  return HWP_OK;
}
