/* hwport CPU plugin — concat, pad, gather, take_along_axis, scatter, argsort, arange.
 *
 * Each kernel validates its views and attributes on the calling thread, copies what it needs
 * into a malloc'd payload and enqueues it on the stream (cpu_submit_call); the payload runs on
 * the stream's worker, spread over cpu_parallel_for. Data movement is by item size, so one
 * kernel serves every dtype. Inputs may be any strided view (strides 0 or negative, any byte
 * offset); outputs are contiguous (the code honours whatever strides they carry).
 *
 * Index values are checked by the host before launching; the kernels check them again while
 * they run (a bad one fails the stream's work with HWP_ERROR_INVALID_ARGUMENT, never touching
 * memory out of bounds), since the values only exist once earlier stream work has run.
 *
 * Semantics (phi_ops/reference.py): scatter assign lets the last duplicate row win; scatter add
 * ors bool, wraps integers and accumulates floats in double (x, then the updates in index
 * order) rounded once; argsort is stable, NaN last ascending / first descending, -0.0 == 0.0;
 * arange computes in wrapping int64 (integer dtypes) or in double rounded once (floats). */
#include <stdio.h>

#include "convert.h"
#include "dims.h"
#include "index_nd.h"

/* ---- shared checks --------------------------------------------------------------------------- */

/* The work of a launch (for the inline decision): its element count. */
static uint64_t work_of(const cpu_view *v) { return (uint64_t)v->numel; }

/* Checks that dims k != skip of `a` and `b` agree (ndim equal already). */
static HWP_Status same_except(const char *op, const char *an, const cpu_view *a,
                              const char *bn, const cpu_view *b, int skip) {
  for (int k = 0; k < a->ndim; ++k)
    if (k != skip && a->shape[k] != b->shape[k])
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: %s has shape[%d] = %lld but %s has %lld", op, bn, k,
                       (long long)b->shape[k], an, (long long)a->shape[k]);
  return HWP_OK;
}

static HWP_Status same_dtype(const char *op, const char *what, const cpu_view *v,
                             HWP_DType want) {
  if (CPU_UNLIKELY(v->dtype != want))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has dtype %s, expected %s", op, what,
                     cpu_dtype_name(v->dtype), cpu_dtype_name(want));
  return HWP_OK;
}

static HWP_Status same_ndim(const char *op, const char *what, const cpu_view *v, int ndim) {
  if (CPU_UNLIKELY(v->ndim != ndim))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has ndim %d, expected %d", op, what,
                     (int)v->ndim, ndim);
  return HWP_OK;
}

static HWP_Status index_view(const char *op, const cpu_view *v) {
  if (CPU_UNLIKELY(!cpu_is_index_dtype(v->dtype)))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: index has dtype %s (expected int32 or int64)", op,
                     cpu_dtype_name(v->dtype));
  return HWP_OK;
}

static HWP_Status bad_index_error(const char *op, int64_t value, int64_t limit) {
  return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: index %lld is out of range [0, %lld)", op,
                   (long long)value, (long long)limit);
}

/* ---- indirect copies: dst[e] = src[e * ss + index[e] * as] ----------------------------------- */

#define CPU_DEFINE_GATHER_RUN(N, T)                                                            \
  static void gather_run_##N(char *dst, int64_t ds, const char *src, int64_t ss, int64_t as,   \
                             const char *ip, int64_t is, HWP_DType idt, int64_t limit,         \
                             int64_t n, int *bad, int64_t *bad_value) {                        \
    typedef CPU_UA(T) UA;                                                                      \
    for (int64_t e = 0; e < n; ++e, dst += ds, src += ss, ip += is) {                          \
      int64_t j = cpu_load_index(ip, idt);                                                     \
      if (CPU_UNLIKELY((uint64_t)j >= (uint64_t)limit)) {                                      \
        cpu_flag_bad_index(bad, bad_value, j);                                                 \
        continue;                                                                              \
      }                                                                                        \
      *(UA *)dst = *(const UA *)(src + j * as);                                                \
    }                                                                                          \
  }
CPU_DEFINE_GATHER_RUN(1, uint8_t)
CPU_DEFINE_GATHER_RUN(2, uint16_t)
CPU_DEFINE_GATHER_RUN(4, uint32_t)
CPU_DEFINE_GATHER_RUN(8, uint64_t)
#undef CPU_DEFINE_GATHER_RUN

static void gather_run(int64_t itemsize, char *dst, int64_t ds, const char *src, int64_t ss,
                       int64_t as, const char *ip, int64_t is, HWP_DType idt, int64_t limit,
                       int64_t n, int *bad, int64_t *bad_value) {
  switch (itemsize) {
  case 1: gather_run_1(dst, ds, src, ss, as, ip, is, idt, limit, n, bad, bad_value); break;
  case 2: gather_run_2(dst, ds, src, ss, as, ip, is, idt, limit, n, bad, bad_value); break;
  case 4: gather_run_4(dst, ds, src, ss, as, ip, is, idt, limit, n, bad, bad_value); break;
  default: gather_run_8(dst, ds, src, ss, as, ip, is, idt, limit, n, bad, bad_value); break;
  }
}

/* ---- concat ---------------------------------------------------------------------------------- */

typedef struct concat_payload {
  cpu_view out;
  int axis, n;
  int64_t *cum; /* n + 1 prefix sums of the inputs' lengths along axis */
  cpu_view *in;
} concat_payload;

/* The input holding output position `pos` along the axis (the last of equal prefix sums, so
 * empty inputs are skipped). */
