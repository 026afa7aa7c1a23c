/* A minimal stand-alone host for the test-plugin zoo, independent of the hwport runtime: it
 * loads one plugin the way the ABI says a host must (reading every plugin struct only as far as
 * its struct_size reaches), prints what it found as `key=value` lines, and, for a structurally
 * valid plugin, exercises its device runtime and its "add" kernel and checks the results.
 * tests/test_loader.py compiles and runs it so that a zoo bug is told apart from a runtime bug.
 *
 *   zoo_host_check <plugin.so> [--host-next-minor | --ignore-struct-size]
 *
 * --host-next-minor offers a pretend newer host API (one field appended after the current
 * layout).
 * --ignore-struct-size behaves like a buggy host: at the end it calls
 * HWP_DeviceTable.get_properties whenever the pointer is non-NULL, without looking at
 * struct_size (older_minor must then abort, proving its trap pointers work).
 * Exit status: 0 when the checks it could run passed (the printed facts are judged by the
 * caller), 1 when an exercise check failed, 2 on bad usage. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwport/hwport.h"

#define END_OF(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

typedef struct HostApiNext {
  HWP_HostApi base; /* the current struct, then what the next minor appends */
  HWP_Status (*get_config)(void *host_context, const char *key, const char **value);
} HostApiNext;

static int g_in_init = 0;
static int g_num_kernels = 0;
static HWP_KernelRegistration g_kernels[8];
static char g_op_names[8][32];
static int g_failures = 0;

static HWP_Status host_register_kernel(void *host_context, const HWP_KernelRegistration *reg) {
  (void)host_context;
  if (!g_in_init || reg == NULL || reg->struct_size < END_OF(HWP_KernelRegistration, user_data) ||
      reg->fn == NULL || reg->op_name == NULL || reg->op_name[0] == '\0' || g_num_kernels >= 8)
    return HWP_ERROR_INVALID_ARGUMENT;
  g_kernels[g_num_kernels] = *reg;
  snprintf(g_op_names[g_num_kernels], sizeof g_op_names[0], "%s", reg->op_name);
  g_kernels[g_num_kernels].op_name = g_op_names[g_num_kernels];
  printf("kernel=%s:%d:flags=%u\n", reg->op_name, (int)reg->dtype, (unsigned)reg->flags);
  g_num_kernels++;
  return HWP_OK;
}

static void host_log(void *host_context, HWP_LogLevel level, const char *message) {
  (void)host_context;
  printf("log=%d:%s\n", (int)level, message ? message : "(null)");
}

static void host_trace(void *host_context, const char *name, int32_t device, uint64_t b,
                       uint64_t e) {
  (void)host_context; (void)name; (void)device; (void)b; (void)e;
}

static HWP_Status host_get_config(void *host_context, const char *key, const char **value) {
  (void)host_context; (void)key;
  if (value) *value = "hello";
  return HWP_OK;
}

static void check(int ok, const char *what, const HWP_PluginApi *api) {
  if (ok) return;
  g_failures++;
  printf("check_failed=%s (last error: %s)\n", what, api->get_last_error());
}

static HWP_Status get_attr_none(const HWP_KernelContext *ctx, const char *name,
                                HWP_AttrType type, void *out, int64_t *count) {
  (void)ctx; (void)name; (void)type; (void)out; (void)count;
  return HWP_ERROR_NOT_FOUND;
}

static HWP_Status no_workspace(const HWP_KernelContext *ctx, uint64_t n, HWP_Buffer *out) {
  (void)ctx; (void)n; (void)out;
  return HWP_ERROR_NOT_SUPPORTED;
}

