/* hwport reference plugins — the attributes of a native composite kernel (phi_ops/ops.yaml
 * `native`), read once per launch on the host and packed into int64 slots that the generated
 * elementwise kernels read as their compute type (compiled into each plugin, like
 * fill_value.c). */
#ifndef HWPORT_NATIVE_ATTRS_H
#define HWPORT_NATIVE_ATTRS_H

#include <stdint.h>

#include "hwport/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HWPS_MAX_NATIVE_ATTRS 4

/* How an attribute converts (ops.yaml native attrs `as`). */
typedef enum hwps_attr_kind {
  HWPS_ATTR_FLAG = 0,   /* bool: slot = 0 or 1 */
  HWPS_ATTR_SCALAR = 1, /* a number in the compute type: FLOAT64 (or an INT64 converted) */
  HWPS_ATTR_VALUE = 2   /* a number as a value of the input dtype, converted as fill's value
                         * (hwps_value_bits; an integer beyond the dtype's range saturates),
                         * then in the compute type */
} hwps_attr_kind;

/* What an absent attribute (None on the Python side) means (ops.yaml native attrs `absent`). */
typedef enum hwps_attr_absent {
  HWPS_ABSENT_REQUIRED = 0, /* an error */
  HWPS_ABSENT_LOWEST = 1,   /* the dtype's lowest value (-inf for floats) */
  HWPS_ABSENT_HIGHEST = 2   /* the dtype's highest value (+inf for floats) */
} hwps_attr_absent;

typedef struct hwps_attr_spec {
  const char *name;
  int kind;   /* hwps_attr_kind */
  int absent; /* hwps_attr_absent */
} hwps_attr_spec;

/* Fills slots[0..n) from the attributes `specs` names, for an input of `dtype`. A slot holds
 * the value in the compute type of dtype: bool and the integers as the int64 value, float16,
 * bfloat16 and float32 as the bits of a float (low 32 bits), float64 as the bits of a double.
 * INVALID_ARGUMENT (with the message, naming op) for a missing required or non-numeric one. */
HWP_Status hwps_native_attrs(const HWP_KernelContext *ctx, const char *op,
                             const hwps_attr_spec *specs, int n, HWP_DType dtype,
                             int64_t *slots);

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_NATIVE_ATTRS_H */
