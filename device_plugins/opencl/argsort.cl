/* hwport OpenCL plugin — argsort: a bitonic sort of (key, index) pairs (one program per dtype,
 * after elementwise_prelude.cl and kernels_common.cl; see kernels_index.c for the launch plan).
 *
 * Keys are uint64 images of the values in ascending order (-0.0 == 0.0, every NaN above +inf),
 * complemented for descending. Comparing (key, index) pairs makes every pair distinct, so the
 * (unstable) bitonic network yields the stable order. Each row is padded to P (a power of two)
 * with (UINT64_MAX, position >= length) pairs, which sort after every real element. */

static inline ulong sort_key(__global const uchar *p, int al) {
#if defined(DT_float64)
  double v = LD(p, al);
  if (isnan(v)) return ULONG_MAX;
  ulong b = as_ulong(v == 0 ? 0.0 : v);
  return (b >> 63) ? ~b : (b | 0x8000000000000000UL);
#elif defined(IS_FLOAT)
  float v = LD(p, al);
  if (isnan(v)) return ULONG_MAX;
  uint b = as_uint(v == 0 ? 0.0f : v);
  return (ulong)((b >> 31) ? ~b : (b | 0x80000000u));
#elif defined(IS_SINT)
  return (ulong)(long)LD(p, al) ^ 0x8000000000000000UL;
#else
  return (ulong)LD(p, al);
#endif
}

/* keys/ids[g] for g < total: row g / P, position g % P (rows >= `rows` are padding too). */
__kernel void k_as_init(__global ulong *keys, __global ulong *ids, ulong total, ulong P,
                        ulong len, ulong rows, __global const uchar *x, ulong x_off,
                        long16 rshape, long16 rst, int rnd, long ast, int desc, int al) {
  ulong g = get_global_id(0);
  if (g >= total) return;
  ulong r = g / P, p = g % P;
  ulong key = ULONG_MAX;
  if (r < rows && p < len) {
    long sh[16], st[16], unused = 0;
    vstore16(rshape, 0, sh);
    vstore16(rst, 0, st);
    long off = (long)x_off + (long)p * ast;
    nd_off2(r, rnd, sh, st, st, &off, &unused);
    key = sort_key(x + off, al);
    if (desc) key = ~key;
  }
  keys[g] = key;
  ids[g] = p;
}

static inline int pair_gt(ulong ka, ulong ia, ulong kb, ulong ib) {
  return ka > kb || (ka == kb && ia > ib);
}

/* One compare-exchange of bitonic stage (k, j) on the pair of work-item t (P: row length). */
#define BITONIC_STEP(K, I, t, k, j, base, P)                                                   \
  {                                                                                            \
    ulong lo_ = (((t) & ~((j) - 1)) << 1) | ((t) & ((j) - 1)), hi_ = lo_ + (j);                \
    int asc_ = ((((base) + lo_) & ((P) - 1)) & (k)) == 0;                                      \
    ulong ka_ = K[lo_], kb_ = K[hi_], ia_ = I[lo_], ib_ = I[hi_];                              \
    if (pair_gt(ka_, ia_, kb_, ib_) == asc_) {                                                 \
      K[lo_] = kb_; K[hi_] = ka_; I[lo_] = ib_; I[hi_] = ia_;                                  \
    }                                                                                          \
  }

/* A block of 2 * local size pairs in local memory. merge_k == 0: every stage k = 2 .. kmax
 * (the blocks sorted, as rows when P <= the block); else the stages j < block of stage merge_k
 * (after the global steps j >= block). */
__kernel void k_as_local(__global ulong *keys, __global ulong *ids, ulong P, ulong kmax,
                         ulong merge_k, __local ulong *lk, __local ulong *li) {
  ulong w = get_local_size(0), t = get_local_id(0), bs = 2 * w;
  ulong base = get_group_id(0) * bs;
  lk[t] = keys[base + t];
  lk[t + w] = keys[base + t + w];
  li[t] = ids[base + t];
  li[t + w] = ids[base + t + w];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (merge_k != 0) {
    for (ulong j = w; j > 0; j >>= 1) {
      BITONIC_STEP(lk, li, t, merge_k, j, base, P)
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  } else {
    for (ulong k = 2; k <= kmax; k <<= 1)
      for (ulong j = k >> 1; j > 0; j >>= 1) {
        BITONIC_STEP(lk, li, t, k, j, base, P)
        barrier(CLK_LOCAL_MEM_FENCE);
      }
  }
  keys[base + t] = lk[t];
  keys[base + t + w] = lk[t + w];
  ids[base + t] = li[t];
  ids[base + t + w] = li[t + w];
}

/* One global stage (k, j) with j >= the local block: one work-item per pair. */
__kernel void k_as_step(__global ulong *keys, __global ulong *ids, ulong P, ulong k, ulong j,
                        ulong pairs) {
  ulong t = get_global_id(0);
  if (t >= pairs) return;
  BITONIC_STEP(keys, ids, t, k, j, 0, P)
}

/* out (int64) at row r, position p < len: the sorted row's index. */
__kernel void k_as_out(__global uchar *out, ulong out_off, long16 rshape, long16 ost, int rnd,
                       long oast, ulong len, ulong P, ulong n, __global const ulong *ids,
                       int al) {
  ulong g = get_global_id(0);
  if (g >= n) return;
  ulong r = g / len, p = g % len;
  long sh[16], st[16], unused = 0;
  vstore16(rshape, 0, sh);
  vstore16(ost, 0, st);
  long off = (long)out_off + (long)p * oast;
  nd_off2(r, rnd, sh, st, st, &off, &unused);
  str_i64(out + off, al, (long)ids[r * P + p]);
}
