/* hwport OpenCL plugin — the reduction kernels sum, prod, max and min (phi_ops/ops.yaml), and
 * mean (a composite, natively: sum's kernels, the result divided by the reduced count).
 *
 * attr axis holds the reduced dims (non-negative, sorted, unique, never empty); the output is
 * contiguous over the kept dims. Inputs may be strided (HWP_KERNEL_ACCEPTS_STRIDED): the kept
 * dims and the reduced dims are collapsed separately (size-1 dims dropped, a dim merged into
 * the previous one of its group when their strides allow) and passed as long16 shapes and byte
 * strides.
 *
 * One OpenCL C program per input dtype (the embedded source below, built with -DDT=<dtype>;
 * program-cache slots OCL_RED_SLOT0 + dtype). A launch runs one work-group per (output
 * element, chunk of the reduced range): every work-item accumulates a strided part of the
 * chunk, then the group combines its values in local memory (a tree). When there are few
 * outputs and long rows the row is split into chunks whose partial results (in the
 * accumulation type) go to a workspace, reduced by a second kernel (k_<op>_fin), again with a
 * local-memory tree. Work-group sizes are powers of two bounded by CL_DEVICE_MAX_WORK_GROUP_SIZE
 * and CL_KERNEL_WORK_GROUP_SIZE; the global size is a multiple of the local size.
 *
 * Fast paths (the generic kernels above stay for views and the rest):
 *  - k_<op>_c, rows contiguous and element-aligned (sum/mean/max/min of float32, float16,
 *    bfloat16; sum/max/min of bool and integers): a span of the row per work-item read with
 *    vector loads; float32 sums in superblocks of up to 1024 elements (float16 accumulators,
 *    then the accumulation type), integers in int64 lanes; same launch and k_<op>_fin split;
 *  - k_<op>_k, float32 with the kept dims one contiguous dim (a sum over axis 0): a work-item
 *    per up to 256 adjacent outputs walks the reduced dims (fixed groups of columns in
 *    registers; sums two row streams at once, float over 32-row blocks, then the
 *    accumulation type).
 *
 * Accumulation: bool/integers in int64 (wrap-around through ulong arithmetic), float16 and
 * bfloat16 in float, float32 in double when the device has cl_khr_fp64 (else float with Kahan
 * compensation per work-item), float64 in double. max/min propagate NaN; over bool they are
 * any/all. The result is stored as outputs[0].dtype (int64 for sum/prod of bool/integers unless
 * the op's dtype attr said otherwise, which the host applies as a cast of the input). */
#include <stdio.h>
#include <string.h>

#include "kernels.h"

/* Registers sum/prod/max/min for every dtype and mean for the float ones (float64 only when
 * every device has cl_khr_fp64); called from hwport_plugin_init (plugin_entry.c). */
HWP_Status ocl_register_reduce_kernels(const HWP_HostApi *host);

#define OCL_RED_SLOT0 20 /* program-cache slots OCL_RED_SLOT0 .. OCL_RED_SLOT0 + 9 */
#define OCL_RED_MAX_LOCAL 256
#define OCL_RED_CPU_LOCAL 16 /* k_<op>_c's work-group size on a CPU device */

