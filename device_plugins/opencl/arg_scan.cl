/* argmax/argmin (k_argmax, k_argmin and their second passes k_*_fin) and cumsum/cumprod
 * (k_cumsum, k_cumprod); after kernels_prelude.cl. */

/* ---- argmax / argmin -------------------------------------------------------------------------
 * One work-group per (output, chunk of the axis): each work-item walks a strided part of the
 * chunk in increasing index order keeping the first best (value, index), then the group
 * combines its pairs in local memory (a tree). With chunks > 1 the pairs of each chunk go to
 * the workspace `part` (indices, then values at byte offset pv_off: both stay aligned) and
 * k_arg*_fin combines them. NaN beats every number (the first NaN wins); ties go to the lower
 * index. */
#define NONE LONG_MAX
/* Bitwise (not short-circuit) logic keeps these branch-free, so work-items vectorize. */
#define BETTER_MAX(a, b) (((a) > (b)) | ((int)ISNANV(a) & !ISNANV(b)))
#define BETTER_MIN(a, b) (((a) < (b)) | ((int)ISNANV(a) & !ISNANV(b)))
/* Whether (vb, ib) wins over (va, ia); NONE marks an empty slot. */
#define TAKE(BETTER, va, ia, vb, ib)                                                           \
  (((ib) != NONE) &                                                                            \
   (((ia) == NONE) | BETTER(vb, va) | (!BETTER(va, vb) & ((ib) < (ia)))))

#define ARG_TREE(BETTER, sv, si, bv, bi)                                                       \
  {                                                                                            \
    uint lid = get_local_id(0);                                                                \
    sv[lid] = bv;                                                                              \
    si[lid] = bi;                                                                              \
    barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    for (uint s = get_local_size(0) >> 1; s > 0; s >>= 1) {                                    \
      if (lid < s) {                                                                           \
        VT vb_ = sv[lid + s];                                                                  \
        long ib_ = si[lid + s];                                                                \
        if (TAKE(BETTER, sv[lid], si[lid], vb_, ib_)) {                                        \
          sv[lid] = vb_;                                                                       \
          si[lid] = ib_;                                                                       \
        }                                                                                      \
      }                                                                                        \
      barrier(CLK_LOCAL_MEM_FENCE);                                                            \
    }                                                                                          \
    bv = sv[0];                                                                                \
    bi = si[0];                                                                                \
  }

