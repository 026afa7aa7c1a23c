/* hwport CPU plugin — the generated unary/binary elementwise kernels (math, rounding, compare,
 * logical, bitwise), where, and the native kernels of the elementwise composites (relu,
 * sigmoid, gelu, clip, greater_than, ...: ops.yaml `native`).
 *
 * The op list, each op's C expression and the dtypes it registers for come from phi_ops/ops.yaml
 * through the generated table elementwise_ops.h (phi_ops/codegen/gen_cpu_elementwise.py); this
 * file expands it into one inner loop per (op, dtype) and one kernel per op. Values are loaded
 * into a compute type (elementwise_math.h): bool as _Bool, integers as themselves, float16 and
 * bfloat16 as float (rounded back to nearest even on store), float32 as float, float64 as
 * double. Ops with a bool result store (value != 0). A composite's attributes are read once
 * per launch (hwps_native_attrs) into the task's aux slots, which its loop declares as locals of
 * the compute type (CPU_EW_LOAD_ATTRS_<op>).
 *
 * Where the C expression alone is not numpy's semantics for every dtype, the op's expression is
 * overridden below (before the table is included): integer subtract/neg wrap, floor_divide and
 * remainder follow Python (numpy's divmod for floats, 0 for integer division by zero), sign
 * keeps NaN, bitwise_not on bool is logical; sigmoid and silu compute ops.yaml's sigmoid form
 * through cpu_ew_sigmoid (float32: one vector function, fast_vmathf.h). add and multiply keep
 * their hand-written kernels (kernels_binary.c). */
#include <stdlib.h>
#include <string.h>

#include "elementwise_iter.h"
#include "elementwise_math.h"
#include "kernels.h"
#include "native_attrs.h"

#define CPU_EW_SKIP_add 1      /* kernels_binary.c */
#define CPU_EW_SKIP_multiply 1 /* kernels_binary.c */
#define CPU_EW_EXPR_neg(x) cpu_ew_neg(x)
#define CPU_EW_EXPR_subtract(x, y) cpu_ew_sub(x, y)
#define CPU_EW_EXPR_floor_divide(x, y) cpu_ew_floor_divide(x, y)
#define CPU_EW_EXPR_remainder(x, y) cpu_ew_remainder(x, y)
#define CPU_EW_EXPR_sign(x) cpu_ew_sign(x)
#define CPU_EW_EXPR_bitwise_not(x) cpu_ew_bitwise_not(x)
/* ops.yaml's sigmoid expression, float32 through one vector function (elementwise_math.h) */
#define CPU_EW_EXPR_sigmoid(x) cpu_ew_sigmoid(x)
#define CPU_EW_EXPR_silu(x) ((x) * cpu_ew_sigmoid(x))
#include "elementwise_ops.h"

/* ---- per dtype: compute type, load (storage -> compute), store (compute -> storage) ------- */

#define EW_CT_bool_ _Bool
#define EW_CT_int8 int8_t
#define EW_CT_uint8 uint8_t
#define EW_CT_int16 int16_t
#define EW_CT_int32 int32_t
#define EW_CT_int64 int64_t
#define EW_CT_float16 float
#define EW_CT_bfloat16 float
#define EW_CT_float32 float
#define EW_CT_float64 double

#define EW_LD_bool_(v) ((_Bool)((v) != 0))
#define EW_LD_int8(v) (v)
#define EW_LD_uint8(v) (v)
#define EW_LD_int16(v) (v)
#define EW_LD_int32(v) (v)
#define EW_LD_int64(v) (v)
#define EW_LD_float16(v) cpu_f16_to_f32(v)
#define EW_LD_bfloat16(v) cpu_bf16_to_f32(v)
#define EW_LD_float32(v) (v)
#define EW_LD_float64(v) (v)