static const char *const k_red_source =
    "#ifdef HAS_FP64\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "#define LDRAW(T, p, al) ((al) ? *(__global const T *)(p) : ldb_##T(p))\n"
    "#define DEF_LDB(T) static inline T ldb_##T(__global const uchar *p) { T v; uchar *q = (uchar *)&v;"
    " for (int k = 0; k < (int)sizeof(T); ++k) q[k] = p[k]; return v; }\n"
    "#define DEF_STR(T) static inline void str_##T(__global uchar *p, int al, T v) {"
    " if (al) { *(__global T *)p = v; return; } uchar *q = (uchar *)&v;"
    " for (int k = 0; k < (int)sizeof(T); ++k) p[k] = q[k]; }\n"
    "DEF_LDB(char) DEF_LDB(uchar) DEF_LDB(short) DEF_LDB(ushort) DEF_LDB(int) DEF_LDB(long)"
    " DEF_LDB(float)\n"
    "DEF_STR(char) DEF_STR(uchar) DEF_STR(short) DEF_STR(ushort) DEF_STR(int) DEF_STR(long)"
    " DEF_STR(float)\n"
    "#ifdef HAS_FP64\n"
    "DEF_LDB(double) DEF_STR(double)\n"
    "typedef double FT;\n"
    "#else\n"
    "typedef float FT;\n"
    "#endif\n"
    "static inline float f16f(ushort h) { return vload_half(0, (const half *)&h); }\n"
    "static inline ushort ff16(float f) { ushort h; vstore_half_rte(f, 0, (half *)&h); return h; }\n"
    "static inline float bf16f(ushort b) { return as_float((uint)b << 16); }\n"
    "static inline ushort fbf16(float f) { uint x = as_uint(f);\n"
    "  if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40u);\n"
    "  x += 0x7fffu + ((x >> 16) & 1u); return (ushort)(x >> 16); }\n"
    /* stores of an integer / floating accumulator as output dtype odt */
    "static inline void st_l(__global uchar *p, int al, int odt, long v) {\n"
    "  switch (odt) {\n"
    "  case 0: p[0] = v != 0; break;\n"
    "  case 1: p[0] = (uchar)v; break; case 2: p[0] = (uchar)v; break;\n"
    "  case 3: str_short(p, al, (short)v); break; case 4: str_int(p, al, (int)v); break;\n"
    "  case 5: str_long(p, al, v); break;\n"
    "  case 6: str_ushort(p, al, ff16((float)v)); break;\n"
    "  case 7: str_ushort(p, al, fbf16((float)v)); break;\n"
    "  case 8: str_float(p, al, (float)v); break;\n"
    "#ifdef HAS_FP64\n"
    "  case 9: str_double(p, al, (double)v); break;\n"
    "#endif\n"
    "  default: break; } }\n"
    "static inline void st_f(__global uchar *p, int al, int odt, FT v) {\n"
    "  long iv = isnan(v) ? 0 : convert_long_sat(v);\n"
    "  switch (odt) {\n"
    "  case 0: p[0] = v != 0; break;\n"
    "  case 1: case 2: case 3: case 4: case 5: st_l(p, al, odt, iv); break;\n"
    "  case 6: str_ushort(p, al, ff16((float)v)); break;\n"
    "  case 7: str_ushort(p, al, fbf16((float)v)); break;\n"
    "  case 8: str_float(p, al, (float)v); break;\n"
    "#ifdef HAS_FP64\n"
    "  case 9: str_double(p, al, (double)v); break;\n"
    "#endif\n"
    "  default: break; } }\n"
    /* per input dtype: LD (compute value), SACC/MACC (sum-prod / max-min accumulators) */
    "#if DT <= 5\n"
    "#define ISINT 1\n"
    "#define FIN(t) 1\n"
    "typedef long SACC; typedef long MACC;\n"
    "#if DT == 0\n"
    "#define LD(p, al) ((long)((p)[0] != 0))\n"
    "#elif DT == 1\n"
    "#define LD(p, al) ((long)(char)(p)[0])\n"
    "#elif DT == 2\n"
    "#define LD(p, al) ((long)(p)[0])\n"
    "#elif DT == 3\n"
    "#define LD(p, al) ((long)LDRAW(short, p, al))\n"
    "#elif DT == 4\n"
    "#define LD(p, al) ((long)LDRAW(int, p, al))\n"
    "#else\n"
    "#define LD(p, al) (LDRAW(long, p, al))\n"
    "#endif\n"
    "#define ST_S st_l\n"
    "#define ST_M st_l\n"
    "#define MAXOP(a, b) max(a, b)\n"
    "#define MINOP(a, b) min(a, b)\n"
    "#define MAX_ID LONG_MIN\n"
    "#define MIN_ID LONG_MAX\n"
    "#define ADD(a, b) ((long)((ulong)(a) + (ulong)(b)))\n"
    "#define MUL(a, b) ((long)((ulong)(a) * (ulong)(b)))\n"
    "#else\n"
    "#define ISINT 0\n"
    "#define FIN(t) isfinite(t)\n"
    "#if DT == 6\n"
    "#define LD(p, al) f16f(LDRAW(ushort, p, al))\n"
    "typedef float SACC; typedef float MACC;\n"
    "#elif DT == 7\n"
    "#define LD(p, al) bf16f(LDRAW(ushort, p, al))\n"
    "typedef float SACC; typedef float MACC;\n"
    "#elif DT == 8\n"
    "#define LD(p, al) LDRAW(float, p, al)\n"
    "typedef FT SACC; typedef float MACC;\n"
    "#else\n"
    "#define LD(p, al) LDRAW(double, p, al)\n"
    "typedef double SACC; typedef double MACC;\n"
    "#endif\n"
    "#define ST_S st_f\n"
    "#define ST_M st_f\n"
    "#define MAXOP(a, b) (((a) > (b) || isnan(a)) ? (a) : (b))\n"
    "#define MINOP(a, b) (((a) < (b) || isnan(a)) ? (a) : (b))\n"
    "#define MAX_ID (-INFINITY)\n"
    "#define MIN_ID INFINITY\n"
    "#define ADD(a, b) ((a) + (b))\n"
    "#define MUL(a, b) ((a) * (b))\n"
    "#endif\n"
    /* Kahan only for a float accumulator of sums (float16/bfloat16 always, float32 without fp64) */
    "#if !ISINT && !(DT == 9) && !(DT == 8 && defined(HAS_FP64))\n"
    "#define KAHAN 1\n"
    "#else\n"
    "#define KAHAN 0\n"
    "#endif\n"
    "static inline long pick(long16 v, int k) { return ((private long *)&v)[k]; }\n"
    "static inline long offs(ulong i, int nd, long16 shape, long16 st) {\n"
    "  long off = 0;\n"
    "  for (int k = nd - 1; k >= 0; --k) { long n = pick(shape, k);\n"
    "    off += (long)(i % (ulong)n) * pick(st, k); i /= (ulong)n; }\n"
    "  return off; }\n"
    /* the group-wide tree in local memory; every work-item gets the result */
    "#define TREE(ACC, COMB, scratch, acc) {                                           \\\n"
    "  uint lid = get_local_id(0), lsz = get_local_size(0);                          \\\n"
    "  scratch[lid] = acc; barrier(CLK_LOCAL_MEM_FENCE);                              \\\n"
    "  for (uint s = lsz >> 1; s > 0; s >>= 1) {                                      \\\n"
    "    if (lid < s) { ACC a_ = scratch[lid], b_ = scratch[lid + s]; scratch[lid] = COMB(a_, b_); } \\\n"
    "    barrier(CLK_LOCAL_MEM_FENCE); }                                              \\\n"
    "  acc = scratch[0]; }\n"
    "#define DEF_RED(NAME, ACC, ID, COMB, ST, SUMK, FINISH)                           \\\n"
    "__kernel void k_##NAME(__global uchar *out, ulong out_off, int odt, int oal,      \\\n"
    "    __global const uchar *in, ulong in_off, int al, ulong rlen, ulong chunk,      \\\n"
    "    uint chunks, int kdim, long16 kshape, long16 kst, int rdim, long16 rshape,    \\\n"
    "    long16 rst, __global ACC *part, __local ACC *scratch) {                       \\\n"
    "  ulong g = get_group_id(0); ulong o = g / chunks; ulong c = g % chunks;          \\\n"
    "  long base = (long)in_off + offs(o, kdim, kshape, kst);                          \\\n"
    "  ulong lo = c * chunk, hi = min(rlen, lo + chunk);                              \\\n"
    "  ACC acc = ID, comp = 0;                                                        \\\n"
    "  for (ulong r = lo + get_local_id(0); r < hi; r += get_local_size(0)) {         \\\n"
    "    long off = rdim == 1 ? (long)r * rst.s0 : offs(r, rdim, rshape, rst);          \\\n"
    "    ACC v = LD(in + base + off, al);                                             \\\n"
    "    if (SUMK) { ACC y = v - comp; ACC t = acc + y;                               \\\n"
    "      comp = FIN(t) ? (t - acc) - y : (ACC)0; acc = t; }                          \\\n"
    "    else acc = COMB(acc, v); }                                                   \\\n"
    "  if (SUMK) acc = acc - comp;                                                    \\\n"
    "  TREE(ACC, COMB, scratch, acc)                                                  \\\n"
    "  if (get_local_id(0) == 0) {                                                   \\\n"
    "    if (chunks == 1) ST(out + out_off + o * (ulong)oal, oal > 0 ? ((out_off % (ulong)oal) == 0) : 1, odt, FINISH(acc, rlen)); \\\n"
    "    else part[g] = acc; } }                                                      \\\n"
    "__kernel void k_##NAME##_fin(__global uchar *out, ulong out_off, int odt, int oal, \\\n"
    "    __global const ACC *part, uint chunks, __local ACC *scratch, ulong rlen) {     \\\n"
    "  ulong o = get_group_id(0); ACC acc = ID;                                       \\\n"
    "  for (uint c = get_local_id(0); c < chunks; c += get_local_size(0))             \\\n"
    "    acc = COMB(acc, part[o * chunks + c]);                                       \\\n"
    "  TREE(ACC, COMB, scratch, acc)                                                  \\\n"
    "  if (get_local_id(0) == 0)                                                     \\\n"
    "    ST(out + out_off + o * (ulong)oal, oal > 0 ? ((out_off % (ulong)oal) == 0) : 1, odt, FINISH(acc, rlen)); }\n"
    "#define SUMC(a, b) ADD(a, b)\n"
    "#define KEEP(a, n) (a)\n"
    /* mean: the sum over the reduced count (0 / 0 = NaN for an empty reduction) */
    "#define DIVN(a, n) ((a) / (SACC)(n))\n"
    "DEF_RED(sum, SACC, 0, SUMC, ST_S, KAHAN, KEEP)\n"
    "DEF_RED(mean, SACC, 0, SUMC, ST_S, KAHAN, DIVN)\n"
    "DEF_RED(prod, SACC, 1, MUL, ST_S, 0, KEEP)\n"
    "DEF_RED(max, MACC, MAX_ID, MAXOP, ST_M, 0, KEEP)\n"
    "DEF_RED(min, MACC, MIN_ID, MINOP, ST_M, 0, KEEP)\n"
    /* float32, float16 and bfloat16 rows that are contiguous (the reduced dims collapse to
     * one of stride one element, element-aligned): every work-item reduces one contiguous
     * span of its group's chunk with 8-element loads (vload8, vload_half8, or ushort8 widened
     * for bfloat16: the half types had only the strided byte-wise loop before), blocks of 64
     * elements combined pairwise in float then added into 8 lanes of the accumulation type of
     * k_<op> (double for float32 sums where the device has fp64, else float; sums compensated
     * per lane, as Kahan), the lanes pairwise and the group's tree in that type,
     * whose k_<op>_fin finishes split rows. PoCL runs a group's work-items one after the
     * other, so a span per work-item streams memory where the strided loop above jumps. */
    "#if DT == 8 || DT == 6 || DT == 7\n"
    /* RLD8(row, i): elements i .. i+7 of a contiguous row as float8; RLD1 one element */
    "#if DT == 8\n"
    "typedef float RT;\n"
    "#define RLD8(p, i) vload8(0, (p) + (i))\n"
    "#define RLD1(p, i) ((p)[i])\n"
    "#else\n"
    "typedef ushort RT;\n"
    "#if DT == 6\n"
    /* float16 -> float by bits (exact; NaN payloads kept): PoCL 3.1's vload_half8 crashed on
     * rows that start 2 mod 4 bytes (odd row lengths), which vload8 of ushort does not */
    "static inline float8 h2f8(ushort8 u) {\n"
    "  uint8 h = convert_uint8(u), em = h & 0x7fffu;\n"
    "  float8 f = select(as_float8((em << 13) + (112u << 23)), convert_float8(em) * 0x1p-24f,\n"
    "                    as_int8(em < 0x400u));\n"
    "  f = select(f, as_float8((em << 13) | 0x7f800000u), as_int8(em >= 0x7c00u));\n"
    "  return as_float8(as_uint8(f) | ((h & 0x8000u) << 16)); }\n"
    "#define RLD8(p, i) h2f8(vload8(0, (p) + (i)))\n"
    "#define RLD1(p, i) vload_half(0, (__global const half *)((p) + (i)))\n"
    "#else\n"
    "#define RLD8(p, i) as_float8(convert_uint8(vload8(0, (p) + (i))) << 16)\n"
    "#define RLD1(p, i) as_float((uint)(p)[i] << 16)\n"
    "#endif\n"
    "#endif\n"
    "#define V8ADD(a, b) ((a) + (b))\n"
    "#define V8MAX(a, b) select((b), (a), isgreater((a), (b)) | isnan(a))\n"
    "#define V8MIN(a, b) select((b), (a), isless((a), (b)) | isnan(a))\n"
    "#define DEF_REDC(NAME, PACC, PACC8, TO8, ID, V8OP, COMB, SUMK, FINISH)            \\\n"
    "__kernel void k_##NAME##_c(__global uchar *out, ulong out_off, int odt, int oal,  \\\n"
    "    __global const uchar *in, ulong in_off, ulong rlen, ulong chunk, uint chunks, \\\n"
    "    int kdim, long16 kshape, long16 kst, __global PACC *part,                     \\\n"
    "    __local PACC *scratch) {                                                      \\\n"
    "  ulong g = get_group_id(0); ulong o = g / chunks; ulong c = g % chunks;          \\\n"
    "  __global const RT *row =                                                        \\\n"
    "      (__global const RT *)(in + in_off + offs(o, kdim, kshape, kst));            \\\n"
    "  ulong lo = c * chunk, hi = min(rlen, lo + chunk), n = hi > lo ? hi - lo : 0;    \\\n"
    "  ulong lid = get_local_id(0), lsz = get_local_size(0);                           \\\n"
    "  ulong per = (((n + lsz - 1) / lsz) + 7) & ~(ulong)7;                            \\\n"
    "  ulong a = lo + min(n, per * lid), b = lo + min(n, per * (lid + 1));             \\\n"
    "  PACC8 acc8 = (PACC8)(ID), comp8 = (PACC8)(0);                                   \\\n"
    "  ulong r = a;                                                                    \\\n"
    "  for (; r + 8 <= b; ) { float8 v = RLD8(row, r); r += 8;                         \\\n"
    "    if (r + 56 <= b) { /* a block of 64: 8 loads combined pairwise in float */    \\\n"
    "      float8 v1 = V8OP(RLD8(row, r), RLD8(row, r + 8));                           \\\n"
    "      float8 v2 = V8OP(RLD8(row, r + 16), RLD8(row, r + 24));                     \\\n"
    "      float8 v3 = V8OP(RLD8(row, r + 32), RLD8(row, r + 40));                     \\\n"
    "      v = V8OP(V8OP(v, RLD8(row, r + 48)), V8OP(V8OP(v1, v2), v3)); r += 56; }    \\\n"
    "    PACC8 w = TO8(v);                                                             \\\n"
    "    if (SUMK) { PACC8 y = w - comp8; PACC8 t = acc8 + y;                          \\\n"
    "      comp8 = select((PACC8)(0), (t - acc8) - y, isfinite(t)); acc8 = t; }        \\\n"
    "    else acc8 = V8OP(acc8, w); }                                                  \\\n"
    "  if (SUMK) acc8 = acc8 - comp8;                                                  \\\n"
    "  PACC acc;                                                                       \\\n"
    "  { PACC a_[8]; vstore8(acc8, 0, a_);                                             \\\n"
    "    acc = COMB(COMB(COMB(a_[0], a_[1]), COMB(a_[2], a_[3])),                      \\\n"
    "               COMB(COMB(a_[4], a_[5]), COMB(a_[6], a_[7]))); }                   \\\n"
    "  for (; r < b; ++r) acc = COMB(acc, (PACC)RLD1(row, r));                         \\\n"
    "  TREE(PACC, COMB, scratch, acc)                                                  \\\n"
    "  if (lid == 0) {                                                                 \\\n"
    "    if (chunks == 1) ST_S(out + out_off + o * (ulong)oal, oal > 0 ? ((out_off % (ulong)oal) == 0) : 1, odt, FINISH(acc, rlen));\\\n"
    "    else part[g] = acc; } }\n"
    "#define V8ADDC(a, b) V8ADD(a, b)\n"
    "#define SADD(a, b) ((a) + (b))\n"
    "#if DT == 8 && defined(HAS_FP64)\n" /* SACC: double; float for float16/bfloat16 */
    "typedef double8 SACC8;\n"
    "#define TOS8(v) convert_double8(v)\n"
    "#else\n"
    "typedef float8 SACC8;\n"
    "#define TOS8(v) (v)\n"
    "#endif\n"
    "#define TOM8(v) (v)\n"
    /* float32 sums of contiguous rows: a work-item's span read as four equal streams at once
     * (measured on PoCL 3.1: one core streams ~15% more memory from four places than from
     * one), in superblocks of 4 x 256 elements, each summed in float by a float16 accumulator
     * per stream (16 adds per lane, then the 64 lanes pairwise) and added into one accumulator
     * of type FT (double where the device has fp64, else float compensated as Kahan); the
     * < 68 elements left past the streams in 64-element blocks, a float8 and one by one. Measured on PoCL 3.1: the 64-element blocks
     * reduced across lanes into compensated double lanes (the half types' loop below) kept
     * the kernel at ~1.4x a plain float16-accumulator sum; this one runs at its speed with
     * errors ~1e-4 on 16M normals (the float16 lanes alone: ~3e-2). */
    "#if DT == 8\n"
    "#if KAHAN\n"
    "#define SBADD(acc, comp, v) { float y_ = (v) - comp; float t_ = acc + y_;            \\\n"
    "  comp = isfinite(t_) ? (t_ - acc) - y_ : 0.0f; acc = t_; }\n"
    "#else\n"
    "#define SBADD(acc, comp, v) { acc += (FT)(v); }\n"
    "#endif\n"
    "static inline float hsum16(float16 s) { float8 s8 = s.lo + s.hi;\n"
    "  float4 s4 = s8.lo + s8.hi; float2 s2 = s4.lo + s4.hi; return s2.x + s2.y; }\n"
    "#define DEF_SUMF(NAME, FINISH)                                                      \\\n"
    "__kernel void k_##NAME##_c(__global uchar *out, ulong out_off, int odt, int oal,  \\\n"
    "    __global const uchar *in, ulong in_off, ulong rlen, ulong chunk, uint chunks, \\\n"
    "    int kdim, long16 kshape, long16 kst, __global SACC *part,                     \\\n"
    "    __local SACC *scratch) {                                                      \\\n"
    "  ulong g = get_group_id(0); ulong o = g / chunks; ulong c = g % chunks;          \\\n"
    "  __global const float *row =                                                     \\\n"
    "      (__global const float *)(in + in_off + offs(o, kdim, kshape, kst));         \\\n"
    "  ulong lo = c * chunk, hi = min(rlen, lo + chunk), n = hi > lo ? hi - lo : 0;    \\\n"
    "  ulong lid = get_local_id(0), lsz = get_local_size(0);                           \\\n"
    "  ulong per = (((n + lsz - 1) / lsz) + 7) & ~(ulong)7;                            \\\n"
    "  ulong a = lo + min(n, per * lid), b = lo + min(n, per * (lid + 1));             \\\n"
    "  SACC acc = 0, comp = 0;                                                       \\\n"
    "  ulong q = ((b - a) / 4) & ~(ulong)15, i = 0;                                  \\\n"
    "  __global const float *p0 = row + a, *p1 = p0 + q, *p2 = p1 + q, *p3 = p2 + q; \\\n"
    "  while (i < q) { ulong e = min(q, i + 256);                                    \\\n"
    "    float16 s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;                         \\\n"
    "    for (; i < e; i += 16) {                                                    \\\n"
    "      s0 += vload16(0, p0 + i); s1 += vload16(0, p1 + i);                       \\\n"
    "      s2 += vload16(0, p2 + i); s3 += vload16(0, p3 + i); }                     \\\n"
    "    SBADD(acc, comp, hsum16((s0 + s1) + (s2 + s3))) }                           \\\n"
    "  ulong r = a + 4 * q;                                                          \\\n"
    "  while (r + 64 <= b) { ulong e = min(b, r + 1024);                               \\\n"
    "    float16 s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;                           \\\n"
    "    for (; r + 64 <= e; r += 64) {                                                \\\n"
    "      s0 += vload16(0, row + r); s1 += vload16(0, row + r + 16);                  \\\n"
    "      s2 += vload16(0, row + r + 32); s3 += vload16(0, row + r + 48); }           \\\n"
    "    SBADD(acc, comp, hsum16((s0 + s1) + (s2 + s3))) }                             \\\n"
    "  float8 t8 = 0.0f; for (; r + 8 <= b; r += 8) t8 += vload8(0, row + r);          \\\n"
    "  float4 t4 = t8.lo + t8.hi; float2 t2 = t4.lo + t4.hi; float t = t2.x + t2.y;    \\\n"
    "  for (; r < b; ++r) t += row[r];                                                 \\\n"
    "  SBADD(acc, comp, t)                                                             \\\n"
    "  acc = acc - comp;                                                               \\\n"
    "  TREE(SACC, SADD, scratch, acc)                                                  \\\n"
    "  if (lid == 0) {                                                                 \\\n"
    "    if (chunks == 1) ST_S(out + out_off + o * (ulong)oal, oal > 0 ? ((out_off % (ulong)oal) == 0) : 1, odt, FINISH(acc, rlen));\\\n"
    "    else part[g] = acc; } }\n"
    "DEF_SUMF(sum, KEEP)\n"
    "DEF_SUMF(mean, DIVN)\n"
    "#else\n"
    "DEF_REDC(sum, SACC, SACC8, TOS8, 0, V8ADDC, SADD, 1, KEEP)\n"
    "DEF_REDC(mean, SACC, SACC8, TOS8, 0, V8ADDC, SADD, 1, DIVN)\n"
    "#endif\n"
    "DEF_REDC(max, MACC, float8, TOM8, -INFINITY, V8MAX, MAXOP, 0, KEEP)\n"
    "DEF_REDC(min, MACC, float8, TOM8, INFINITY, V8MIN, MINOP, 0, KEEP)\n"
    "#endif\n"
    /* bool and integer rows that are contiguous (k_sum_c, k_max_c, k_min_c): a span per
     * work-item as for float32, read with 16-element loads widened to long16 (bool as 0/1)
     * and combined in int64 lanes (sums wrap through ulong as ADD); the generic loop above
     * computed every element's address and ran ~5.4x the CPU plugin's time on PoCL 3.1. */
    "#if DT <= 5\n"
    "#if DT == 0\n"
    "typedef uchar IT;\n"
    "#define ILD16(p, i) convert_long16(min(vload16(0, (p) + (i)), (uchar16)(1)))\n"
    "#elif DT == 1\n"
    "typedef char IT;\n"
    "#elif DT == 2\n"
    "typedef uchar IT;\n"
    "#elif DT == 3\n"
    "typedef short IT;\n"
    "#elif DT == 4\n"
    "typedef int IT;\n"
    "#else\n"
    "typedef long IT;\n"
    "#endif\n"
    "#if DT != 0\n"
    "#define ILD16(p, i) convert_long16(vload16(0, (p) + (i)))\n"
    "#endif\n"
    "#define V16ADD(a, b) as_long16(as_ulong16(a) + as_ulong16(b))\n"
    "#define V16MAX(a, b) max(a, b)\n"
    "#define V16MIN(a, b) min(a, b)\n"
    "#define DEF_REDI(NAME, ID, VOP, COMB)                                           \\\n"
    "__kernel void k_##NAME##_c(__global uchar *out, ulong out_off, int odt, int oal,\\\n"
    "    __global const uchar *in, ulong in_off, ulong rlen, ulong chunk, uint chunks,\\\n"
    "    int kdim, long16 kshape, long16 kst, __global long *part,                   \\\n"
    "    __local long *scratch) {                                                    \\\n"
    "  ulong g = get_group_id(0); ulong o = g / chunks; ulong c = g % chunks;        \\\n"
    "  __global const uchar *base = in + in_off + offs(o, kdim, kshape, kst);        \\\n"
    "  __global const IT *row = (__global const IT *)base;                           \\\n"
    "  ulong lo = c * chunk, hi = min(rlen, lo + chunk), n = hi > lo ? hi - lo : 0;  \\\n"
    "  ulong lid = get_local_id(0), lsz = get_local_size(0);                         \\\n"
    "  ulong per = (((n + lsz - 1) / lsz) + 15) & ~(ulong)15;                        \\\n"
    "  ulong a = lo + min(n, per * lid), b = lo + min(n, per * (lid + 1));           \\\n"
    "  long16 v0 = (long16)(ID), v1 = (long16)(ID); ulong r = a;                     \\\n"
    "  for (; r + 32 <= b; r += 32) { v0 = VOP(v0, ILD16(row, r));                   \\\n"
    "    v1 = VOP(v1, ILD16(row, r + 16)); }                                         \\\n"
    "  for (; r + 16 <= b; r += 16) v0 = VOP(v0, ILD16(row, r));                     \\\n"
    "  v0 = VOP(v0, v1);                                                             \\\n"
    "  long a_[16]; vstore16(v0, 0, a_); long acc = ID;                              \\\n"
    "  for (int e = 0; e < 16; ++e) acc = COMB(acc, a_[e]);                          \\\n"
    "  for (; r < b; ++r) acc = COMB(acc, LD(base + r * sizeof(IT), 1));             \\\n"
    "  TREE(long, COMB, scratch, acc)                                                \\\n"
    "  if (lid == 0) {                                                               \\\n"
    "    if (chunks == 1) ST_S(out + out_off + o * (ulong)oal, oal > 0 ? ((out_off % (ulong)oal) == 0) : 1, odt, acc);\\\n"
    "    else part[g] = acc; } }\n"
    "DEF_REDI(sum, 0, V16ADD, ADD)\n"
    "DEF_REDI(max, LONG_MIN, V16MAX, max)\n"
    "DEF_REDI(min, LONG_MAX, V16MIN, min)\n"
    "#endif\n"
    "#if DT == 8\n"
    "#ifdef HAS_FP64\n"
    "typedef double16 SACC16;\n"
    "#define TOS16(v) convert_double16(v)\n"
    "#else\n"
    "typedef float16 SACC16;\n"
    "#define TOS16(v) (v)\n"
    "#endif\n"
    /* float32 reductions over outer dims whose kept dims collapse to one contiguous dim (a
     * sum over the rows of a matrix, axis 0): a work-item per cw adjacent outputs (a multiple
     * of 16, at most 256) walks the reduced dims, reading cw contiguous floats per step with
     * float16 loads; outputs past the last multiple of 16 of its span one by one.
     * Sums (k_sum_k, k_mean_k): the work-item's columns in groups of 128 (8 float16
     * vectors, fixed so that the accumulators stay in registers; the last group masked), the
     * rows walked as two streams at once (the first and the second half; an odd last row
     * alone), summed in float over blocks of 32 rows per stream and then added into lanes of
     * SACC16 (double where the device has fp64, else float compensated). Measured on PoCL
     * 3.1: the former per-row conversion to double and accumulators indexed by a run-time
     * count (kept in memory) made a [4096, 4096] axis-0 sum ~2.8x the CPU plugin's time;
     * 256 columns in one stream ~1.35x, two streams of 128 ~1.27x (CPU time). */
    "#if KAHAN\n"
    "#define SB16(d, c, v) { float16 y_ = (v) - c; float16 t_ = d + y_;                 \\\n"
    "  c = select((float16)(0.0f), (t_ - d) - y_, isfinite(t_)); d = t_; }\n"
    "#else\n"
    "#define SB16(d, c, v) { d += TOS16(v); }\n"
    "#endif\n"
    "#define ROFF(r) (rdim == 1 ? (long)(r) * rst.s0 : offs((r), rdim, rshape, rst))\n"
    /* The column kernels' signature and their work-item's columns [j0, j1): nb whole blocks
     * of 16, the output's alignment `al`. Given the pasted name: a bare `max`/`min` would be
     * macro-expanded on its way in. */
    "#define K_COLUMNS_HEAD(KNAME)                                                   \\\n"
    "__kernel void KNAME(__global uchar *out, ulong out_off, int odt, int oal,       \\\n"
    "    __global const uchar *in, ulong in_off, ulong rlen, ulong nout, int rdim,   \\\n"
    "    long16 rshape, long16 rst, uint cw) {                                       \\\n"
    "  ulong j0 = get_global_id(0) * (ulong)cw; if (j0 >= nout) return;              \\\n"
    "  ulong j1 = min(nout, j0 + cw); uint nb = (uint)((j1 - j0) / 16);              \\\n"
    "  int al = oal > 0 ? ((out_off % (ulong)oal) == 0) : 1;\n"
    "#define DEF_SUMK(NAME, FINISH)                                                  \\\n"
    "K_COLUMNS_HEAD(k_##NAME##_k)                                                    \\\n"
    "  ulong h = rlen / 2;                                                           \\\n"
    "  for (uint k0 = 0; k0 < nb; k0 += 8) { uint m = min(8u, nb - k0);              \\\n"
    "    __global const uchar *col = in + in_off + (j0 + (ulong)k0 * 16) * 4;        \\\n"
    "    float16 f[8], g[8]; SACC16 d[8], c[8];                                      \\\n"
    "    _Pragma(\"unroll\") for (int k = 0; k < 8; ++k) {                           \\\n"
    "      f[k] = 0.0f; g[k] = 0.0f; d[k] = (SACC16)(0); c[k] = (SACC16)(0); }       \\\n"
    "    for (ulong r = 0; r < h; ) { ulong re = min(h, r + 32);                     \\\n"
    "      for (; r < re; ++r) {                                                     \\\n"
    "        __global const float *p = (__global const float *)(col + ROFF(r));      \\\n"
    "        __global const float *p1 = (__global const float *)(col + ROFF(r + h)); \\\n"
    "        if (m == 8) { _Pragma(\"unroll\") for (int k = 0; k < 8; ++k) {         \\\n"
    "          f[k] += vload16(k, p); g[k] += vload16(k, p1); } }                    \\\n"
    "        else { _Pragma(\"unroll\") for (int k = 0; k < 8; ++k)                  \\\n"
    "          if ((uint)k < m) { f[k] += vload16(k, p); g[k] += vload16(k, p1); } } }\\\n"
    "      _Pragma(\"unroll\") for (int k = 0; k < 8; ++k) {                         \\\n"
    "        SB16(d[k], c[k], f[k] + g[k]) f[k] = 0.0f; g[k] = 0.0f; } }             \\\n"
    "    if (rlen & 1) {                                                             \\\n"
    "      __global const float *p = (__global const float *)(col + ROFF(rlen - 1)); \\\n"
    "      _Pragma(\"unroll\") for (int k = 0; k < 8; ++k)                           \\\n"
    "        if ((uint)k < m) { SB16(d[k], c[k], vload16(k, p)) } }                  \\\n"
    "    _Pragma(\"unroll\") for (int k = 0; k < 8; ++k) if ((uint)k < m) {          \\\n"
    "      SACC a_[16]; vstore16(d[k] - c[k], 0, a_);                                \\\n"
    "      for (int e = 0; e < 16; ++e)                                              \\\n"
    "        ST_S(out + out_off + (j0 + (k0 + k) * 16 + e) * (ulong)oal, al, odt, FINISH(a_[e], rlen)); } }\\\n"
    "  for (ulong j = j0 + (ulong)nb * 16; j < j1; ++j) { SACC s = 0;                \\\n"
    "    for (ulong r = 0; r < rlen; ++r)                                            \\\n"
    "      s += (SACC)*(__global const float *)(in + in_off + j * 4 + ROFF(r));      \\\n"
    "    ST_S(out + out_off + j * (ulong)oal, al, odt, FINISH(s, rlen)); } }\n"
    "DEF_SUMK(sum, KEEP)\n"
    "DEF_SUMK(mean, DIVN)\n"
    /* max/min over outer dims the same way (no blocks: the lanes are exact): the former kernel
     * run-time-indexed accumulators ran ~1.25x the CPU plugin's time on [4096, 4096]. */
    "#define DEF_MAXK(NAME, ID, V8OP, COMB)                                          \\\n"
    "K_COLUMNS_HEAD(k_##NAME##_k)                                                    \\\n"
    "  for (uint k0 = 0; k0 < nb; k0 += 16) { uint m = min(16u, nb - k0);            \\\n"
    "    __global const uchar *col = in + in_off + (j0 + (ulong)k0 * 16) * 4;        \\\n"
    "    float16 f[16];                                                              \\\n"
    "    _Pragma(\"unroll\") for (int k = 0; k < 16; ++k) f[k] = (float16)(ID);      \\\n"
    "    for (ulong r = 0; r < rlen; ++r) {                                          \\\n"
    "      long off = rdim == 1 ? (long)r * rst.s0 : offs(r, rdim, rshape, rst);     \\\n"
    "      __global const float *p = (__global const float *)(col + off);            \\\n"
    "      if (m == 16) { _Pragma(\"unroll\") for (int k = 0; k < 16; ++k)           \\\n"
    "        f[k] = V8OP(f[k], vload16(k, p)); }                                     \\\n"
    "      else { _Pragma(\"unroll\") for (int k = 0; k < 16; ++k)                   \\\n"
    "        if ((uint)k < m) f[k] = V8OP(f[k], vload16(k, p)); } }                  \\\n"
    "    _Pragma(\"unroll\") for (int k = 0; k < 16; ++k) if ((uint)k < m) {         \\\n"
    "      float a_[16]; vstore16(f[k], 0, a_);                                      \\\n"
    "      for (int e = 0; e < 16; ++e)                                              \\\n"
    "        ST_M(out + out_off + (j0 + (k0 + k) * 16 + e) * (ulong)oal, al, odt, a_[e]); } }\\\n"
    "  for (ulong j = j0 + (ulong)nb * 16; j < j1; ++j) { float s = ID;              \\\n"
    "    for (ulong r = 0; r < rlen; ++r) {                                          \\\n"
    "      long off = rdim == 1 ? (long)r * rst.s0 : offs(r, rdim, rshape, rst);     \\\n"
    "      s = COMB(s, *(__global const float *)(in + in_off + j * 4 + off)); }      \\\n"
    "    ST_M(out + out_off + j * (ulong)oal, al, odt, s); } }\n"
    "DEF_MAXK(max, -INFINITY, V8MAX, MAXOP)\n"
    "DEF_MAXK(min, INFINITY, V8MIN, MINOP)\n"
    "#endif\n";

