/* A stand-alone host that checks a 1.2 plugin's codegen table against hosts of other minors,
 * without the hwport runtime: tests/test_loader.py compiles it and runs it on the CPU plugin.
 *
 *   codegen_host_check <plugin.so> --host-1.1
 *       plays a 1.1 host: offers abi_minor 1 and knows HWP_CodegenTable as it was then
 *       (struct_size alone), so it reads nothing of the table beyond that; the plugin must
 *       load and its device runtime work as for any host.
 *   codegen_host_check <plugin.so> --short-structs
 *       a 1.2 host handing the plugin shorter structs than the plugin knows (an older or a
 *       thrifty host): get_target_info with an HWP_CodegenTargetInfo whose struct_size ends at
 *       `architecture` (nothing past it may be written), and launches whose HWP_CodegenLaunch
 *       or HWP_CodegenArg are too short to hold what the plugin needs (refused with
 *       HWP_ERROR_INVALID_ARGUMENT, never read past); then, with the plugin's profiler
 *       started, that a launch's correlation_id (appended in 1.2) gets it one span named after
 *       the function, and that a launch struct ending at `args` (an early 1.2 host) runs untimed.
 *
 * Prints key=value lines; exit status 0 when every check passed, 1 otherwise, 2 on bad usage. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwport/hwport.h"

#define END_OF(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* HWP_CodegenTable as a 1.0/1.1 host declares it. */
typedef struct CodegenTable_1_1 {
  size_t struct_size;
} CodegenTable_1_1;

static int g_in_init = 0;
static int g_failures = 0;

static HWP_Status host_register_kernel(void *host_context, const HWP_KernelRegistration *reg) {
  (void)host_context;
  return g_in_init && reg != NULL ? HWP_OK : HWP_ERROR_INVALID_ARGUMENT;
}

static void host_log(void *host_context, HWP_LogLevel level, const char *message) {
  (void)host_context;
  printf("log=%d:%s\n", (int)level, message ? message : "(null)");
}

static void check(int ok, const char *what, const HWP_PluginApi *api) {
  printf("check=%s:%s\n", what, ok ? "ok" : "FAILED");
  if (ok) return;
  g_failures++;
  printf("check_failed=%s (last error: %s)\n", what, api->get_last_error());
}

static void exercise_memory(const HWP_PluginApi *api) {
  const HWP_MemoryTable *m = api->memory;
  float in[4] = {1.0f, 2.5f, -3.0f, 4.25f}, out[4] = {0, 0, 0, 0};
  HWP_Buffer b = NULL;
  check(m->allocate(0, sizeof in, &b) == HWP_OK && b != NULL, "allocate", api);
  if (b == NULL) return;
  check(m->copy_h2d(0, b, 0, in, sizeof in) == HWP_OK, "copy_h2d", api);
  check(m->copy_d2h(0, out, b, 0, sizeof out) == HWP_OK, "copy_d2h", api);
  check(memcmp(in, out, sizeof in) == 0, "round trip", api);
  check(m->deallocate(0, b) == HWP_OK, "deallocate", api);
}

static const char *const KERNEL_SOURCE =
    "#include <stdint.h>\n"
    "void fill(int64_t gx, int64_t gy, int64_t gz, void *const *args) {\n"
    "  (void)gy; (void)gz; ((int64_t *)args[0])[gx] = *(const int64_t *)args[1] + gx;\n"
    "}\n";

/* What the profiler's sink received (one launch's worth). */
typedef struct seen_spans {
  int count;
  uint64_t correlation_id;
  char name[64];
  uint64_t begin_ns, end_ns;
} seen_spans;

static void sink(void *context, const HWP_DeviceSpan *span) {
  seen_spans *seen = context;
  if (seen->count++ == 0) {
    seen->correlation_id = span->correlation_id;
    snprintf(seen->name, sizeof seen->name, "%s", span->name ? span->name : "(null)");
    seen->begin_ns = span->begin_ns;
    seen->end_ns = span->end_ns;
  }
}

/* A launch carrying a correlation id while the device is profiled is reported with that id and
 * the function's name; one without (id 0, or a launch struct of an early 1.2 host that ends at
 * `args`) is not timed, and still runs. */
