/* hwport OpenCL plugin — concat, pad, gather / take_along_axis, scatter and arange (one program
 * per dtype, after elementwise_prelude.cl and kernels_common.cl; see kernels_index.c). Shapes
 * and byte strides come as long16 (<= 16 dims); `al` says every offset and stride of the data
 * views is a multiple of the itemsize (else elements move byte by byte). */

#define UNPACK(v, a) long a[16]; vstore16(v, 0, a)

/* out view <- in view, same shape (concat: one launch per input into its slice; scatter: x). */
__kernel void k_copy(__global uchar *out, ulong out_off, long16 ost, __global const uchar *in,
                     ulong in_off, long16 ist, long16 shape, int nd, ulong n, int al) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  UNPACK(shape, sh); UNPACK(ost, so); UNPACK(ist, si);
  long po = (long)out_off, pi = (long)in_off;
  nd_off2(i, nd, sh, so, si, &po, &pi);
  STRAW(out + po, al, LDRAW(in + pi, al));
}

/* Contiguous out: x where the position minus `before` lies inside x, else the fill value. */
__kernel void k_pad(__global uchar *out, ulong out_off, ulong n, int nd, long16 oshape,
                    __global const uchar *x, ulong x_off, long16 xshape, long16 xst,
                    long16 before, ulong bits, int al) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  UNPACK(oshape, sh); UNPACK(xshape, xs); UNPACK(xst, st); UNPACK(before, bf);
  long px = (long)x_off;
  int inside = 1;
  ulong r = i;
  for (int d = nd - 1; d >= 0; --d) {
    long c = (long)(r % (ulong)sh[d]) - bf[d];
    r /= (ulong)sh[d];
    inside &= (c >= 0) & (c < xs[d]);
    px += c * st[d];
  }
  STRAW(out + out_off + i * ITEM, al, inside ? LDRAW(x + px, al) : RAW_FROM_BITS(bits));
}

/* take_along_axis (and gather: an index view with stride 0 off the axis). Contiguous out;
 * x strides are 0 on broadcast dims and unused along `axis`. An index outside [0, limit) writes
 * nothing and is reported through flag: flag[0] = 1 by the first such work-item, which stores
 * the value in flag[2] (low word) and flag[3]. al: bit 0 data, bit 1 index aligned. */
__kernel void k_take(__global uchar *out, ulong out_off, ulong n, int nd, long16 oshape,
                     __global const uchar *x, ulong x_off, long16 xst, __global const uchar *idx,
                     ulong idx_off, long16 ist, int idx64, int axis, long limit, int al,
                     __global int *flag) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  UNPACK(oshape, sh); UNPACK(xst, sx); UNPACK(ist, si);
  long ax_st = sx[axis];
  sx[axis] = 0;
  long px = (long)x_off, pi = (long)idx_off;
  nd_off2(i, nd, sh, sx, si, &px, &pi);
  long j = idx64 ? ldr_i64(idx + pi, al & 2) : (long)ldr_i32(idx + pi, al & 2);
  if (j < 0 || j >= limit) {
    if (atomic_cmpxchg(flag, 0, 1) == 0) {
      flag[2] = (int)(uint)((ulong)j & 0xffffffffUL);
      flag[3] = (int)(uint)((ulong)j >> 32);
    }
    return;
  }
  STRAW(out + out_off + i * ITEM, al & 1, LDRAW(x + px + j * ax_st, al & 1));
}

/* scatter's accumulator (reduce add): x, then the updates in index order, rounded once. */
#if defined(IS_BOOL)
typedef int ACC;
#define ACC_ADD(a, v) ((a) | ((v) != 0))
#define ACC_ST(p, al, a) ST(p, al, a)
#elif !defined(IS_FLOAT)
typedef long ACC;
#define ACC_ADD(a, v) ((long)((ulong)(a) + (ulong)(long)(v)))
#define ACC_ST(p, al, a) ST(p, al, a)
#elif defined(HAS_FP64)
typedef double ACC;
#define ACC_ADD(a, v) ((a) + (double)(v))
#define ACC_ST(p, al, a) st_dbl(p, al, a)
#else /* no double on the device: float accumulation */
typedef float ACC;
#define ACC_ADD(a, v) ((a) + (v))
#define ACC_ST(p, al, a) ST(p, al, a)
#endif

/* out (a copy of x already) gets the update rows along `axis`, one work-item per (group,
 * position off the axis). grp holds the host's grouping of the index: G distinct targets
 * (ascending), G + 1 starts, then the update rows of each group in index order. Assign: the
 * group's last row wins; add: x plus every row of the group, in order. shape1 is the updates'
 * shape with dim `axis` set to 1 (m positions). */
__kernel void k_scatter(__global uchar *out, ulong out_off, long16 ost,
                        __global const uchar *upd, ulong upd_off, long16 ust, long16 shape1,
                        int nd, int axis, ulong m, ulong groups, __global const long *grp,
                        int add, int al) {
  ulong gid = get_global_id(0);
  if (gid >= m * groups) return;
  ulong g = gid / m, e = gid % m;
  UNPACK(shape1, sh); UNPACK(ost, so); UNPACK(ust, su);
  long po = (long)out_off, pu = (long)upd_off;
  nd_off2(e, nd, sh, so, su, &po, &pu);
  __global const long *start = grp + groups, *rows = grp + 2 * groups + 1;
  __global uchar *dst = out + po + grp[g] * so[axis];
  long s0 = start[g], s1 = start[g + 1];
  if (!add) {
    STRAW(dst, al, LDRAW(upd + pu + rows[s1 - 1] * su[axis], al));
    return;
  }
  ACC acc = (ACC)LD(dst, al);
  for (long s = s0; s < s1; ++s) acc = ACC_ADD(acc, LD(upd + pu + rows[s] * su[axis], al));
  ACC_ST(dst, al, acc);
}

/* out[i] = start + i * step: wrapping int64 for integer dtypes, double rounded once for floats
 * (registered only with HAS_FP64; the doubles come as their bits). */
__kernel void k_arange(__global uchar *out, ulong out_off, ulong n, long istart, long istep,
                       ulong fstart, ulong fstep, int al) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  __global uchar *p = out + out_off + i * ITEM;
#if defined(IS_FLOAT)
#ifdef HAS_FP64
  double prod = (double)i * as_double(fstep);
  st_dbl(p, al, as_double(fstart) + prod);
#endif
#else
  ST(p, al, (long)((ulong)istart + i * (ulong)istep));
#endif
}
