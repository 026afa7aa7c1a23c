/* Fused softmax/log_softmax (k_softmax) and layer_norm/rms_norm (k_norm); after
 * kernels_prelude.cl, for the float dtypes (DT 6..9: VT is float, or double for float64).
 * Faster variants for unit-stride layouts follow at the end (k_softmax_rows, k_norm_rows,
 * k_softmax_cols: built with -DVW).
 *
 * The general kernels: one work-group per row (softmax: an (outer, inner) pair, the row along the axis; norms: the
 * leading index, the row over the normalized dims). Work-items walk the row with a stride of
 * the group size; row statistics combine in local memory (trees). When the row fits
 * (`cache`), the first pass keeps it in local memory and the later passes read it from there,
 * so global memory is read once:
 *   softmax      m = max (NaN propagates); s = sum exp(x - m); y = exp(x - m) * (1 / s)
 *   log_softmax  y = (x - m) - log(s)
 *   layer_norm   mean; var = mean((x - mean)^2); y = (x - mean) * (1 / sqrt(var + eps)) [* w]
 *                [+ b]
 *   rms_norm     ms = mean(x^2); y = x * (1 / sqrt(ms + eps)) [* w] */
/* Row statistics (sums, mean, rstd) accumulate in AT: double when the device has it, so a
 * large mean does not cost float32 its digits; else VT. */
#ifdef HAS_FP64
typedef double AT;
#else
typedef VT AT;
#endif
/* exp in VT: ocl_expf (expf.cl, vectorizes) for the float32-computed dtypes, exp for double. */
#if DT == 9
#define EXPV(v) exp(v)
#else
#define EXPV(v) ocl_expf(v)
#endif
#define MAXN(a, b) ((((a) > (b)) | isnan(a)) ? (a) : (b)) /* branch-free: NaN propagates */
#define SUMN(a, b) ((a) + (b))

__kernel void k_softmax(__global uchar *out, ulong out_off, int oal, __global const uchar *in,
                        ulong in_off, int al, ulong len, long ast, ulong inner, int odim,
                        long16 oshape, long16 ost, int idim, long16 ishape, long16 ist,
                        int logsm, int cache, __local VT *row, __local VT *scratch,
                        __local AT *ascratch) {
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong g = get_group_id(0), o = g / inner, i = g % inner;
  __global const uchar *src =
      in + (long)in_off + offs(o, odim, oshape, ost) + offs(i, idim, ishape, ist);
  __global uchar *dst = out + out_off + (o * len * inner + i) * ESIZE;
  const ulong ostep = inner * ESIZE;
  VT m = -INFINITY;
  for (ulong r = lid; r < len; r += lsz) {
    VT v = LDV(src + (long)r * ast, al);
    if (cache) row[r] = v;
    m = MAXN(m, v);
  }
  GROUP_TREE(MAXN, scratch, m)
  AT s = 0;
  for (ulong r = lid; r < len; r += lsz) {
    VT e = EXPV((cache ? row[r] : LDV(src + (long)r * ast, al)) - m);
    if (cache && !logsm) row[r] = e; /* each work-item rewrites only its own elements */
    s += e;
  }
  GROUP_TREE(SUMN, ascratch, s)
  if (logsm) {
    const VT ls = (VT)log(s);
    for (ulong r = lid; r < len; r += lsz) {
      VT v = cache ? row[r] : LDV(src + (long)r * ast, al);
      STV(dst + r * ostep, oal, (v - m) - ls);
    }
  } else {
    const VT inv = (VT)((AT)1 / s);
    for (ulong r = lid; r < len; r += lsz) {
      VT e = cache ? row[r] : EXPV(LDV(src + (long)r * ast, al) - m);
      STV(dst + r * ostep, oal, e * inv);
    }
  }
}

