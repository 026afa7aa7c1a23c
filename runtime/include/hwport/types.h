/* hwport C ABI v1 — basic types, status codes, dtypes and the tensor view.
 *
 * C99. Every struct that crosses the ABI starts with `size_t struct_size` and grows only by
 * appending fields; a reader uses a field only if `struct_size` covers it (HWP_HAS_FIELD).
 * A field appended in a later minor version starts at or after the struct's previous sizeof
 * (never inside its tail padding), so an older struct_size can never seem to cover it.
 * Required fields come first in every struct: a struct whose struct_size covers its required
 * part is valid even when it predates later optional fields. */
#ifndef HWPORT_TYPES_H
#define HWPORT_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HWP_ABI_VERSION_MAJOR 1
#define HWP_ABI_VERSION_MINOR 2

#if defined(_WIN32)
#define HWP_EXPORT __declspec(dllexport)
#else
#define HWP_EXPORT __attribute__((visibility("default")))
#endif

/* True when the struct pointed to by `p` (which starts with struct_size) is large enough to
 * hold `field`: the way to read fields that a newer minor version appended. */
#define HWP_HAS_FIELD(p, type, field) \
  ((p) != NULL && (p)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* Every ABI call returns a status. HWP_OK is 0; anything else is an error whose message the
 * plugin makes available through HWP_PluginApi.get_last_error on the calling thread. */
typedef int32_t HWP_Status;
enum HWP_StatusCode {
  HWP_OK = 0,
  HWP_ERROR_INVALID_ARGUMENT = 1, /* a NULL where a pointer is required, a bad index, ... */
  HWP_ERROR_OUT_OF_MEMORY = 2,    /* the device could not satisfy an allocation */
  HWP_ERROR_NOT_SUPPORTED = 3,    /* capability absent (dtype, feature): not a failure */
  HWP_ERROR_NOT_READY = 4,        /* query_*: work still pending (not an error state) */
  HWP_ERROR_NOT_FOUND = 5,        /* a named thing (attribute, symbol) does not exist */
  HWP_ERROR_DEVICE = 6,           /* the device or its driver failed */
  HWP_ERROR_VERSION_MISMATCH = 7, /* ABI versions cannot be reconciled */
  HWP_ERROR_INTERNAL = 8          /* a bug in the plugin or the host */
};

/* Element types. Values are part of the ABI and never change. */
typedef int32_t HWP_DType;
enum HWP_DTypeCode {
  HWP_DTYPE_BOOL = 0, /* one byte, 0 or 1 */
  HWP_DTYPE_INT8 = 1,
  HWP_DTYPE_UINT8 = 2,
  HWP_DTYPE_INT16 = 3,
  HWP_DTYPE_INT32 = 4,
  HWP_DTYPE_INT64 = 5,
  HWP_DTYPE_FLOAT16 = 6,  /* IEEE 754 binary16 */
  HWP_DTYPE_BFLOAT16 = 7, /* upper 16 bits of binary32 */
  HWP_DTYPE_FLOAT32 = 8,
  HWP_DTYPE_FLOAT64 = 9,
  HWP_DTYPE_COUNT = 10
};

/* Opaque plugin-defined handles. A buffer is one device allocation; it is NOT assumed to be a
 * host pointer (an OpenCL cl_mem is not), so the host never does arithmetic on it: positions
 * inside a buffer are always (buffer, byte offset). */
typedef struct HWP_Buffer_st *HWP_Buffer;
typedef struct HWP_Stream_st *HWP_Stream;
typedef struct HWP_Event_st *HWP_Event;

#define HWP_MAX_NDIM 16

/* A strided view of device memory, as kernels see inputs and outputs.
 * Element (i0, .., in-1) lives at byte  byte_offset + itemsize * sum_k(i_k * strides[k])  of
 * `buffer`. Strides are in elements and may be 0 (broadcast) or negative. `shape` and `strides`
 * point to `ndim` values owned by the host, valid for the duration of the call that passed them.
 * ndim == 0 is a scalar (one element). byte_offset carries no alignment promise beyond the
 * buffer's own: kernels must not assume more (a view imported from the host may be unaligned). */
typedef struct HWP_TensorView {
  size_t struct_size;
  HWP_Buffer buffer;
  uint64_t byte_offset;
  HWP_DType dtype;
  int32_t ndim;
  const int64_t *shape;
  const int64_t *strides;
} HWP_TensorView;

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_TYPES_H */