typedef struct red_op {
  const char *name;
  int is_sum_like; /* sum/prod/mean: SACC; max/min: MACC */
} red_op;

/* mean: a composite the plugin runs natively (ops.yaml `native`), for the float dtypes. */
static const red_op k_red_ops[5] = {{"sum", 1}, {"prod", 1}, {"max", 0}, {"min", 0}, {"mean", 1}};
#define OCL_RED_ALL_DTYPES ((1u << HWP_DTYPE_COUNT) - 1u)
#define OCL_RED_FLOAT_DTYPES                                                                     \
  ((1u << HWP_DTYPE_FLOAT16) | (1u << HWP_DTYPE_BFLOAT16) | (1u << HWP_DTYPE_FLOAT32) |          \
   (1u << HWP_DTYPE_FLOAT64))

static int g_red_fp64[OCL_MAX_DEVICES];
static int g_red_cpu[OCL_MAX_DEVICES]; /* CL_DEVICE_TYPE_CPU */
static char g_red_options[OCL_MAX_DEVICES][HWP_DTYPE_COUNT][96];

static size_t dtype_size(HWP_DType d) {
  static const size_t sz[HWP_DTYPE_COUNT] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return (d >= 0 && d < HWP_DTYPE_COUNT) ? sz[d] : 0;
}