static int concat_find(const concat_payload *p, int64_t pos) {
  int lo = 0, hi = p->n - 1;
  while (lo < hi) {
    int mid = lo + (hi - lo + 1) / 2;
    if (p->cum[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

static void concat_block(void *c, const int64_t *idx, int64_t n) {
  const concat_payload *p = c;
  const int nd = p->out.ndim, last = nd - 1, a = p->axis;
  const int64_t it = p->out.itemsize, ds = it * p->out.strides[last];
  char *dst = p->out.base + it * cpu_offset(idx, p->out.strides, nd, -1);
  int64_t pos = idx[a];
  while (n > 0) {
    int j = concat_find(p, pos);
    const cpu_view *x = &p->in[j];
    const char *src = x->base + it * (cpu_offset(idx, x->strides, nd, a) +
                                      (pos - p->cum[j]) * x->strides[a]);
    if (a != last) { /* the run lies inside one input */
      cpu_copy_run(dst, ds, src, it * x->strides[last], n, it);
      return;
    }
    int64_t m = p->cum[j + 1] - pos;
    if (m > n) m = n;
    cpu_copy_run(dst, ds, src, it * x->strides[a], m, it);
    dst += m * ds;
    pos += m;
    n -= m;
  }
}

static HWP_Status concat_run(void *c) {
  concat_payload *p = c;
  cpu_nd_for(p->out.ndim, p->out.shape, CPU_ND_BLOCK, CPU_ND_GRAIN, concat_block, p);
  return HWP_OK;
}

static HWP_Status cpu_kernel_concat(const HWP_KernelContext *ctx) {
  const char *op = "concat";
  int32_t nin = HWP_HAS_FIELD(ctx, HWP_KernelContext, num_inputs) && ctx->num_inputs >= 1
                    ? ctx->num_inputs
                    : 1;
  HWP_Status st = cpu_check_context(ctx, op, nin, 1);
  if (st != HWP_OK) return st;
  size_t bytes = sizeof(concat_payload) + (size_t)nin * sizeof(cpu_view) +
                 ((size_t)nin + 1) * sizeof(int64_t);
  concat_payload *p = malloc(bytes);
  if (p == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", op);
  p->in = (cpu_view *)(p + 1);
  p->cum = (int64_t *)(p->in + nin);
  p->n = nin;
  st = cpu_view_load(op, "output 0", &ctx->outputs[0], &p->out);
  if (st != HWP_OK) goto fail;
  const int nd = p->out.ndim;
  if (nd < 1) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must have rank >= 1", op);
    goto fail;
  }
  if ((st = cpu_attr_axis(ctx, op, nd, 0, 0, &p->axis)) != HWP_OK) goto fail;
  p->cum[0] = 0;
  for (int i = 0; i < nin; ++i) {
    char name[32];
    snprintf(name, sizeof name, "input %d", i);
    cpu_view *x = &p->in[i];
    if ((st = cpu_view_load(op, name, &ctx->inputs[i], x)) != HWP_OK) goto fail;
    if ((st = same_dtype(op, name, x, p->out.dtype)) != HWP_OK) goto fail;
    if ((st = same_ndim(op, name, x, nd)) != HWP_OK) goto fail;
    if ((st = same_except(op, "the output", &p->out, name, x, p->axis)) != HWP_OK) goto fail;
    if (__builtin_add_overflow(p->cum[i], x->shape[p->axis], &p->cum[i + 1])) {
      st = cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: lengths along the axis overflow", op);
      goto fail;
    }
  }
  if (p->cum[nin] != p->out.shape[p->axis]) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                   "%s: the inputs' lengths along axis %d add up to %lld, the output has %lld",
                   op, p->axis, (long long)p->cum[nin], (long long)p->out.shape[p->axis]);
    goto fail;
  }
  return cpu_submit_payload(ctx, op, concat_run, p, work_of(&p->out));
fail:
  free(p);
  return st;
}

/* ---- pad ------------------------------------------------------------------------------------- */

typedef struct pad_payload {
  cpu_view out, x;
  int64_t before[HWP_MAX_NDIM];
  uint64_t value; /* the fill element's bytes */
} pad_payload;

static void pad_block(void *c, const int64_t *idx, int64_t n) {
  const pad_payload *p = c;
  const int nd = p->out.ndim, last = nd - 1;
  const int64_t it = p->out.itemsize, ds = it * p->out.strides[last];
  char *dst = p->out.base + it * cpu_offset(idx, p->out.strides, nd, -1);
  int64_t xoff = 0;
  for (int k = 0; k < last; ++k) {
    int64_t i = idx[k] - p->before[k];
    if (i < 0 || i >= p->x.shape[k]) { /* the whole run is padding */
      cpu_fill_run(dst, ds, &p->value, n, it);
      return;
    }
    xoff += i * p->x.strides[k];
  }
  const int64_t lo = p->before[last], hi = lo + p->x.shape[last];
  int64_t s = idx[last];
  const int64_t e = s + n;
  int64_t t = e < lo ? e : lo;
  if (t > s) {
    cpu_fill_run(dst, ds, &p->value, t - s, it);
    dst += (t - s) * ds;
    s = t;
  }
  t = e < hi ? e : hi;
  if (t > s) {
    const int64_t xs = p->x.strides[last];
    cpu_copy_run(dst, ds, p->x.base + it * (xoff + (s - lo) * xs), it * xs, t - s, it);
    dst += (t - s) * ds;
    s = t;
  }
  if (e > s) cpu_fill_run(dst, ds, &p->value, e - s, it);
}

static HWP_Status pad_run(void *c) {
  pad_payload *p = c;
  cpu_nd_for(p->out.ndim, p->out.shape, CPU_ND_BLOCK, CPU_ND_GRAIN, pad_block, p);
  return HWP_OK;
}

/* Reads attribute `name` converted to `dtype` like fill's value: INT64 first for integer and
 * bool dtypes (exact), else FLOAT64 (float16/bfloat16 round to nearest even). */
static HWP_Status value_attr(const HWP_KernelContext *ctx, const char *op, const char *name,
                             HWP_DType dtype, int required, void *bytes) {
  int64_t iv = 0;
  double fv = 0.0;
  int have_int = 0, have_float = 0;
  HWP_Status st;
  if (cpu_is_float_dtype(dtype)) {
    have_float = (st = cpu_get_attr(ctx, name, HWP_ATTR_FLOAT64, &fv, NULL)) == HWP_OK;
    if (!have_float)
      have_int = (st = cpu_get_attr(ctx, name, HWP_ATTR_INT64, &iv, NULL)) == HWP_OK;
  } else {
    have_int = (st = cpu_get_attr(ctx, name, HWP_ATTR_INT64, &iv, NULL)) == HWP_OK;
    if (!have_int)
      have_float = (st = cpu_get_attr(ctx, name, HWP_ATTR_FLOAT64, &fv, NULL)) == HWP_OK;
  }
  if (!have_int && !have_float) {
    if (st != HWP_ERROR_NOT_FOUND || required)
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: attribute '%s' is %s (expected an int64 or float64)", op, name,
                       st == HWP_ERROR_NOT_FOUND ? "missing" : "not a number");
    have_int = 1; /* absent: 0 */
  }
  switch (dtype) {
#define CPU_VALUE_CASE(CODE, dname, T)                                                         \
  case HWP_DTYPE_##CODE: {                                                                     \
    T t = have_int ? CPU_CV_KI_##dname(iv) : CPU_CV_KD_##dname(fv);                            \
    memcpy(bytes, &t, sizeof t);                                                               \
    return HWP_OK;                                                                             \
  }
    CPU_FOR_EACH_DTYPE(CPU_VALUE_CASE)
#undef CPU_VALUE_CASE
  default:
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: unknown dtype %d", op, (int)dtype);
  }
}