/* Runs the device runtime and the "add" kernel on `device` and checks the numbers. */
static void exercise(const HWP_PluginApi *api, int32_t device) {
  const HWP_MemoryTable *m = api->memory;
  const HWP_DeviceTable *d = api->device;
  int has_stats = HWP_HAS_FIELD(m, HWP_MemoryTable, get_memory_stats) && m->get_memory_stats;
  HWP_MemoryStats st0, st1;
  HWP_Buffer ba = NULL, bb = NULL, bo = NULL, bc = NULL;
  float a[6], b[3], o[6], c[6];
  int i, j;
  const HWP_KernelRegistration *add = NULL;

  for (i = 0; i < g_num_kernels; ++i)
    if (strcmp(g_kernels[i].op_name, "add") == 0 && g_kernels[i].dtype == HWP_DTYPE_FLOAT32)
      add = &g_kernels[i];
  check(add != NULL, "an add/float32 kernel is registered", api);
  if (has_stats) {
    memset(&st0, 0, sizeof st0);
    st0.struct_size = sizeof st0;
    check(m->get_memory_stats(device, &st0) == HWP_OK, "get_memory_stats", api);
  }
  for (i = 0; i < 6; ++i) a[i] = (float)i + 0.5f;
  for (i = 0; i < 3; ++i) b[i] = 100.0f * (float)(i + 1);
  check(m->allocate(device, sizeof a, &ba) == HWP_OK && ba, "allocate a", api);
  check(m->allocate(device, sizeof b, &bb) == HWP_OK && bb, "allocate b", api);
  check(m->allocate(device, sizeof o, &bo) == HWP_OK && bo, "allocate out", api);
  check(m->allocate(device, sizeof c, &bc) == HWP_OK && bc, "allocate c", api);
  if (g_failures) return;
  if (has_stats) {
    memset(&st1, 0, sizeof st1);
    st1.struct_size = sizeof st1;
    check(m->get_memory_stats(device, &st1) == HWP_OK, "get_memory_stats", api);
    check(st1.bytes_in_use == st0.bytes_in_use + sizeof a + sizeof b + sizeof o + sizeof c,
          "bytes_in_use counts live allocations", api);
  }
  check(m->copy_h2d(device, ba, 0, a, sizeof a) == HWP_OK, "copy_h2d a", api);
  check(m->copy_h2d(device, bb, 0, b, sizeof b) == HWP_OK, "copy_h2d b", api);
  if (add) {
    /* out[2,3] = a^T viewed as [2,3] with strides (1, 2) reversed in rows (negative stride)
     * + b broadcast along rows (stride 0). a is stored as [3,2]. */
    static const int64_t shape[2] = {2, 3};
    static const int64_t sa[2] = {-1, 2}, sb[2] = {0, 1}, so[2] = {3, 1};
    HWP_TensorView in[2], out;
    HWP_KernelContext ctx;
    memset(in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    in[0].struct_size = in[1].struct_size = out.struct_size = sizeof(HWP_TensorView);
    in[0].buffer = ba; in[0].byte_offset = 1 * sizeof(float); /* row index reversed: start at 1 */
    in[0].dtype = HWP_DTYPE_FLOAT32; in[0].ndim = 2; in[0].shape = shape; in[0].strides = sa;
    in[1].buffer = bb; in[1].dtype = HWP_DTYPE_FLOAT32; in[1].ndim = 2; in[1].shape = shape;
    in[1].strides = sb;
    out.buffer = bo; out.dtype = HWP_DTYPE_FLOAT32; out.ndim = 2; out.shape = shape;
    out.strides = so;
    memset(&ctx, 0, sizeof ctx);
    ctx.struct_size = sizeof ctx;
    ctx.device = device;
    ctx.stream = NULL;
    ctx.num_inputs = 2; ctx.num_outputs = 1; ctx.inputs = in; ctx.outputs = &out;
    ctx.user_data = add->user_data;
    ctx.get_attr = get_attr_none;
    ctx.allocate_workspace = no_workspace;
    check(add->fn(&ctx) == HWP_OK, "add kernel", api);
    check(d->synchronize_device(device) == HWP_OK, "synchronize_device", api);
    check(m->copy_d2d(device, bc, 0, bo, 0, sizeof o) == HWP_OK, "copy_d2d", api);
    memset(c, 0, sizeof c);
    check(m->copy_d2h(device, c, bc, 0, sizeof c) == HWP_OK, "copy_d2h", api);
    for (i = 0; i < 2; ++i)
      for (j = 0; j < 3; ++j) {
        float want = a[(1 - i) + 2 * j] + b[j];
        check(c[i * 3 + j] == want, "add result", api);
      }
  }
  /* Errors are values, with a message, and leave out parameters untouched. */
  {
    HWP_Buffer untouched = (HWP_Buffer)&device;
    check(m->allocate(99, 16, &untouched) == HWP_ERROR_INVALID_ARGUMENT &&
              untouched == (HWP_Buffer)&device && api->get_last_error()[0] != '\0',
          "allocate on a bad device fails cleanly", api);
    check(m->copy_d2h(device, c, bc, sizeof c, 4) == HWP_ERROR_INVALID_ARGUMENT,
          "out-of-range copy is rejected", api);
  }
  check(m->deallocate(device, ba) == HWP_OK, "deallocate a", api);
  check(m->deallocate(device, bb) == HWP_OK, "deallocate b", api);
  check(m->deallocate(device, bo) == HWP_OK, "deallocate out", api);
  check(m->deallocate(device, bc) == HWP_OK, "deallocate c", api);
  check(m->deallocate(device, NULL) == HWP_OK, "deallocate NULL is a no-op", api);
  if (has_stats) {
    memset(&st1, 0, sizeof st1);
    st1.struct_size = sizeof st1;
    check(m->get_memory_stats(device, &st1) == HWP_OK, "get_memory_stats", api);
    check(st1.bytes_in_use == st0.bytes_in_use, "bytes_in_use back to baseline", api);
  }
}

int main(int argc, char **argv) {
  void *handle, *sym;
  HWP_PluginInitFn init;
  HostApiNext host;
  const HWP_PluginApi *api = NULL;
  HWP_Status status;
  int32_t count = -1, dev;
  if (argc < 2) {
    fprintf(stderr, "usage: %s <plugin.so> [--host-next-minor]\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    printf("dlopen=failed:%s\n", dlerror());
    return 0;
  }
  sym = dlsym(handle, HWP_PLUGIN_INIT_SYMBOL);
  memcpy(&init, &sym, sizeof init); /* ISO C has no object-to-function pointer cast */
  printf("entry=%s\n", sym ? "present" : "missing");
  if (!sym) return 0;

  memset(&host, 0, sizeof host);
  host.base.struct_size = sizeof(HWP_HostApi);
  if (argc > 2 && strcmp(argv[2], "--host-next-minor") == 0) {
    host.base.struct_size = sizeof(HostApiNext);
    host.get_config = host_get_config;
  }
  host.base.abi_major = HWP_ABI_VERSION_MAJOR;
  host.base.abi_minor = HWP_ABI_VERSION_MINOR;
  host.base.register_kernel = host_register_kernel;
  host.base.log = host_log;
  host.base.trace_event = host_trace;

  g_in_init = 1;
  status = init(&host.base, &api);
  g_in_init = 0;
  printf("init_status=%d\n", (int)status);
  printf("api=%s\n", api ? "set" : "null");
  if (!api) return 0;
  printf("api_struct_size=%zu\n", api->struct_size);
  if (api->struct_size < END_OF(HWP_PluginApi, abi_minor)) return 0;
  printf("abi=%u.%u\n", (unsigned)api->abi_major, (unsigned)api->abi_minor);
  if (api->struct_size < END_OF(HWP_PluginApi, get_last_error)) return 0;
  if (status != HWP_OK) {
    printf("last_error=%s\n", api->get_last_error ? api->get_last_error() : "(null)");
    return 0;
  }
  printf("device_type=%s\n", api->device_type ? api->device_type : "(null)");
  printf("plugin_version=%s\n", api->plugin_version ? api->plugin_version : "(null)");
  printf("num_kernels=%d\n", g_num_kernels);
  if (!api->device || !api->memory) return 0;
  printf("device_table_size=%zu\n", api->device->struct_size);
  printf("memory_table_size=%zu\n", api->memory->struct_size);
  printf("stream=%s\n", HWP_HAS_FIELD(api, HWP_PluginApi, stream) && api->stream ? "yes" : "no");
  if (api->abi_major != HWP_ABI_VERSION_MAJOR) return 0;
  if (api->device->struct_size < END_OF(HWP_DeviceTable, synchronize_device)) return 0;
  if (api->memory->struct_size < END_OF(HWP_MemoryTable, copy_d2d)) return 0;
  printf("copy_d2d=%s\n", api->memory->copy_d2d ? "set" : "null");
  if (!api->memory->copy_d2d || !api->memory->allocate || !api->memory->deallocate ||
      !api->memory->copy_h2d || !api->memory->copy_d2h || !api->device->get_device_count ||
      !api->device->synchronize_device || !api->get_last_error)
    return 0;
  if (api->device->get_device_count(&count) != HWP_OK) count = -1;
  printf("device_count=%d\n", (int)count);
  if (HWP_HAS_FIELD(api->device, HWP_DeviceTable, get_properties) &&
      api->device->get_properties) {
    HWP_DeviceProperties props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    if (api->device->get_properties(0, &props) == HWP_OK)
      printf("device_name=%s\n", props.name);
  }
  for (dev = 0; dev < count; ++dev) exercise(api, dev);
  if (argc > 2 && strcmp(argv[2], "--ignore-struct-size") == 0 && api->device->get_properties) {
    HWP_DeviceProperties props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    printf("buggy_get_properties=%d\n", (int)api->device->get_properties(0, &props));
  }
  printf("exercise=%s\n", g_failures ? "failed" : "ok");
  return g_failures ? 1 : 0;
}