static void profiled_launches(const HWP_PluginApi *api, HWP_CodegenFunction fn,
                              HWP_CodegenLaunch *launch) {
  const HWP_ProfilerTable *prof = HWP_HAS_FIELD(api, HWP_PluginApi, profiler) ? api->profiler
                                                                               : NULL;
  seen_spans seen;
  memset(&seen, 0, sizeof seen);
  printf("profiler=%s\n", prof != NULL ? "present" : "absent");
  if (prof == NULL) return;
  check(prof->start(0, sink, &seen) == HWP_OK, "profiler.start", api);
  launch->struct_size = END_OF(HWP_CodegenLaunch, args); /* an early 1.2 host's launch */
  launch->correlation_id = 99;                           /* beyond its struct_size: unread */
  check(api->codegen->launch(0, fn, NULL, launch) == HWP_OK, "a launch without the id runs",
        api);
  launch->struct_size = sizeof *launch;
  launch->correlation_id = 0;
  check(api->codegen->launch(0, fn, NULL, launch) == HWP_OK, "an unprofiled launch runs", api);
  launch->correlation_id = 77;
  check(api->codegen->launch(0, fn, NULL, launch) == HWP_OK, "a profiled launch runs", api);
  check(api->device->synchronize_device(0) == HWP_OK, "synchronize before stop", api);
  check(prof->stop(0) == HWP_OK, "profiler.stop", api);
  printf("spans=%d\nspan_id=%llu\nspan_name=%s\n", seen.count,
         (unsigned long long)seen.correlation_id, seen.name);
  check(seen.count == 1 && seen.correlation_id == 77, "one span, with the launch's id", api);
  check(strcmp(seen.name, "fill") == 0, "the span is named after the function", api);
  check(seen.begin_ns > 0 && seen.begin_ns <= seen.end_ns, "the span's times", api);
  launch->correlation_id = 0;
}

static void short_structs(const HWP_PluginApi *api) {
  const HWP_CodegenTable *cg = api->codegen;
  unsigned char raw[sizeof(HWP_CodegenTargetInfo) + 16];
  HWP_CodegenTargetInfo *info = (HWP_CodegenTargetInfo *)(void *)raw;
  size_t i, short_size = END_OF(HWP_CodegenTargetInfo, architecture);
  int untouched = 1;
  HWP_Status st;
  check(HWP_HAS_FIELD(api, HWP_PluginApi, codegen) && cg != NULL &&
            HWP_HAS_FIELD(cg, HWP_CodegenTable, unload),
        "a 1.2 codegen table", api);
  if (g_failures) return;
  memset(raw, 0xAB, sizeof raw);
  info->struct_size = short_size;
  st = cg->get_target_info(0, info);
  printf("target_info_status=%d\n", (int)st);
  if (st == HWP_ERROR_NOT_SUPPORTED) return; /* no compiler: nothing more to check */
  check(st == HWP_OK, "get_target_info with a short struct", api);
  check(info->struct_size == short_size, "struct_size kept", api);
  check(info->dialects != NULL && info->architecture != NULL, "fields within it filled", api);
  for (i = short_size; i < sizeof raw; ++i) untouched &= raw[i] == 0xAB;
  check(untouched, "nothing written past struct_size", api);

  {
    HWP_CodegenModule module = NULL;
    HWP_CodegenFunction fn = NULL;
    HWP_CodegenArg args[2];
    HWP_CodegenLaunch launch;
    HWP_Buffer b = NULL;
    int64_t out[3] = {0, 0, 0};
    char log[4096];
    check(cg->compile(0, "c99", KERNEL_SOURCE, "", &module, log, sizeof log) == HWP_OK,
          "compile", api);
    if (module == NULL) return;
    check(cg->get_function(module, "fill", &fn) == HWP_OK, "get_function", api);
    check(api->memory->allocate(0, sizeof out, &b) == HWP_OK, "allocate", api);
    memset(args, 0, sizeof args);
    args[0].struct_size = args[1].struct_size = sizeof(HWP_CodegenArg);
    args[0].kind = HWP_CODEGEN_ARG_BUFFER;
    args[0].value.buffer.buffer = b;
    args[1].kind = HWP_CODEGEN_ARG_INT64;
    args[1].value.i64 = 40;
    memset(&launch, 0, sizeof launch);
    launch.struct_size = offsetof(HWP_CodegenLaunch, args); /* ends before `args` */
    launch.grid[0] = 3;
    launch.grid[1] = launch.grid[2] = 1;
    launch.group[0] = launch.group[1] = launch.group[2] = 1;
    launch.num_args = 2;
    launch.args = args;
    check(cg->launch(0, fn, NULL, &launch) == HWP_ERROR_INVALID_ARGUMENT,
          "a launch struct without args is refused", api);
    launch.struct_size = sizeof launch;
    args[1].struct_size = offsetof(HWP_CodegenArg, value); /* ends before its value */
    check(cg->launch(0, fn, NULL, &launch) == HWP_ERROR_INVALID_ARGUMENT,
          "an argument without its value is refused", api);
    args[1].struct_size = sizeof(HWP_CodegenArg);
    check(cg->launch(0, fn, NULL, &launch) == HWP_OK, "a full launch runs", api);
    check(api->device->synchronize_device(0) == HWP_OK, "synchronize_device", api);
    check(api->memory->copy_d2h(0, out, b, 0, sizeof out) == HWP_OK, "copy_d2h", api);
    check(out[0] == 40 && out[1] == 41 && out[2] == 42, "the launch's result", api);
    memset(out, 0, sizeof out);
    check(api->memory->copy_h2d(0, b, 0, out, sizeof out) == HWP_OK, "copy_h2d", api);
    args[1].value.i64 = 7;
    profiled_launches(api, fn, &launch);
    check(api->memory->copy_d2h(0, out, b, 0, sizeof out) == HWP_OK, "copy_d2h", api);
    check(out[0] == 7 && out[1] == 8 && out[2] == 9, "the profiled launches' result", api);
    check(api->memory->deallocate(0, b) == HWP_OK, "deallocate", api);
    check(cg->unload(module) == HWP_OK, "unload", api);
  }
}