/* sizeof the accumulator type of (op, input dtype) in the program built for `dev`. */
static size_t acc_size(const red_op *op, HWP_DType dt, int dev) {
  if (dt <= HWP_DTYPE_INT64) return 8;
  if (dt == HWP_DTYPE_FLOAT64) return 8;
  if (dt == HWP_DTYPE_FLOAT32 && op->is_sum_like && g_red_fp64[dev]) return 8;
  return 4;
}

/* Launches k_<op>_fin over the partials of `chunks` groups per output (part), then nothing. */
static HWP_Status launch_fin(const HWP_KernelContext *ctx, const red_op *op, cl_program prog,
                             cl_command_queue q, const ocl_arg *out_args, cl_mem part,
                             cl_uint chunks, size_t asz, cl_ulong rlen, uint64_t nout) {
  char kname[64];
  snprintf(kname, sizeof kname, "k_%s_fin", op->name);
  cl_kernel k2 = NULL;
  HWP_Status st = ocl_kernel_make(prog, kname, NULL, 0, &k2, op->name);
  if (st != HWP_OK) return st;
  size_t local2 = ocl_kernel_wg(k2, ctx->device, OCL_RED_MAX_LOCAL);
  size_t want2 = ocl_pow2_ceil(chunks);
  if (want2 < local2) local2 = want2;
  const ocl_arg args2[8] = {out_args[0], out_args[1], out_args[2], out_args[3],
                            OCL_ARG(part), OCL_ARG(chunks), OCL_LOCAL(asz * local2),
                            OCL_ARG(rlen)};
  st = ocl_kernel_args(k2, 8, args2, op->name);
  size_t g2 = (size_t)nout * local2;
  if (st == HWP_OK) st = ocl_enqueue_nd(ctx, q, k2, 1, &g2, &local2, op->name);
  ocl_kernel_release(k2);
  return st;
}

