/* Zoo plugins with a broken codegen table (hwcheck's abi::codegen_* checks): the zoo's device
 * runtime (test_runtime.h, no stream table, no kernels: the codegen table is what makes the
 * plugin complete) and a codegen table wrong in one way. Nothing is compiled: the bugs are
 * found before any kernel would run. Built by hwport_add_zoo (tests/plugins/CMakeLists.txt).
 *
 *   codegen_short_table  struct_size reaches `compile` only: larger than bare (so not "no
 *                        target") but short of the required get_target_info..unload.
 *   codegen_bad_target   get_target_info claims dialect "c99" with HWP_CODEGEN_SIMT set and
 *                        max_group_size 0; compile fails every source with
 *                        HWP_ERROR_INVALID_ARGUMENT, writes *out and leaves the log empty. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ZG_ID_codegen_short_table 1
#define ZG_ID_codegen_bad_target 2

#ifndef HWP_TEST_VARIANT
#error "compile with -DHWP_TEST_VARIANT=<variant> (see the list at the top of this file)"
#endif
#define ZG_CAT_(a, b) a##b
#define ZG_CAT(a, b) ZG_CAT_(a, b)
#define ZG_STR_(x) #x
#define ZG_STR(x) ZG_STR_(x)
#define ZG_VARIANT ZG_CAT(ZG_ID_, HWP_TEST_VARIANT)
#define ZG_IS(v) (ZG_VARIANT == ZG_ID_##v)
#if ZG_VARIANT < 1
#error "unknown HWP_TEST_VARIANT"
#endif

#include "test_runtime.h"

static const char *const zg_dialects[] = {"c99", NULL};

static HWP_Status zg_get_target_info(int32_t device, HWP_CodegenTargetInfo *info) {
  HWP_CodegenTargetInfo full;
  size_t n;
  HWP_Status st = tr_check_device(device, "get_target_info");
  if (st != HWP_OK) return st;
  if (info == NULL || info->struct_size < sizeof(size_t))
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "get_target_info: bad info");
  memset(&full, 0, sizeof full);
  full.dialects = zg_dialects;
  full.architecture = "zoo";
  full.flags = HWP_CODEGEN_SIMT; /* the bug: a c99 target is not SIMT */
  full.simd_width = 1;
  full.preferred_vector_width = 1;
  full.max_group_size = 0; /* the bug: must be >= 1 (1 for c99) */
  full.compute_units = 1;
  n = info->struct_size < sizeof full ? info->struct_size : sizeof full;
  memcpy((char *)info + sizeof(size_t), (const char *)&full + sizeof(size_t),
         n - sizeof(size_t));
  return HWP_OK;
}

static HWP_Status zg_compile(int32_t device, const char *dialect, const char *source,
                             const char *options, HWP_CodegenModule *out, char *log,
                             size_t log_capacity) {
  (void)device, (void)dialect, (void)source, (void)options, (void)log_capacity;
  if (out != NULL) *out = (HWP_CodegenModule)(uintptr_t)1; /* the bug: *out written on error */
  if (log != NULL) log[0] = '\0';                          /* the bug: no compiler output */
  return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "compile: this zoo target compiles nothing");
}

static HWP_Status zg_get_function(HWP_CodegenModule module, const char *name,
                                  HWP_CodegenFunction *out) {
  (void)module, (void)name, (void)out;
  return tr_fail(HWP_ERROR_NOT_FOUND, "get_function: no kernels");
}

static HWP_Status zg_launch(int32_t device, HWP_CodegenFunction function, HWP_Stream stream,
                            const HWP_CodegenLaunch *launch) {
  (void)device, (void)function, (void)stream, (void)launch;
  return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "launch: no kernels");
}

static HWP_Status zg_unload(HWP_CodegenModule module) {
  (void)module;
  return HWP_OK;
}

static const HWP_CodegenTable zg_codegen_table = {
#if ZG_IS(codegen_short_table)
    offsetof(HWP_CodegenTable, compile) + sizeof(void *), /* the bug: short of unload */
#else
    sizeof(HWP_CodegenTable),
#endif
    zg_get_target_info, zg_compile, zg_get_function, zg_launch, zg_unload, NULL, NULL};

static const HWP_DeviceTable zg_device_table = {
    sizeof(HWP_DeviceTable), tr_get_device_count, tr_synchronize_device, tr_get_properties,
    NULL, NULL, NULL};
static const HWP_MemoryTable zg_memory_table = {
    sizeof(HWP_MemoryTable), tr_allocate, tr_deallocate, tr_copy_h2d, tr_copy_d2h, tr_copy_d2d,
    NULL, NULL, NULL, NULL, tr_get_memory_stats, NULL, NULL, NULL, TR_DLPACK_MEMORY};
static const HWP_PluginApi zg_api = {
    sizeof(HWP_PluginApi), HWP_ABI_VERSION_MAJOR, HWP_ABI_VERSION_MINOR,
    "test_" ZG_STR(HWP_TEST_VARIANT), "1.0.0", &zg_device_table, &zg_memory_table,
    tr_get_last_error, NULL, NULL, &zg_codegen_table, NULL, NULL};

HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out);
HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out) {
  if (host == NULL || out == NULL)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "hwport_plugin_init: NULL argument");
  if (host->abi_major != HWP_ABI_VERSION_MAJOR)
    return tr_fail(HWP_ERROR_VERSION_MISMATCH, "host ABI major %u, plugin %d",
                   (unsigned)host->abi_major, HWP_ABI_VERSION_MAJOR);
  tr_memory_init("test_" ZG_STR(HWP_TEST_VARIANT));
  *out = &zg_api;
  return HWP_OK;
}