int main(int argc, char **argv) {
  void *handle, *sym;
  HWP_PluginInitFn init;
  HWP_HostApi host;
  const HWP_PluginApi *api = NULL;
  HWP_Status status;
  int host_11;
  if (argc != 3 || (strcmp(argv[2], "--host-1.1") != 0 && strcmp(argv[2], "--short-structs"))) {
    fprintf(stderr, "usage: %s <plugin.so> --host-1.1 | --short-structs\n", argv[0]);
    return 2;
  }
  host_11 = strcmp(argv[2], "--host-1.1") == 0;
  setvbuf(stdout, NULL, _IONBF, 0);
  handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    printf("dlopen=failed:%s\n", dlerror());
    return 1;
  }
  sym = dlsym(handle, HWP_PLUGIN_INIT_SYMBOL);
  memcpy(&init, &sym, sizeof init);
  if (!sym) {
    printf("entry=missing\n");
    return 1;
  }
  memset(&host, 0, sizeof host);
  host.struct_size = sizeof host;
  host.abi_major = HWP_ABI_VERSION_MAJOR;
  host.abi_minor = host_11 ? 1 : HWP_ABI_VERSION_MINOR;
  host.register_kernel = host_register_kernel;
  host.log = host_log;
  g_in_init = 1;
  status = init(&host, &api);
  g_in_init = 0;
  printf("init_status=%d\n", (int)status);
  if (status != HWP_OK || api == NULL) return 1;
  printf("abi=%u.%u\n", (unsigned)api->abi_major, (unsigned)api->abi_minor);
  if (host_11) {
    /* All a 1.1 host knows of the table: whether it is there, and its struct_size. */
    const CodegenTable_1_1 *t = HWP_HAS_FIELD(api, HWP_PluginApi, codegen)
                                    ? (const CodegenTable_1_1 *)(const void *)api->codegen
                                    : NULL;
    printf("codegen_table=%s\n", t != NULL ? "present" : "absent");
    if (t != NULL) printf("codegen_table_size=%zu\n", t->struct_size);
    check(t == NULL || HWP_HAS_FIELD(t, CodegenTable_1_1, struct_size),
          "the 1.1 view of the table is a prefix", api);
    exercise_memory(api);
  } else {
    short_structs(api);
  }
  check(api->device->synchronize_device(0) == HWP_OK, "synchronize at the end", api);
  if (HWP_HAS_FIELD(api, HWP_PluginApi, shutdown) && api->shutdown) api->shutdown();
  printf("result=%s\n", g_failures ? "failed" : "ok");
  return g_failures ? 1 : 0;
}
