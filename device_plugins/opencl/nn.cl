/* Fused softmax/log_softmax (k_softmax) and layer_norm/rms_norm (k_norm); after
 * kernels_prelude.cl, for the float dtypes (DT 6..9: VT is float, or double for float64).
 *
 * One work-group per row (softmax: an (outer, inner) pair, the row along the axis; norms: the
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
