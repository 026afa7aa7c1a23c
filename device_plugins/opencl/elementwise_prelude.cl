/* hwport OpenCL plugin — the OpenCL C prelude of every generated elementwise program (embedded
 * into ocl_elementwise_gen.h by phi_ops/codegen/gen_opencl_elementwise.py; not compiled alone).
 *
 * The program of dtype D is "#define DT_D 1" + this prelude + D's kernels. Values are loaded
 * from (buffer, byte offset) through uchar pointers (views carry no alignment promise: with
 * aligned == 0 every element moves byte by byte) into a compute type: bool as int 0/1, the
 * integers as themselves, float16/bfloat16/float32 as float, float64 as double. float16 goes
 * through vload_half/vstore_half_rte (no cl_khr_fp16 needed), bfloat16 is the upper half of a
 * float (round to nearest even on store, NaN kept quiet). Integer arithmetic that may overflow
 * is done in ulong and truncated (two's complement wrap-around, as numpy). */
#ifdef HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#pragma OPENCL FP_CONTRACT OFF

/* ---- raw loads/stores at any alignment ------------------------------------------------------ */
#define OCL_RAW_IO(sfx, RAW)                                                                   \
  static inline RAW ldr_##sfx(__global const uchar *p, int al) {                               \
    if (al) return *(__global const RAW *)p;                                                   \
    RAW v;                                                                                     \
    uchar *q = (uchar *)&v;                                                                    \
    for (int k = 0; k < (int)sizeof(RAW); ++k) q[k] = p[k];                                    \
    return v;                                                                                  \
  }                                                                                            \
  static inline void str_##sfx(__global uchar *p, int al, RAW v) {                             \
    if (al) { *(__global RAW *)p = v; return; }                                                \
    uchar *q = (uchar *)&v;                                                                    \
    for (int k = 0; k < (int)sizeof(RAW); ++k) p[k] = q[k];                                    \
  }
OCL_RAW_IO(u8, uchar)
OCL_RAW_IO(i8, char)
OCL_RAW_IO(i16, short)
OCL_RAW_IO(u16, ushort)
OCL_RAW_IO(i32, int)
OCL_RAW_IO(i64, long)
OCL_RAW_IO(f32, float)
#ifdef HAS_FP64
OCL_RAW_IO(f64, double)
#endif

/* ---- float16 / bfloat16 conversions --------------------------------------------------------- */
static inline float f16_to_f32(ushort h) { return vload_half(0, (const half *)&h); }
static inline ushort f32_to_f16(float f) { ushort h; vstore_half_rte(f, 0, (half *)&h); return h; }
static inline float bf16_to_f32(ushort b) { return as_float((uint)b << 16); }
static inline ushort f32_to_bf16(float f) {
  uint x = as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (ushort)(x >> 16);
}
/* long -> float rounded to odd (exact when it fits): a later rounding to 8 or 11 bits is then
 * the single correct rounding of the long. */
static inline float rto_from_long(long v) {
  float f = convert_float_rtz(v);
  long back = (f >= 0x1p63f) ? LONG_MAX : convert_long(f);
  if (back != v) f = as_float(as_uint(f) | 1u);
  return f;
}
#ifdef HAS_FP64
static inline ushort f64_to_f16(double d) { ushort h; vstore_half_rte(d, 0, (half *)&h); return h; }
static inline float rto_from_double(double d) {
  if (isnan(d) || isinf(d)) return (float)d;
  float f = convert_float_rtz(d);
  if ((double)f != d) f = as_float(as_uint(f) | 1u);
  return f;
}
#endif

/* ---- typed loads/stores per dtype: ld_<dt>(p, al) -> compute type, st_<dt>(p, al, value) ----- */
static inline int ld_bool_(__global const uchar *p, int al) { return ldr_u8(p, al) != 0; }
static inline char ld_int8(__global const uchar *p, int al) { return ldr_i8(p, al); }
static inline uchar ld_uint8(__global const uchar *p, int al) { return ldr_u8(p, al); }
static inline short ld_int16(__global const uchar *p, int al) { return ldr_i16(p, al); }
static inline int ld_int32(__global const uchar *p, int al) { return ldr_i32(p, al); }
static inline long ld_int64(__global const uchar *p, int al) { return ldr_i64(p, al); }
static inline float ld_float16(__global const uchar *p, int al) { return f16_to_f32(ldr_u16(p, al)); }
static inline float ld_bfloat16(__global const uchar *p, int al) { return bf16_to_f32(ldr_u16(p, al)); }
static inline float ld_float32(__global const uchar *p, int al) { return ldr_f32(p, al); }
#ifdef HAS_FP64
static inline double ld_float64(__global const uchar *p, int al) { return ldr_f64(p, al); }
#endif