#define EW_STS_bool_(v) ((uint8_t)((v) != 0))
#define EW_STS_int8(v) ((int8_t)(v))
#define EW_STS_uint8(v) ((uint8_t)(v))
#define EW_STS_int16(v) ((int16_t)(v))
#define EW_STS_int32(v) ((int32_t)(v))
#define EW_STS_int64(v) ((int64_t)(v))
#define EW_STS_float16(v) cpu_f32_to_f16((float)(v))
#define EW_STS_bfloat16(v) cpu_f32_to_bf16((float)(v))
#define EW_STS_float32(v) ((float)(v))
#define EW_STS_float64(v) ((double)(v))

/* The output: OUT_SAME = the input's dtype, OUT_BOOL = bool. */
#define EW_OT_OUT_SAME(T) T
#define EW_OT_OUT_BOOL(T) uint8_t
#define EW_ST_OUT_SAME(name, v) EW_STS_##name(v)
#define EW_ST_OUT_BOOL(name, v) ((uint8_t)((v) != 0))
#define EW_OUT_DTYPE_OUT_SAME(d) (d)
#define EW_OUT_DTYPE_OUT_BOOL(d) HWP_DTYPE_BOOL

/* The tables call M(arg, CODE, name, T) with arg = (op, OUT): unpack it. */
#define EW_CALL(m, ...) m(__VA_ARGS__)
#define EW_UNPACK(op, OUT) op, OUT

/* ---- inner loops ------------------------------------------------------------------------ */

/* Unary: contiguous (vectorized), else strided. Element types with alignment 1: views carry no
 * alignment promise. */
#define EW_UNARY_LOOP(args, CODE, name, T) EW_CALL(EW_UNARY_LOOP_, EW_UNPACK args, name, T, , )
#define EW_UNARY_LOOP_(op, OUT, name, T, isa, attrs)                                           \
  attrs static void ew_##op##_##name##isa(char *const *p, const int64_t *s, int64_t n,         \
                                          const void *aux) {                                   \
    typedef EW_OT_##OUT(T) ew_ot;                                                              \
    typedef ew_ot ew_uo __attribute__((aligned(1)));                                           \
    typedef T ew_ui __attribute__((aligned(1)));                                               \
    typedef EW_CT_##name ew_ct;                                                                \
    (void)sizeof(ew_ct);                                                                       \
    (void)aux;                                                                                 \
    CPU_EW_LOAD_ATTRS_##op(aux)                                                                \
    if (s[0] == (int64_t)sizeof(ew_ot) && s[1] == (int64_t)sizeof(T)) {                        \
      ew_uo *o = (ew_uo *)p[0];                                                                \
      const ew_ui *x = (const ew_ui *)p[1];                                                    \
      CPU_EW_HOIST_##op(for (int64_t i = 0; i < n; ++i) {                                      \
        EW_CT_##name a = EW_LD_##name(x[i]);                                                   \
        o[i] = EW_ST_##OUT(name, CPU_EW_EXPR_##op(a));                                         \
      })                                                                                       \
    } else {                                                                                   \
      char *po = p[0];                                                                         \
      const char *px = p[1];                                                                   \
      CPU_EW_HOIST_##op(for (int64_t i = 0; i < n; ++i, po += s[0], px += s[1]) {              \
        EW_CT_##name a = EW_LD_##name(*(const ew_ui *)px);                                     \
        *(ew_uo *)po = EW_ST_##OUT(name, CPU_EW_EXPR_##op(a));                                 \
      })                                                                                       \
    }                                                                                          \
  }