__kernel void k_norm(__global uchar *out, ulong out_off, int oal, __global const uchar *in,
                     ulong in_off, int al, ulong len, int rdim, long16 rshape, long16 rst,
                     int ndim, long16 nshape, long16 nxs, __global const uchar *w, ulong w_off,
                     long16 nws, __global const uchar *b, ulong b_off, long16 nbs, int has_w,
                     int has_b, int rms, AT eps, int cache, __local VT *row,
                     __local AT *scratch) {
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong g = get_group_id(0);
  __global const uchar *src = in + (long)in_off + offs(g, rdim, rshape, rst);
  __global uchar *dst = out + out_off + g * len * ESIZE;
  AT mean = 0;
  if (!rms) {
    AT s = 0;
    for (ulong r = lid; r < len; r += lsz) {
      VT v = LDV(src + offs(r, ndim, nshape, nxs), al);
      if (cache) row[r] = v;
      s += v;
    }
    GROUP_TREE(SUMN, scratch, s)
    mean = s / (AT)len;
  }
  AT q = 0;
  for (ulong r = lid; r < len; r += lsz) {
    VT v = (cache && !rms) ? row[r] : LDV(src + offs(r, ndim, nshape, nxs), al);
    if (cache && rms) row[r] = v;
    AT d = (AT)v - mean;
    q += d * d;
  }
  GROUP_TREE(SUMN, scratch, q)
  const AT rstd = (AT)1 / sqrt(q / (AT)len + eps);
  for (ulong r = lid; r < len; r += lsz) {
    VT v = cache ? row[r] : LDV(src + offs(r, ndim, nshape, nxs), al);
    VT yv = (VT)(((AT)v - mean) * rstd);
    if (has_w) yv *= LDV(w + (long)w_off + offs(r, ndim, nshape, nws), al);
    if (has_b) yv += LDV(b + (long)b_off + offs(r, ndim, nshape, nbs), al);
    STV(dst + r * ESIZE, oal, yv);
  }
}

/* Contiguous rows (k_softmax_rows, k_norm_rows): x's rows, the output's and weight/bias have
 * unit element stride and aligned offsets. Built with -DVW=<vector width> (a power of two, 2..16);
 * each work-item walks whole VW-vectors lid, lid + lsz, ... with vload/vstore and vector
 * arithmetic (explicit vectors: CPU implementations need no cross-work-item vectorization, GPUs
 * read neighbouring vectors), then the row's last len % VW elements one by one; one tree per
 * statistic. A row start only needs element alignment (vloadn). */
#ifdef VW
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if DT == 9 /* VT and AT by name (token pasting needs the name, not the typedef) */
#define VT_NAME double
#else
#define VT_NAME float
#endif
#ifdef HAS_FP64
#define AT_NAME double
#else
#define AT_NAME VT_NAME
#endif
#define VV CAT(VT_NAME, VW) /* VT vector */
#define AV CAT(AT_NAME, VW) /* AT vector */
#define TO_AV CAT(convert_, AV)
#define TO_VV CAT(convert_, VV)
#if DT == 6
#define LDVEC(p) CAT(vload_half, VW)(0, (__global const half *)(p))
#define STVEC(p, v) CAT(CAT(vstore_half, VW), _rte)(v, 0, (__global half *)(p))
#elif DT == 7
#define UV CAT(uint, VW)
#define LDVEC(p)                                                                               \
  CAT(as_float, VW)(CAT(convert_uint, VW)(CAT(vload, VW)(0, (__global const ushort *)(p))) << 16)
static inline void stvec_bf16(__global uchar *p, VV f) { /* fbf16, lane-wise */
  UV x = CAT(as_uint, VW)(f);
  UV r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  r = ((x & 0x7fffffffu) > 0x7f800000u) ? ((x >> 16) | 0x40u) : r;
  CAT(vstore, VW)(CAT(convert_ushort, VW)(r), 0, (__global ushort *)p);
}
#define STVEC(p, v) stvec_bf16(p, v)
#else
#define LDVEC(p) CAT(vload, VW)(0, (__global const VT *)(p))
#define STVEC(p, v) CAT(vstore, VW)(v, 0, (__global VT *)(p))
#endif
#if DT == 9
#define EXPVV(v) exp(v)
#else
OCL_DEF_EXPF(ocl_expfv, VV, CAT(uint, VW), CAT(int, VW))
#define EXPVV(v) ocl_expfv(v)
#endif
/* Lane k of a vector; the lanes of v combined with OP in a fixed order. */
#define LANE(T, v, k) (((private T *)&(v))[k])
#define HREDUCE(OP, T, v, acc)                                                                 \
  for (int k_ = 0; k_ < VW; ++k_) acc = OP(acc, LANE(T, v, k_));

/* Row g of the contiguous-row kernels; a work-group takes rows g0 .. g0 + rpg - 1 (several
 * rows per work-group on CPU devices: PoCL's cost per work-group is about that of a row of
 * 1000 elements). */
#define ROWS_LOOP(call)                                                                        \
  for (ulong g = get_group_id(0) * rpg, e_ = min(g + rpg, nrows); g < e_; ++g) call;

