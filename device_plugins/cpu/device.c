/* hwport CPU plugin — configuration (environment) and the device table. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "internal.h"

cpu_config g_cpu;

static pthread_once_t g_config_once = PTHREAD_ONCE_INIT;

/* Parses a non-negative decimal integer filling the whole string. */
static int parse_u64(const char *s, uint64_t *out, const char **end_out) {
  if (s == NULL || !isdigit((unsigned char)*s)) return 0;
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s) return 0;
  *out = (uint64_t)v;
  *end_out = end;
  return 1;
}

static void read_vendor(char *dst, size_t n) {
  snprintf(dst, n, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "model name", 10) != 0) continue;
    char *colon = strchr(line, ':');
    if (colon == NULL) continue;
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t') ++v;
    size_t len = strlen(v);
    while (len > 0 && isspace((unsigned char)v[len - 1])) v[--len] = '\0';
    if (len > 0) snprintf(dst, n, "%s", v);
    break;
  }
  fclose(f);
}

/* Elementwise outputs of at least a quarter of the last-level cache are written with
 * non-temporal stores (elementwise_iter.h): with their inputs they would evict most of the
 * cache anyway, and the stores skip reading each output line first. Measured on a 2-core VM
 * with 48 MiB of L3: streaming a 16 MB output wins even when the next op reads it (0.9x), an
 * 8 MB one loses then (1.2x). At least 1 MiB where the cache is small or unknown. */
static uint64_t default_stream_min_bytes(void) {
  long llc = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
  llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  uint64_t quarter = llc > 0 ? (uint64_t)llc / 4 : (uint64_t)8 << 20;
  return quarter < ((uint64_t)1 << 20) ? (uint64_t)1 << 20 : quarter;
}

static void config_init_once(void) {
  g_cpu.num_devices = 1;
  const char *s = getenv("HWPORT_CPU_DEVICES");
  if (s != NULL && *s != '\0') {
    uint64_t v;
    const char *end;
    if (parse_u64(s, &v, &end) && *end == '\0' && v <= CPU_MAX_DEVICES) {
      g_cpu.num_devices = (int32_t)v;
    } else {
      cpu_log(HWP_LOG_WARNING,
              "HWPORT_CPU_DEVICES='%s' is not an integer in [0, %d]; using 1 device", s,
              CPU_MAX_DEVICES);
    }
  }

  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  uint64_t physical = (pages > 0 && page_size > 0) ? (uint64_t)pages * (uint64_t)page_size
                                                   : (uint64_t)1 << 32;
  g_cpu.memory_limit = physical;
  s = getenv("HWPORT_CPU_MEMORY_LIMIT");
  if (s != NULL && *s != '\0') {
    uint64_t v;
    if (hwps_parse_bytes(s, &v) && v > 0) {
      g_cpu.memory_limit = v;
    } else {
      cpu_log(HWP_LOG_WARNING,
              "HWPORT_CPU_MEMORY_LIMIT='%s' is not a positive byte count (e.g. 1048576, 64M, "
              "2G); using physical memory (%llu bytes)",
              s, (unsigned long long)physical);
    }
  }

  g_cpu.inline_elements = CPU_DEFAULT_INLINE_ELEMENTS;
  s = getenv("HWPORT_CPU_INLINE_ELEMENTS");
  if (s != NULL && *s != '\0') {
    uint64_t v;
    const char *end;
    if (parse_u64(s, &v, &end) && *end == '\0') {
      g_cpu.inline_elements = v;
    } else {
      cpu_log(HWP_LOG_WARNING, "HWPORT_CPU_INLINE_ELEMENTS='%s' is not an integer; using %d", s,
              CPU_DEFAULT_INLINE_ELEMENTS);
    }
  }

  g_cpu.stream_min_bytes = default_stream_min_bytes();
  s = getenv("HWPORT_CPU_STREAM_BYTES");
  if (s != NULL && *s != '\0') {
    uint64_t v;
    if (hwps_parse_bytes(s, &v)) {
      g_cpu.stream_min_bytes = v;
    } else {
      cpu_log(HWP_LOG_WARNING,
              "HWPORT_CPU_STREAM_BYTES='%s' is not a byte count (e.g. 0 for never, 4096, 16M); "
              "using %llu bytes",
              s, (unsigned long long)g_cpu.stream_min_bytes);
    }
  }

  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  g_cpu.compute_units = cores > 0 ? (int32_t)cores : 1;
  read_vendor(g_cpu.vendor, sizeof g_cpu.vendor);
  struct utsname u;
  snprintf(g_cpu.machine, sizeof g_cpu.machine, "%.63s", uname(&u) == 0 ? u.machine : "");
}

