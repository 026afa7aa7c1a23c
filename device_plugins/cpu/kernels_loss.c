/* hwport CPU plugin — softmax cross entropy (ops.yaml cross_entropy) and its VJP
 * (cross_entropy_grad), each one pass over logits [N, C] with int32/int64 labels [N].
 *
 * float16/bfloat16/float32 rows compute in float32 (float64 in float64), the row sums in
 * double:
 *   cross_entropy       loss[n] = m + log(sum(exp(x - m))) - x[label], 0 where label ==
 *                       ignore_index; reduction none (per row), sum, or mean over the rows not
 *                       ignored (NaN when none is)
 *   cross_entropy_grad  y[n] = (softmax(x) - onehot(label)) * w[n], w[n] = grad (none:
 *                       grad[n]; mean: grad / the rows not ignored), 0 for an ignored row
 * A label outside [0, C) that is not ignore_index is refused (INVALID_ARGUMENT). */
#include "reduce_common.h"

typedef struct ce_plan {
  const char *op;
  int grad;      /* 0: cross_entropy, 1: cross_entropy_grad */
  int reduction; /* 0 none, 1 sum, 2 mean */
  int64_t ignore;
  cpu_view x, label, g, y;
} ce_plan;

static double ce_load(const cpu_view *v, int64_t off) {
  const char *p = v->base;
  switch (v->dtype) {
    case HWP_DTYPE_FLOAT16: return cpu_f16_to_f32(((const CPU_UA(uint16_t) *)p)[off]);
    case HWP_DTYPE_BFLOAT16: return cpu_bf16_to_f32(((const CPU_UA(uint16_t) *)p)[off]);
    case HWP_DTYPE_FLOAT32: return ((const cpu_ua_float *)p)[off];
    default: return ((const cpu_ua_double *)p)[off];
  }
}

static void ce_store(const cpu_view *v, int64_t off, double value) {
  char *p = v->base;
  switch (v->dtype) {
    case HWP_DTYPE_FLOAT16: ((CPU_UA(uint16_t) *)p)[off] = cpu_f32_to_f16((float)value); break;
    case HWP_DTYPE_BFLOAT16: ((CPU_UA(uint16_t) *)p)[off] = cpu_f32_to_bf16((float)value); break;
    case HWP_DTYPE_FLOAT32: ((cpu_ua_float *)p)[off] = (float)value; break;
    default: ((cpu_ua_double *)p)[off] = value; break;
  }
}

static int64_t ce_label(const ce_plan *P, int64_t n) {
  const char *p = P->label.base;
  const int64_t off = n * P->label.strides[0];
  return P->label.dtype == HWP_DTYPE_INT32 ? ((const CPU_UA(int32_t) *)p)[off]
                                           : ((const CPU_UA(int64_t) *)p)[off];
}

/* Row n of x in the compute type (float32, or float64 when f64) into buf; returns its max. */
static double ce_row(const ce_plan *P, int64_t n, int f64, void *buf) {
  const int64_t C = P->x.shape[1], s = P->x.strides[1], base = n * P->x.strides[0];
  double m = -INFINITY;
  if (f64) {
    double *r = buf;
    for (int64_t c = 0; c < C; ++c) {
      r[c] = ((const cpu_ua_double *)P->x.base)[base + c * s];
      m = r[c] > m ? r[c] : m;
    }
  } else {
    float *r = buf;
    float mf = -INFINITY;
    if (P->x.dtype == HWP_DTYPE_FLOAT32) {
      const cpu_ua_float *x = (const cpu_ua_float *)P->x.base + base;
      for (int64_t c = 0; c < C; ++c) r[c] = x[c * s];
    } else {
      for (int64_t c = 0; c < C; ++c) r[c] = (float)ce_load(&P->x, base + c * s);
    }
    for (int64_t c = 0; c < C; ++c) mf = r[c] > mf ? r[c] : mf;
    m = mf;
  }
  return m;
}

/* e[c] = exp(r[c] - m) in place; returns their sum (double). */
static double ce_exp(int64_t C, int f64, void *buf, double m) {
  double sum = 0.0;
  if (f64) {
    double *r = buf;
    for (int64_t c = 0; c < C; ++c) {
      r[c] = exp(r[c] - m);
      sum += r[c];
    }
  } else {
    float *r = buf;
    const float mf = (float)m;
    for (int64_t c = 0; c < C; ++c) r[c] = cpu_expf(r[c] - mf);
    for (int64_t c = 0; c < C; ++c) sum += r[c];
  }
  return sum;
}