static inline void softmax_row(ulong g, __global uchar *out, ulong out_off,
                               __global const uchar *in, ulong in_off, ulong len, int rdim,
                               long16 rshape, long16 rst, int logsm, __local VT *scratch,
                               __local AT *ascratch) {
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong nv = len / VW;
  __global const uchar *src = in + (long)in_off + offs(g, rdim, rshape, rst);
  __global uchar *dst = out + out_off + g * len * ESIZE;
  /* softmax in float32/float64 keeps exp(x - m) in the output (one exp per element); the half
   * types recompute it rather than round it twice. x and the output may be the same buffer:
   * the stash writes each element after its own last read of x. */
  const int stash = (ESIZE == sizeof(VT)) & !logsm;
  VV mv = (VV)(-INFINITY);
  for (ulong v = lid; v < nv; v += lsz) mv = MAXN(mv, LDVEC(src + v * (VW * ESIZE)));
  VT m = -INFINITY;
  HREDUCE(MAXN, VT, mv, m)
  for (ulong r = nv * VW + lid; r < len; r += lsz) m = MAXN(m, LDV(src + r * ESIZE, 1));
  GROUP_TREE(MAXN, scratch, m)
  AV sv = (AV)(0);
  for (ulong v = lid; v < nv; v += lsz) {
    VV e = EXPVV(LDVEC(src + v * (VW * ESIZE)) - m);
    if (stash) STVEC(dst + v * (VW * ESIZE), e); /* rescaled in place below */
    sv += TO_AV(e);
  }
  AT s = 0;
  HREDUCE(SUMN, AT, sv, s)
  for (ulong r = nv * VW + lid; r < len; r += lsz) s += EXPV(LDV(src + r * ESIZE, 1) - m);
  GROUP_TREE(SUMN, ascratch, s)
  /* log_softmax: y = x - (m + log s); softmax: y = exp(x - m) * (1 / s) */
  const VT a = logsm ? (VT)0 : (VT)((AT)1 / s);
  const VT c = logsm ? (VT)log(s) : (VT)0;
  for (ulong v = lid; v < nv; v += lsz) {
    __global uchar *p = dst + v * (VW * ESIZE);
    if (stash) {
      STVEC(p, LDVEC(p) * a);
    } else {
      VV d = LDVEC(src + v * (VW * ESIZE)) - m;
      STVEC(p, logsm ? d - c : EXPVV(d) * a);
    }
  }
  for (ulong r = nv * VW + lid; r < len; r += lsz) {
    VT d = LDV(src + r * ESIZE, 1) - m;
    STV(dst + r * ESIZE, 1, logsm ? d - c : EXPV(d) * a);
  }
}

__kernel void k_softmax_rows(__global uchar *out, ulong out_off, __global const uchar *in,
                             ulong in_off, ulong len, int rdim, long16 rshape, long16 rst,
                             int logsm, ulong nrows, ulong rpg, __local VT *scratch,
                             __local AT *ascratch) {
  ROWS_LOOP(softmax_row(g, out, out_off, in, in_off, len, rdim, rshape, rst, logsm, scratch,
                        ascratch))
}

static inline void norm_row(ulong g, __global uchar *out, ulong out_off,
                            __global const uchar *in, ulong in_off, ulong len, int rdim,
                            long16 rshape, long16 rst, __global const uchar *w, ulong w_off,
                            __global const uchar *b, ulong b_off, int has_w, int has_b, int rms,
                            AT eps, __local AT *scratch) {
  const uint lid = get_local_id(0), lsz = get_local_size(0);
  const ulong nv = len / VW;
  __global const uchar *src = in + (long)in_off + offs(g, rdim, rshape, rst);
  __global uchar *dst = out + out_off + g * len * ESIZE;
  w += w_off;
  b += b_off;
  AT mean = 0;
  if (!rms) {
    AV sv = (AV)(0);
    for (ulong v = lid; v < nv; v += lsz) sv += TO_AV(LDVEC(src + v * (VW * ESIZE)));
    AT s = 0;
    HREDUCE(SUMN, AT, sv, s)
    for (ulong r = nv * VW + lid; r < len; r += lsz) s += LDV(src + r * ESIZE, 1);
    GROUP_TREE(SUMN, scratch, s)
    mean = s / (AT)len;
  }
  AV qv = (AV)(0);
  for (ulong v = lid; v < nv; v += lsz) {
    AV d = TO_AV(LDVEC(src + v * (VW * ESIZE))) - mean;
    qv += d * d;
  }
  AT q = 0;
  HREDUCE(SUMN, AT, qv, q)
  for (ulong r = nv * VW + lid; r < len; r += lsz) {
    AT d = (AT)LDV(src + r * ESIZE, 1) - mean;
    q += d * d;
  }
  GROUP_TREE(SUMN, scratch, q)
  const AT rstd = (AT)1 / sqrt(q / (AT)len + eps);
  for (ulong v = lid; v < nv; v += lsz) {
    const ulong o = v * (VW * ESIZE);
    VV y = TO_VV((TO_AV(LDVEC(src + o)) - mean) * rstd);
    if (has_w) y *= LDVEC(w + o);
    if (has_b) y += LDVEC(b + o);
    STVEC(dst + o, y);
  }
  for (ulong r = nv * VW + lid; r < len; r += lsz) {
    VT y = (VT)(((AT)LDV(src + r * ESIZE, 1) - mean) * rstd);
    if (has_w) y *= LDV(w + r * ESIZE, 1);
    if (has_b) y += LDV(b + r * ESIZE, 1);
    STV(dst + r * ESIZE, 1, y);
  }
}

