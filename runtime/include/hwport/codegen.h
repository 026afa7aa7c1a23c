/* hwport C ABI v1 — code-generation target table (optional; filled by a later minor).
 * Declared now so HWP_PluginApi can point to it; it grows by appending functions. */
#ifndef HWPORT_CODEGEN_H
#define HWPORT_CODEGEN_H

#include "hwport/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct HWP_CodegenTable {
  size_t struct_size;
} HWP_CodegenTable;

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_CODEGEN_H */
