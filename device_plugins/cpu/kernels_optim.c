/* hwport CPU plugin — fused optimizer updates (composite ops of ops.yaml's optimizer section):
 *
 *   adam_update  p = param * decay; m = moment1 * beta1 + grad * (1 - beta1);
 *                v = moment2 * beta2 + grad * grad * (1 - beta2);
 *                param_out = p - m / (sqrt(v) + epsilon) * lr
 *
 * One pass over the four inputs instead of the decomposition's eleven elementwise launches and
 * their temporaries. float32 and float64 only (the other dtypes decompose), computed in the
 * dtype with the decomposition's operations in its order; this file is built without
 * floating-point contraction (CMakeLists.txt), so the bytes match the decomposition's, and
 * without errno for sqrt (a NaN for a negative v, as the sqrt kernel gives), so it vectorizes.
 * Contiguous inputs (the host copies views); each output is either disjoint from every input
 * or, as the optimizers launch it, its own input (param_out = param, ...: updated in place,
 * no fresh memory to fault in and no copy back). Multithreaded over elements. */
#include "reduce_common.h"

typedef struct adam_plan {
  HWP_DType dt;
  const char *param, *grad, *m1, *m2;
  char *param_out, *m1_out, *m2_out;
  int in_place; /* the outputs are param, moment1, moment2 themselves */
  int64_t n;
  /* The attrs, in double; each loop rounds them to its dtype once. */
  double beta1, one_minus_beta1, beta2, one_minus_beta2, epsilon, lr, decay;
} adam_plan;

/* The loops over [begin, end), their pointers as restrict parameters so that they vectorize
 * (in place, each array is read and written through one pointer); built for AVX-512, AVX2 and
 * the baseline, picked at load time (ifunc). ADAM_STEP reads p/m/v at i and writes them. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ADAM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ADAM_CLONES
#endif
#define ADAM_STEP(SQRT, P_IN, M_IN, V_IN, P_OUT, M_OUT, V_OUT, DECAYED)                       \
  for (int64_t i = begin; i < end; ++i) {                                                      \
    const T gi = g[i], m = M_IN[i] * b1 + gi * ob1, v = V_IN[i] * b2 + (gi * gi) * ob2;        \
    const T pi = DECAYED ? P_IN[i] * decay : P_IN[i];                                          \
    M_OUT[i] = m;                                                                              \
    V_OUT[i] = v;                                                                              \
    P_OUT[i] = pi - (m / (SQRT(v) + eps)) * lr;                                                \
  }
/* A loop's body: the attrs in T (c[0..7)), then the step with or without the decay. */
#define ADAM_BODY(T_, SQRT, P_IN, M_IN, V_IN, P_OUT, M_OUT, V_OUT)                             \
  typedef T_ T;                                                                                \
  const T b1 = c[0], ob1 = c[1], b2 = c[2], ob2 = c[3], eps = c[4], lr = c[5], decay = c[6];   \
  if (decayed) {                                                                               \
    ADAM_STEP(SQRT, P_IN, M_IN, V_IN, P_OUT, M_OUT, V_OUT, 1)                                  \
  } else {                                                                                     \
    ADAM_STEP(SQRT, P_IN, M_IN, V_IN, P_OUT, M_OUT, V_OUT, 0)                                  \
  }
#define ADAM_DEFINE_CHUNK(NAME, T_, SQRT)                                                      \
  ADAM_CLONES static void NAME##_apart(const T_ *restrict p, const T_ *restrict g,             \
                                       const T_ *restrict m1, const T_ *restrict m2,           \
                                       T_ *restrict po, T_ *restrict mo, T_ *restrict vo,      \
                                       int64_t begin, int64_t end, const T_ *c, int decayed) { \
    ADAM_BODY(T_, SQRT, p, m1, m2, po, mo, vo)                                                 \
  }                                                                                            \
  ADAM_CLONES static void NAME##_in_place(T_ *restrict p, const T_ *restrict g,                \
                                          T_ *restrict m1, T_ *restrict m2, int64_t begin,     \
                                          int64_t end, const T_ *c, int decayed) {             \
    ADAM_BODY(T_, SQRT, p, m1, m2, p, m1, m2)                                                  \
  }                                                                                            \
  static void NAME(void *ctx, int64_t begin, int64_t end) {                                    \
    const adam_plan *P = ctx;                                                                  \
    const T_ c[7] = {(T_)P->beta1, (T_)P->one_minus_beta1, (T_)P->beta2,                       \
                     (T_)P->one_minus_beta2, (T_)P->epsilon, (T_)P->lr, (T_)P->decay};         \
    const int decayed = P->decay != 1.0;                                                       \
    if (P->in_place)                                                                           \
      NAME##_in_place((T_ *)P->param_out, (const T_ *)P->grad, (T_ *)P->m1_out,                \
                      (T_ *)P->m2_out, begin, end, c, decayed);                                \
    else                                                                                       \
      NAME##_apart((const T_ *)P->param, (const T_ *)P->grad, (const T_ *)P->m1,               \
                   (const T_ *)P->m2, (T_ *)P->param_out, (T_ *)P->m1_out, (T_ *)P->m2_out,    \
                   begin, end, c, decayed);                                                    \
  }

