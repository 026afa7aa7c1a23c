/* hwport CPU plugin — running an elementwise inner loop over any part of its (row-major,
 * flattened) iteration space, and splitting big launches over the thread pool. Shared by
 * cpu_elementwise_run (kernels_common.c) and the where kernel (kernels_elementwise.c). */
#ifndef HWPORT_CPU_ELEMENTWISE_ITER_H
#define HWPORT_CPU_ELEMENTWISE_ITER_H

#include "internal.h"
#include "parallel.h"

#define CPU_EW_ITER_MAX_OPERANDS 4
/* Launches of at least this many elements run on the thread pool; smaller ones on the calling
 * thread (the pool's wake-up costs microseconds: below this, one thread is as fast). */
#define CPU_EW_PARALLEL_MIN 32768
/* Chunks are whole blocks of the flattened iteration space (so threads write disjoint cache
 * lines of a contiguous output), and at least CPU_EW_GRAIN_BLOCKS blocks each. */
#define CPU_EW_BLOCK 1024
#define CPU_EW_GRAIN_BLOCKS 8

typedef struct cpu_ew_iter {
  cpu_inner_fn fn;
  const void *aux;
  int nops;                                         /* 1 .. CPU_EW_ITER_MAX_OPERANDS */
  int ndim;                                         /* 0 = one element */
  char *const *base;                                /* nops first-element pointers */
  const int64_t *shape;                             /* ndim sizes, none of them 0 */
  const int64_t *strides[CPU_EW_ITER_MAX_OPERANDS]; /* per operand: ndim strides in bytes */
  int64_t total;                                    /* product of shape */
} cpu_ew_iter;

/* Runs it->fn over elements [begin, end) of the flattened iteration space, row by row. */
static inline void cpu_ew_iter_range(const cpu_ew_iter *it, int64_t begin, int64_t end) {
  const int nops = it->nops, last = it->ndim - 1;
  char *ptr[CPU_EW_ITER_MAX_OPERANDS];
  int64_t inner[CPU_EW_ITER_MAX_OPERANDS] = {0, 0, 0, 0};
  if (last < 0) {
    for (int i = 0; i < nops; ++i) ptr[i] = it->base[i];
    it->fn(ptr, inner, 1, it->aux);
    return;
  }
  const int64_t rowlen = it->shape[last];
  int64_t idx[HWP_MAX_NDIM];
  int64_t row = begin / rowlen, col = begin % rowlen;
  for (int k = last - 1; k >= 0; --k) {
    idx[k] = row % it->shape[k];
    row /= it->shape[k];
  }
  for (int i = 0; i < nops; ++i) {
    inner[i] = it->strides[i][last];
    int64_t off = col * inner[i];
    for (int k = 0; k < last; ++k) off += idx[k] * it->strides[i][k];
    ptr[i] = it->base[i] + off;
  }
  for (int64_t pos = begin;;) {
    int64_t cnt = rowlen - col;
    if (cnt > end - pos) cnt = end - pos;
    it->fn(ptr, inner, cnt, it->aux);
    pos += cnt;
    if (pos >= end) return;
    for (int i = 0; i < nops; ++i) ptr[i] -= col * inner[i]; /* back to the row's start */
    col = 0;
    for (int k = last - 1; k >= 0; --k) { /* odometer over the outer dims */
      if (++idx[k] < it->shape[k]) {
        for (int i = 0; i < nops; ++i) ptr[i] += it->strides[i][k];
        break;
      }
      idx[k] = 0;
      for (int i = 0; i < nops; ++i) ptr[i] -= it->strides[i][k] * (it->shape[k] - 1);
    }
  }
}

static inline void cpu_ew_iter_chunk(void *ctx, int64_t begin, int64_t end) {
  const cpu_ew_iter *it = (const cpu_ew_iter *)ctx;
  /* end * CPU_EW_BLOCK may pass INT64_MAX in the last block: compare before multiplying. */
  int64_t e = end > it->total / CPU_EW_BLOCK ? it->total : end * CPU_EW_BLOCK;
  cpu_ew_iter_range(it, begin * CPU_EW_BLOCK, e < it->total ? e : it->total);
}

/* Runs the whole launch: on the thread pool when it is big enough, else here. */
static inline void cpu_ew_iter_run(const cpu_ew_iter *it) {
  if (it->total >= CPU_EW_PARALLEL_MIN) {
    int64_t blocks = it->total / CPU_EW_BLOCK + (it->total % CPU_EW_BLOCK != 0);
    cpu_parallel_for(blocks, CPU_EW_GRAIN_BLOCKS, cpu_ew_iter_chunk, (void *)it);
  } else {
    cpu_ew_iter_range(it, 0, it->total);
  }
}

#endif /* HWPORT_CPU_ELEMENTWISE_ITER_H */