__kernel void k_norm_rows(__global uchar *out, ulong out_off, __global const uchar *in,
                          ulong in_off, ulong len, int rdim, long16 rshape, long16 rst,
                          __global const uchar *w, ulong w_off, __global const uchar *b,
                          ulong b_off, int has_w, int has_b, int rms, AT eps, ulong nrows,
                          ulong rpg, __local AT *scratch) {
  ROWS_LOOP(norm_row(g, out, out_off, in, in_off, len, rdim, rshape, rst, w, w_off, b, b_off,
                     has_w, has_b, rms, eps, scratch))
}

/* k_softmax_cols: softmax/log_softmax along an axis with unit-stride inner elements (a
 * non-last axis of a contiguous tensor): a work-item owns VW neighbouring columns (one per
 * vector lane; the last block of a row of columns one column at a time) and walks the axis
 * with the axis stride; no trees. SM_DEF_COLS(name, V, A, LD, ST, EXPF, TOA, TOV) defines the
 * walk for value vectors V, statistic vectors A. */
#define SM_DEF_COLS(NAME, V, A, LD, ST, EXPF, TOA, TOV)                                        \
  static inline void NAME(__global const uchar *src, long ast, __global uchar *dst,           \
                          ulong ostep, ulong len, int logsm) {                                 \
    const int stash = (ESIZE == sizeof(VT)) & !logsm;                                          \
    V m = (V)(-INFINITY);                                                                      \
    for (ulong r = 0; r < len; ++r) m = MAXN(m, LD(src + (long)r * ast));                      \
    A s = (A)(0);                                                                              \
    for (ulong r = 0; r < len; ++r) {                                                          \
      V e = EXPF(LD(src + (long)r * ast) - m);                                                 \
      if (stash) ST(dst + r * ostep, e);                                                       \
      s += TOA(e);                                                                             \
    }                                                                                          \
    const V a = TOV((A)(1) / s), c = TOV(log(s));                                              \
    for (ulong r = 0; r < len; ++r) {                                                          \
      __global uchar *p = dst + r * ostep;                                                     \
      V d = LD(src + (long)r * ast) - m;                                                       \
      ST(p, stash ? LD(p) * a : logsm ? d - c : EXPF(d) * a);                                  \
    }                                                                                          \
  }
#define LDV1(p) LDV(p, 1)
#define STV1(p, v) STV(p, 1, v)
#define TO_AT(v) ((AT)(v))
#define TO_VT(v) ((VT)(v))
SM_DEF_COLS(sm_cols_v, VV, AV, LDVEC, STVEC, EXPVV, TO_AV, TO_VV)
SM_DEF_COLS(sm_cols_1, VT, AT, LDV1, STV1, EXPV, TO_AT, TO_VT)

__kernel void k_softmax_cols(__global uchar *out, ulong out_off, __global const uchar *in,
                             ulong in_off, ulong len, long ast, ulong inner, ulong blocks,
                             int odim, long16 oshape, long16 ost, int logsm) {
  const ulong g = get_global_id(0), nb = (inner + VW - 1) / VW;
  if (g >= blocks) return; /* the ND-range is rounded up to whole work-groups */
  const ulong o = g / nb, i0 = (g % nb) * VW;
  __global const uchar *src = in + (long)in_off + offs(o, odim, oshape, ost) + i0 * ESIZE;
  __global uchar *dst = out + out_off + (o * len * inner + i0) * ESIZE;
  if (i0 + VW <= inner) {
    sm_cols_v(src, ast, dst, inner * ESIZE, len, logsm);
    return;
  }
  for (ulong i = 0; i < inner - i0; ++i)
    sm_cols_1(src + i * ESIZE, ast, dst + i * ESIZE, inner * ESIZE, len, logsm);
}
#endif
