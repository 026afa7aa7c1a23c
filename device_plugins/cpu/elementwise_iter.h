/* hwport CPU plugin — running an elementwise inner loop over any part of its (row-major,
 * flattened) iteration space, splitting big launches over the thread pool, and writing big
 * contiguous outputs with non-temporal stores. Used by cpu_elementwise_run (kernels_common.c). */
#ifndef HWPORT_CPU_ELEMENTWISE_ITER_H
#define HWPORT_CPU_ELEMENTWISE_ITER_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
  int64_t stream_itemsize; /* > 0: the output's rows are contiguous elements of this size,
                              written through cpu_ew_call_streamed; 0: written in place */
} cpu_ew_iter;

/* Streaming: the inner loop computes CPU_EW_STREAM_BLOCK bytes of output at a time into a block
 * that stays in L1, and the block is copied out with non-temporal stores. A big output then
 * costs no read-for-ownership of its cache lines and evicts nothing (on a 2-core VM, a 4M
 * float32 unary op: 0.55x the time of ordinary stores). Outputs smaller than the last-level
 * cache's share (g_cpu.stream_min_bytes) keep ordinary stores: their consumer reads them from
 * the cache. The loops need no change: they see a contiguous output, the block. Loops that
 * call vector math (exp, log, tanh...: cpu_elementwise.plain_stores) keep ordinary stores: they
 * are compute-bound, and the copy's bursts of non-temporal stores stall them on the
 * write-combining buffers (4M-float log: 1.15x slower streamed, neg 0.75x). A block is 8 cache
 * lines, which the write-combining buffers hold while the next block computes. */
#define CPU_EW_STREAM_BLOCK 512
#define CPU_EW_STREAM_ALIGN 64

/* Copies `bytes` (a multiple of 64) from `src` to the 64-byte aligned `dst`, bypassing the
 * caches; the chunk's cpu_ew_stream_fence orders them before the launch completes. */
static inline void cpu_ew_stream_copy(char *dst, const char *src, int64_t bytes) {
#if defined(__SSE2__)
  for (int64_t i = 0; i < bytes; i += 16)
    _mm_stream_si128((__m128i *)(void *)(dst + i),
                     _mm_load_si128((const __m128i *)(const void *)(src + i)));
#else
  memcpy(dst, src, (size_t)bytes);
#endif
}

static inline void cpu_ew_stream_fence(void) {
#if defined(__SSE2__)
  _mm_sfence(); /* non-temporal stores are weakly ordered: publish them before the pool joins */
#endif
}

/* it->fn over `cnt` elements at ptr (a contiguous output row segment): the head up to a 64-byte
 * boundary and the tail in place, whole blocks through the L1 block and cpu_ew_stream_copy. */
static inline void cpu_ew_call_streamed(const cpu_ew_iter *it, char *const *ptr,
                                        const int64_t *inner, int64_t cnt) {
  _Alignas(CPU_EW_STREAM_ALIGN) char block[CPU_EW_STREAM_BLOCK];
  const int64_t es = it->stream_itemsize, per_block = CPU_EW_STREAM_BLOCK / es;
  const int nops = it->nops;
  char *p[CPU_EW_ITER_MAX_OPERANDS];
  for (int i = 0; i < nops; ++i) p[i] = ptr[i];
  int64_t misalign = (int64_t)((uintptr_t)p[0] % CPU_EW_STREAM_ALIGN);
  int64_t head = misalign == 0 ? 0 : (CPU_EW_STREAM_ALIGN - misalign) / es;
  if (misalign % es != 0 || head + per_block > cnt) { /* elements off their alignment, or short */
    it->fn(p, inner, cnt, it->aux);
    return;
  }
  if (head > 0) {
    it->fn(p, inner, head, it->aux);
    for (int i = 0; i < nops; ++i) p[i] += head * inner[i];
    cnt -= head;
  }
  int64_t block_strides[CPU_EW_ITER_MAX_OPERANDS];
  char *bp[CPU_EW_ITER_MAX_OPERANDS];
  block_strides[0] = es;
  bp[0] = block;
  for (int i = 1; i < nops; ++i) block_strides[i] = inner[i];
  for (; cnt >= per_block; cnt -= per_block) {
    for (int i = 1; i < nops; ++i) bp[i] = p[i];
    it->fn(bp, block_strides, per_block, it->aux);
    cpu_ew_stream_copy(p[0], block, per_block * es);
    for (int i = 0; i < nops; ++i) p[i] += per_block * inner[i];
  }
  if (cnt > 0) it->fn(p, inner, cnt, it->aux);
}

static inline void cpu_ew_call(const cpu_ew_iter *it, char *const *ptr, const int64_t *inner,
                               int64_t cnt) {
  if (it->stream_itemsize > 0)
    cpu_ew_call_streamed(it, ptr, inner, cnt);
  else
    it->fn(ptr, inner, cnt, it->aux);
}

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
    cpu_ew_call(it, ptr, inner, cnt);
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
  if (it->stream_itemsize > 0) cpu_ew_stream_fence();
}

/* Runs the whole launch: on the thread pool when it is big enough, else here. */
static inline void cpu_ew_iter_run(const cpu_ew_iter *it) {
  if (it->total >= CPU_EW_PARALLEL_MIN) {
    int64_t blocks = it->total / CPU_EW_BLOCK + (it->total % CPU_EW_BLOCK != 0);
    cpu_parallel_for(blocks, CPU_EW_GRAIN_BLOCKS, cpu_ew_iter_chunk, (void *)it);
  } else {
    cpu_ew_iter_range(it, 0, it->total);
    if (it->stream_itemsize > 0) cpu_ew_stream_fence();
  }
}

#endif /* HWPORT_CPU_ELEMENTWISE_ITER_H */