/* float32/float16/bfloat16 rows contiguous in memory (see k_<op>_c): a work-group per (row,
 * chunk), each work-item a span of >= 64 elements; long rows of few outputs split into chunks
 * so that the device's compute units all get groups, their partials finished by k_<op>_fin. */
static HWP_Status red_contiguous(const HWP_KernelContext *ctx, const red_op *op,
                                 cl_program prog, const ocl_dims *K, uint64_t nout,
                                 uint64_t rlen, HWP_DType dt, HWP_DType odt) {
  const char *fn = op->name;
  const int dev = ctx->device;
  char kname[64];
  snprintf(kname, sizeof kname, "k_%s_c", op->name);
  cl_kernel k1 = NULL;
  HWP_Status st = ocl_kernel_make(prog, kname, NULL, 0, &k1, fn);
  if (st != HWP_OK) return st;
  /* A CPU device (PoCL) runs a group's work-items in turn on one core, so small groups
   * (measured best at 8-16 on PoCL 3.1) and many of them; elsewhere up to 256 work-items. */
  size_t local = ocl_kernel_wg(k1, dev, g_red_cpu[dev] ? OCL_RED_CPU_LOCAL : OCL_RED_MAX_LOCAL);
  size_t want = ocl_pow2_ceil((rlen + 63) / 64);
  if (want < local) local = want;
  if (local == 0) local = 1;
  const size_t asz = acc_size(op, dt, dev);
  uint64_t chunks = 1, chunk = rlen;
  HWP_Buffer ws = NULL;
  const ocl_device *d = &g_ocl.devices[dev];
  const uint64_t cus = d->compute_units > 0 ? (uint64_t)d->compute_units : 1;
  const uint64_t target = cus * 4; /* groups that keep every compute unit busy */ /* groups that keep every compute unit busy */
  if (nout < target && ctx->allocate_workspace != NULL) {
    uint64_t n = (target + nout - 1) / nout, most = rlen / ((uint64_t)local * 256);
    if (n > most) n = most;
    if (n > 4096) n = 4096;
    if (n > 1) {
      uint64_t c = ((rlen + n - 1) / n + 7) & ~(uint64_t)7;
      n = (rlen + c - 1) / c;
      if (n > 1 && ctx->allocate_workspace(ctx, nout * n * asz, &ws) == HWP_OK && ws != NULL) {
        chunks = n;
        chunk = c;
      }
    }
  }
  const HWP_TensorView *x = &ctx->inputs[0], *o = &ctx->outputs[0];
  cl_long16 ks, kst;
  ocl_dims_long16(K, &ks, &kst);
  cl_mem out = (cl_mem)o->buffer, in = (cl_mem)x->buffer;
  cl_mem part = ws != NULL ? (cl_mem)ws : out;
  cl_ulong out_off = o->byte_offset, in_off = x->byte_offset, crlen = rlen, cchunk = chunk;
  cl_int codt = odt, coal = (cl_int)dtype_size(odt), ckd = K->n;
  cl_uint cchunks = (cl_uint)chunks;
  const ocl_arg args[14] = {OCL_ARG(out),    OCL_ARG(out_off), OCL_ARG(codt),  OCL_ARG(coal),
                            OCL_ARG(in),     OCL_ARG(in_off),  OCL_ARG(crlen), OCL_ARG(cchunk),
                            OCL_ARG(cchunks), OCL_ARG(ckd),    OCL_ARG(ks),    OCL_ARG(kst),
                            OCL_ARG(part),   OCL_LOCAL(asz * local)};
  st = ocl_kernel_args(k1, 14, args, fn);
  cl_command_queue q;
  if (st == HWP_OK) st = ocl_ctx_queue(ctx, &q, fn);
  if (st == HWP_OK) {
    size_t g1 = (size_t)(nout * chunks) * local;
    st = ocl_enqueue_nd(ctx, q, k1, 1, &g1, &local, fn);
  }
  ocl_kernel_release(k1);
  if (st == HWP_OK && chunks > 1)
    st = launch_fin(ctx, op, prog, q, args, part, cchunks, asz, crlen, nout);
  if (st != HWP_OK) return st;
  return ocl_launch_done(ctx, q, fn);
}