static HWP_Status cpu_kernel_pad(const HWP_KernelContext *ctx) {
  const char *op = "pad";
  HWP_Status st = cpu_check_context(ctx, op, 1, 1);
  if (st != HWP_OK) return st;
  pad_payload *p = calloc(1, sizeof *p);
  if (p == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", op);
  if ((st = cpu_view_load(op, "output 0", &ctx->outputs[0], &p->out)) != HWP_OK) goto fail;
  if ((st = cpu_view_load(op, "input 0", &ctx->inputs[0], &p->x)) != HWP_OK) goto fail;
  if ((st = same_dtype(op, "input 0", &p->x, p->out.dtype)) != HWP_OK) goto fail;
  const int nd = p->out.ndim;
  if ((st = same_ndim(op, "input 0", &p->x, nd)) != HWP_OK) goto fail;
  const int64_t *pads = NULL;
  int64_t count = -1;
  st = cpu_get_attr(ctx, "pad", HWP_ATTR_INT64_ARRAY, (void *)&pads, &count);
  if (st != HWP_OK) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute 'pad' is %s (expected int64s)", op,
                   st == HWP_ERROR_NOT_FOUND ? "missing" : "not an int64 array");
    goto fail;
  }
  /* (before, after) pairs from the first dim; a shorter list leaves the last dims unpadded */
  if (count < 0 || count % 2 != 0 || count > 2 * nd || (count > 0 && pads == NULL)) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                   "%s: attribute 'pad' has %lld values, expected (before, after) pairs for at "
                   "most ndim = %d dims",
                   op, (long long)count, nd);
    goto fail;
  }
  for (int k = 0; k < nd; ++k) {
    int64_t b = 2 * k < count ? pads[2 * k] : 0, a = 2 * k < count ? pads[2 * k + 1] : 0, total;
    if (b < 0 || a < 0 || __builtin_add_overflow(p->x.shape[k], b, &total) ||
        __builtin_add_overflow(total, a, &total) || total != p->out.shape[k]) {
      st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: dim %d: input %lld padded by (%lld, %lld) does not give the output's "
                     "%lld (pads must be non-negative)",
                     op, k, (long long)p->x.shape[k], (long long)b, (long long)a,
                     (long long)p->out.shape[k]);
      goto fail;
    }
    p->before[k] = b;
  }
  if ((st = value_attr(ctx, op, "value", p->out.dtype, 0, &p->value)) != HWP_OK) goto fail;
  cpu_xview_promote0(&p->out);
  cpu_xview_promote0(&p->x);
  return cpu_submit_payload(ctx, op, pad_run, p, work_of(&p->out));
fail:
  free(p);
  return st;
}

/* ---- gather ---------------------------------------------------------------------------------- */

/* The views gather, take_along_axis and scatter share: output 0, x (the output's dtype) and an
 * integer index (inputs 0 and 1). */
static HWP_Status load_indexed(const HWP_KernelContext *ctx, const char *op, cpu_view *out,
                               cpu_view *x, cpu_view *index) {
  HWP_Status st;
  if ((st = cpu_view_load(op, "output 0", &ctx->outputs[0], out)) != HWP_OK) return st;
  if ((st = cpu_view_load(op, "x", &ctx->inputs[0], x)) != HWP_OK) return st;
  if ((st = cpu_view_load(op, "index", &ctx->inputs[1], index)) != HWP_OK) return st;
  if ((st = same_dtype(op, "x", x, out->dtype)) != HWP_OK) return st;
  return index_view(op, index);
}

typedef struct gather_payload {
  cpu_view out, x, index;
  int axis;
  int bad;
  int64_t bad_value;
  cpu_view given_index; /* embedding: the index as given, when it is not one strided run */
} gather_payload;

static void gather_block(void *c, const int64_t *idx, int64_t n) {
  gather_payload *p = c;
  const int nd = p->out.ndim, last = nd - 1, a = p->axis;
  const int64_t it = p->out.itemsize, ds = it * p->out.strides[last];
  const int64_t limit = p->x.shape[a], ii = p->index.itemsize, is = p->index.strides[0];
  char *dst = p->out.base + it * cpu_offset(idx, p->out.strides, nd, -1);
  const int64_t xoff = cpu_offset(idx, p->x.strides, nd, a);
  if (a != last) { /* one index value for the whole run */
    int64_t j = cpu_load_index(p->index.base + ii * idx[a] * is, p->index.dtype);
    if (CPU_UNLIKELY((uint64_t)j >= (uint64_t)limit)) {
      cpu_flag_bad_index(&p->bad, &p->bad_value, j);
      return;
    }
    cpu_copy_run(dst, ds, p->x.base + it * (xoff + j * p->x.strides[a]),
                 it * p->x.strides[last], n, it);
  } else {
    gather_run(it, dst, ds, p->x.base + it * xoff, 0, it * p->x.strides[a],
               p->index.base + ii * idx[last] * is, ii * is, p->index.dtype, limit, n, &p->bad,
               &p->bad_value);
  }
}

static HWP_Status gather_run_payload(void *c) {
  gather_payload *p = c;
  cpu_nd_for(p->out.ndim, p->out.shape, CPU_ND_BLOCK, CPU_ND_GRAIN, gather_block, p);
  if (p->bad) return bad_index_error("gather", p->bad_value, p->x.shape[p->axis]);
  return HWP_OK;
}

static HWP_Status cpu_kernel_gather(const HWP_KernelContext *ctx) {
  const char *op = "gather";
  HWP_Status st = cpu_check_context(ctx, op, 2, 1);
  if (st != HWP_OK) return st;
  gather_payload *p = calloc(1, sizeof *p);
  if (p == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", op);
  if ((st = load_indexed(ctx, op, &p->out, &p->x, &p->index)) != HWP_OK) goto fail;
  if ((st = same_ndim(op, "index", &p->index, 1)) != HWP_OK) goto fail;
  const int nd = p->x.ndim;
  if (nd < 1) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: x must have rank >= 1", op);
    goto fail;
  }
  if ((st = same_ndim(op, "output 0", &p->out, nd)) != HWP_OK) goto fail;
  if ((st = cpu_attr_axis(ctx, op, nd, 0, 0, &p->axis)) != HWP_OK) goto fail;
  if ((st = same_except(op, "x", &p->x, "output 0", &p->out, p->axis)) != HWP_OK) goto fail;
  if (p->out.shape[p->axis] != p->index.shape[0]) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                   "%s: output 0 has %lld rows along axis %d but index has %lld values", op,
                   (long long)p->out.shape[p->axis], p->axis, (long long)p->index.shape[0]);
    goto fail;
  }
  return cpu_submit_payload(ctx, op, gather_run_payload, p, work_of(&p->out));
fail:
  free(p);
  return st;
}

/* ---- embedding: weight's rows for every index value (a gather along axis 0) ------------------ */