/* ---- the compute type of this program's dtype ---------------------------------------------- */
#if defined(DT_bool_)
#define CT int
#define RAWSFX u8
#define LD ld_bool_
#define ST(p, al, v) str_u8(p, al, (uchar)((v) != 0))
#define IS_BOOL 1
#elif defined(DT_int8)
#define CT char
#define RAWSFX i8
#define LD ld_int8
#define ST(p, al, v) str_i8(p, al, (char)(v))
#define IS_SINT 1
#elif defined(DT_uint8)
#define CT uchar
#define RAWSFX u8
#define LD ld_uint8
#define ST(p, al, v) str_u8(p, al, (uchar)(v))
#define IS_UINT 1
#elif defined(DT_int16)
#define CT short
#define RAWSFX i16
#define LD ld_int16
#define ST(p, al, v) str_i16(p, al, (short)(v))
#define IS_SINT 1
#elif defined(DT_int32)
#define CT int
#define RAWSFX i32
#define LD ld_int32
#define ST(p, al, v) str_i32(p, al, (int)(v))
#define IS_SINT 1
#elif defined(DT_int64)
#define CT long
#define RAWSFX i64
#define LD ld_int64
#define ST(p, al, v) str_i64(p, al, (long)(v))
#define IS_SINT 1
#elif defined(DT_float16)
#define CT float
#define RAWSFX u16
#define LD ld_float16
#define ST(p, al, v) str_u16(p, al, f32_to_f16((float)(v)))
#define IS_FLOAT 1
#elif defined(DT_bfloat16)
#define CT float
#define RAWSFX u16
#define LD ld_bfloat16
#define ST(p, al, v) str_u16(p, al, f32_to_bf16((float)(v)))
#define IS_FLOAT 1
#elif defined(DT_float32)
#define CT float
#define RAWSFX f32
#define LD ld_float32
#define ST(p, al, v) str_f32(p, al, (float)(v))
#define IS_FLOAT 1
#elif defined(DT_float64)
#define CT double
#define RAWSFX f64
#define LD ld_float64
#define ST(p, al, v) str_f64(p, al, (double)(v))
#define IS_FLOAT 1
#endif
#define OCL_CAT_(a, b) a##b
#define OCL_CAT(a, b) OCL_CAT_(a, b)
#define LDRAW OCL_CAT(ldr_, RAWSFX)
#define STRAW OCL_CAT(str_, RAWSFX)
#define ST_BOOL(p, al, v) str_u8(p, al, (uchar)((v) != 0))

/* The compute type as native expressions name it (float literals are cast to it), and an
 * attribute slot (the `at` kernel argument, device_plugins/common/native_attrs.h) as a value of
 * it: the bits of a float or a double, else the integer value. */
#ifdef CT
typedef CT ew_ct;
#if defined(DT_float64)
#define EW_ATTR_CT(v) as_double(v)
#elif defined(IS_FLOAT)
#define EW_ATTR_CT(v) as_float((uint)(v))
#else
#define EW_ATTR_CT(v) ((CT)(v))
#endif
#endif

