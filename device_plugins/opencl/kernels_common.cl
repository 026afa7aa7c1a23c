/* hwport OpenCL plugin — helpers shared by the index, argsort and random programs (embedded
 * after elementwise_prelude.cl by embed_cl.cmake; not compiled alone). The program's dtype is
 * selected by -DDT_<name>=1 as for the elementwise programs. */

/* The raw storage type of the program's dtype, and a value of it from the low bytes of a ulong
 * (fill values computed by the host). */
#if defined(DT_bool_) || defined(DT_uint8)
typedef uchar RAW;
#define RAW_FROM_BITS(b) ((uchar)(b))
#elif defined(DT_int8)
typedef char RAW;
#define RAW_FROM_BITS(b) ((char)(b))
#elif defined(DT_int16)
typedef short RAW;
#define RAW_FROM_BITS(b) ((short)(b))
#elif defined(DT_float16) || defined(DT_bfloat16)
typedef ushort RAW;
#define RAW_FROM_BITS(b) ((ushort)(b))
#elif defined(DT_int32)
typedef int RAW;
#define RAW_FROM_BITS(b) ((int)(b))
#elif defined(DT_int64)
typedef long RAW;
#define RAW_FROM_BITS(b) ((long)(b))
#elif defined(DT_float32)
typedef float RAW;
#define RAW_FROM_BITS(b) as_float((uint)(b))
#elif defined(DT_float64)
typedef double RAW;
#define RAW_FROM_BITS(b) as_double((ulong)(b))
#endif
#define ITEM ((ulong)sizeof(RAW))

/* Byte offsets of flat element i of `nd` dims (row-major over sh) in two views (byte strides
 * s1, s2; any sign, 0 for broadcast). */
static inline void nd_off2(ulong i, int nd, const long *sh, const long *s1, const long *s2,
                           long *o1, long *o2) {
  long a = 0, b = 0;
  for (int d = nd - 1; d >= 0; --d) {
    ulong n = (ulong)sh[d];
    long c = (long)(i % n);
    i /= n;
    a += c * s1[d];
    b += c * s2[d];
  }
  *o1 += a;
  *o2 += b;
}

#ifdef HAS_FP64
/* Stores a double as the program's (floating) dtype, rounded once to nearest even. */
static inline void st_dbl(__global uchar *p, int al, double v) {
#if defined(DT_float16)
  str_u16(p, al, f64_to_f16(v));
#elif defined(DT_bfloat16)
  str_u16(p, al, f32_to_bf16(rto_from_double(v)));
#elif defined(DT_float32)
  str_f32(p, al, (float)v);
#elif defined(DT_float64)
  str_f64(p, al, v);
#endif
}
#endif