static HWP_Status embedding_run(void *c) {
  gather_payload *p = c;
  if (p->given_index.ndim > 1) { /* an index that is not one strided run: flattened first */
    const cpu_view *v = &p->given_index;
    int64_t *flat = (int64_t *)p->index.base;
    for (int64_t j = 0; j < v->numel; ++j)
      flat[j] = cpu_load_index(
          v->base + v->itemsize * cpu_unravel_offset(j, v->ndim, v->shape, v->strides),
          v->dtype);
  }
  cpu_nd_for(p->out.ndim, p->out.shape, CPU_ND_BLOCK, CPU_ND_GRAIN, gather_block, p);
  if (p->bad) return bad_index_error("embedding", p->bad_value, p->x.shape[0]);
  return HWP_OK;
}

static void embedding_release(void *c) {
  gather_payload *p = c;
  if (p->given_index.ndim > 1) free(p->index.base);
  free(p);
}

/* embedding(index, weight [V, D]) -> [index.shape..., D]: the output as [N, D], the index as
 * N values (merged to one strided run, else copied to int64 when the work runs). */
static HWP_Status cpu_kernel_embedding(const HWP_KernelContext *ctx) {
  const char *op = "embedding";
  HWP_Status st = cpu_check_context(ctx, op, 2, 1);
  if (st != HWP_OK) return st;
  gather_payload *p = calloc(1, sizeof *p);
  if (p == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", op);
  cpu_view *ix = &p->given_index;
  if ((st = cpu_view_load(op, "index", &ctx->inputs[0], ix)) != HWP_OK ||
      (st = index_view(op, ix)) != HWP_OK ||
      (st = cpu_view_load(op, "weight", &ctx->inputs[1], &p->x)) != HWP_OK ||
      (st = same_ndim(op, "weight", &p->x, 2)) != HWP_OK ||
      (st = cpu_view_load(op, "output 0", &ctx->outputs[0], &p->out)) != HWP_OK ||
      (st = same_dtype(op, "output 0", &p->out, p->x.dtype)) != HWP_OK ||
      (st = same_ndim(op, "output 0", &p->out, ix->ndim + 1)) != HWP_OK)
    goto fail;
  for (int k = 0; k <= ix->ndim; ++k) {
    const int64_t want = k < ix->ndim ? ix->shape[k] : p->x.shape[1];
    if (p->out.shape[k] != want) {
      st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: output 0 has shape[%d] = %lld, expected %lld (index shape + [D])", op,
                     k, (long long)p->out.shape[k], (long long)want);
      goto fail;
    }
  }
  int64_t expect = 1;
  for (int k = p->out.ndim - 1; k >= 0; --k) {
    if (p->out.numel > 0 && p->out.shape[k] != 1 && p->out.strides[k] != expect) {
      st = cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must be contiguous", op);
      goto fail;
    }
    expect *= p->out.shape[k];
  }
  const int64_t n = ix->numel, d = p->x.shape[1];
  p->out.ndim = 2;
  p->out.shape[0] = n;
  p->out.shape[1] = d;
  p->out.strides[0] = d;
  p->out.strides[1] = 1;
  p->index = *ix;
  int merged = cpu_merge_dims(p->index.ndim, p->index.shape, p->index.strides);
  p->index.ndim = 1;
  p->index.shape[0] = n;
  if (merged == 0) p->index.strides[0] = 1;
  if (merged > 1) { /* flattened by embedding_run */
    p->index.base = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (p->index.base == NULL) {
      st = cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", op);
      goto fail;
    }
    p->index.dtype = HWP_DTYPE_INT64;
    p->index.itemsize = 8;
    p->index.strides[0] = 1;
  } else {
    ix->ndim = 0; /* nothing to flatten */
  }
  p->axis = 0;
  if (n == 0 || d == 0) {
    embedding_release(p);
    return HWP_OK;
  }
  return cpu_submit_call(ctx, op, embedding_run, embedding_release, p, work_of(&p->out));
fail:
  free(p);
  return st;
}

/* ---- take_along_axis ------------------------------------------------------------------------- */

typedef gather_payload take_payload; /* index has the output's rank */

static void take_block(void *c, const int64_t *idx, int64_t n) {
  take_payload *p = c;
  const int nd = p->out.ndim, last = nd - 1, a = p->axis;
  const int64_t it = p->out.itemsize, ii = p->index.itemsize;
  char *dst = p->out.base + it * cpu_offset(idx, p->out.strides, nd, -1);
  const char *src = p->x.base + it * cpu_offset(idx, p->x.strides, nd, a);
  const char *ip = p->index.base + ii * cpu_offset(idx, p->index.strides, nd, -1);
  gather_run(it, dst, it * p->out.strides[last], src, a == last ? 0 : it * p->x.strides[last],
             it * p->x.strides[a], ip, ii * p->index.strides[last], p->index.dtype,
             p->x.shape[a], n, &p->bad, &p->bad_value);
}

static HWP_Status take_run(void *c) {
  take_payload *p = c;
  cpu_nd_for(p->out.ndim, p->out.shape, CPU_ND_BLOCK, CPU_ND_GRAIN, take_block, p);
  if (p->bad) return bad_index_error("take_along_axis", p->bad_value, p->x.shape[p->axis]);
  return HWP_OK;
}

static HWP_Status cpu_kernel_take_along_axis(const HWP_KernelContext *ctx) {
  const char *op = "take_along_axis";
  HWP_Status st = cpu_check_context(ctx, op, 2, 1);
  if (st != HWP_OK) return st;
  take_payload *p = calloc(1, sizeof *p);
  if (p == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", op);
  if ((st = load_indexed(ctx, op, &p->out, &p->x, &p->index)) != HWP_OK) goto fail;
  const int nd = p->out.ndim;
  if (nd < 1) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must have rank >= 1", op);
    goto fail;
  }
  if ((st = same_ndim(op, "x", &p->x, nd)) != HWP_OK) goto fail;
  if ((st = same_ndim(op, "index", &p->index, nd)) != HWP_OK) goto fail;
  if ((st = cpu_attr_axis(ctx, op, nd, 1, 0, &p->axis)) != HWP_OK) goto fail;
  for (int k = 0; k < nd; ++k) { /* size-1 dims broadcast */
    const int64_t m = p->out.shape[k];
    if (k != p->axis) {
      if (p->x.shape[k] != m && p->x.shape[k] != 1) {
        st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: x has shape[%d] = %lld, expected %lld (or 1)", op, k,
                       (long long)p->x.shape[k], (long long)m);
        goto fail;
      }
      if (p->x.shape[k] != m) p->x.strides[k] = 0;
    }
    if (p->index.shape[k] != m && p->index.shape[k] != 1) {
      st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: index has shape[%d] = %lld, expected %lld (or 1)", op, k,
                     (long long)p->index.shape[k], (long long)m);
      goto fail;
    }
    if (p->index.shape[k] != m) p->index.strides[k] = 0;
  }
  return cpu_submit_payload(ctx, op, take_run, p, work_of(&p->out));
fail:
  free(p);
  return st;
}

/* ---- stable sort of (key, index) pairs (argsort; scatter's grouping) ------------------------- */