static HWP_Status ce_run(void *payload) {
  ce_plan *P = payload;
  const int64_t N = P->x.shape[0], C = P->x.shape[1];
  const int f64 = P->x.dtype == HWP_DTYPE_FLOAT64;
  int64_t valid = 0;
  for (int64_t n = 0; n < N; ++n) { /* every label checked before anything is written */
    const int64_t l = ce_label(P, n);
    if (l == P->ignore) continue;
    if (l < 0 || l >= C)
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: label[%lld] = %lld is out of range [0, %lld) (ignore_index %lld)",
                       P->op, (long long)n, (long long)l, (long long)C, (long long)P->ignore);
    ++valid;
  }
  void *buf = cpu_scratch((size_t)(C > 0 ? C : 1) * (f64 ? sizeof(double) : sizeof(float)));
  if (buf == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for a row", P->op);
  double total = 0.0, g0 = 0.0;
  if (P->grad && P->reduction != 0) g0 = ce_load(&P->g, 0);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t l = ce_label(P, n);
    const int ignored = l == P->ignore;
    if (!P->grad) {
      double loss = 0.0;
      if (!ignored) {
        const double m = ce_row(P, n, f64, buf);
        const double s = ce_exp(C, f64, buf, m);
        const double xl = ce_load(&P->x, n * P->x.strides[0] + l * P->x.strides[1]);
        loss = m + log(s) - xl;
      }
      if (P->reduction == 0)
        ce_store(&P->y, n, loss);
      else
        total += loss;
      continue;
    }
    /* the gradient row */
    const double w = ignored ? 0.0
                     : P->reduction == 0 ? ce_load(&P->g, n * (P->g.ndim ? P->g.strides[0] : 0))
                     : P->reduction == 2 ? g0 / (double)valid
                                         : g0;
    const double m = ce_row(P, n, f64, buf);
    const double r = 1.0 / ce_exp(C, f64, buf, m);
    for (int64_t c = 0; c < C; ++c) {
      const double p = (f64 ? ((double *)buf)[c] : (double)((float *)buf)[c]) * r;
      ce_store(&P->y, n * C + c, (p - (c == l ? 1.0 : 0.0)) * w);
    }
  }
  free(buf);
  if (!P->grad && P->reduction != 0)
    ce_store(&P->y, 0, P->reduction == 1 ? total : valid ? total / (double)valid : NAN);
  return HWP_OK;
}

static HWP_Status ce_kernel(const HWP_KernelContext *ctx, int grad, const char *op) {
  HWP_Status st = cpu_check_context(ctx, op, grad ? 3 : 2, 1);
  if (st != HWP_OK) return st;
  ce_plan *P = calloc(1, sizeof *P);
  if (P == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no memory for the plan", op);
  P->op = op;
  P->grad = grad;
  if ((st = cpu_view_load(op, "logits", &ctx->inputs[0], &P->x)) != HWP_OK ||
      (st = cpu_view_load(op, "label", &ctx->inputs[1], &P->label)) != HWP_OK ||
      (grad && (st = cpu_view_load(op, "grad", &ctx->inputs[2], &P->g)) != HWP_OK) ||
      (st = cpu_view_load(op, "output 0", &ctx->outputs[0], &P->y)) != HWP_OK)
    goto fail;
  const char *reduction = "mean";
  HWP_Status ast = HWP_ERROR_NOT_FOUND;
  if (HWP_HAS_FIELD(ctx, HWP_KernelContext, get_attr) && ctx->get_attr != NULL)
    ast = ctx->get_attr(ctx, "reduction", HWP_ATTR_STRING, (void *)&reduction, NULL);
  if ((ast != HWP_OK && ast != HWP_ERROR_NOT_FOUND) || reduction == NULL) reduction = "";
  P->reduction = strcmp(reduction, "none") == 0 ? 0 : strcmp(reduction, "sum") == 0 ? 1
                 : strcmp(reduction, "mean") == 0 ? 2 : -1;
  P->ignore = hwp_attr_int64(ctx, "ignore_index", -100);
  const cpu_view *x = &P->x;
  if (!cpu_is_float_dtype(x->dtype) || x->ndim != 2 || P->reduction < 0 ||
      (P->label.dtype != HWP_DTYPE_INT32 && P->label.dtype != HWP_DTYPE_INT64) ||
      P->label.ndim != 1 || P->label.shape[0] != x->shape[0] || P->y.dtype != x->dtype) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                   "%s: expected float logits [N, C], an int32/int64 label [N], reduction "
                   "none/sum/mean and an output of logits' dtype", op);
    goto fail;
  }
  const int64_t N = x->shape[0];
  /* the loss's shape: [N] for none, [] otherwise; the gradient's: logits' */
  const int want_ndim = grad ? 2 : P->reduction == 0 ? 1 : 0;
  const int g_ndim = P->reduction == 0 ? 1 : 0;
  int ok = P->y.ndim == want_ndim && (want_ndim == 0 || P->y.shape[0] == N) &&
           (want_ndim < 2 || P->y.shape[1] == x->shape[1]);
  if (grad)
    ok = ok && P->g.dtype == x->dtype && P->g.ndim == g_ndim && (g_ndim == 0 || P->g.shape[0] == N);
  if (!ok) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                   "%s: %s has the wrong shape or dtype for logits [%lld, %lld] and reduction "
                   "%s", op, grad && P->y.ndim == want_ndim ? "grad" : "the output",
                   (long long)N, (long long)x->shape[1], reduction);
    goto fail;
  }
  if ((st = cpu_rview_require_contiguous(op, &P->y)) != HWP_OK) goto fail;
  if (N == 0 && (grad || P->reduction == 0)) {
    free(P);
    return HWP_OK;
  }
  return cpu_submit_call(ctx, op, ce_run, free, P, (uint64_t)(x->numel > 0 ? x->numel : 1));
fail:
  free(P);
  return st;
}

static HWP_Status kernel_cross_entropy(const HWP_KernelContext *ctx) {
  return ce_kernel(ctx, 0, "cross_entropy");
}
static HWP_Status kernel_cross_entropy_grad(const HWP_KernelContext *ctx) {
  return ce_kernel(ctx, 1, "cross_entropy_grad");
}

void cpu_register_loss_kernels(const HWP_HostApi *host) {
  for (HWP_DType d = HWP_DTYPE_FLOAT16; d <= HWP_DTYPE_FLOAT64; ++d) {
    cpu_register_one(host, "cross_entropy", d, kernel_cross_entropy, HWP_KERNEL_ACCEPTS_STRIDED);
    cpu_register_one(host, "cross_entropy_grad", d, kernel_cross_entropy_grad,
                     HWP_KERNEL_ACCEPTS_STRIDED);
  }
}