/* float32 with the kept dims one contiguous dim (see k_<op>_k). */
static HWP_Status red_kept_contiguous(const HWP_KernelContext *ctx, const red_op *op,
                                      cl_program prog, const ocl_dims *R, uint64_t nout,
                                      uint64_t rlen, HWP_DType odt) {
  const char *fn = op->name;
  char kname[64];
  snprintf(kname, sizeof kname, "k_%s_k", op->name);
  cl_kernel k = NULL;
  HWP_Status st = ocl_kernel_make(prog, kname, NULL, 0, &k, fn);
  if (st != HWP_OK) return st;
  const HWP_TensorView *x = &ctx->inputs[0], *o = &ctx->outputs[0];
  cl_long16 rs, rst;
  ocl_dims_long16(R, &rs, &rst);
  cl_mem out = (cl_mem)o->buffer, in = (cl_mem)x->buffer;
  cl_ulong out_off = o->byte_offset, in_off = x->byte_offset, crlen = rlen, cnout = nout;
  cl_int codt = odt, coal = (cl_int)dtype_size(odt), crd = R->n;
  /* A CPU device: up to 256 outputs per work-item (1 KiB read per step of the walk; measured
   * on PoCL 3.1 against 16-128: a [4096, 4096] sum over axis 0 took 65x the CPU plugin's time
   * through the generic path, 4.6x with 16, 2.5x with 256), keeping 4 items per compute unit;
   * elsewhere 16 (a work-item per 16 outputs, many items). */
  const int cpu = g_red_cpu[ctx->device];
  cl_uint cw = 16;
  if (cpu) {
    const uint64_t cus = g_ocl.devices[ctx->device].compute_units > 0
                             ? (uint64_t)g_ocl.devices[ctx->device].compute_units : 1;
    while (cw < 256 && nout / (cw * 2) >= cus * 4) cw *= 2;
  }
  const ocl_arg args[12] = {OCL_ARG(out), OCL_ARG(out_off), OCL_ARG(codt),  OCL_ARG(coal),
                            OCL_ARG(in),  OCL_ARG(in_off),  OCL_ARG(crlen), OCL_ARG(cnout),
                            OCL_ARG(crd), OCL_ARG(rs),      OCL_ARG(rst),   OCL_ARG(cw)};
  st = ocl_kernel_args(k, 12, args, fn);
  cl_command_queue q;
  if (st == HWP_OK) st = ocl_ctx_queue(ctx, &q, fn);
  if (st != HWP_OK) {
    ocl_kernel_release(k);
    return st;
  }
  st = ocl_enqueue_1d(ctx, q, k, (nout + cw - 1) / cw, /* releases k */
                      ocl_kernel_wg(k, ctx->device, cpu ? 1 : 64), fn);
  if (st != HWP_OK) return st;
  return ocl_launch_done(ctx, q, fn);
}