/* Binary: contiguous, contiguous with a broadcast scalar on either side, else strided. */
#define EW_BINARY_LOOP(args, CODE, name, T) EW_CALL(EW_BINARY_LOOP_, EW_UNPACK args, name, T, , )
#define EW_BINARY_LOOP_(op, OUT, name, T, isa, attrs)                                          \
  attrs static void ew_##op##_##name##isa(char *const *p, const int64_t *s, int64_t n,         \
                                          const void *aux) {                                   \
    typedef EW_OT_##OUT(T) ew_ot;                                                              \
    typedef ew_ot ew_uo __attribute__((aligned(1)));                                           \
    typedef T ew_ui __attribute__((aligned(1)));                                               \
    const int64_t so = (int64_t)sizeof(ew_ot), si = (int64_t)sizeof(T);                        \
    typedef EW_CT_##name ew_ct;                                                                \
    (void)sizeof(ew_ct);                                                                       \
    (void)aux;                                                                                 \
    CPU_EW_LOAD_ATTRS_##op(aux)                                                                \
    if (s[0] == so && s[1] == si && s[2] == si) {                                              \
      ew_uo *o = (ew_uo *)p[0];                                                                \
      const ew_ui *x = (const ew_ui *)p[1], *y = (const ew_ui *)p[2];                          \
      CPU_EW_HOIST_##op(for (int64_t i = 0; i < n; ++i) {                                      \
        EW_CT_##name a = EW_LD_##name(x[i]), b = EW_LD_##name(y[i]);                           \
        o[i] = EW_ST_##OUT(name, CPU_EW_EXPR_##op(a, b));                                      \
      })                                                                                       \
    } else if (s[0] == so && s[1] == si && s[2] == 0) {                                        \
      ew_uo *o = (ew_uo *)p[0];                                                                \
      const ew_ui *x = (const ew_ui *)p[1];                                                    \
      const EW_CT_##name b = EW_LD_##name(*(const ew_ui *)p[2]);                               \
      CPU_EW_HOIST_##op(for (int64_t i = 0; i < n; ++i) {                                      \
        EW_CT_##name a = EW_LD_##name(x[i]);                                                   \
        o[i] = EW_ST_##OUT(name, CPU_EW_EXPR_##op(a, b));                                      \
      })                                                                                       \
    } else if (s[0] == so && s[1] == 0 && s[2] == si) {                                        \
      ew_uo *o = (ew_uo *)p[0];                                                                \
      const ew_ui *y = (const ew_ui *)p[2];                                                    \
      const EW_CT_##name a = EW_LD_##name(*(const ew_ui *)p[1]);                               \
      CPU_EW_HOIST_##op(for (int64_t i = 0; i < n; ++i) {                                      \
        EW_CT_##name b = EW_LD_##name(y[i]);                                                   \
        o[i] = EW_ST_##OUT(name, CPU_EW_EXPR_##op(a, b));                                      \
      })                                                                                       \
    } else {                                                                                   \
      char *po = p[0];                                                                         \
      const char *px = p[1], *py = p[2];                                                       \
      CPU_EW_HOIST_##op(for (int64_t i = 0; i < n; ++i, po += s[0], px += s[1], py += s[2]) {  \
        EW_CT_##name a = EW_LD_##name(*(const ew_ui *)px);                                     \
        EW_CT_##name b = EW_LD_##name(*(const ew_ui *)py);                                     \
        *(ew_uo *)po = EW_ST_##OUT(name, CPU_EW_EXPR_##op(a, b));                              \
      })                                                                                       \
    }                                                                                          \
  }

/* Ternary (where): a bool condition selects between two values of the dtype, moved as stored
 * (bit-exact, no conversion). Operands: output, condition, x, y. The contiguous cases are a
 * branch-free bit select over unsigned integers of the element's size, both values loaded, so
 * they vectorize (cloned for AVX2 and AVX-512 where GCC supports it): with a random condition
 * the branchy `c ? x : y` mispredicted half the time (4.7 ms for 1M float32, now ~0.6 ms). */