/* ---- the functions ops.yaml's c_expr calls (as ew_<f>) and the semantic overrides ----------- */
#if defined(IS_FLOAT)
static inline CT ew_fabs(CT x) { return fabs(x); }
static inline CT ew_neg(CT x) { return -x; }
static inline CT ew_add(CT x, CT y) { return x + y; }
static inline CT ew_sub(CT x, CT y) { return x - y; }
static inline CT ew_mul(CT x, CT y) { return x * y; }
static inline CT ew_pow(CT x, CT y) { return pow(x, y); }
static inline CT ew_floor(CT x) { return floor(x); }
static inline CT ew_ceil(CT x) { return ceil(x); }
static inline CT ew_nearbyint(CT x) { return rint(x); } /* half to even */
static inline CT ew_sign(CT x) { return x > 0 ? (CT)1 : x < 0 ? (CT)-1 : x == 0 ? (CT)0 : x; }
static inline CT ew_fmax_nan(CT x, CT y) { return ((x >= y) | (x != x)) ? x : y; }
static inline CT ew_fmin_nan(CT x, CT y) { return ((x <= y) | (x != x)) ? x : y; }
static inline int ew_isnan(CT x) { return isnan(x) ? 1 : 0; }
static inline int ew_isinf(CT x) { return isinf(x) ? 1 : 0; }
#ifdef DT_float64
#define ew_exp(x) exp(x)
#else
#define ew_exp(x) ocl_expf(x) /* expf.cl, embedded after this prelude */
#endif
#define ew_expm1(x) expm1(x)
#define ew_log(x) log(x)
#define ew_log1p(x) log1p(x)
#define ew_sqrt(x) sqrt(x)
#define ew_sin(x) sin(x)
#define ew_cos(x) cos(x)
#define ew_tanh(x) tanh(x)
#define ew_erf(x) erf(x)
/* numpy's npy_divmod (see the CPU plugin's elementwise_math.h). */
static inline CT ew_divmod(CT a, CT b, CT *modulus) {
  CT mod = fmod(a, b);
  if (b == 0) { *modulus = mod; return a / b; }
  CT div = (a - mod) / b;
  if (mod != 0) {
    if (isless(b, (CT)0) != isless(mod, (CT)0)) { mod += b; div -= (CT)1; }
  } else {
    mod = copysign((CT)0, b);
  }
  CT fd;
  if (div != 0) {
    fd = floor(div);
    if (isgreater(div - fd, (CT)0.5)) fd += (CT)1;
  } else {
    fd = copysign((CT)0, a / b);
  }
  *modulus = mod;
  return fd;
}
static inline CT ew_floordiv(CT a, CT b) { CT m; return ew_divmod(a, b, &m); }
static inline CT ew_mod(CT a, CT b) { CT m; (void)ew_divmod(a, b, &m); return m; }
static inline CT ew_bitnot(CT x) { return x; } /* not registered for floats */
#else /* bool and the integers */
static inline CT ew_neg(CT x) { return (CT)(0ul - (ulong)(long)x); }
static inline CT ew_add(CT x, CT y) { return (CT)((ulong)(long)x + (ulong)(long)y); }
static inline CT ew_sub(CT x, CT y) { return (CT)((ulong)(long)x - (ulong)(long)y); }
static inline CT ew_mul(CT x, CT y) { return (CT)((ulong)(long)x * (ulong)(long)y); }
static inline CT ew_floor(CT x) { return x; }
static inline CT ew_ceil(CT x) { return x; }
static inline CT ew_nearbyint(CT x) { return x; }
static inline CT ew_fmax_nan(CT x, CT y) { return x >= y ? x : y; }
static inline CT ew_fmin_nan(CT x, CT y) { return x <= y ? x : y; }
static inline int ew_isnan(CT x) { return 0; }
static inline int ew_isinf(CT x) { return 0; }
#if defined(IS_BOOL)
static inline CT ew_fabs(CT x) { return x; }
static inline CT ew_sign(CT x) { return x; }
static inline CT ew_bitnot(CT x) { return !x; }
static inline CT ew_floordiv(CT x, CT y) { return x & y; }
static inline CT ew_mod(CT x, CT y) { return 0; }
static inline CT ew_pow(CT x, CT y) { return x | !y; }
#else
static inline CT ew_bitnot(CT x) { return (CT)~x; }
static inline CT ew_pow(CT b, CT e) {
#if defined(IS_SINT)
  if (e < 0) return b == 1 ? (CT)1 : b == -1 ? (CT)((e & 1) ? -1 : 1) : (CT)0;
#endif
  ulong r = 1, base = (ulong)(long)b;
  for (ulong k = (ulong)(long)e; k != 0; k >>= 1) {
    if (k & 1u) r *= base;
    base *= base;
  }
  return (CT)r;
}
#if defined(IS_SINT)
static inline CT ew_fabs(CT x) { return x < 0 ? ew_neg(x) : x; }
static inline CT ew_sign(CT x) { return (CT)((x > 0) - (x < 0)); }
static inline CT ew_floordiv(CT x, CT y) {
  if (y == 0) return 0;
  if (y == -1) return ew_neg(x);
  CT q = (CT)(x / y), r = (CT)(x % y);
  return (r != 0 && ((r < 0) != (y < 0))) ? (CT)(q - 1) : q;
}
static inline CT ew_mod(CT x, CT y) {
  if (y == 0 || y == -1) return 0;
  CT r = (CT)(x % y);
  return (r != 0 && ((r < 0) != (y < 0))) ? (CT)(r + y) : r;
}
#else
static inline CT ew_fabs(CT x) { return x; }
static inline CT ew_sign(CT x) { return (CT)(x > 0); }
static inline CT ew_floordiv(CT x, CT y) { return y == 0 ? (CT)0 : (CT)(x / y); }
static inline CT ew_mod(CT x, CT y) { return y == 0 ? (CT)0 : (CT)(x % y); }
#endif
#endif
#endif

