/* hwport CPU plugin — binary elementwise kernels: add and multiply, for every dtype.
 *
 * bool: add = logical or, multiply = logical and. Integers wrap (computed in unsigned types).
 * float16/bfloat16 compute in float32 and round to nearest even on the way back. */
#include "kernels.h"

/* Per dtype: storage type T, compute type CT, load (T -> CT), store (CT -> T). */
#define LD_bool_(x) ((uint32_t)((x) != 0))
#define ST_bool_(v) ((uint8_t)((v) != 0))
#define LD_int8(x) ((uint32_t)(x))
#define ST_int8(v) ((int8_t)(v))
#define LD_uint8(x) ((uint32_t)(x))
#define ST_uint8(v) ((uint8_t)(v))
#define LD_int16(x) ((uint32_t)(x))
#define ST_int16(v) ((int16_t)(v))
#define LD_int32(x) ((uint32_t)(x))
#define ST_int32(v) ((int32_t)(v))
#define LD_int64(x) ((uint64_t)(x))
#define ST_int64(v) ((int64_t)(v))
#define LD_float16(x) cpu_f16_to_f32(x)
#define ST_float16(v) cpu_f32_to_f16(v)
#define LD_bfloat16(x) cpu_bf16_to_f32(x)
#define ST_bfloat16(v) cpu_f32_to_bf16(v)
#define LD_float32(x) (x)
#define ST_float32(v) (v)
#define LD_float64(x) (x)
#define ST_float64(v) (v)

#define CT_bool_ uint32_t
#define CT_int8 uint32_t
#define CT_uint8 uint32_t
#define CT_int16 uint32_t
#define CT_int32 uint32_t
#define CT_int64 uint64_t
#define CT_float16 float
#define CT_bfloat16 float
#define CT_float32 float
#define CT_float64 double

/* The ops on loaded values. bool loads 0/1 and stores (v != 0), so + is "or" and * is "and". */
#define OP_add(a, b) ((a) + (b))
#define OP_multiply(a, b) ((a) * (b))

/* One inner loop: contiguous, contiguous x broadcast scalar (either side), then general. */
#define CPU_DEFINE_BINARY_LOOP(OP, OPEXPR, name, T)                                            \
  static void OP##_##name(char *const *p, const int64_t *s, int64_t n, const void *aux) {      \
    (void)aux;                                                                                 \
    typedef CPU_UA(T) UA; /* any alignment */                                                  \
    const int64_t sz = (int64_t)sizeof(T);                                                     \
    if (s[0] == sz && s[1] == sz && s[2] == sz) {                                              \
      UA *o = (UA *)p[0];                                                                      \
      const UA *x = (const UA *)p[1], *y = (const UA *)p[2];                                   \
      for (int64_t i = 0; i < n; ++i) {                                                        \
        CT_##name a = LD_##name(x[i]), b = LD_##name(y[i]);                                    \
        o[i] = ST_##name(OPEXPR(a, b));                                                        \
      }                                                                                        \
    } else if (s[0] == sz && s[1] == sz && s[2] == 0) {                                        \
      UA *o = (UA *)p[0];                                                                      \
      const UA *x = (const UA *)p[1];                                                          \
      const CT_##name b = LD_##name(*(const UA *)p[2]);                                        \
      for (int64_t i = 0; i < n; ++i) {                                                        \
        CT_##name a = LD_##name(x[i]);                                                         \
        o[i] = ST_##name(OPEXPR(a, b));                                                        \
      }                                                                                        \
    } else if (s[0] == sz && s[1] == 0 && s[2] == sz) {                                        \
      UA *o = (UA *)p[0];                                                                      \
      const UA *y = (const UA *)p[2];                                                          \
      const CT_##name a = LD_##name(*(const UA *)p[1]);                                        \
      for (int64_t i = 0; i < n; ++i) {                                                        \
        CT_##name b = LD_##name(y[i]);                                                         \
        o[i] = ST_##name(OPEXPR(a, b));                                                        \
      }                                                                                        \
    } else {                                                                                   \
      char *po = p[0];                                                                         \
      const char *px = p[1], *py = p[2];                                                       \
      for (int64_t i = 0; i < n; ++i, po += s[0], px += s[1], py += s[2]) {                    \
        CT_##name a = LD_##name(*(const UA *)px), b = LD_##name(*(const UA *)py);              \
        *(UA *)po = ST_##name(OPEXPR(a, b));                                                   \
      }                                                                                        \
    }                                                                                          \
  }

#define CPU_DEFINE_ADD(CODE, name, T) CPU_DEFINE_BINARY_LOOP(add, OP_add, name, T)
#define CPU_DEFINE_MUL(CODE, name, T) CPU_DEFINE_BINARY_LOOP(multiply, OP_multiply, name, T)
CPU_FOR_EACH_DTYPE(CPU_DEFINE_ADD)
CPU_FOR_EACH_DTYPE(CPU_DEFINE_MUL)