#define EW_UT_bool_ uint8_t
#define EW_UT_int8 uint8_t
#define EW_UT_uint8 uint8_t
#define EW_UT_int16 uint16_t
#define EW_UT_int32 uint32_t
#define EW_UT_int64 uint64_t
#define EW_UT_float16 uint16_t
#define EW_UT_bfloat16 uint16_t
#define EW_UT_float32 uint32_t
#define EW_UT_float64 uint64_t
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(HWPORT_CPU_NO_DISPATCH)
#define EW_SELECT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define EW_SELECT_CLONES
#endif
#define EW_SEL(cv, a, b, U) (((a) & (U)((U)0 - (U)((cv) != 0))) | ((b) & (U) ~(U)((U)0 - (U)((cv) != 0))))
#define EW_TERNARY_LOOP(args, CODE, name, T) EW_CALL(EW_TERNARY_LOOP_, EW_UNPACK args, name, T)
#define EW_TERNARY_LOOP_(op, OUT, name, T)                                                     \
  EW_SELECT_CLONES static void ew_##op##_##name##_sel(                                          \
      EW_UT_##name *o, const uint8_t *c, const EW_UT_##name *x, const EW_UT_##name *y,          \
      int64_t sx, int64_t sy, int64_t n) {                                                     \
    typedef EW_UT_##name U;                                                                    \
    if (sx && sy) {                                                                            \
      for (int64_t i = 0; i < n; ++i) {                                                        \
        const U a = x[i], b = y[i];                                                            \
        o[i] = EW_SEL(c[i], a, b, U);                                                          \
      }                                                                                        \
    } else if (sx) {                                                                           \
      const U b = y[0];                                                                        \
      for (int64_t i = 0; i < n; ++i) {                                                        \
        const U a = x[i];                                                                      \
        o[i] = EW_SEL(c[i], a, b, U);                                                          \
      }                                                                                        \
    } else if (sy) {                                                                           \
      const U a = x[0];                                                                        \
      for (int64_t i = 0; i < n; ++i) {                                                        \
        const U b = y[i];                                                                      \
        o[i] = EW_SEL(c[i], a, b, U);                                                          \
      }                                                                                        \
    } else {                                                                                   \
      const U a = x[0], b = y[0];                                                              \
      for (int64_t i = 0; i < n; ++i) o[i] = EW_SEL(c[i], a, b, U);                            \
    }                                                                                          \
  }                                                                                            \
  static void ew_##op##_##name(char *const *p, const int64_t *s, int64_t n, const void *aux) { \
    typedef T ew_u __attribute__((aligned(1)));                                                \
    typedef EW_UT_##name ew_bits __attribute__((aligned(1), may_alias));                       \
    const int64_t sz = (int64_t)sizeof(T);                                                     \
    (void)aux;                                                                                 \
    if (s[0] == sz && s[1] == 1 && (s[2] == sz || s[2] == 0) && (s[3] == sz || s[3] == 0) &&   \
        ((uintptr_t)p[0] | (uintptr_t)p[2] | (uintptr_t)p[3]) % sizeof(ew_bits) == 0) {        \
      ew_##op##_##name##_sel((ew_bits *)p[0], (const uint8_t *)p[1], (const ew_bits *)p[2],    \
                             (const ew_bits *)p[3], s[2] != 0, s[3] != 0, n);                  \
    } else if (s[0] == sz && s[1] == 1 && (s[2] == sz || s[2] == 0) &&                         \
               (s[3] == sz || s[3] == 0)) {                                                    \
      ew_u *o = (ew_u *)p[0];                                                                  \
      const uint8_t *c = (const uint8_t *)p[1];                                                \
      const ew_u *x = (const ew_u *)p[2], *y = (const ew_u *)p[3];                             \
      const int64_t ix = s[2] != 0, iy = s[3] != 0;                                            \
      for (int64_t i = 0; i < n; ++i) o[i] = CPU_EW_EXPR_##op(c[i] != 0, x[i * ix], y[i * iy]); \
    } else {                                                                                   \
      char *po = p[0];                                                                         \
      const char *pc = p[1], *px = p[2], *py = p[3];                                           \
      for (int64_t i = 0; i < n; ++i, po += s[0], pc += s[1], px += s[2], py += s[3])          \
        *(ew_u *)po = CPU_EW_EXPR_##op(*(const uint8_t *)pc != 0, *(const ew_u *)px,           \
                                       *(const ew_u *)py);                                     \
    }                                                                                          \
  }

