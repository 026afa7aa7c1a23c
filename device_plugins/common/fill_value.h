/* hwport reference plugins — fill's `value` attribute as the storage bits of the output dtype,
 * computed on the host once per launch (compiled into each plugin, like plugin_support.c). */
#ifndef HWPORT_FILL_VALUE_H
#define HWPORT_FILL_VALUE_H

#include <stdint.h>

#include "hwport/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The bits of op's numeric attribute `name` (fill's and pad's `value`) as `dtype`, in the low
 * bytes of *bits (little-endian storage): read as INT64 first for bool/integers (exact; a float
 * value then converts with cast semantics: truncation, NaN -> 0, saturating), as FLOAT64 first
 * for floats (float16/bfloat16 rounded to nearest even). INVALID_ARGUMENT (with the message)
 * when it is not a number, or is absent and `required`; absent and optional means 0. */
HWP_Status hwps_value_bits(const HWP_KernelContext *ctx, const char *op, const char *name,
                           int required, HWP_DType dtype, int64_t *bits);

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_FILL_VALUE_H */
