/* hwport OpenCL plugin — the prelude of the argmax/argmin, scan, matmul and fused nn programs
 * (embed_cl.cmake puts it ahead of each family's source). Built with -DDT=<HWP_DType code of the
 * input> and -DHAS_FP64=1 on devices with cl_khr_fp64.
 *
 * Elements are addressed through byte pointers; `al` says whether the view's byte offset is a
 * multiple of the itemsize (when not, elements move byte by byte). Per DT:
 *   VT          the value type: long for bool/integers, float for float16/bfloat16/float32,
 *               double for float64
 *   LDV(p, al)  the element at p as VT
 *   STV(p, al, v)  stores VT v as DT (integers truncate, half types round to nearest even)
 *   ESIZE       the itemsize; ISFLOAT; ISNANV(v)
 * and GROUP_TREE, the work-group combination of one value per work-item in local memory. */
#ifdef HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define DEF_LDB(T)                                                                             \
  static inline T ldb_##T(__global const uchar *p) {                                           \
    T v;                                                                                       \
    uchar *q = (uchar *)&v;                                                                    \
    for (int k = 0; k < (int)sizeof(T); ++k) q[k] = p[k];                                      \
    return v;                                                                                  \
  }                                                                                            \
  static inline void stb_##T(__global uchar *p, T v) {                                         \
    uchar *q = (uchar *)&v;                                                                    \
    for (int k = 0; k < (int)sizeof(T); ++k) p[k] = q[k];                                      \
  }
DEF_LDB(short)
DEF_LDB(ushort)
DEF_LDB(int)
DEF_LDB(long)
DEF_LDB(float)
#ifdef HAS_FP64
DEF_LDB(double)
#endif
#define LDA(T, p, al) ((al) ? *(__global const T *)(p) : ldb_##T(p))
#define STA(T, p, al, v)                                                                       \
  do {                                                                                         \
    if (al)                                                                                    \
      *(__global T *)(p) = (v);                                                                \
    else                                                                                       \
      stb_##T((p), (v));                                                                       \
  } while (0)

static inline float f16f(ushort h) { return vload_half(0, (const half *)&h); }
static inline ushort ff16(float f) {
  ushort h;
  vstore_half_rte(f, 0, (half *)&h);
  return h;
}
static inline float bf16f(ushort b) { return as_float((uint)b << 16); }
static inline ushort fbf16(float f) {
  uint x = as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (ushort)(x >> 16);
}

#if DT == 0
typedef long VT;
#define ESIZE 1
#define LDV(p, al) ((long)((p)[0] != 0))
#define STV(p, al, v) ((p)[0] = (uchar)((v) != 0))
#elif DT == 1
typedef long VT;
#define ESIZE 1
#define LDV(p, al) ((long)(char)(p)[0])
#define STV(p, al, v) ((p)[0] = (uchar)(v))
#elif DT == 2
typedef long VT;
#define ESIZE 1
#define LDV(p, al) ((long)(p)[0])
#define STV(p, al, v) ((p)[0] = (uchar)(v))
#elif DT == 3
typedef long VT;
#define ESIZE 2
#define LDV(p, al) ((long)LDA(short, p, al))
#define STV(p, al, v) STA(short, p, al, (short)(v))
#elif DT == 4
typedef long VT;
#define ESIZE 4
#define LDV(p, al) ((long)LDA(int, p, al))
#define STV(p, al, v) STA(int, p, al, (int)(v))
#elif DT == 5
typedef long VT;
#define ESIZE 8
#define LDV(p, al) LDA(long, p, al)
#define STV(p, al, v) STA(long, p, al, (long)(v))
#elif DT == 6
typedef float VT;
#define ESIZE 2
#define LDV(p, al) f16f(LDA(ushort, p, al))
#define STV(p, al, v) STA(ushort, p, al, ff16((float)(v)))
#elif DT == 7
typedef float VT;
#define ESIZE 2
#define LDV(p, al) bf16f(LDA(ushort, p, al))
#define STV(p, al, v) STA(ushort, p, al, fbf16((float)(v)))
#elif DT == 8
typedef float VT;
#define ESIZE 4
#define LDV(p, al) LDA(float, p, al)
#define STV(p, al, v) STA(float, p, al, (float)(v))
#else
typedef double VT;
#define ESIZE 8
#define LDV(p, al) LDA(double, p, al)
#define STV(p, al, v) STA(double, p, al, (double)(v))
#endif

#if DT >= 6
#define ISFLOAT 1
#define ISNANV(v) isnan(v)
#else
#define ISFLOAT 0
#define ISNANV(v) 0
#endif

/* Lane k of a long16; byte offset of flat index i over nd collapsed dims (C order). */
static inline long pick(long16 v, int k) { return ((private long *)&v)[k]; }
static inline long offs(ulong i, int nd, long16 shape, long16 st) {
  if (nd == 1) return (long)i * st.s0;
  long off = 0;
  for (int k = nd - 1; k >= 0; --k) {
    long n = pick(shape, k);
    off += (long)(i % (ulong)n) * pick(st, k);
    i /= (ulong)n;
  }
  return off;
}

/* Combines every work-item's v with OP; all get the result. Starts with a barrier so the
 * scratch can be reused right after an earlier tree. */
#define GROUP_TREE(OP, scratch, v)                                                             \
  {                                                                                            \
    uint lid_ = get_local_id(0);                                                               \
    barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    scratch[lid_] = v;                                                                         \
    barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    for (uint s_ = get_local_size(0) >> 1; s_ > 0; s_ >>= 1) {                                 \
      if (lid_ < s_) scratch[lid_] = OP(scratch[lid_], scratch[lid_ + s_]);                    \
      barrier(CLK_LOCAL_MEM_FENCE);                                                            \
    }                                                                                          \
    v = scratch[0];                                                                            \
  }