#define EW_DEFINE_UNARY_LOOPS(op, OUT) CPU_EW_DTYPES_##op(EW_UNARY_LOOP, (op, OUT))
#define EW_DEFINE_BINARY_LOOPS(op, OUT) CPU_EW_DTYPES_##op(EW_BINARY_LOOP, (op, OUT))
#define EW_DEFINE_TERNARY_LOOPS(op, OUT) CPU_EW_DTYPES_##op(EW_TERNARY_LOOP, (op, OUT))
CPU_EW_UNARY_OPS(EW_DEFINE_UNARY_LOOPS)
CPU_EW_BINARY_OPS(EW_DEFINE_BINARY_LOOPS)
CPU_EW_TERNARY_OPS(EW_DEFINE_TERNARY_LOOPS)

/* The float loops again for AVX2+FMA+F16C and AVX-512, one of which is chosen at load
 * (cpu_ew_select_simd; no -march flags): math-bound ops (SLEEF's vector math, cpu_expf, the
 * composites over them) then run at full vector width, not at the baseline's SSE2, and float16
 * / bfloat16 convert 8 or 16 lanes at a time instead of one by one. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(HWPORT_CPU_NO_DISPATCH)
#define EW_SIMD 1
#include <cpuid.h>

#include "half_simd.h"
#define EW_AVX2_ATTRS __attribute__((target("avx2,fma,f16c")))
#define EW_AVX512_ATTRS __attribute__((target("avx512f,avx512dq,avx512bw,fma,f16c")))
/* EW_IF_SIMD_<CODE>(x): x for the dtypes that get the wider loops, nothing for the others. */
#define EW_IF_SIMD_FLOAT32(...) __VA_ARGS__
#define EW_IF_SIMD_FLOAT64(...) __VA_ARGS__
#define EW_IF_SIMD_FLOAT16(...) __VA_ARGS__
#define EW_IF_SIMD_BFLOAT16(...) __VA_ARGS__
#define EW_IF_SIMD_BOOL(...)
#define EW_IF_SIMD_INT8(...)
#define EW_IF_SIMD_UINT8(...)
#define EW_IF_SIMD_INT16(...)
#define EW_IF_SIMD_INT32(...)
#define EW_IF_SIMD_INT64(...)
/* The loop per dtype: float16/bfloat16 go by chunks converted to float32 (half_simd.h). */
#define EW_UNARY_ISA_FLOAT32 EW_UNARY_LOOP_
#define EW_UNARY_ISA_FLOAT64 EW_UNARY_LOOP_
#define EW_UNARY_ISA_FLOAT16 EW_UNARY_HALF_LOOP_
#define EW_UNARY_ISA_BFLOAT16 EW_UNARY_HALF_LOOP_
#define EW_BINARY_ISA_FLOAT32 EW_BINARY_LOOP_
#define EW_BINARY_ISA_FLOAT64 EW_BINARY_LOOP_
#define EW_BINARY_ISA_FLOAT16 EW_BINARY_HALF_LOOP_
#define EW_BINARY_ISA_BFLOAT16 EW_BINARY_HALF_LOOP_

/* float16/bfloat16 with a contiguous output: EW_HALF_CHUNK elements at a time converted to
 * float32 at vector width (any input stride; 0 broadcasts), the op's float expression over the
 * chunk (vectorized like float32's), the results converted back. Other outputs: the baseline
 * loop. */
#define EW_HALF_CHUNK 256
#define EW_HALF_APPLY_OUT_SAME(op, name, isa, out, a, m, expr)                                 \
  CPU_EW_HOIST_##op(for (int64_t j = 0; j < m; ++j) a[j] = (float)(expr);)                     \
  cpu_half_store_##name##isa(out, a, m);
#define EW_HALF_APPLY_OUT_BOOL(op, name, isa, out, a, m, expr)                                 \
  CPU_EW_HOIST_##op(                                                                            \
      for (int64_t j = 0; j < m; ++j) ((uint8_t *)(out))[j] = (uint8_t)((expr) != 0);)