typedef struct cpu_kv {
  uint64_t key; /* order-preserving image of the value (descending: complemented) */
  int64_t index;
} cpu_kv;

#define CPU_SORT_RUN 16
#define CPU_SORT_STACK 256 /* rows up to this length sort in stack scratch */

/* Stable merge sort by key (ties keep their input order). `tmp` holds n entries. */
static void sort_kv(cpu_kv *a, cpu_kv *tmp, int64_t n) {
  for (int64_t s = 0; s < n; s += CPU_SORT_RUN) {
    int64_t e = s + CPU_SORT_RUN < n ? s + CPU_SORT_RUN : n;
    for (int64_t i = s + 1; i < e; ++i) {
      cpu_kv v = a[i];
      int64_t j = i;
      for (; j > s && a[j - 1].key > v.key; --j) a[j] = a[j - 1];
      a[j] = v;
    }
  }
  cpu_kv *src = a, *dst = tmp;
  for (int64_t w = CPU_SORT_RUN; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      if (mid >= hi || src[mid - 1].key <= src[mid].key) { /* already in order */
        memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof *dst);
        continue;
      }
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) dst[k++] = src[j].key < src[i].key ? src[j++] : src[i++];
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    cpu_kv *t = src;
    src = dst;
    dst = t;
  }
  if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

/* ---- scatter --------------------------------------------------------------------------------- */

typedef void (*add_run_fn)(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n);

#define CPU_DEFINE_ADD_INT(name, T, UT)                                                        \
  static void add_run_##name(char *d, int64_t ds, const char *s, int64_t ss, int64_t n) {      \
    typedef CPU_UA(T) UA;                                                                      \
    for (int64_t i = 0; i < n; ++i, d += ds, s += ss)                                          \
      *(UA *)d = (T)(UT)((UT) * (UA *)d + (UT) * (const UA *)s);                               \
  }
CPU_DEFINE_ADD_INT(int8, int8_t, uint8_t)
CPU_DEFINE_ADD_INT(uint8, uint8_t, uint8_t)
CPU_DEFINE_ADD_INT(int16, int16_t, uint16_t)
CPU_DEFINE_ADD_INT(int32, int32_t, uint32_t)
CPU_DEFINE_ADD_INT(int64, int64_t, uint64_t)
#undef CPU_DEFINE_ADD_INT

static void add_run_bool_(char *d, int64_t ds, const char *s, int64_t ss, int64_t n) {
  for (int64_t i = 0; i < n; ++i, d += ds, s += ss) *d = (char)((*d != 0) | (*s != 0));
}

static void add_run_float64(char *d, int64_t ds, const char *s, int64_t ss, int64_t n) {
  for (int64_t i = 0; i < n; ++i, d += ds, s += ss)
    *(CPU_UA(double) *)d = *(CPU_UA(double) *)d + *(const CPU_UA(double) *)s;
}

/* Integers, bool and float64 add in place, row after row. */
static add_run_fn add_run_for(HWP_DType d) {
  switch (d) {
  case HWP_DTYPE_BOOL: return add_run_bool_;
  case HWP_DTYPE_INT8: return add_run_int8;
  case HWP_DTYPE_UINT8: return add_run_uint8;
  case HWP_DTYPE_INT16: return add_run_int16;
  case HWP_DTYPE_INT32: return add_run_int32;
  case HWP_DTYPE_INT64: return add_run_int64;
  case HWP_DTYPE_FLOAT64: return add_run_float64;
  default: return NULL;
  }
}

/* float16, bfloat16 and float32 accumulate in double (x, then the updates in index order) and
 * round once (phi_ops/reference.py): per output row, over its group of update rows. */
typedef void (*acc_load_fn)(double *acc, const char *p, int64_t step, int64_t n, int add);
typedef void (*acc_store_fn)(char *p, int64_t step, const double *acc, int64_t n);

#define CPU_DEFINE_ACC(dname, T, LOAD)                                                         \
  static void acc_load_##dname(double *acc, const char *p, int64_t step, int64_t n, int add) { \
    if (add)                                                                                   \
      for (int64_t i = 0; i < n; ++i, p += step) acc[i] += (double)LOAD(*(const CPU_UA(T) *)p); \
    else                                                                                       \
      for (int64_t i = 0; i < n; ++i, p += step) acc[i] = (double)LOAD(*(const CPU_UA(T) *)p);  \
  }                                                                                            \
  static void acc_store_##dname(char *p, int64_t step, const double *acc, int64_t n) {         \
    for (int64_t i = 0; i < n; ++i, p += step) *(CPU_UA(T) *)p = CPU_CV_KD_##dname(acc[i]);    \
  }
#define CPU_ID(x) (x)
CPU_DEFINE_ACC(float16, uint16_t, cpu_f16_to_f32)
CPU_DEFINE_ACC(bfloat16, uint16_t, cpu_bf16_to_f32)
CPU_DEFINE_ACC(float32, float, CPU_ID)
#undef CPU_ID
#undef CPU_DEFINE_ACC

#define CPU_SCATTER_ACC 256 /* doubles of accumulator per run chunk (stack) */

typedef struct scatter_payload {
  cpu_view out, x, index, upd;
  int axis;
  add_run_fn add;       /* in-place add (reduce add: integers, bool, float64) */
  acc_load_fn acc_load; /* reduce add in double (float16, bfloat16, float32) */
  acc_store_fn acc_store;
  cpu_kv *groups; /* acc path, while running: (index value, row) sorted, rows in order */
  int rnd;        /* rank of the output without the axis */
  int64_t rshape[HWP_MAX_NDIM];
  int rdims[HWP_MAX_NDIM]; /* reduced dim -> output dim */
} scatter_payload;

static void scatter_copy_block(void *c, const int64_t *idx, int64_t n) {
  const scatter_payload *p = c;
  const int nd = p->out.ndim, last = nd - 1;
  const int64_t it = p->out.itemsize;
  cpu_copy_run(p->out.base + it * cpu_offset(idx, p->out.strides, nd, -1),
               it * p->out.strides[last],
               p->x.base + it * cpu_offset(idx, p->x.strides, nd, -1), it * p->x.strides[last],
               n, it);
}

/* One run of output positions (fixed coordinates off the axis): every index row in order. */
static void scatter_block(void *c, const int64_t *ridx, int64_t n) {
  const scatter_payload *p = c;
  const int nd = p->out.ndim, a = p->axis;
  const int64_t it = p->out.itemsize, ii = p->index.itemsize;
  int64_t full[HWP_MAX_NDIM] = {0};
  for (int r = 0; r < p->rnd; ++r) full[p->rdims[r]] = ridx[r];
  const int64_t doff = cpu_offset(full, p->out.strides, nd, a);
  const int64_t uoff = cpu_offset(full, p->upd.strides, nd, a);
  const int rd = p->rnd > 0 ? p->rdims[p->rnd - 1] : -1;
  const int64_t dstep = rd >= 0 ? it * p->out.strides[rd] : 0;
  const int64_t ustep = rd >= 0 ? it * p->upd.strides[rd] : 0;
  const int64_t rows = p->index.shape[0];
  for (int64_t j = 0; j < rows; ++j) {
    int64_t t = cpu_load_index(p->index.base + ii * j * p->index.strides[0], p->index.dtype);
    char *dst = p->out.base + it * (doff + t * p->out.strides[a]);
    const char *src = p->upd.base + it * (uoff + j * p->upd.strides[a]);
    if (p->add != NULL) p->add(dst, dstep, src, ustep, n);
    else cpu_copy_run(dst, dstep, src, ustep, n, it);
  }
}