#define DEF_ARG(NAME, BETTER)                                                                  \
  __kernel void k_##NAME(__global uchar *out, ulong out_off, int oal,                          \
                         __global const uchar *in, ulong in_off, int al, ulong len, long ast,  \
                         ulong chunk, uint chunks, int kdim, long16 kshape, long16 kst,        \
                         __global uchar *part, ulong pv_off, __local VT *sv,                   \
                         __local long *si) {                                                   \
    ulong g = get_group_id(0), o = g / chunks, c = g % chunks;                                 \
    long base = (long)in_off + offs(o, kdim, kshape, kst);                                     \
    ulong lo = c * chunk, hi = min(len, lo + chunk);                                           \
    VT bv = 0;                                                                                 \
    long bi = NONE;                                                                            \
    for (ulong r = lo + get_local_id(0); r < hi; r += get_local_size(0)) {                     \
      VT v = LDV(in + base + (long)r * ast, al);                                               \
      if ((bi == NONE) | BETTER(v, bv)) {                                                      \
        bv = v;                                                                                \
        bi = (long)r;                                                                          \
      }                                                                                        \
    }                                                                                          \
    ARG_TREE(BETTER, sv, si, bv, bi)                                                           \
    if (get_local_id(0) == 0) {                                                                \
      if (chunks == 1) {                                                                       \
        STA(long, out + out_off + o * 8, oal, bi);                                             \
      } else {                                                                                 \
        ((__global long *)part)[g] = bi;                                                       \
        ((__global VT *)(part + pv_off))[g] = bv;                                              \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  __kernel void k_##NAME##_fin(__global uchar *out, ulong out_off, int oal,                    \
                               __global const uchar *part, ulong pv_off, uint chunks,          \
                               __local VT *sv, __local long *si) {                             \
    ulong o = get_group_id(0);                                                                 \
    __global const long *pi = (__global const long *)part + o * chunks;                        \
    __global const VT *pv = (__global const VT *)(part + pv_off) + o * chunks;                 \
    VT bv = 0;                                                                                 \
    long bi = NONE;                                                                            \
    for (uint c = get_local_id(0); c < chunks; c += get_local_size(0)) {                       \
      if (TAKE(BETTER, bv, bi, pv[c], pi[c])) {                                                \
        bv = pv[c];                                                                            \
        bi = pi[c];                                                                            \
      }                                                                                        \
    }                                                                                          \
    ARG_TREE(BETTER, sv, si, bv, bi)                                                           \
    if (get_local_id(0) == 0) STA(long, out + out_off + o * 8, oal, bi);                       \
  }

DEF_ARG(argmax, BETTER_MAX)
DEF_ARG(argmin, BETTER_MIN)

/* ---- cumsum / cumprod ------------------------------------------------------------------------
 * One work-group per row (an (outer, inner) index pair; the row runs along the axis), or per
 * chunk of a row when there are few long rows (then k_*_tot first stores the chunk totals).
 * A group's range goes in blocks of SPER * local size elements: the group loads a block into
 * local memory (coalesced), each work-item scans its SPER consecutive elements, the
 * work-items' totals are scanned in local memory (Hillis-Steele), and every element gets the
 * carry of the earlier blocks (and chunks) and the total of the earlier work-items.
 * Accumulators: bool/integers in long (wrap-around through ulong; the output is int64),
 * float16/bfloat16 in float, float32 in double when the device has it, float64 in double;
 * outputs are rounded once each. */
#ifndef SPER
#define SPER 8
#endif
#if DT <= 5
typedef long ACC;
#define SADD(a, b) ((long)((ulong)(a) + (ulong)(b)))
#define SMUL(a, b) ((long)((ulong)(a) * (ulong)(b)))
#define STO(p, al, v) STA(long, p, al, v)
#elif DT == 8 && defined(HAS_FP64)
typedef double ACC;
#define SADD(a, b) ((a) + (b))
#define SMUL(a, b) ((a) * (b))
#define STO(p, al, v) STV(p, al, (float)(v))
#else
typedef VT ACC;
#define SADD(a, b) ((a) + (b))
#define SMUL(a, b) ((a) * (b))
#define STO(p, al, v) STV(p, al, v)
#endif

/* The row of group g: its input base and its output start (outer o, inner i of the axis). */
#define SCAN_ROW(row)                                                                          \
  ulong o_ = (row) / inner, i_ = (row) % inner;                                                \
  long base = (long)in_off + offs(o_, odim, oshape, ost) + offs(i_, idim, ishape, ist);

/* A row may be split into `chunks` chunks of `chunk` (few long rows): k_*_tot stores each
 * chunk's total in part[row * chunks + c], and the scan of chunk c starts from the COMB of the
 * totals before it. */
#define DEF_SCAN(NAME, COMB, ID)                                                               \
  __kernel void k_##NAME##_tot(__global const uchar *in, ulong in_off, int al, ulong len,      \
                               long ast, ulong inner, int odim, long16 oshape, long16 ost,     \
                               int idim, long16 ishape, long16 ist, ulong chunk, uint chunks,  \
                               __global ACC *part, __local ACC *tot) {                         \
    ulong g = get_group_id(0), c = g % chunks;                                                 \
    SCAN_ROW(g / chunks)                                                                       \
    ulong hi = min(len, (c + 1) * chunk);                                                      \
    ACC acc = ID;                                                                              \
    for (ulong r = c * chunk + get_local_id(0); r < hi; r += get_local_size(0))                \
      acc = COMB(acc, (ACC)LDV(in + base + (long)r * ast, al));                                \
    GROUP_TREE(COMB, tot, acc)                                                                 \
    if (get_local_id(0) == 0) part[g] = acc;                                                   \
  }                                                                                            \
  __kernel void k_##NAME(__global uchar *out, ulong out_off, int oal, int osz,                 \
                         __global const uchar *in, ulong in_off, int al, ulong len, long ast,  \
                         ulong inner, int odim, long16 oshape, long16 ost, int idim,           \
                         long16 ishape, long16 ist, ulong chunk, uint chunks,                  \
                         __global const ACC *part, __local ACC *buf, __local ACC *tot) {       \
    uint lid = get_local_id(0), lsz = get_local_size(0);                                       \
    ulong g = get_group_id(0), row = g / chunks, c = g % chunks;                               \
    SCAN_ROW(row)                                                                              \
    __global uchar *dst = out + out_off + (o_ * len * inner + i_) * (ulong)osz;                \
    ulong ostep = inner * (ulong)osz, n = (ulong)lsz * SPER;                                   \
    ulong lo = c * chunk, hi = min(len, lo + chunk);                                           \
    ACC carry = ID;                                                                            \
    if (c > 0) {                                                                               \
      for (ulong k = lid; k < c; k += lsz) carry = COMB(carry, part[row * chunks + k]);        \
      GROUP_TREE(COMB, tot, carry)                                                             \
    }                                                                                          \
    for (ulong b0 = lo; b0 < hi; b0 += n) {                                                    \
      barrier(CLK_LOCAL_MEM_FENCE);                                                            \
      for (uint k = lid; k < n; k += lsz) {                                                    \
        ulong r = b0 + k;                                                                      \
        buf[k] = r < hi ? (ACC)LDV(in + base + (long)r * ast, al) : (ACC)ID;                   \
      }                                                                                        \
      barrier(CLK_LOCAL_MEM_FENCE);                                                            \
      ACC acc = ID;                                                                            \
      for (uint j = 0; j < SPER; ++j) {                                                        \
        acc = COMB(acc, buf[lid * SPER + j]);                                                  \
        buf[lid * SPER + j] = acc;                                                             \
      }                                                                                        \
      tot[lid] = acc;                                                                          \
      barrier(CLK_LOCAL_MEM_FENCE);                                                            \
      for (uint d = 1; d < lsz; d <<= 1) {                                                     \
        ACC y = lid >= d ? tot[lid - d] : (ACC)ID;                                             \
        barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        if (lid >= d) tot[lid] = COMB(y, tot[lid]);                                            \
        barrier(CLK_LOCAL_MEM_FENCE);                                                          \
      }                                                                                        \
      ACC pre = lid > 0 ? COMB(carry, tot[lid - 1]) : carry;                                   \
      for (uint j = 0; j < SPER; ++j) buf[lid * SPER + j] = COMB(pre, buf[lid * SPER + j]);    \
      carry = COMB(carry, tot[lsz - 1]);                                                       \
      barrier(CLK_LOCAL_MEM_FENCE);                                                            \
      for (uint k = lid; k < n; k += lsz) {                                                    \
        ulong r = b0 + k;                                                                      \
        if (r < hi) STO(dst + r * ostep, oal, buf[k]);                                         \
      }                                                                                        \
    }                                                                                          \
  }

DEF_SCAN(cumsum, SADD, 0)
DEF_SCAN(cumprod, SMUL, 1)