#define EW_HALF_LOOP_HEAD(op, OUT, name, T, isa)                                               \
  typedef EW_OT_##OUT(T) ew_ot;                                                                \
  typedef float ew_ct;                                                                         \
  (void)sizeof(ew_ct);                                                                         \
  (void)aux;                                                                                   \
  CPU_EW_LOAD_ATTRS_##op(aux)                                                                  \
  if (s[0] != (int64_t)sizeof(ew_ot)) {                                                        \
    ew_##op##_##name(p, s, n, aux);                                                            \
    return;                                                                                    \
  }
#define EW_UNARY_HALF_LOOP_(op, OUT, name, T, isa, attrs)                                      \
  attrs static void ew_##op##_##name##isa(char *const *p, const int64_t *s, int64_t n,         \
                                          const void *aux) {                                   \
    EW_HALF_LOOP_HEAD(op, OUT, name, T, isa)                                                   \
    float a[EW_HALF_CHUNK];                                                                    \
    for (int64_t i0 = 0; i0 < n; i0 += EW_HALF_CHUNK) {                                        \
      const int64_t m = n - i0 < EW_HALF_CHUNK ? n - i0 : EW_HALF_CHUNK;                       \
      cpu_half_load_##name##isa(a, p[1] + i0 * s[1], s[1], m);                                 \
      EW_HALF_APPLY_##OUT(op, name, isa, p[0] + i0 * s[0], a, m, CPU_EW_EXPR_##op(a[j]))       \
    }                                                                                          \
  }
#define EW_BINARY_HALF_LOOP_(op, OUT, name, T, isa, attrs)                                     \
  attrs static void ew_##op##_##name##isa(char *const *p, const int64_t *s, int64_t n,         \
                                          const void *aux) {                                   \
    EW_HALF_LOOP_HEAD(op, OUT, name, T, isa)                                                   \
    float a[EW_HALF_CHUNK], b[EW_HALF_CHUNK];                                                  \
    for (int64_t i0 = 0; i0 < n; i0 += EW_HALF_CHUNK) {                                        \
      const int64_t m = n - i0 < EW_HALF_CHUNK ? n - i0 : EW_HALF_CHUNK;                       \
      cpu_half_load_##name##isa(a, p[1] + i0 * s[1], s[1], m);                                 \
      cpu_half_load_##name##isa(b, p[2] + i0 * s[2], s[2], m);                                 \
      EW_HALF_APPLY_##OUT(op, name, isa, p[0] + i0 * s[0], a, m, CPU_EW_EXPR_##op(a[j], b[j])) \
    }                                                                                          \
  }