/* The same run for the accumulating add: each output row touched, once, over its group. */
static void scatter_acc_block(void *c, const int64_t *ridx, int64_t n) {
  const scatter_payload *p = c;
  const int nd = p->out.ndim, a = p->axis;
  const int64_t it = p->out.itemsize, rows = p->index.shape[0];
  int64_t full[HWP_MAX_NDIM] = {0};
  for (int r = 0; r < p->rnd; ++r) full[p->rdims[r]] = ridx[r];
  const int rd = p->rnd > 0 ? p->rdims[p->rnd - 1] : -1;
  const int64_t dstep = rd >= 0 ? it * p->out.strides[rd] : 0;
  const int64_t ustep = rd >= 0 ? it * p->upd.strides[rd] : 0;
  char *const dbase = p->out.base + it * cpu_offset(full, p->out.strides, nd, a);
  const char *const ubase = p->upd.base + it * cpu_offset(full, p->upd.strides, nd, a);
  double acc[CPU_SCATTER_ACC];
  for (int64_t e0 = 0; e0 < n; e0 += CPU_SCATTER_ACC) {
    const int64_t m = n - e0 < CPU_SCATTER_ACC ? n - e0 : CPU_SCATTER_ACC;
    for (int64_t g = 0; g < rows;) {
      const uint64_t t = p->groups[g].key;
      char *dst = dbase + it * (int64_t)t * p->out.strides[a] + e0 * dstep;
      p->acc_load(acc, dst, dstep, m, 0);
      for (; g < rows && p->groups[g].key == t; ++g)
        p->acc_load(acc, ubase + it * p->groups[g].index * p->upd.strides[a] + e0 * ustep,
                    ustep, m, 1);
      p->acc_store(dst, dstep, acc, m);
    }
  }
}

static HWP_Status scatter_run(void *c) {
  scatter_payload *p = c;
  const int64_t rows = p->index.shape[0], limit = p->out.shape[p->axis];
  for (int64_t j = 0; j < rows; ++j) { /* every row first: nothing is written out of bounds */
    int64_t t = cpu_load_index(p->index.base + p->index.itemsize * j * p->index.strides[0],
                               p->index.dtype);
    if ((uint64_t)t >= (uint64_t)limit) return bad_index_error("scatter", t, limit);
  }
  cpu_nd_for(p->out.ndim, p->out.shape, CPU_ND_BLOCK, CPU_ND_GRAIN, scatter_copy_block, p);
  if (rows == 0 || p->upd.numel == 0) return HWP_OK;
  int64_t grain = CPU_ND_GRAIN / rows; /* each element of a run takes `rows` updates */
  if (grain < 1) grain = 1;
  if (p->acc_load == NULL) {
    cpu_nd_for(p->rnd, p->rshape, CPU_ND_BLOCK, grain, scatter_block, p);
    return HWP_OK;
  }
  cpu_kv *kv = malloc((size_t)rows * 2 * sizeof *kv);
  if (kv == NULL)
    return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "scatter: no host memory to group %lld rows",
                     (long long)rows);
  for (int64_t j = 0; j < rows; ++j) {
    kv[j].key = (uint64_t)cpu_load_index(
        p->index.base + p->index.itemsize * j * p->index.strides[0], p->index.dtype);
    kv[j].index = j;
  }
  sort_kv(kv, kv + rows, rows); /* stable: each group keeps index order */
  p->groups = kv;
  cpu_nd_for(p->rnd, p->rshape, CPU_ND_BLOCK, grain, scatter_acc_block, p);
  p->groups = NULL;
  free(kv);
  return HWP_OK;
}

static HWP_Status cpu_kernel_scatter(const HWP_KernelContext *ctx) {
  const char *op = "scatter";
  HWP_Status st = cpu_check_context(ctx, op, 3, 1);
  if (st != HWP_OK) return st;
  scatter_payload *p = calloc(1, sizeof *p);
  if (p == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", op);
  if ((st = load_indexed(ctx, op, &p->out, &p->x, &p->index)) != HWP_OK) goto fail;
  if ((st = cpu_view_load(op, "updates", &ctx->inputs[2], &p->upd)) != HWP_OK) goto fail;
  const HWP_DType d = p->out.dtype;
  if ((st = same_dtype(op, "updates", &p->upd, d)) != HWP_OK) goto fail;
  if ((st = same_ndim(op, "index", &p->index, 1)) != HWP_OK) goto fail;
  const int nd = p->out.ndim;
  if (nd < 1) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: x must have rank >= 1", op);
    goto fail;
  }
  if ((st = same_ndim(op, "x", &p->x, nd)) != HWP_OK) goto fail;
  if ((st = same_ndim(op, "updates", &p->upd, nd)) != HWP_OK) goto fail;
  if ((st = cpu_attr_axis(ctx, op, nd, 0, 0, &p->axis)) != HWP_OK) goto fail;
  if ((st = same_except(op, "output 0", &p->out, "x", &p->x, -1)) != HWP_OK) goto fail;
  if ((st = same_except(op, "x", &p->x, "updates", &p->upd, p->axis)) != HWP_OK) goto fail;
  if (p->upd.shape[p->axis] != p->index.shape[0]) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                   "%s: updates has %lld rows along axis %d but index has %lld values", op,
                   (long long)p->upd.shape[p->axis], p->axis, (long long)p->index.shape[0]);
    goto fail;
  }
  const char *reduce = "assign";
  HWP_Status ast = cpu_get_attr(ctx, "reduce", HWP_ATTR_STRING, (void *)&reduce, NULL);
  if (ast != HWP_OK && ast != HWP_ERROR_NOT_FOUND) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute 'reduce' is not a string", op);
    goto fail;
  }
  if (ast == HWP_ERROR_NOT_FOUND || reduce == NULL) reduce = "assign";
  if (strcmp(reduce, "add") == 0) {
    switch (d) {
    case HWP_DTYPE_FLOAT16:
      p->acc_load = acc_load_float16;
      p->acc_store = acc_store_float16;
      break;
    case HWP_DTYPE_BFLOAT16:
      p->acc_load = acc_load_bfloat16;
      p->acc_store = acc_store_bfloat16;
      break;
    case HWP_DTYPE_FLOAT32:
      p->acc_load = acc_load_float32;
      p->acc_store = acc_store_float32;
      break;
    default:
      p->add = add_run_for(d);
      break;
    }
  } else if (strcmp(reduce, "assign") != 0) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                   "%s: attribute 'reduce' is '%.64s' (expected 'assign' or 'add')", op, reduce);
    goto fail;
  }
  p->rnd = 0;
  for (int k = 0; k < nd; ++k)
    if (k != p->axis) {
      p->rdims[p->rnd] = k;
      p->rshape[p->rnd++] = p->out.shape[k];
    }
  return cpu_submit_payload(ctx, op, scatter_run, p, work_of(&p->out) + work_of(&p->upd));