/* ---- cast: this program's compute value to every target dtype ------------------------------ */
#if defined(IS_FLOAT)
#define TO_INT_SAT(T, x) convert_##T##_sat_rtz(x) /* truncation, NaN -> 0, saturating */
#else
#define TO_INT_SAT(T, x) ((T)(x))                  /* integer -> integer: wrap-around */
#endif
static inline void cast_store(__global uchar *p, int al, int to, CT x) {
  switch (to) {
  case 0: str_u8(p, al, (uchar)(x != 0)); break;
  case 1: str_i8(p, al, TO_INT_SAT(char, x)); break;
  case 2: str_u8(p, al, TO_INT_SAT(uchar, x)); break;
  case 3: str_i16(p, al, TO_INT_SAT(short, x)); break;
  case 4: str_i32(p, al, TO_INT_SAT(int, x)); break;
  case 5: str_i64(p, al, TO_INT_SAT(long, x)); break;
#if defined(DT_float64)
  case 6: str_u16(p, al, f64_to_f16(x)); break;
  case 7: str_u16(p, al, f32_to_bf16(rto_from_double(x))); break;
#elif defined(IS_FLOAT)
  case 6: str_u16(p, al, f32_to_f16(x)); break;
  case 7: str_u16(p, al, f32_to_bf16(x)); break;
#else
  case 6: str_u16(p, al, f32_to_f16(rto_from_long((long)x))); break;
  case 7: str_u16(p, al, f32_to_bf16(rto_from_long((long)x))); break;
#endif
  case 8: str_f32(p, al, (float)x); break;
#ifdef HAS_FP64
  case 9: str_f64(p, al, (double)x); break;
#endif
  default: break;
  }
}

/* ---- strided addressing: element gid's byte offsets (shape/strides in bytes, <= 16 dims) ----- */
#define EW_PARAMS                                                                              \
  __global uchar *out, ulong out_off, __global const uchar *a, ulong a_off,                    \
      __global const uchar *b, ulong b_off, __global const uchar *c, ulong c_off, ulong n,     \
      int ndim, int al, int arg, long16 shape, long16 sa, long16 sb, long16 sc, long4 at
#define EW_PROLOGUE(OUTSIZE)                                                                   \
  ulong gid = get_global_id(0);                                                                \
  if (gid >= n) return;                                                                        \
  long pa = (long)a_off, pb = (long)b_off, pc = (long)c_off;                                   \
  if (ndim == 1) { /* the common collapsed case: no index arithmetic, no private arrays */    \
    pa += (long)gid * sa.s0; pb += (long)gid * sb.s0; pc += (long)gid * sc.s0;                 \
  } else if (ndim > 1) {                                                                       \
    long sh[16], s0[16], s1[16], s2[16];                                                       \
    vstore16(shape, 0, sh); vstore16(sa, 0, s0); vstore16(sb, 0, s1); vstore16(sc, 0, s2);     \
    ulong r = gid;                                                                             \
    for (int d = ndim - 1; d >= 0; --d) {                                                      \
      long i = (long)(r % (ulong)sh[d]);                                                       \
      r /= (ulong)sh[d];                                                                       \
      pa += i * s0[d]; pb += i * s1[d]; pc += i * s2[d];                                       \
    }                                                                                          \
  }                                                                                            \
  __global uchar *po = out + out_off + gid * (ulong)(OUTSIZE);                                 \
  __global const uchar *px = a + pa, *py = b + pb, *pz = c + pc;                               \
  (void)px; (void)py; (void)pz; (void)arg; (void)at;

/* The contiguous fast path, kc_<op>: same arguments, used when every operand is aligned and
 * contiguous (1-D after collapsing, stride one element). Alignment, element sizes and strides
 * are then constants and there is no bounds check (the host launches it over whole work-groups
 * only, and k_<op> over the rest), so the device compiler vectorizes across work-items. */
#define EW_PARAMS_C                                                                            \
  __global uchar *out, ulong out_off, __global const uchar *a, ulong a_off,                    \
      __global const uchar *b, ulong b_off, __global const uchar *c, ulong c_off, ulong n,     \
      int ndim_unused, int al_unused, int arg, long16 shape_unused, long16 sa, long16 sb,      \
      long16 sc, long4 at
#define EW_PROLOGUE_C(OUTSIZE, ASIZE, BSIZE, CSIZE)                                            \
  const int al = 1;                                                                            \
  ulong gid = get_global_id(0); /* no bounds check: the host launches whole work-groups */    \
  __global uchar *po = out + out_off + gid * (ulong)(OUTSIZE);                                 \
  __global const uchar *px = a + a_off + gid * (ulong)(ASIZE);                                 \
  __global const uchar *py = b + b_off + gid * (ulong)(BSIZE);                                 \
  __global const uchar *pz = c + c_off + gid * (ulong)(CSIZE);                                 \
  (void)px; (void)py; (void)pz; (void)arg; (void)n; (void)ndim_unused; (void)al_unused;        \
  (void)shape_unused; (void)sa; (void)sb; (void)sc; (void)at;
