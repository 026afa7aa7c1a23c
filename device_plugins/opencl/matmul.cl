/* matmul (k_matmul); after kernels_prelude.cl. Built with -DTS=<work-group side>,
 * -DWPT=<outputs per work-item per side> and, for CPU devices, -DCOLS_CONTIG=1.
 *
 * out[b] (M x N, contiguous) = x[b] (M x K) @ y[b] (K x N), x and y strided (byte strides,
 * batch offsets from the collapsed batch dims). A TS x TS work-group computes a BM x BM block
 * (BM = TS * WPT) of one batch's output: per step of TS along K it stages a BM x TS block of x
 * and a TS x BM block of y in local memory (out-of-range elements as 0), then each work-item
 * accumulates its WPT x WPT outputs: rows ty + i * TS; columns tx + j * TS (neighbouring
 * work-items read neighbouring elements: coalesced, no bank conflicts on GPUs) or, with
 * COLS_CONTIG, tx * WPT + j (a work-item's own columns are contiguous: CPU implementations
 * run a work-item's loop as vector code). Accumulators:
 * float for float16/bfloat16/float32, double for float64, uint for int8..int32 and ulong for
 * int64 (wrap-around); the result is stored once as DT. */
#ifndef TS
#define TS 16
#endif
#ifndef WPT
#define WPT 4
#endif
#define BM (TS * WPT)
#ifdef COLS_CONTIG
#define COL(tx, j) ((tx) * WPT + (j))
#else
#define COL(tx, j) ((tx) + (j) * TS)
#endif

#if DT == 5
typedef ulong ACC;
#define LDM(p, al) ((ulong)LDV(p, al))
#elif DT < 6
typedef uint ACC;
#define LDM(p, al) ((uint)LDV(p, al))
#else
typedef VT ACC;
#define LDM(p, al) LDV(p, al)
#endif

__kernel __attribute__((reqd_work_group_size(TS, TS, 1))) void k_matmul(
    __global uchar *out, ulong out_off, int oal, __global const uchar *x, ulong x_off,
    __global const uchar *y, ulong y_off, int al, long M, long N, long K, long sxm, long sxk,
    long syk, long syn, int bdim, long16 bshape, long16 bxs, long16 bys) {
  __local ACC As[TS][BM];
  __local ACC Bs[TS][BM];
  const int tx = get_local_id(0), ty = get_local_id(1), t = ty * TS + tx;
  const long n0 = (long)get_group_id(0) * BM, m0 = (long)get_group_id(1) * BM;
  const ulong b = get_global_id(2);
  __global const uchar *xb = x + x_off + offs(b, bdim, bshape, bxs);
  __global const uchar *yb = y + y_off + offs(b, bdim, bshape, bys);
  ACC acc[WPT][WPT];
  for (int i = 0; i < WPT; ++i)
    for (int j = 0; j < WPT; ++j) acc[i][j] = 0;
  for (long k0 = 0; k0 < K; k0 += TS) {
    for (int e = t; e < BM * TS; e += TS * TS) {
      int kk = e % TS, mm = e / TS; /* consecutive work-items: consecutive k of a row of x */
      long m = m0 + mm, k = k0 + kk;
      As[kk][mm] = (m < M && k < K) ? LDM(xb + m * sxm + k * sxk, al) : (ACC)0;
      int nn = e % BM, kr = e / BM; /* consecutive n of a row of y */
      long n = n0 + nn, k2 = k0 + kr;
      Bs[kr][nn] = (n < N && k2 < K) ? LDM(yb + k2 * syk + n * syn, al) : (ACC)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < TS; ++kk) {
      ACC a[WPT], c[WPT];
      for (int i = 0; i < WPT; ++i) a[i] = As[kk][ty + i * TS];
      for (int j = 0; j < WPT; ++j) c[j] = Bs[kk][COL(tx, j)];
      for (int i = 0; i < WPT; ++i)
        for (int j = 0; j < WPT; ++j) acc[i][j] += a[i] * c[j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  __global uchar *ob = out + out_off + b * (ulong)M * (ulong)N * ESIZE;
  for (int i = 0; i < WPT; ++i) {
    long m = m0 + ty + i * TS;
    if (m >= M) break;
    for (int j = 0; j < WPT; ++j) {
      long n = n0 + COL(tx, j);
      if (n < N) STV(ob + (m * N + n) * ESIZE, oal, acc[i][j]);
    }
  }
}