/* float16/bfloat16 with a contiguous output, for AVX2+F16C and AVX-512 (chosen at load, see
 * cpu_ew_simd_level): chunks converted to float32 at vector width (half_simd.h), added or
 * multiplied, converted back. Other outputs: the loops above. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(HWPORT_CPU_NO_DISPATCH)
#include "half_simd.h"
#define BIN_HALF 1
#define BIN_HALF_CHUNK 64
#define CPU_DEFINE_HALF_LOOP(OP, OPEXPR, name, isa, ATTRS, W, VOP)                             \
  ATTRS static void OP##_##name##isa(char *const *p, const int64_t *s, int64_t n,              \
                                     const void *aux) {                                        \
    if (s[0] != 2) {                                                                           \
      OP##_##name(p, s, n, aux);                                                               \
      return;                                                                                  \
    }                                                                                          \
    if (s[1] == 2 && s[2] == 2) { /* contiguous: fused per vector, two vectors a step */       \
      char *o = p[0];                                                                          \
      const char *x = p[1], *y = p[2];                                                         \
      int64_t i = 0;                                                                           \
      for (; i + 2 * W <= n; i += 2 * W) {                                                     \
        cpu_h16_store_##name##isa(o + 2 * i, VOP(cpu_h16_load_##name##isa(x + 2 * i),          \
                                                 cpu_h16_load_##name##isa(y + 2 * i)));        \
        cpu_h16_store_##name##isa(o + 2 * (i + W),                                             \
                                  VOP(cpu_h16_load_##name##isa(x + 2 * (i + W)),               \
                                      cpu_h16_load_##name##isa(y + 2 * (i + W))));             \
      }                                                                                        \
      if (i == n) return;                                                                      \
      char *q[3] = {o + 2 * i, (char *)x + 2 * i, (char *)y + 2 * i};                          \
      OP##_##name(q, s, n - i, aux);                                                           \
      return;                                                                                  \
    }                                                                                          \
    float a[BIN_HALF_CHUNK], b[BIN_HALF_CHUNK];                                                \
    for (int64_t i0 = 0; i0 < n; i0 += BIN_HALF_CHUNK) {                                       \
      const int64_t m = n - i0 < BIN_HALF_CHUNK ? n - i0 : BIN_HALF_CHUNK;                     \
      cpu_half_load_##name##isa(a, p[1] + i0 * s[1], s[1], m);                                 \
      cpu_half_load_##name##isa(b, p[2] + i0 * s[2], s[2], m);                                 \
      for (int64_t j = 0; j < m; ++j) a[j] = OPEXPR(a[j], b[j]);                               \
      cpu_half_store_##name##isa(p[0] + i0 * 2, a, m);                                         \
    }                                                                                          \
  }
#define BIN_AVX2 __attribute__((target("avx2,fma,f16c")))
#define BIN_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,fma,f16c")))
#define CPU_DEFINE_HALF_LOOPS(OP, OPEXPR, V8, V16)                                             \
  CPU_DEFINE_HALF_LOOP(OP, OPEXPR, float16, _avx2, BIN_AVX2, 8, V8)                            \
  CPU_DEFINE_HALF_LOOP(OP, OPEXPR, bfloat16, _avx2, BIN_AVX2, 8, V8)                           \
  CPU_DEFINE_HALF_LOOP(OP, OPEXPR, float16, _avx512, BIN_AVX512, 16, V16)                      \
  CPU_DEFINE_HALF_LOOP(OP, OPEXPR, bfloat16, _avx512, BIN_AVX512, 16, V16)
CPU_DEFINE_HALF_LOOPS(add, OP_add, _mm256_add_ps, _mm512_add_ps)
CPU_DEFINE_HALF_LOOPS(multiply, OP_multiply, _mm256_mul_ps, _mm512_mul_ps)
static const cpu_inner_fn g_add_half[2][2] = {{add_float16_avx2, add_bfloat16_avx2},
                                             {add_float16_avx512, add_bfloat16_avx512}};
static const cpu_inner_fn g_multiply_half[2][2] = {
    {multiply_float16_avx2, multiply_bfloat16_avx2},
    {multiply_float16_avx512, multiply_bfloat16_avx512}};
#endif

#define CPU_ADD_ENTRY(CODE, name, T) [HWP_DTYPE_##CODE] = add_##name,
#define CPU_MUL_ENTRY(CODE, name, T) [HWP_DTYPE_##CODE] = multiply_##name,
static const cpu_inner_fn g_add[HWP_DTYPE_COUNT] = {CPU_FOR_EACH_DTYPE(CPU_ADD_ENTRY)};
static const cpu_inner_fn g_multiply[HWP_DTYPE_COUNT] = {CPU_FOR_EACH_DTYPE(CPU_MUL_ENTRY)};

static HWP_Status binary(const HWP_KernelContext *ctx, const char *op,
                         const cpu_inner_fn *table) {
  HWP_Status st = cpu_check_context(ctx, op, 2, 1);
  if (st != HWP_OK) return st;
  HWP_DType d = ctx->outputs[0].dtype;
  if (CPU_UNLIKELY(d < 0 || d >= HWP_DTYPE_COUNT || ctx->inputs[0].dtype != d ||
                   ctx->inputs[1].dtype != d))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: inputs and output must share one dtype, got %s, %s -> %s", op,
                     cpu_dtype_name(ctx->inputs[0].dtype), cpu_dtype_name(ctx->inputs[1].dtype),
                     cpu_dtype_name(d));
  cpu_task task;
  uint64_t nelems;
  st = cpu_prepare_task(ctx, op, &task, &nelems);
  if (st != HWP_OK) return st;
  task.u.ew.fn = table[d];
#ifdef BIN_HALF
  const int level = cpu_ew_simd_level();
  if (level > 0 && (d == HWP_DTYPE_FLOAT16 || d == HWP_DTYPE_BFLOAT16))
    task.u.ew.fn = (table == g_add ? g_add_half : g_multiply_half)[level - 1]
                                                                  [d == HWP_DTYPE_BFLOAT16];
#endif
  return cpu_launch(ctx, op, &task, nelems);
}

HWP_Status cpu_kernel_add(const HWP_KernelContext *ctx) { return binary(ctx, "add", g_add); }

HWP_Status cpu_kernel_multiply(const HWP_KernelContext *ctx) {
  return binary(ctx, "multiply", g_multiply);
}