fail:
  free(p);
  return st;
}

/* ---- argsort --------------------------------------------------------------------------------- */

/* Floats map to uint64 keys in ascending order: -0.0 equals 0.0, every NaN equals every other
 * NaN and sorts after +inf. */
static inline uint64_t float_key(double v) {
  if (v != v) return UINT64_MAX;
  if (v == 0) v = 0.0;
  uint64_t b = cpu_f64_bits(v);
  return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}

#define CPU_SIGNED_KEY(v) ((uint64_t)(int64_t)(v) ^ 0x8000000000000000ull)
#define CPU_UNSIGNED_KEY(v) ((uint64_t)(v))
#define CPU_FLOAT_KEY(v) float_key((double)(v))

static void load_keys(cpu_kv *kv, const char *src, int64_t step, int64_t n, HWP_DType d) {
  switch (d) {
#define CPU_KEYS(CODE, T, KEY, LOAD)                                                           \
  case HWP_DTYPE_##CODE:                                                                       \
    for (int64_t i = 0; i < n; ++i, src += step) {                                             \
      kv[i].key = KEY(LOAD(*(const CPU_UA(T) *)src));                                         \
      kv[i].index = i;                                                                         \
    }                                                                                          \
    break;
#define CPU_ID(x) (x)
    CPU_KEYS(BOOL, uint8_t, CPU_UNSIGNED_KEY, CPU_ID)
    CPU_KEYS(INT8, int8_t, CPU_SIGNED_KEY, CPU_ID)
    CPU_KEYS(UINT8, uint8_t, CPU_UNSIGNED_KEY, CPU_ID)
    CPU_KEYS(INT16, int16_t, CPU_SIGNED_KEY, CPU_ID)
    CPU_KEYS(INT32, int32_t, CPU_SIGNED_KEY, CPU_ID)
    CPU_KEYS(INT64, int64_t, CPU_SIGNED_KEY, CPU_ID)
    CPU_KEYS(FLOAT16, uint16_t, CPU_FLOAT_KEY, cpu_f16_to_f32)
    CPU_KEYS(BFLOAT16, uint16_t, CPU_FLOAT_KEY, cpu_bf16_to_f32)
    CPU_KEYS(FLOAT32, float, CPU_FLOAT_KEY, CPU_ID)
    CPU_KEYS(FLOAT64, double, CPU_FLOAT_KEY, CPU_ID)
#undef CPU_ID
#undef CPU_KEYS
  default: break;
  }
}

typedef struct argsort_payload {
  cpu_view out, x;
  int axis, descending;
  int rnd;
  int64_t rshape[HWP_MAX_NDIM];
  int rdims[HWP_MAX_NDIM];
  int oom;
} argsort_payload;

static void argsort_block(void *c, const int64_t *ridx, int64_t n) {
  argsort_payload *p = c;
  const int nd = p->x.ndim, a = p->axis;
  const int64_t len = p->x.shape[a];
  cpu_kv stack_buf[2 * CPU_SORT_STACK];
  cpu_kv *buf = stack_buf;
  if (len > CPU_SORT_STACK) {
    buf = malloc((size_t)len * 2 * sizeof *buf);
    if (buf == NULL) {
      __atomic_store_n(&p->oom, 1, __ATOMIC_RELAXED);
      return;
    }
  }
  int64_t full[HWP_MAX_NDIM] = {0};
  for (int r = 0; r < p->rnd; ++r) full[p->rdims[r]] = ridx[r];
  const int rd = p->rnd > 0 ? p->rdims[p->rnd - 1] : -1;
  for (int64_t e = 0; e < n; ++e) {
    if (rd >= 0) full[rd] = ridx[p->rnd - 1] + e;
    const char *src = p->x.base + p->x.itemsize * cpu_offset(full, p->x.strides, nd, a);
    load_keys(buf, src, p->x.itemsize * p->x.strides[a], len, p->x.dtype);
    if (p->descending)
      for (int64_t i = 0; i < len; ++i) buf[i].key = ~buf[i].key;
    sort_kv(buf, buf + len, len);
    char *dst = p->out.base + 8 * cpu_offset(full, p->out.strides, nd, a);
    const int64_t ds = 8 * p->out.strides[a];
    for (int64_t i = 0; i < len; ++i, dst += ds) *(CPU_UA(int64_t) *)dst = buf[i].index;
  }
  if (buf != stack_buf) free(buf);
}

static HWP_Status argsort_run(void *c) {
  argsort_payload *p = c;
  const int64_t len = p->x.shape[p->axis];
  int64_t grain = CPU_ND_GRAIN / 4 / (len > 0 ? len : 1);
  /* One row per run (block 1): rows are the unit of parallel work. */
  cpu_nd_for(p->rnd, p->rshape, 1, grain < 1 ? 1 : grain, argsort_block, p);
  if (p->oom)
    return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "argsort: no host memory for rows of %lld",
                     (long long)len);
  return HWP_OK;
}