void cpu_config_init(void) { pthread_once(&g_config_once, config_init_once); }

/* ---- device table ----------------------------------------------------------------------- */

static HWP_Status cpu_get_device_count(int32_t *count) {
  if (count == NULL)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "get_device_count: count is NULL");
  *count = g_cpu.num_devices;
  return HWP_OK;
}

static HWP_Status cpu_synchronize_device_fn(int32_t device) {
  HWP_Status st = cpu_check_device(device, "synchronize_device");
  if (st != HWP_OK) return st;
  return cpu_synchronize_device(device);
}

/* The float32 lanes of the vector code this build compiles for (its target macros; no -march
 * flags by default, so x86-64 builds are SSE2). A few kernels (float32 exp, the fused nn ops)
 * also carry AVX2/AVX-512 variants picked at load: they are wider, the rest is not. */
#if defined(__AVX512F__)
#define CPU_SIMD_WIDTH 16
#elif defined(__AVX__)
#define CPU_SIMD_WIDTH 8
#elif defined(__SSE2__) || defined(__ARM_NEON)
#define CPU_SIMD_WIDTH 4
#else
#define CPU_SIMD_WIDTH 1
#endif

static HWP_Status cpu_get_properties(int32_t device, HWP_DeviceProperties *props) {
  HWP_Status st = cpu_check_device(device, "get_properties");
  if (st != HWP_OK) return st;
  if (props == NULL) return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "get_properties: props is NULL");
  size_t size = props->struct_size;
  if (size < sizeof(size_t))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "get_properties: props->struct_size is %zu",
                     size);
  HWP_DeviceProperties p;
  memset(&p, 0, sizeof p);
  snprintf(p.name, sizeof p.name, "hwport virtual CPU %d", (int)device);
  snprintf(p.vendor, sizeof p.vendor, "%s", g_cpu.vendor);
  snprintf(p.driver_version, sizeof p.driver_version, "hwport-cpu " CPU_PLUGIN_VERSION);
  p.total_memory = g_cpu.memory_limit;
  p.memory_alignment = CPU_ALIGNMENT;
  p.compute_units = g_cpu.compute_units;
  p.max_work_group_size = 1;
  /* Computes float16/bfloat16 in float: no native-arithmetic flags. */
  p.flags = HWP_DEVICE_HOST_MEMORY;
  p.max_allocation = g_cpu.memory_limit; /* allocate refuses more than the limit in one piece */
  snprintf(p.architecture, sizeof p.architecture, "%s", g_cpu.machine);
  p.simd_width = CPU_SIMD_WIDTH;
  p.max_threads_per_compute_unit = 1;
  /* Host memory: exchanged as kDLCPU through host_address, not as a DLPack device type. */
  p.dlpack_device_type = HWP_DLPACK_NONE;
  hwps_copy_sized(props, &p, sizeof p);
  return HWP_OK;
}

static HWP_Status cpu_init_device(int32_t device) {
  return cpu_check_device(device, "init_device");
}

static HWP_Status cpu_deinit_device(int32_t device) {
  HWP_Status st = cpu_check_device(device, "deinit_device");
  if (st != HWP_OK) return st;
  return cpu_synchronize_device(device);
}

static HWP_Status cpu_set_device(int32_t device) { return cpu_check_device(device, "set_device"); }

const HWP_DeviceTable cpu_device_table = {
    .struct_size = sizeof(HWP_DeviceTable),
    .get_device_count = cpu_get_device_count,
    .synchronize_device = cpu_synchronize_device_fn,
    .get_properties = cpu_get_properties,
    .init_device = cpu_init_device,
    .deinit_device = cpu_deinit_device,
    .set_device = cpu_set_device,
};