ADAM_DEFINE_CHUNK(adam_chunk_f32, float, sqrtf)
ADAM_DEFINE_CHUNK(adam_chunk_f64, double, sqrt)

/* Whether [a, a + n) and [b, b + n) share a byte. */
static int overlaps(const char *a, const char *b, int64_t n) { return a < b + n && b < a + n; }

#ifndef ADAM_GRAIN
#define ADAM_GRAIN 65536
#endif
static HWP_Status adam_run(void *payload) {
  adam_plan *P = payload;
  /* A chunk of 16K elements reads 4 and writes 3 arrays of them: ~10 µs, worth a thread. */
  cpu_parallel_for(P->n, ADAM_GRAIN, P->dt == HWP_DTYPE_FLOAT64 ? adam_chunk_f64 : adam_chunk_f32,
                   P);
  return HWP_OK;
}

static HWP_Status kernel_adam_update(const HWP_KernelContext *ctx) {
  static const char op[] = "adam_update";
  static const char *const in_names[] = {"param", "grad", "moment1", "moment2"};
  static const char *const out_names[] = {"param_out", "moment1_out", "moment2_out"};
  HWP_Status st = cpu_check_context(ctx, op, 4, 3);
  if (st != HWP_OK) return st;
  cpu_view v[7]; /* inputs, then outputs */
  for (int k = 0; k < 7; ++k) {
    const HWP_TensorView *tv = k < 4 ? &ctx->inputs[k] : &ctx->outputs[k - 4];
    const char *what = k < 4 ? in_names[k] : out_names[k - 4];
    if ((st = cpu_view_load(op, what, tv, &v[k])) != HWP_OK) return st;
    if ((st = cpu_rview_require_contiguous(op, &v[k])) != HWP_OK) return st;
    if (v[k].dtype != v[0].dtype || v[k].numel != v[0].numel)
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: %s (%s, %lld elements) must match param (%s, %lld elements)", op,
                       what, cpu_dtype_name(v[k].dtype), (long long)v[k].numel,
                       cpu_dtype_name(v[0].dtype), (long long)v[0].numel);
  }
  if (v[0].dtype != HWP_DTYPE_FLOAT32 && v[0].dtype != HWP_DTYPE_FLOAT64)
    return cpu_error(HWP_ERROR_NOT_SUPPORTED, "%s: dtype %s is not supported (float32, float64)",
                     op, cpu_dtype_name(v[0].dtype));
  if (v[0].numel == 0) return HWP_OK;
  adam_plan *P = calloc(1, sizeof *P);
  if (P == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for the plan", op);
  P->dt = v[0].dtype;
  P->param = v[0].base;
  P->grad = v[1].base;
  P->m1 = v[2].base;
  P->m2 = v[3].base;
  P->param_out = v[4].base;
  P->m1_out = v[5].base;
  P->m2_out = v[6].base;
  P->n = v[0].numel;
  /* Each output is its own input (param_out = param, ...) or disjoint from every operand. */
  static const int own_input[3] = {0, 2, 3};
  const int64_t bytes = P->n * v[0].itemsize;
  int aliased = 0;
  for (int o = 0; o < 3; ++o) {
    aliased += v[4 + o].base == v[own_input[o]].base;
    for (int k = 0; k < 7; ++k) {
      if (k == 4 + o || (k == own_input[o] && v[k].base == v[4 + o].base)) continue;
      if (overlaps(v[4 + o].base, v[k].base, bytes)) {
        free(P);
        return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                         "%s: %s overlaps %s (an output is its own input or disjoint from "
                         "every operand)", op, out_names[o], k < 4 ? in_names[k] : out_names[k - 4]);
      }
    }
  }
  if (aliased != 0 && aliased != 3) {
    free(P);
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: %d of the 3 outputs are their own inputs; in place means all three "
                     "(param_out = param, moment1_out = moment1, moment2_out = moment2)", op,
                     aliased);
  }
  P->in_place = aliased == 3;
  P->beta1 = hwp_attr_float64(ctx, "beta1", 0.9);
  P->beta2 = hwp_attr_float64(ctx, "beta2", 0.999);
  P->one_minus_beta1 = 1.0 - P->beta1;
  P->one_minus_beta2 = 1.0 - P->beta2;
  P->epsilon = hwp_attr_float64(ctx, "epsilon", 1e-8);
  P->lr = hwp_attr_float64(ctx, "lr", 1e-3);
  P->decay = hwp_attr_float64(ctx, "decay", 1.0);
  return cpu_submit_call(ctx, op, adam_run, free, P, (uint64_t)P->n * 7); /* takes P */
}

void cpu_register_optim_kernels(const HWP_HostApi *host) {
  cpu_register_one(host, "adam_update", HWP_DTYPE_FLOAT32, kernel_adam_update, 0);
  cpu_register_one(host, "adam_update", HWP_DTYPE_FLOAT64, kernel_adam_update, 0);
}