static HWP_Status red_kernel(const HWP_KernelContext *ctx) {
  const red_op *op = (const red_op *)ctx->user_data;
  const char *fn = op->name;
  HWP_Status st = ocl_check_device(ctx->device, fn);
  if (st != HWP_OK) return st;
  if (ctx->num_inputs != 1 || ctx->num_outputs != 1 || ctx->inputs == NULL ||
      ctx->outputs == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: expected 1 input and 1 output", fn);
  const HWP_TensorView *x = &ctx->inputs[0], *o = &ctx->outputs[0];
  int dev = ctx->device;
  HWP_DType dt = x->dtype, odt = o->dtype;
  if (dt < 0 || dt >= HWP_DTYPE_COUNT || odt < 0 || odt >= HWP_DTYPE_COUNT)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: bad dtype %d -> %d", fn, (int)dt,
                     (int)odt);
  if ((dt == HWP_DTYPE_FLOAT64 || odt == HWP_DTYPE_FLOAT64) && !g_red_fp64[dev])
    return ocl_error(HWP_ERROR_NOT_SUPPORTED, "%s: device %d has no cl_khr_fp64", fn, dev);
  if ((st = ocl_check_context_sizes(ctx, fn)) != HWP_OK) return st;
  if (ctx->get_attr == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the kernel context has no get_attr", fn);
  const int64_t *axis = NULL;
  int64_t naxis = 0;
  st = ctx->get_attr(ctx, "axis", HWP_ATTR_INT64_ARRAY, (void *)&axis, &naxis);
  if (st != HWP_OK) return ocl_error(st, "%s: attribute 'axis' missing or not ints", fn);
  int reduced[HWP_MAX_NDIM];
  memset(reduced, 0, sizeof reduced);
  for (int64_t i = 0; i < naxis; ++i) {
    if (axis[i] < 0 || axis[i] >= x->ndim || (i > 0 && axis[i] <= axis[i - 1]))
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: axis must be sorted, unique and in [0, %d)", fn, (int)x->ndim);
    reduced[axis[i]] = 1;
  }
  if (naxis == 0) /* defensive: the host expands [] to every dim */
    for (int k = 0; k < x->ndim; ++k) reduced[k] = 1;

  int64_t isz = (int64_t)dtype_size(dt);
  ocl_dims K, R;
  memset(&K, 0, sizeof K);
  memset(&R, 0, sizeof R);
  uint64_t nout = 1, rlen = 1;
  for (int k = 0; k < x->ndim; ++k) {
    if (x->shape[k] < 0) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: bad shape", fn);
    if (reduced[k]) {
      rlen *= (uint64_t)x->shape[k];
      ocl_dims_add(&R, x->shape[k], x->strides[k] * isz);
    } else {
      nout *= (uint64_t)x->shape[k];
      ocl_dims_add(&K, x->shape[k], x->strides[k] * isz);
    }
  }
  uint64_t onum = 1;
  for (int k = 0; k < o->ndim; ++k) onum *= (uint64_t)o->shape[k];
  if (onum != nout)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output has %llu elements, expected %llu",
                     fn, (unsigned long long)onum, (unsigned long long)nout);
  if (nout == 0) return HWP_OK;
  if (o->buffer == NULL || (rlen > 0 && x->buffer == NULL))
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: NULL buffer", fn);
  if (rlen == 0) R.n = 0;

  int aligned = x->byte_offset % (uint64_t)isz == 0;
  for (int k = 0; k < R.n; ++k) aligned &= R.st[k] % isz == 0;
  for (int k = 0; k < K.n; ++k) aligned &= K.st[k] % isz == 0;

  cl_program prog;
  st = ocl_program_get(dev, OCL_RED_SLOT0 + (int)dt, k_red_source, g_red_options[dev][dt], &prog,
                       fn);
  if (st != HWP_OK) return st;
  char kname[64];
  const int row_fast = dt == HWP_DTYPE_FLOAT32 || dt == HWP_DTYPE_FLOAT16 ||
                       dt == HWP_DTYPE_BFLOAT16 ||
                       dt <= HWP_DTYPE_INT64; /* k_<op>_c's dtypes (mean: float only) */
  if (row_fast && strcmp(op->name, "prod") != 0 && R.n == 1 && R.st[0] == isz && aligned &&
      rlen >= 64)
    return red_contiguous(ctx, op, prog, &K, nout, rlen, dt, odt);
  if (dt == HWP_DTYPE_FLOAT32 && strcmp(op->name, "prod") != 0 && K.n == 1 && K.st[0] == 4 &&
      R.n >= 1 && aligned && nout >= 256)
    return red_kept_contiguous(ctx, op, prog, &R, nout, rlen, odt);
  snprintf(kname, sizeof kname, "k_%s", op->name);
  cl_kernel k1 = NULL, k2 = NULL;
  st = ocl_kernel_make(prog, kname, NULL, 0, &k1, fn);
  if (st != HWP_OK) return st;
  size_t cap = OCL_RED_MAX_LOCAL; /* ocl_kernel_wg also bounds it by the device and kernel */
  size_t local_max = ocl_kernel_wg(k1, dev, cap);
  size_t local = ocl_pow2_ceil(rlen);
  if (local > local_max) local = local_max;
  if (local == 0) local = 1;

  uint64_t chunks = 1, chunk = rlen > 0 ? rlen : 1;
  HWP_Buffer ws = NULL;
  size_t asz = acc_size(op, dt, dev);
  ocl_split_rows(ctx, nout, rlen, local, asz, &chunks, &chunk, &ws);

  cl_long16 ks, kst, rs, rst;
  ocl_dims_long16(&K, &ks, &kst);
  ocl_dims_long16(&R, &rs, &rst);
  cl_mem out = (cl_mem)o->buffer;
  cl_mem in = rlen > 0 ? (cl_mem)x->buffer : out;
  cl_mem part = ws != NULL ? (cl_mem)ws : out;
  cl_ulong out_off = o->byte_offset, in_off = x->byte_offset, crlen = rlen, cchunk = chunk;
  cl_int codt = odt, coal = (cl_int)dtype_size(odt), cal = aligned, ckd = K.n, crd = R.n;
  cl_uint cchunks = (cl_uint)chunks;
  const ocl_arg args1[18] = {
      OCL_ARG(out),   OCL_ARG(out_off), OCL_ARG(codt),   OCL_ARG(coal),   OCL_ARG(in),
      OCL_ARG(in_off), OCL_ARG(cal),    OCL_ARG(crlen),  OCL_ARG(cchunk), OCL_ARG(cchunks),
      OCL_ARG(ckd),   OCL_ARG(ks),      OCL_ARG(kst),    OCL_ARG(crd),    OCL_ARG(rs),
      OCL_ARG(rst),   OCL_ARG(part),    OCL_LOCAL(asz * local)};
  st = ocl_kernel_args(k1, 18, args1, fn);
  size_t local2 = 1;
  if (st == HWP_OK && chunks > 1) {
    snprintf(kname, sizeof kname, "k_%s_fin", op->name);
    st = ocl_kernel_make(prog, kname, NULL, 0, &k2, fn);
    if (st == HWP_OK) {
      local2 = ocl_kernel_wg(k2, dev, cap);
      size_t want2 = ocl_pow2_ceil(chunks);
      if (want2 < local2) local2 = want2;
      const ocl_arg args2[8] = {OCL_ARG(out),  OCL_ARG(out_off), OCL_ARG(codt),
                                OCL_ARG(coal), OCL_ARG(part),    OCL_ARG(cchunks),
                                OCL_LOCAL(asz * local2), OCL_ARG(crlen)};
      st = ocl_kernel_args(k2, 8, args2, fn);
    }
  }

  cl_command_queue q;
  if (st == HWP_OK) st = ocl_ctx_queue(ctx, &q, fn);
  if (st == HWP_OK) {
    size_t g1 = (size_t)(nout * chunks) * local;
    st = ocl_enqueue_nd(ctx, q, k1, 1, &g1, &local, fn);
  }
  if (st == HWP_OK && k2 != NULL) {
    size_t g2 = (size_t)nout * local2;
    st = ocl_enqueue_nd(ctx, q, k2, 1, &g2, &local2, fn);
  }
  ocl_kernel_release(k1); /* back to the kernel cache */
  if (k2 != NULL) ocl_kernel_release(k2);
  if (st != HWP_OK) return st;
  return ocl_launch_done(ctx, q, fn);
}


