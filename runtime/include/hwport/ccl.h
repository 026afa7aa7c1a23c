/* hwport C ABI v1 — collective communication table (optional; filled by a later minor).
 * Declared now so HWP_PluginApi can point to it; it grows by appending functions. */
#ifndef HWPORT_CCL_H
#define HWPORT_CCL_H

#include "hwport/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct HWP_CclTable {
  size_t struct_size;
} HWP_CclTable;

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_CCL_H */
