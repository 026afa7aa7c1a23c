/* hwport CPU plugin — dimension bookkeeping shared by the kernels: a flat C-order index to an
 * element offset, and merging dims that address memory as one. Not part of any ABI. */
#ifndef HWPORT_CPU_DIMS_H
#define HWPORT_CPU_DIMS_H

#include <stdint.h>

/* Element offset of flat index `i` of the dims (shape, stride)[0..n) in C order. */
static inline int64_t cpu_unravel_offset(int64_t i, int n, const int64_t *shape,
                                         const int64_t *stride) {
  if (n == 1) return i * stride[0]; /* merged dims: no division */
  int64_t off = 0;
  for (int k = n - 1; k >= 0; --k) {
    int64_t q = i / shape[k];
    off += (i - q * shape[k]) * stride[k];
    i = q;
  }
  return off;
}

/* Drops size-1 dims and merges neighbours (k, k+1) with stride[k] == stride[k+1] * shape[k+1]
 * (in place; the C-order flat index is unchanged). Returns the new dim count. */
static inline int cpu_merge_dims(int n, int64_t *shape, int64_t *stride) {
  int m = 0;
  for (int k = 0; k < n; ++k) {
    if (shape[k] == 1) continue;
    if (m > 0 && stride[m - 1] == stride[k] * shape[k]) {
      shape[m - 1] *= shape[k];
      stride[m - 1] = stride[k];
    } else {
      shape[m] = shape[k];
      stride[m] = stride[k];
      ++m;
    }
  }
  return m;
}

#endif /* HWPORT_CPU_DIMS_H */