#define EW_SIMD_UNARY(args, CODE, name, T)                                                     \
  EW_IF_SIMD_##CODE(                                                                           \
      EW_CALL(EW_UNARY_ISA_##CODE, EW_UNPACK args, name, T, _avx2, EW_AVX2_ATTRS)              \
      EW_CALL(EW_UNARY_ISA_##CODE, EW_UNPACK args, name, T, _avx512, EW_AVX512_ATTRS))
#define EW_SIMD_BINARY(args, CODE, name, T)                                                    \
  EW_IF_SIMD_##CODE(                                                                           \
      EW_CALL(EW_BINARY_ISA_##CODE, EW_UNPACK args, name, T, _avx2, EW_AVX2_ATTRS)             \
      EW_CALL(EW_BINARY_ISA_##CODE, EW_UNPACK args, name, T, _avx512, EW_AVX512_ATTRS))
#define EW_DEFINE_SIMD_UNARY_LOOPS(op, OUT) CPU_EW_DTYPES_##op(EW_SIMD_UNARY, (op, OUT))
#define EW_DEFINE_SIMD_BINARY_LOOPS(op, OUT) CPU_EW_DTYPES_##op(EW_SIMD_BINARY, (op, OUT))
CPU_EW_UNARY_OPS(EW_DEFINE_SIMD_UNARY_LOOPS)
CPU_EW_BINARY_OPS(EW_DEFINE_SIMD_BINARY_LOOPS)
#endif

/* 0: the baseline loops, 1: AVX2+FMA, 2: AVX-512 F+DQ+BW (set once at load; BW gives the
 * float16/bfloat16 conversions 512-bit word packs: bfloat16 exp 1.4x faster). */
static int g_ew_isa = 0;

int cpu_ew_simd_level(void) { return g_ew_isa; }

void cpu_ew_select_simd(void) {
#ifdef EW_SIMD
  __builtin_cpu_init();
  unsigned a = 0, b = 0, c = 0, d = 0;
  const int f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
  if (!f16c || !__builtin_cpu_supports("fma")) return; /* every AVX2 CPU has both */
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw"))
    g_ew_isa = 2;
  else if (__builtin_cpu_supports("avx2"))
    g_ew_isa = 1;
#endif
}

/* ---- kernels ---------------------------------------------------------------------------- */

/* Per op: the inner loop of each registered dtype (NULL: not registered), and the output dtype
 * rule (-1: the input's dtype). */
typedef struct ew_op {
  const char *name;
  int arity;
  HWP_DType out; /* HWP_DTYPE_BOOL, or -1 for "the input's dtype" */
  cpu_inner_fn fn[HWP_DTYPE_COUNT];
  cpu_inner_fn fn_isa[2][HWP_DTYPE_COUNT]; /* AVX2, AVX-512 loops (float dtypes); or NULL */
  int nattrs; /* attributes a native composite's expression reads (into aux.attr) */
  const hwps_attr_spec *attrs;
  int math; /* the expression calls vector math: compute-bound, big outputs keep plain stores */
} ew_op;

#define EW_FN_ENTRY(op, CODE, name, T) [HWP_DTYPE_##CODE] = ew_##op##_##name,
#ifdef EW_SIMD
#define EW_FN_AVX2(op, CODE, name, T) EW_IF_SIMD_##CODE([HWP_DTYPE_##CODE] = ew_##op##_##name##_avx2, )
#define EW_FN_AVX512(op, CODE, name, T)                                                        \
  EW_IF_SIMD_##CODE([HWP_DTYPE_##CODE] = ew_##op##_##name##_avx512, )
#define EW_FN_ISA(op) {{CPU_EW_DTYPES_##op(EW_FN_AVX2, op)}, {CPU_EW_DTYPES_##op(EW_FN_AVX512, op)}}
#else
#define EW_FN_ISA(op) EW_NO_ISA
#endif
#define EW_NO_ISA {{NULL}, {NULL}}
#define EW_OUT_OUT_SAME (-1)
#define EW_OUT_OUT_BOOL HWP_DTYPE_BOOL
#define EW_OP_TABLE(op, OUT, ARITY, ISA)                                                       \
  static const hwps_attr_spec ew_attrs_##op[] = {CPU_EW_ATTR_SPECS_##op{NULL, 0, 0}};          \
  static const ew_op ew_op_##op = {#op,                                                        \
                                   ARITY,                                                      \
                                   EW_OUT_##OUT,                                               \
                                   {CPU_EW_DTYPES_##op(EW_FN_ENTRY, op)},                      \
                                   ISA,                                                        \
                                   CPU_EW_NATTRS_##op,                                         \
                                   ew_attrs_##op,                                              \
                                   CPU_EW_MATH_##op};
#define EW_UNARY_TABLE(op, OUT) EW_OP_TABLE(op, OUT, 1, EW_FN_ISA(op))
#define EW_BINARY_TABLE(op, OUT) EW_OP_TABLE(op, OUT, 2, EW_FN_ISA(op))
#define EW_TERNARY_TABLE(op, OUT) EW_OP_TABLE(op, OUT, 3, EW_NO_ISA)
CPU_EW_UNARY_OPS(EW_UNARY_TABLE)
CPU_EW_BINARY_OPS(EW_BINARY_TABLE)
CPU_EW_TERNARY_OPS(EW_TERNARY_TABLE)

/* Checks the context and the dtypes; returns the loop to run. Inputs share the key dtype d
 * (binary: the promoted dtype; ternary: x and y, the condition is bool). */
static HWP_Status ew_check(const HWP_KernelContext *ctx, const ew_op *op, cpu_inner_fn *fn) {
  HWP_Status st = cpu_check_context(ctx, op->name, op->arity, 1);
  if (st != HWP_OK) return st;
  const int key = op->arity == 3 ? 1 : 0;
  const HWP_DType d = ctx->inputs[key].dtype;
  if (CPU_UNLIKELY(d < 0 || d >= HWP_DTYPE_COUNT || op->fn[d] == NULL))
    return cpu_error(HWP_ERROR_NOT_SUPPORTED, "%s: no cpu kernel for input dtype %s", op->name,
                     cpu_dtype_name(d));
  for (int i = 0; i < op->arity; ++i) {
    HWP_DType want = (op->arity == 3 && i == 0) ? HWP_DTYPE_BOOL : d;
    if (CPU_UNLIKELY(ctx->inputs[i].dtype != want))
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: input %d has dtype %s, expected %s",
                       op->name, i, cpu_dtype_name(ctx->inputs[i].dtype), cpu_dtype_name(want));
  }
  const HWP_DType out = op->out < 0 ? d : op->out;
  if (CPU_UNLIKELY(ctx->outputs[0].dtype != out))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: output has dtype %s, expected %s", op->name,
                     cpu_dtype_name(ctx->outputs[0].dtype), cpu_dtype_name(out));
  *fn = op->fn[d];
  if (g_ew_isa > 0 && op->fn_isa[g_ew_isa - 1][d] != NULL) *fn = op->fn_isa[g_ew_isa - 1][d];
  return HWP_OK;
}

/* Unary, binary and ternary ops: a regular elementwise task (cpu_elementwise_run splits big ones over
 * the thread pool). */
static HWP_Status ew_launch(const HWP_KernelContext *ctx, const ew_op *op) {
  cpu_inner_fn fn = NULL;
  HWP_Status st = ew_check(ctx, op, &fn);
  if (st != HWP_OK) return st;
  cpu_task task;
  uint64_t nelems;
  st = cpu_prepare_task(ctx, op->name, &task, &nelems);
  if (st != HWP_OK) return st;
  task.u.ew.fn = fn;
  task.u.ew.plain_stores = op->math;
  if (op->nattrs > 0) { /* read now: the context dies on return */
    st = hwps_native_attrs(ctx, op->name, op->attrs, op->nattrs, ctx->inputs[0].dtype,
                           task.u.ew.aux.attr);
    if (st != HWP_OK) return st;
  }
  return cpu_launch(ctx, op->name, &task, nelems);
}


/* ---- one kernel function per op, and registration --------------------------------------- */

#define EW_UNARY_KERNEL(op, OUT)                                                               \
  static HWP_Status ew_kernel_##op(const HWP_KernelContext *ctx) {                             \
    return ew_launch(ctx, &ew_op_##op);                                                        \
  }
#define EW_TERNARY_KERNEL(op, OUT)                                                             \
  static HWP_Status ew_kernel_##op(const HWP_KernelContext *ctx) {                             \
    return ew_launch(ctx, &ew_op_##op);                                                        \
  }
CPU_EW_UNARY_OPS(EW_UNARY_KERNEL)
CPU_EW_BINARY_OPS(EW_UNARY_KERNEL)
CPU_EW_TERNARY_OPS(EW_TERNARY_KERNEL)

void cpu_register_elementwise_kernels(const HWP_HostApi *host) {
#define EW_REGISTER_ONE(op, CODE, name, T)                                                     \
  cpu_register_one(host, #op, HWP_DTYPE_##CODE, ew_kernel_##op, HWP_KERNEL_ACCEPTS_STRIDED);
#define EW_REGISTER(op, OUT) CPU_EW_DTYPES_##op(EW_REGISTER_ONE, op)
  CPU_EW_UNARY_OPS(EW_REGISTER)
  CPU_EW_BINARY_OPS(EW_REGISTER)
  CPU_EW_TERNARY_OPS(EW_REGISTER)
#undef EW_REGISTER
#undef EW_REGISTER_ONE
}