HWP_Status ocl_register_reduce_kernels(const HWP_HostApi *host) {
  if (g_ocl.num_devices == 0) return HWP_OK;
  int fp64_all = 1;
  for (int32_t d = 0; d < g_ocl.num_devices; ++d) {
    g_red_fp64[d] = ocl_device_has_fp64(g_ocl.devices[d].id);
    cl_device_type type = 0;
    g_red_cpu[d] = clGetDeviceInfo(g_ocl.devices[d].id, CL_DEVICE_TYPE, sizeof type, &type,
                                   NULL) == CL_SUCCESS &&
                   (type & CL_DEVICE_TYPE_CPU) != 0;
    fp64_all &= g_red_fp64[d];
    for (int dt = 0; dt < HWP_DTYPE_COUNT; ++dt)
      snprintf(g_red_options[d][dt], sizeof g_red_options[d][dt], "-DDT=%d%s", dt,
               g_red_fp64[d] ? " -DHAS_FP64=1" : "");
  }
  int count = 0;
  for (int i = 0; i < 5; ++i) {
    const uint32_t mask = i == 4 ? OCL_RED_FLOAT_DTYPES : OCL_RED_ALL_DTYPES;
    HWP_Status st = ocl_register_op(host, k_red_ops[i].name, mask, red_kernel,
                                    (void *)&k_red_ops[i], &count);
    if (st != HWP_OK) return st;
  }
  ocl_log(HWP_LOG_INFO, "opencl: registered %d reduction kernels (float64: %s)", count,
          fp64_all ? "yes" : "no");
  return HWP_OK;
}
