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

/* k_matmul_rows: float32/float64 with unit-stride rows of y (any strides for x), for CPU
 * devices, built with -DMR=<rows> -DNV=<vectors per row> -DMVW=<vector width> [-DKC=<k chunk>].
 * A work-item computes an MR x NR block (NR = NV * MVW) in registers, with no local memory:
 * per k it loads the block's NV vectors of y's row k and multiplies-adds MR broadcast
 * elements of x's column k into MR * NV vector accumulators (explicit vectors and unrolled
 * loops: PoCL keeps the accumulators in registers only when the i/j loops are unrolled, about
 * 2x). Work-items along dim 0 walk down M (neighbours share y's K x NR panel in cache), dim 1
 * along N, dim 2 the batch. Rows past M re-read row M - 1 and are not stored. */
#if defined(MR) && (DT == 8 || DT == 9)
#define MCAT_(a, b) a##b
#define MCAT(a, b) MCAT_(a, b)
#if DT == 9
#define MBASE double
#else
#define MBASE float
#endif
/* Vector type, load and store by width; width 1 is the scalar. */
#define MVEC_(w) MCAT(MBASE, w)
#define MVEC_1 MBASE
#define MLD_(w) MCAT(vload, w)
#define MLD_1(i, p) ((p)[i])
#define MST_(w) MCAT(vstore, w)
#define MST_1(v, i, p) ((p)[i] = (v))
#define NR (NV * MVW)
#ifndef KC
#define KC 128
#endif
#define UNROLL _Pragma("unroll")

/* The rows x (W * width) block at ob from x's rows xr and y's columns at yb, with W vectors
 * of type T (load LD, store ST): x's block is copied k-major for KC steps of k at a time (one
 * pointer in the inner loop). */
#define MM_DEF_BLOCK(NAME, W, T, LD, ST)                                                       \
  static inline void NAME(__global const uchar *const *xr, long sxk,                          \
                          __global const uchar *yb, long syk, long K, __global VT *ob, long N, \
                          int rows) {                                                          \
    T acc[MR][W];                                                                              \
    UNROLL for (int i = 0; i < MR; ++i) UNROLL for (int j = 0; j < W; ++j) acc[i][j] = 0;     \
    VT ap[KC * MR];                                                                            \
    for (long k0 = 0; k0 < K; k0 += KC) {                                                      \
      const int kc = (int)min((long)KC, K - k0);                                               \
      UNROLL for (int i = 0; i < MR; ++i) for (int kk = 0; kk < kc; ++kk) ap[kk * MR + i] =   \
          *(__global const VT *)(xr[i] + (k0 + kk) * sxk);                                     \
      __global const uchar *yk = yb + k0 * syk;                                                \
      for (int kk = 0; kk < kc; ++kk, yk += syk) {                                             \
        T c[W];                                                                                \
        UNROLL for (int j = 0; j < W; ++j) c[j] = LD(j, (__global const VT *)yk);             \
        UNROLL for (int i = 0; i < MR; ++i) UNROLL for (int j = 0; j < W; ++j) acc[i][j] +=   \
            ap[kk * MR + i] * c[j]; /* contracts to fma */                                     \
      }                                                                                        \
    }                                                                                          \
    UNROLL for (int i = 0; i < MR; ++i) if (i < rows) UNROLL for (int j = 0; j < W; ++j)      \
        ST(acc[i][j], j, ob + i * N);                                                          \
  }
MM_DEF_BLOCK(mm_block, NV, MVEC_(MVW), MLD_(MVW), MST_(MVW))
MM_DEF_BLOCK(mm_block_v, 1, MVEC_(MVW), MLD_(MVW), MST_(MVW))
MM_DEF_BLOCK(mm_block_8, 1, MVEC_(8), MLD_(8), MST_(8))
MM_DEF_BLOCK(mm_block_4, 1, MVEC_(4), MLD_(4), MST_(4))
MM_DEF_BLOCK(mm_block_2, 1, MVEC_(2), MLD_(2), MST_(2))
MM_DEF_BLOCK(mm_block_1, 1, MVEC_1, MLD_1, MST_1)

/* Blocks cut by N: whole vectors one at a time, then the last N % MVW columns as vectors of
 * 8, 4, 2 and 1. */
__kernel void k_matmul_rows(__global uchar *out, ulong out_off, __global const uchar *x,
                            ulong x_off, __global const uchar *y, ulong y_off, long M, long N,
                            long K, long sxm, long sxk, long syk, int bdim, long16 bshape,
                            long16 bxs, long16 bys) {
  const long m0 = (long)get_global_id(0) * MR, n0 = (long)get_global_id(1) * NR;
  const ulong b = get_global_id(2);
  if (m0 >= M || n0 >= N) return; /* the ND-range is rounded up to whole work-groups */
  __global const uchar *xb = x + x_off + offs(b, bdim, bshape, bxs);
  __global const uchar *yb = y + y_off + offs(b, bdim, bshape, bys) + n0 * ESIZE;
  __global VT *ob = (__global VT *)(out + out_off) + b * (ulong)M * (ulong)N + m0 * N + n0;
  __global const uchar *xr[MR];
  UNROLL for (int i = 0; i < MR; ++i) xr[i] = xb + min(m0 + i, M - 1) * sxm;
  const int rows = (int)min((long)MR, M - m0);
  if (n0 + NR <= N) {
    mm_block(xr, sxk, yb, syk, K, ob, N, rows);
    return;
  }
  const long nc = N - n0;
  long n = 0;
  for (; n + MVW <= nc; n += MVW)
    mm_block_v(xr, sxk, yb + n * ESIZE, syk, K, ob + n, N, rows);
#define MM_PIECE(w)                                                                            \
  if (w < MVW && (nc - n) >= w) {                                                              \
    MCAT(mm_block_, w)(xr, sxk, yb + n * ESIZE, syk, K, ob + n, N, rows);                     \
    n += w;                                                                                    \
  }
  MM_PIECE(8) MM_PIECE(4) MM_PIECE(2) MM_PIECE(1)
}
#endif