static HWP_Status cpu_kernel_argsort(const HWP_KernelContext *ctx) {
  const char *op = "argsort";
  HWP_Status st = cpu_check_context(ctx, op, 1, 1);
  if (st != HWP_OK) return st;
  argsort_payload *p = calloc(1, sizeof *p);
  if (p == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", op);
  if ((st = cpu_view_load(op, "output 0", &ctx->outputs[0], &p->out)) != HWP_OK) goto fail;
  if ((st = cpu_view_load(op, "input 0", &ctx->inputs[0], &p->x)) != HWP_OK) goto fail;
  if ((st = same_dtype(op, "output 0", &p->out, HWP_DTYPE_INT64)) != HWP_OK) goto fail;
  if ((st = same_ndim(op, "output 0", &p->out, p->x.ndim)) != HWP_OK) goto fail;
  if ((st = same_except(op, "input 0", &p->x, "output 0", &p->out, -1)) != HWP_OK) goto fail;
  cpu_xview_promote0(&p->x); /* 0-d: one row of one element */
  cpu_xview_promote0(&p->out);
  const int nd = p->x.ndim;
  if ((st = cpu_attr_axis(ctx, op, nd, 0, -1, &p->axis)) != HWP_OK) goto fail;
  uint8_t desc = 0;
  HWP_Status ast = cpu_get_attr(ctx, "descending", HWP_ATTR_BOOL, &desc, NULL);
  if (ast == HWP_ERROR_INVALID_ARGUMENT) { /* an integer flag is accepted too */
    int64_t v = 0;
    ast = cpu_get_attr(ctx, "descending", HWP_ATTR_INT64, &v, NULL);
    desc = v != 0;
  }
  if (ast != HWP_OK && ast != HWP_ERROR_NOT_FOUND) {
    st = cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute 'descending' is not a bool", op);
    goto fail;
  }
  p->descending = ast == HWP_OK && desc != 0;
  p->rnd = 0;
  for (int k = 0; k < nd; ++k)
    if (k != p->axis) {
      p->rdims[p->rnd] = k;
      p->rshape[p->rnd++] = p->x.shape[k];
    }
  return cpu_submit_payload(ctx, op, argsort_run, p, work_of(&p->out));
fail:
  free(p);
  return st;
}

/* ---- arange ---------------------------------------------------------------------------------- */

typedef struct arange_payload {
  char *base;
  HWP_DType dtype;
  int exact; /* integer arithmetic (int64, wrapping) */
  int64_t istart, istep;
  double fstart, fstep;
} arange_payload;

static void arange_chunk(void *c, int64_t begin, int64_t end) {
  const arange_payload *p = c;
  switch (p->dtype) {
#define CPU_ARANGE_CASE(CODE, dname, T)                                                        \
  case HWP_DTYPE_##CODE: {                                                                     \
    CPU_UA(T) *o = (CPU_UA(T) *)p->base;                                                       \
    if (p->exact) {                                                                            \
      for (int64_t i = begin; i < end; ++i) {                                                  \
        int64_t v = (int64_t)((uint64_t)p->istart + (uint64_t)i * (uint64_t)p->istep);         \
        o[i] = CPU_CV_KI_##dname(v);                                                           \
      }                                                                                        \
    } else {                                                                                   \
      for (int64_t i = begin; i < end; ++i)                                                    \
        o[i] = CPU_CV_KD_##dname(cpu_add_mul(p->fstart, (double)i, p->fstep));                 \
    }                                                                                          \
    break;                                                                                     \
  }
    CPU_FOR_EACH_DTYPE(CPU_ARANGE_CASE)
#undef CPU_ARANGE_CASE
  default: break;
  }
}

typedef struct arange_job {
  arange_payload p;
  int64_t n;
} arange_job;

static HWP_Status arange_run(void *c) {
  arange_job *j = c;
  cpu_parallel_for(j->n, CPU_ND_GRAIN, arange_chunk, &j->p);
  return HWP_OK;
}

/* Reads a numeric attribute both ways: INT64 (exact) and FLOAT64; absent gives `fallback`. */
static HWP_Status number_attr(const HWP_KernelContext *ctx, const char *op, const char *name,
                              int64_t fallback, int *have_int, int64_t *iv, int *have_float,
                              double *fv) {
  *have_int = cpu_get_attr(ctx, name, HWP_ATTR_INT64, iv, NULL) == HWP_OK;
  HWP_Status st = cpu_get_attr(ctx, name, HWP_ATTR_FLOAT64, fv, NULL);
  *have_float = st == HWP_OK;
  if (*have_int || *have_float) return HWP_OK;
  if (st == HWP_ERROR_NOT_FOUND) {
    *iv = fallback;
    *fv = (double)fallback;
    *have_int = *have_float = 1;
    return HWP_OK;
  }
  return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute '%s' is not a number", op, name);
}

static HWP_Status cpu_kernel_arange(const HWP_KernelContext *ctx) {
  const char *op = "arange";
  HWP_Status st = cpu_check_context(ctx, op, 0, 1);
  if (st != HWP_OK) return st;
  cpu_view out;
  memset(&out, 0, sizeof out);
  if ((st = cpu_view_load(op, "output 0", &ctx->outputs[0], &out)) != HWP_OK) return st;
  if (!cpu_xview_contiguous(&out))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must be contiguous", op);
  arange_job *j = calloc(1, sizeof *j);
  if (j == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", op);
  j->n = out.numel;
  j->p.base = out.base;
  j->p.dtype = out.dtype;
  int si, sf, ti, tf;
  if ((st = number_attr(ctx, op, "start", 0, &si, &j->p.istart, &sf, &j->p.fstart)) != HWP_OK ||
      (st = number_attr(ctx, op, "step", 1, &ti, &j->p.istep, &tf, &j->p.fstep)) != HWP_OK) {
    free(j);
    return st;
  }
  /* An int64 beyond double's exact range reads as INT64 only: it converts (rounds) here. */
  if (!sf) j->p.fstart = (double)j->p.istart;
  if (!tf) j->p.fstep = (double)j->p.istep;
  /* Integer dtypes: wrapping int64 arithmetic from start and step read as INT64 (exact), or,
   * when not integral, truncated toward zero (saturating) like cast. Floats: double. */
  if (!si) j->p.istart = cpu_sat_int64(j->p.fstart);
  if (!ti) j->p.istep = cpu_sat_int64(j->p.fstep);
  j->p.exact = !cpu_is_float_dtype(out.dtype);
  return cpu_submit_payload(ctx, op, arange_run, j, (uint64_t)j->n);
}

/* ---- registration ---------------------------------------------------------------------------- */

void cpu_register_index_kernels(const HWP_HostApi *host) {
  static const struct {
    const char *op;
    HWP_KernelFn fn;
    int numeric_only; /* ops.yaml dtypes: numeric (no bool); else all */
  } ops[] = {
      {"concat", cpu_kernel_concat, 0},   {"pad", cpu_kernel_pad, 0},
      {"gather", cpu_kernel_gather, 0},   {"take_along_axis", cpu_kernel_take_along_axis, 0},
      {"scatter", cpu_kernel_scatter, 0}, {"argsort", cpu_kernel_argsort, 1},
      {"arange", cpu_kernel_arange, 1},
  };
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; ++o)
    for (HWP_DType d = 0; d < HWP_DTYPE_COUNT; ++d)
      if (!(ops[o].numeric_only && d == HWP_DTYPE_BOOL))
        cpu_register_one(host, ops[o].op, d, ops[o].fn, HWP_KERNEL_ACCEPTS_STRIDED);
  /* keyed by the index dtype (ops.yaml: the first input); the weight may have any dtype */
  cpu_register_one(host, "embedding", HWP_DTYPE_INT32, cpu_kernel_embedding,
                   HWP_KERNEL_ACCEPTS_STRIDED);
  cpu_register_one(host, "embedding", HWP_DTYPE_INT64, cpu_kernel_embedding,
                   HWP_KERNEL_ACCEPTS_STRIDED);
}
