/* hwport CPU plugin — kernel entry points and the per-dtype macro tables that generate them. */
#ifndef HWPORT_CPU_KERNELS_H
#define HWPORT_CPU_KERNELS_H

#include "half.h"
#include "hwport/kernel_util.h"
#include "internal.h"

/* X(CODE, name, storage type): every dtype of the ABI, in HWP_DType order. Two copies so that
 * one can be expanded inside the other (cast pairs). */
#define CPU_FOR_EACH_DTYPE(X)                                                                  \
  X(BOOL, bool_, uint8_t) X(INT8, int8, int8_t) X(UINT8, uint8, uint8_t)                       \
  X(INT16, int16, int16_t) X(INT32, int32, int32_t) X(INT64, int64, int64_t)                   \
  X(FLOAT16, float16, uint16_t) X(BFLOAT16, bfloat16, uint16_t) X(FLOAT32, float32, float)     \
  X(FLOAT64, float64, double)

/* Element access through these types tolerates any byte_offset (the ABI does not promise
 * aligned views); on x86-64 and AArch64 this costs nothing, vectorized loops included.
 * CPU_UA(T) names the access type of storage type T. */
#define CPU_UA(T) cpu_ua_##T
typedef uint8_t cpu_ua_uint8_t __attribute__((aligned(1)));
typedef int8_t cpu_ua_int8_t __attribute__((aligned(1)));
typedef uint16_t cpu_ua_uint16_t __attribute__((aligned(1)));
typedef int16_t cpu_ua_int16_t __attribute__((aligned(1)));
typedef uint32_t cpu_ua_uint32_t __attribute__((aligned(1)));
typedef int32_t cpu_ua_int32_t __attribute__((aligned(1)));
typedef uint64_t cpu_ua_uint64_t __attribute__((aligned(1)));
typedef int64_t cpu_ua_int64_t __attribute__((aligned(1)));
typedef float cpu_ua_float __attribute__((aligned(1)));
typedef double cpu_ua_double __attribute__((aligned(1)));

const char *cpu_dtype_name(HWP_DType dtype);

/* Float -> integer conversions with a defined result everywhere: truncation toward zero, NaN
 * gives 0, values beyond the type's range saturate to its minimum/maximum. */
#define CPU_DEFINE_SATURATE(name, T, MIN, MAX)                                                 \
  static inline T cpu_sat_##name(double v) {                                                   \
    if (v != v) return 0;                                                                      \
    if (v >= (double)(MAX) + 1.0) return (T)(MAX);                                             \
    if (v <= (double)(MIN) - 1.0) return (T)(MIN);                                             \
    return (T)v;                                                                               \
  }
CPU_DEFINE_SATURATE(int8, int8_t, INT8_MIN, INT8_MAX)
CPU_DEFINE_SATURATE(uint8, uint8_t, 0, UINT8_MAX)
CPU_DEFINE_SATURATE(int16, int16_t, INT16_MIN, INT16_MAX)
CPU_DEFINE_SATURATE(int32, int32_t, INT32_MIN, INT32_MAX)
CPU_DEFINE_SATURATE(int64, int64_t, INT64_MIN, INT64_MAX)

/* The kernels (one function per op; they dispatch on the views' dtypes). */
HWP_Status cpu_kernel_fill(const HWP_KernelContext *ctx);
HWP_Status cpu_kernel_copy(const HWP_KernelContext *ctx);
HWP_Status cpu_kernel_cast(const HWP_KernelContext *ctx);
HWP_Status cpu_kernel_add(const HWP_KernelContext *ctx);
HWP_Status cpu_kernel_multiply(const HWP_KernelContext *ctx);

/* Validates the views of an elementwise op, fills task->u.ew (fn/aux set by the caller after)
 * and returns the element count in *nelems. */
HWP_Status cpu_prepare_task(const HWP_KernelContext *ctx, const char *op, cpu_task *task,
                            uint64_t *nelems);

/* Submits a prepared elementwise task on ctx->stream (nothing to do when nelems == 0). */
HWP_Status cpu_launch(const HWP_KernelContext *ctx, const char *op, cpu_task *task,
                      uint64_t nelems);

#endif /* HWPORT_CPU_KERNELS_H */
