/* hwport C ABI v1 — profiler table (optional; filled by a later minor).
 * Declared now so HWP_PluginApi can point to it; it grows by appending functions. */
#ifndef HWPORT_PROFILER_H
#define HWPORT_PROFILER_H

#include "hwport/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct HWP_ProfilerTable {
  size_t struct_size;
} HWP_ProfilerTable;

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_PROFILER_H */
