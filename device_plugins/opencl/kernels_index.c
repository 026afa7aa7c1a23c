/* hwport OpenCL plugin — concat, pad, gather, take_along_axis, scatter, argsort, arange
 * (phi_ops/ops.yaml; the same contract and results as device_plugins/cpu/kernels_index.c).
 *
 * Programs (program_cache.c), one per dtype, built with -DDT_<dtype>=1: index.cl (slots
 * OCL_IDX_SLOT0 + dtype) and argsort.cl (OCL_SORT_SLOT0 + dtype), each embedded after
 * elementwise_prelude.cl and kernels_common.cl (generated.cmake). Inputs may be any strided view
 * (HWP_KERNEL_ACCEPTS_STRIDED: strides 0 or negative, any byte offset); outputs are contiguous.
 * Shapes and byte strides travel as long16 kernel arguments.
 *
 *   concat   one k_copy per non-empty input into its slice of the output.
 *   pad      k_pad: each output element reads x or takes the fill value (attr value, converted
 *            on the host like fill's).
 *   gather / take_along_axis   k_take (gather's 1-D index is a view with stride 0 off the axis).
 *            An index outside [0, x.shape[axis]) is never dereferenced: the kernel raises a
 *            flag in a small device buffer (with the value), read back after the launch, and the
 *            call fails with HWP_ERROR_INVALID_ARGUMENT "<op>: index <v> is out of range [0, n)"
 *            (the host's dispatcher has checked the values already; this keeps a direct caller
 *            safe). The read-back makes these two kernels synchronous.
 *   scatter  the 1-D index is read back to the host (synchronous), checked (nothing is written
 *            when a value is out of range, as on the CPU plugin) and grouped by target row in
 *            index order (a stable sort); k_copy copies x, then k_scatter writes one work-item
 *            per (target row, position off the axis): assign takes the group's last row, add
 *            accumulates x then the rows in order (bool: or; integers: wrapping; floats: in
 *            double when the device has it, rounded once).
 *   argsort  a bitonic sort of (key, index) pairs: every row padded to P = 2^k; blocks of two
 *            elements per work-item sorted in local memory (whole rows when P fits a block),
 *            longer rows merged by global compare-exchange steps for strides >= the block and
 *            local-memory steps below it. Pairs are distinct, so the result is the stable order
 *            (NaN last ascending, first descending; -0.0 == 0.0).
 *   arange   k_arange: wrapping int64 for integer dtypes, double rounded once for floats.
 *
 * float64 kernels, and arange for every float dtype, are registered only when every device has
 * double precision. Scratch buffers (flags, groups, sort keys) are private cl_mem objects
 * released right after their commands are enqueued (OpenCL frees them once those finish). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fill_value.h"
#include "hwport/kernel_util.h"
#include "kernels.h"
#include "ocl_programs.h"

#define OCL_IDX_SLOT0 70  /* index.cl: slots 70 .. 79 */
#define OCL_SORT_SLOT0 80 /* argsort.cl: slots 80 .. 89 */
#define OCL_SORT_MAX_LOCAL 256

static int g_ix_fp64[OCL_MAX_DEVICES];
static char g_ix_options[OCL_MAX_DEVICES][HWP_DTYPE_COUNT][48];

/* ---- views ------------------------------------------------------------------------------- */

typedef struct ix_view {
  cl_mem buf;
  cl_ulong off;
  HWP_DType dtype;
  int nd;
  int al; /* the byte offset is a multiple of the itemsize (then every element is aligned) */
  int64_t shape[HWP_MAX_NDIM];
  cl_long st[HWP_MAX_NDIM]; /* bytes */
  uint64_t numel;
} ix_view;

static HWP_Status view_load(const char *op, const char *what, const HWP_TensorView *v,
                            ix_view *out) {
  memset(out, 0, sizeof *out);
  size_t isz = hwp_dtype_size(v->dtype);
  HWP_Status st = ocl_check_view_sizes(v, what, -1, op);
  if (st != HWP_OK) return st;
  out->buf = (cl_mem)v->buffer;
  out->off = v->byte_offset;
  out->dtype = v->dtype;
  out->nd = v->ndim;
  out->al = v->byte_offset % isz == 0;
  out->numel = 1;
  for (int k = 0; k < v->ndim; ++k) {
    if (v->shape[k] < 0)
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has shape[%d] = %lld", op, what, k,
                       (long long)v->shape[k]);
    out->shape[k] = v->shape[k];
    out->st[k] = (v->strides != NULL ? v->strides[k] : 0) * (cl_long)isz;
    out->numel *= (uint64_t)v->shape[k];
  }
  if (v->strides == NULL) { /* contiguous */
    cl_long s = (cl_long)isz;
    for (int k = v->ndim - 1; k >= 0; --k) {
      out->st[k] = s;
      s *= v->shape[k] > 0 ? v->shape[k] : 1;
    }
  }
  if (out->numel > 0 && out->buf == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has a NULL buffer", op, what);
  return HWP_OK;
}

/* A 0-d view as the 1-d view of its one element. */
static void view_promote0(ix_view *v) {
  if (v->nd == 0) {
    v->nd = 1;
    v->shape[0] = 1;
    v->st[0] = 0;
  }
}

static int view_contiguous(const ix_view *v) {
  cl_long s = (cl_long)hwp_dtype_size(v->dtype);
  for (int k = v->nd - 1; k >= 0; --k) {
    if (v->shape[k] != 1 && v->st[k] != s) return v->numel == 0;
    s *= v->shape[k];
  }
  return 1;
}

static cl_long16 long16_of(const void *vals, int n, int is_int64) {
  cl_long16 r;
  memset(&r, 0, sizeof r);
  for (int k = 0; k < n; ++k)
    r.s[k] = is_int64 ? ((const int64_t *)vals)[k] : ((const cl_long *)vals)[k];
  return r;
}
#define SHAPE16(v) long16_of((v)->shape, (v)->nd, 1)
#define ST16(v) long16_of((v)->st, (v)->nd, 0)

static HWP_Status same_dtype(const char *op, const char *what, const ix_view *v, HWP_DType d) {
  if (v->dtype == d) return HWP_OK;
  return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has dtype %d, expected %d", op, what,
                   (int)v->dtype, (int)d);
}

static HWP_Status same_ndim(const char *op, const char *what, const ix_view *v, int nd) {
  if (v->nd == nd) return HWP_OK;
  return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has ndim %d, expected %d", op, what,
                   v->nd, nd);
}

/* dims k != skip of a and b agree (same ndim already). */
static HWP_Status same_except(const char *op, const char *an, const ix_view *a, const char *bn,
                              const ix_view *b, int skip) {
  for (int k = 0; k < a->nd; ++k)
    if (k != skip && a->shape[k] != b->shape[k])
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s has shape[%d] = %lld but %s has %lld",
                       op, bn, k, (long long)b->shape[k], an, (long long)a->shape[k]);
  return HWP_OK;
}

static HWP_Status index_dtype(const char *op, const ix_view *v) {
  if (v->dtype == HWP_DTYPE_INT32 || v->dtype == HWP_DTYPE_INT64) return HWP_OK;
  return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: index has dtype %d (expected int32 or int64)",
                   op, (int)v->dtype);
}

static HWP_Status bad_index(const char *op, int64_t value, int64_t limit) {
  return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: index %lld is out of range [0, %lld)", op,
                   (long long)value, (long long)limit);
}

/* ---- attributes ---------------------------------------------------------------------------- */

static HWP_Status attr_int(const HWP_KernelContext *ctx, const char *op, const char *name,
                           int required, int64_t fallback, int64_t *out) {
  int64_t v = fallback;
  HWP_Status st = ctx->get_attr(ctx, name, HWP_ATTR_INT64, &v, NULL);
  if (st == HWP_ERROR_NOT_FOUND && !required) v = fallback;
  else if (st != HWP_OK)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute '%s' is %s (expected an int64)",
                     op, name, st == HWP_ERROR_NOT_FOUND ? "missing" : "not an integer");
  *out = v;
  return HWP_OK;
}

/* attr axis for rank nd (negative counts from the end). */
static HWP_Status attr_axis(const HWP_KernelContext *ctx, const char *op, int nd, int required,
                            int64_t fallback, int *axis) {
  int64_t a = fallback;
  HWP_Status st = attr_int(ctx, op, "axis", required, fallback, &a);
  if (st != HWP_OK) return st;
  if (a < 0) a += nd;
  if (a < 0 || a >= nd)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: axis %lld is out of range for rank %d", op,
                     (long long)a, nd);
  *axis = (int)a;
  return HWP_OK;
}

/* ---- launch plumbing ----------------------------------------------------------------------- */

/* Checks the context (device, counts, fp64 for dtype) and returns the program and queue. */
static HWP_Status begin(const HWP_KernelContext *ctx, const char *op, int nin_min, int nin_max,
                        HWP_DType dtype, int sort, cl_program *prog, cl_command_queue *q) {
  HWP_Status st = ocl_check_device(ctx->device, op);
  if (st != HWP_OK) return st;
  if (ctx->num_inputs < nin_min || ctx->num_inputs > nin_max || ctx->num_outputs != 1 ||
      ctx->outputs == NULL || (ctx->num_inputs > 0 && ctx->inputs == NULL))
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: expected %d input(s) and 1 output, got %d, %d",
                     op, nin_min, (int)ctx->num_inputs, (int)ctx->num_outputs);
  if (ctx->get_attr == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the kernel context has no get_attr", op);
  if (dtype < 0 || dtype >= HWP_DTYPE_COUNT)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: bad dtype %d", op, (int)dtype);
  int dev = ctx->device;
  if (dtype == HWP_DTYPE_FLOAT64 && !g_ix_fp64[dev])
    return ocl_error(HWP_ERROR_NOT_SUPPORTED, "%s: device %d has no double precision", op, dev);
  if (prog != NULL) {
    st = sort ? ocl_program_get(dev, OCL_SORT_SLOT0 + (int)dtype, ocl_argsort_source,
                                g_ix_options[dev][dtype], prog, op)
              : ocl_program_get(dev, OCL_IDX_SLOT0 + (int)dtype, ocl_index_source,
                                g_ix_options[dev][dtype], prog, op);
    if (st != HWP_OK) return st;
  }
  return ocl_ctx_queue(ctx, q, op);
}

/* The contiguous byte strides of `shape`. */
static void contiguous_st(const ix_view *like, HWP_DType dtype, cl_long *st) {
  cl_long s = (cl_long)hwp_dtype_size(dtype);
  for (int k = like->nd - 1; k >= 0; --k) {
    st[k] = s;
    s *= like->shape[k] > 0 ? like->shape[k] : 1;
  }
}

/* k_copy: dst (byte offset dst_off, strides dst_st) <- src, shape of src. */
static HWP_Status launch_copy(const HWP_KernelContext *ctx, cl_command_queue q, cl_program prog,
                              const char *op, cl_mem dst, cl_ulong dst_off, const cl_long *dst_st,
                              int dst_al, const ix_view *src) {
  if (src->numel == 0) return HWP_OK;
  cl_long16 ost = long16_of(dst_st, src->nd, 0), ist = ST16(src), shape = SHAPE16(src);
  cl_int nd = src->nd, al = dst_al && src->al;
  cl_ulong n = src->numel;
  ocl_arg a[] = {OCL_ARG(dst),      OCL_ARG(dst_off), OCL_ARG(ost), OCL_ARG(src->buf),
                  OCL_ARG(src->off), OCL_ARG(ist),     OCL_ARG(shape), OCL_ARG(nd),
                  OCL_ARG(n),        OCL_ARG(al)};
  return ocl_run_1d(ctx, q, prog, "k_copy", a, 10, n, op);
}

/* ---- concat -------------------------------------------------------------------------------- */

static HWP_Status ocl_kernel_concat(const HWP_KernelContext *ctx) {
  const char *op = "concat";
  if (ctx->num_outputs != 1 || ctx->outputs == NULL)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: expected 1 output", op);
  cl_program prog;
  cl_command_queue q;
  HWP_Status st = begin(ctx, op, 1, INT32_MAX, ctx->outputs[0].dtype, 0, NULL, &q);
  if (st != HWP_OK) return st;
  ix_view o, x;
  if ((st = view_load(op, "output 0", &ctx->outputs[0], &o)) != HWP_OK) return st;
  if (o.nd < 1)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must have rank >= 1", op);
  int axis;
  if ((st = attr_axis(ctx, op, o.nd, 0, 0, &axis)) != HWP_OK) return st;
  int64_t total = 0;
  char name[32];
  for (int i = 0; i < ctx->num_inputs; ++i) {
    snprintf(name, sizeof name, "input %d", i);
    if ((st = view_load(op, name, &ctx->inputs[i], &x)) != HWP_OK ||
        (st = same_dtype(op, name, &x, o.dtype)) != HWP_OK ||
        (st = same_ndim(op, name, &x, o.nd)) != HWP_OK ||
        (st = same_except(op, "the output", &o, name, &x, axis)) != HWP_OK)
      return st;
    total += x.shape[axis];
  }
  if (total != o.shape[axis])
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: the inputs' lengths along axis %d add up to %lld, the output has %lld",
                     op, axis, (long long)total, (long long)o.shape[axis]);
  if (o.numel == 0) return HWP_OK;
  if ((st = begin(ctx, op, 1, INT32_MAX, o.dtype, 0, &prog, &q)) != HWP_OK) return st;
  cl_long ost[HWP_MAX_NDIM];
  contiguous_st(&o, o.dtype, ost);
  int64_t pos = 0;
  for (int i = 0; i < ctx->num_inputs && st == HWP_OK; ++i) {
    view_load(op, "input", &ctx->inputs[i], &x);
    st = launch_copy(ctx, q, prog, op, o.buf, o.off + (cl_ulong)(pos * ost[axis]), ost, o.al, &x);
    pos += x.shape[axis];
  }
  return st != HWP_OK ? st : ocl_launch_done(ctx, q, op);
}

/* ---- pad ----------------------------------------------------------------------------------- */

static HWP_Status ocl_kernel_pad(const HWP_KernelContext *ctx) {
  const char *op = "pad";
  cl_program prog;
  cl_command_queue q;
  HWP_Status st = begin(ctx, op, 1, 1, ctx->outputs != NULL ? ctx->outputs[0].dtype : 0, 0,
                        NULL, &q);
  if (st != HWP_OK) return st;
  ix_view o, x;
  if ((st = view_load(op, "output 0", &ctx->outputs[0], &o)) != HWP_OK ||
      (st = view_load(op, "input 0", &ctx->inputs[0], &x)) != HWP_OK ||
      (st = same_dtype(op, "input 0", &x, o.dtype)) != HWP_OK ||
      (st = same_ndim(op, "input 0", &x, o.nd)) != HWP_OK)
    return st;
  const int64_t *pads = NULL;
  int64_t count = -1;
  st = ctx->get_attr(ctx, "pad", HWP_ATTR_INT64_ARRAY, (void *)&pads, &count);
  if (st != HWP_OK)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute 'pad' is %s (expected int64s)",
                     op, st == HWP_ERROR_NOT_FOUND ? "missing" : "not an int64 array");
  if (count < 0 || count % 2 != 0 || count > 2 * o.nd || (count > 0 && pads == NULL))
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: attribute 'pad' has %lld values, expected (before, after) pairs for at "
                     "most ndim = %d dims",
                     op, (long long)count, o.nd);
  int64_t before[HWP_MAX_NDIM] = {0};
  for (int k = 0; k < o.nd; ++k) {
    int64_t b = 2 * k < count ? pads[2 * k] : 0, a = 2 * k < count ? pads[2 * k + 1] : 0;
    if (b < 0 || a < 0 || x.shape[k] + b + a != o.shape[k])
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: dim %d: input %lld padded by (%lld, %lld) does not give the output's "
                       "%lld (pads must be non-negative)",
                       op, k, (long long)x.shape[k], (long long)b, (long long)a,
                       (long long)o.shape[k]);
    before[k] = b;
  }
  int64_t bits = 0;
  if ((st = hwps_value_bits(ctx, op, "value", 0, o.dtype, &bits)) != HWP_OK) return st;
  if (o.numel == 0) return HWP_OK;
  if ((st = begin(ctx, op, 1, 1, o.dtype, 0, &prog, &q)) != HWP_OK) return st;
  cl_mem xb = x.numel > 0 ? x.buf : o.buf; /* never read when x is empty */
  cl_long16 oshape = SHAPE16(&o), xshape = SHAPE16(&x), xst = ST16(&x);
  cl_long16 bf = long16_of(before, o.nd, 1);
  cl_ulong n = o.numel, cbits = (cl_ulong)bits;
  cl_int nd = o.nd, al = o.al && x.al;
  ocl_arg a[] = {OCL_ARG(o.buf),  OCL_ARG(o.off), OCL_ARG(n),   OCL_ARG(nd),
                  OCL_ARG(oshape), OCL_ARG(xb),    OCL_ARG(x.off), OCL_ARG(xshape),
                  OCL_ARG(xst),    OCL_ARG(bf),    OCL_ARG(cbits), OCL_ARG(al)};
  st = ocl_run_1d(ctx, q, prog, "k_pad", a, 12, n, op);
  return st != HWP_OK ? st : ocl_launch_done(ctx, q, op);
}

/* ---- gather / take_along_axis ---------------------------------------------------------------- */

/* k_take over out with the index view `ix` (strides already arranged), then the flag check. */
static HWP_Status launch_take(const HWP_KernelContext *ctx, const char *op, const ix_view *o,
                              const ix_view *x, const cl_long *xst, const ix_view *ix,
                              const cl_long *ist, int axis) {
  cl_program prog;
  cl_command_queue q;
  HWP_Status st = begin(ctx, op, 2, 2, o->dtype, 0, &prog, &q);
  if (st != HWP_OK) return st;
  int32_t zero[4] = {0, 0, 0, 0}, flag[4] = {0, 0, 0, 0};
  cl_mem fb;
  if ((st = ocl_temp_buffer(ctx->device, sizeof zero, zero, &fb, op)) != HWP_OK) return st;
  cl_mem xb = x->numel > 0 ? x->buf : o->buf; /* x empty: every index is out of range */
  cl_long16 oshape = SHAPE16(o), xs = long16_of(xst, o->nd, 0), is = long16_of(ist, o->nd, 0);
  cl_ulong n = o->numel;
  cl_int nd = o->nd, i64 = ix->dtype == HWP_DTYPE_INT64, cax = axis;
  cl_int al = (o->al && x->al) | (ix->al << 1);
  cl_long limit = x->shape[axis];
  ocl_arg a[] = {OCL_ARG(o->buf), OCL_ARG(o->off),  OCL_ARG(n),   OCL_ARG(nd),
                  OCL_ARG(oshape), OCL_ARG(xb),      OCL_ARG(x->off), OCL_ARG(xs),
                  OCL_ARG(ix->buf), OCL_ARG(ix->off), OCL_ARG(is),  OCL_ARG(i64),
                  OCL_ARG(cax),    OCL_ARG(limit),   OCL_ARG(al),  OCL_ARG(fb)};
  st = ocl_run_1d(ctx, q, prog, "k_take", a, 16, n, op);
  if (st == HWP_OK) st = ocl_read_now(ctx, q, fb, 0, sizeof flag, flag, op);
  clReleaseMemObject(fb);
  if (st != HWP_OK) return st;
  if (flag[0] != 0)
    return bad_index(op, (int64_t)(((uint64_t)(uint32_t)flag[3] << 32) | (uint32_t)flag[2]),
                     limit);
  return ocl_launch_done(ctx, q, op);
}

/* gather, take_along_axis, scatter: checks the context (nin inputs) and loads output 0, x
 * (inputs[0], of the output's dtype) and the index (inputs[1], int32 or int64). */
static HWP_Status load_indexed(const HWP_KernelContext *ctx, const char *op, int nin, ix_view *o,
                               ix_view *x, ix_view *ix) {
  cl_command_queue q;
  HWP_Status st = begin(ctx, op, nin, nin, HWP_DTYPE_BOOL, 0, NULL, &q);
  if (st != HWP_OK || (st = view_load(op, "output 0", &ctx->outputs[0], o)) != HWP_OK ||
      (st = view_load(op, "x", &ctx->inputs[0], x)) != HWP_OK ||
      (st = view_load(op, "index", &ctx->inputs[1], ix)) != HWP_OK ||
      (st = same_dtype(op, "x", x, o->dtype)) != HWP_OK)
    return st;
  return index_dtype(op, ix);
}

static HWP_Status ocl_kernel_gather(const HWP_KernelContext *ctx) {
  const char *op = "gather";
  ix_view o, x, ix;
  HWP_Status st = load_indexed(ctx, op, 2, &o, &x, &ix);
  if (st != HWP_OK || (st = same_ndim(op, "index", &ix, 1)) != HWP_OK) return st;
  if (x.nd < 1) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: x must have rank >= 1", op);
  int axis;
  if ((st = same_ndim(op, "output 0", &o, x.nd)) != HWP_OK ||
      (st = attr_axis(ctx, op, x.nd, 0, 0, &axis)) != HWP_OK ||
      (st = same_except(op, "x", &x, "output 0", &o, axis)) != HWP_OK)
    return st;
  if (o.shape[axis] != ix.shape[0])
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: output 0 has %lld rows along axis %d but index has %lld values", op,
                     (long long)o.shape[axis], axis, (long long)ix.shape[0]);
  if (o.numel == 0) return HWP_OK;
  cl_long ist[HWP_MAX_NDIM] = {0};
  ist[axis] = ix.st[0];
  return launch_take(ctx, op, &o, &x, x.st, &ix, ist, axis);
}

static HWP_Status ocl_kernel_take_along_axis(const HWP_KernelContext *ctx) {
  const char *op = "take_along_axis";
  ix_view o, x, ix;
  HWP_Status st = load_indexed(ctx, op, 2, &o, &x, &ix);
  if (st != HWP_OK) return st;
  if (o.nd < 1)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must have rank >= 1", op);
  int axis;
  if ((st = same_ndim(op, "x", &x, o.nd)) != HWP_OK ||
      (st = same_ndim(op, "index", &ix, o.nd)) != HWP_OK ||
      (st = attr_axis(ctx, op, o.nd, 1, 0, &axis)) != HWP_OK)
    return st;
  cl_long xst[HWP_MAX_NDIM], ist[HWP_MAX_NDIM];
  for (int k = 0; k < o.nd; ++k) { /* size-1 dims broadcast */
    const int64_t m = o.shape[k];
    if (k != axis && x.shape[k] != m && x.shape[k] != 1)
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: x has shape[%d] = %lld, expected %lld (or 1)", op, k,
                       (long long)x.shape[k], (long long)m);
    if (ix.shape[k] != m && ix.shape[k] != 1)
      return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: index has shape[%d] = %lld, expected %lld (or 1)", op, k,
                       (long long)ix.shape[k], (long long)m);
    xst[k] = (k != axis && x.shape[k] != m) ? 0 : x.st[k];
    ist[k] = ix.shape[k] != m ? 0 : ix.st[k];
  }
  if (o.numel == 0) return HWP_OK;
  return launch_take(ctx, op, &o, &x, xst, &ix, ist, axis);
}

/* ---- scatter ------------------------------------------------------------------------------- */

typedef struct target_row {
  int64_t target, row;
} target_row;

static int target_row_cmp(const void *a, const void *b) {
  const target_row *x = a, *y = b;
  if (x->target != y->target) return x->target < y->target ? -1 : 1;
  return x->row < y->row ? -1 : x->row > y->row;
}

/* Reads the 1-D index (n values) back, checks every value against `limit` and groups the rows:
 * *grp (malloc'd, *grp_len longs) = G targets ascending, G + 1 starts, n rows; *groups = G. */
static HWP_Status scatter_groups(const HWP_KernelContext *ctx, cl_command_queue q,
                                 const ix_view *ix, int64_t limit, cl_long **grp,
                                 size_t *grp_len, uint64_t *groups) {
  const char *op = "scatter";
  const int64_t n = ix->shape[0];
  const cl_long isz = (cl_long)hwp_dtype_size(ix->dtype), s = ix->st[0];
  cl_long lo = s < 0 ? (n - 1) * s : 0, hi = s > 0 ? (n - 1) * s : 0;
  size_t span = (size_t)(hi - lo + isz);
  unsigned char *raw = malloc(span);
  target_row *tr = malloc((size_t)n * sizeof *tr);
  cl_long *g = malloc((size_t)(3 * n + 1) * sizeof *g);
  HWP_Status st = HWP_OK;
  if (raw == NULL || tr == NULL || g == NULL) {
    st = ocl_error(HWP_ERROR_OUT_OF_MEMORY, "%s: no host memory for %lld index values", op,
                   (long long)n);
    goto done;
  }
  if ((st = ocl_read_now(ctx, q, ix->buf, (uint64_t)((cl_long)ix->off + lo), span, raw, op)) !=
      HWP_OK)
    goto done;
  for (int64_t j = 0; j < n; ++j) {
    const unsigned char *p = raw + (j * s - lo);
    int64_t t;
    if (isz == 8) {
      memcpy(&t, p, 8);
    } else {
      int32_t t32;
      memcpy(&t32, p, 4);
      t = t32;
    }
    if ((uint64_t)t >= (uint64_t)limit) {
      st = bad_index(op, t, limit);
      goto done;
    }
    tr[j].target = t;
    tr[j].row = j;
  }
  qsort(tr, (size_t)n, sizeof *tr, target_row_cmp); /* rows in index order within a target */
  uint64_t G = 0;
  for (int64_t j = 0; j < n; ++j)
    if (j == 0 || tr[j].target != tr[j - 1].target) g[G++] = tr[j].target;
  cl_long *start = g + G, *rows = g + 2 * G + 1;
  uint64_t k = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (j == 0 || tr[j].target != tr[j - 1].target) start[k++] = j;
    rows[j] = tr[j].row;
  }
  start[G] = n;
  *groups = G;
  *grp_len = (size_t)(2 * G + 1 + (uint64_t)n);
  *grp = g;
  g = NULL;
done:
  free(raw);
  free(tr);
  free(g);
  return st;
}

static HWP_Status ocl_kernel_scatter(const HWP_KernelContext *ctx) {
  const char *op = "scatter";
  cl_program prog;
  cl_command_queue q;
  ix_view o, x, ix, u;
  HWP_Status st = load_indexed(ctx, op, 3, &o, &x, &ix);
  if (st != HWP_OK || (st = view_load(op, "updates", &ctx->inputs[2], &u)) != HWP_OK ||
      (st = same_dtype(op, "updates", &u, o.dtype)) != HWP_OK ||
      (st = same_ndim(op, "index", &ix, 1)) != HWP_OK)
    return st;
  if (o.nd < 1) return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: x must have rank >= 1", op);
  int axis;
  if ((st = same_ndim(op, "x", &x, o.nd)) != HWP_OK ||
      (st = same_ndim(op, "updates", &u, o.nd)) != HWP_OK ||
      (st = attr_axis(ctx, op, o.nd, 0, 0, &axis)) != HWP_OK ||
      (st = same_except(op, "output 0", &o, "x", &x, -1)) != HWP_OK ||
      (st = same_except(op, "x", &x, "updates", &u, axis)) != HWP_OK)
    return st;
  if (u.shape[axis] != ix.shape[0])
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: updates has %lld rows along axis %d but index has %lld values", op,
                     (long long)u.shape[axis], axis, (long long)ix.shape[0]);
  const char *reduce = NULL;
  HWP_Status ast = ctx->get_attr(ctx, "reduce", HWP_ATTR_STRING, (void *)&reduce, NULL);
  if (ast != HWP_OK && ast != HWP_ERROR_NOT_FOUND)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute 'reduce' is not a string", op);
  if (ast == HWP_ERROR_NOT_FOUND || reduce == NULL) reduce = "assign";
  cl_int add = strcmp(reduce, "add") == 0;
  if (!add && strcmp(reduce, "assign") != 0)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: attribute 'reduce' is '%.64s' (expected 'assign' or 'add')", op, reduce);
  if ((st = begin(ctx, op, 3, 3, o.dtype, 0, &prog, &q)) != HWP_OK) return st;
  cl_long *grp = NULL;
  size_t grp_len = 0;
  uint64_t groups = 0;
  if (ix.shape[0] > 0 &&
      (st = scatter_groups(ctx, q, &ix, o.shape[axis], &grp, &grp_len, &groups)) != HWP_OK)
    return st;
  cl_long ost[HWP_MAX_NDIM];
  contiguous_st(&o, o.dtype, ost);
  st = launch_copy(ctx, q, prog, op, o.buf, o.off, ost, o.al, &x);
  ix_view one = u; /* the updates' shape with dim axis = 1: the positions off the axis */
  one.shape[axis] = 1;
  cl_ulong m = u.shape[axis] > 0 ? u.numel / (uint64_t)u.shape[axis] : 0;
  if (st == HWP_OK && groups > 0 && m > 0) {
    cl_mem gb;
    st = ocl_temp_buffer(ctx->device, grp_len * sizeof *grp, grp, &gb, op);
    if (st == HWP_OK) {
      cl_long16 o16 = long16_of(ost, o.nd, 0), u16 = ST16(&u), sh1 = SHAPE16(&one);
      cl_int nd = o.nd, cax = axis, al = o.al && u.al;
      cl_ulong g = groups;
      ocl_arg a[] = {OCL_ARG(o.buf), OCL_ARG(o.off), OCL_ARG(o16), OCL_ARG(u.buf),
                      OCL_ARG(u.off), OCL_ARG(u16),   OCL_ARG(sh1), OCL_ARG(nd),
                      OCL_ARG(cax),   OCL_ARG(m),     OCL_ARG(g),   OCL_ARG(gb),
                      OCL_ARG(add),   OCL_ARG(al)};
      st = ocl_run_1d(ctx, q, prog, "k_scatter", a, 14, m * g, op);
      clReleaseMemObject(gb);
    }
  }
  free(grp);
  return st != HWP_OK ? st : ocl_launch_done(ctx, q, op);
}

/* ---- argsort ------------------------------------------------------------------------------- */

static uint64_t pow2_at_least(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

/* The local size of k_as_local on `dev`: a power of two <= OCL_SORT_MAX_LOCAL that the kernel
 * and the device's local memory (two ulongs per element, two elements per work-item) allow. */
static size_t sort_local(cl_program prog, int dev) {
  size_t cap = OCL_SORT_MAX_LOCAL, kwg = 0;
  cl_ulong lmem = 0;
  cl_kernel k = clCreateKernel(prog, "k_as_local", NULL);
  if (k != NULL) {
    if (clGetKernelWorkGroupInfo(k, g_ocl.devices[dev].id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg,
                                 &kwg, NULL) == CL_SUCCESS &&
        kwg > 0 && kwg < cap)
      cap = kwg;
    clReleaseKernel(k);
  }
  if (clGetDeviceInfo(g_ocl.devices[dev].id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem,
                      NULL) == CL_SUCCESS &&
      lmem > 0)
    while (cap > 1 && (cl_ulong)cap * 32 > lmem / 2) cap /= 2;
  size_t w = 1;
  while (w * 2 <= cap) w *= 2;
  return w;
}

static HWP_Status sort_local_pass(const HWP_KernelContext *ctx, cl_command_queue q,
                                  cl_program prog, cl_mem keys, cl_mem ids, cl_ulong P,
                                  cl_ulong kmax, cl_ulong merge_k, size_t w, cl_ulong total,
                                  const char *op) {
  ocl_arg a[] = {OCL_ARG(keys),    OCL_ARG(ids),   OCL_ARG(P),
                  OCL_ARG(kmax),    OCL_ARG(merge_k), OCL_LOCAL(2 * w * sizeof(cl_ulong)),
                  OCL_LOCAL(2 * w * sizeof(cl_ulong))};
  cl_kernel k;
  HWP_Status st = ocl_kernel_make(prog, "k_as_local", a, 7, &k, op);
  return st != HWP_OK ? st : ocl_enqueue_1d(ctx, q, k, total / 2, w, op);
}

static HWP_Status argsort_launch(const HWP_KernelContext *ctx, const char *op, const ix_view *x,
                                 const ix_view *o, int axis, cl_int desc) {
  cl_program prog;
  cl_command_queue q;
  HWP_Status st = begin(ctx, op, 1, 1, x->dtype, 1, &prog, &q);
  if (st != HWP_OK) return st;
  const uint64_t len = (uint64_t)x->shape[axis], rows = x->numel / len;
  /* the dims off the axis: shape, x strides, output (contiguous) strides */
  int64_t rsh[HWP_MAX_NDIM];
  cl_long rst[HWP_MAX_NDIM], rost[HWP_MAX_NDIM], ost[HWP_MAX_NDIM];
  contiguous_st(o, HWP_DTYPE_INT64, ost);
  cl_int rnd = 0;
  for (int k = 0; k < x->nd; ++k)
    if (k != axis) {
      rsh[rnd] = x->shape[k];
      rst[rnd] = x->st[k];
      rost[rnd++] = ost[k];
    }
  const cl_ulong P = pow2_at_least(len < 2 ? 2 : len);
  size_t w = sort_local(prog, ctx->device);
  cl_ulong bs = 2 * (cl_ulong)w;
  if (bs > pow2_at_least(rows * P)) bs = pow2_at_least(rows * P);
  w = (size_t)(bs / 2);
  const cl_ulong total = (rows * P + bs - 1) / bs * bs;
  cl_mem keys = NULL, ids = NULL;
  if ((st = ocl_temp_buffer(ctx->device, total * 8, NULL, &keys, op)) != HWP_OK) return st;
  if ((st = ocl_temp_buffer(ctx->device, total * 8, NULL, &ids, op)) != HWP_OK) {
    clReleaseMemObject(keys);
    return st;
  }
  cl_long16 rs16 = long16_of(rsh, rnd, 1), rst16 = long16_of(rst, rnd, 0);
  cl_long16 ro16 = long16_of(rost, rnd, 0);
  cl_long ast = x->st[axis], oast = ost[axis];
  cl_ulong clen = len, crows = rows, n = rows * len;
  cl_int xal = x->al, oal = o->al;
  ocl_arg ia[] = {OCL_ARG(keys), OCL_ARG(ids),   OCL_ARG(total), OCL_ARG(P),
                   OCL_ARG(clen), OCL_ARG(crows), OCL_ARG(x->buf), OCL_ARG(x->off),
                   OCL_ARG(rs16), OCL_ARG(rst16), OCL_ARG(rnd),   OCL_ARG(ast),
                   OCL_ARG(desc), OCL_ARG(xal)};
  st = ocl_run_1d(ctx, q, prog, "k_as_init", ia, 14, total, op);
  if (st == HWP_OK)
    st = sort_local_pass(ctx, q, prog, keys, ids, P, P < bs ? P : bs, 0, w, total, op);
  for (cl_ulong k = 2 * bs; k <= P && st == HWP_OK; k <<= 1) {
    for (cl_ulong j = k >> 1; j >= bs && st == HWP_OK; j >>= 1) {
      cl_ulong pairs = total / 2;
      ocl_arg sa[] = {OCL_ARG(keys), OCL_ARG(ids), OCL_ARG(P),
                       OCL_ARG(k),    OCL_ARG(j),   OCL_ARG(pairs)};
      st = ocl_run_1d(ctx, q, prog, "k_as_step", sa, 6, pairs, op);
    }
    if (st == HWP_OK) st = sort_local_pass(ctx, q, prog, keys, ids, P, 0, k, w, total, op);
  }
  if (st == HWP_OK) {
    ocl_arg oa[] = {OCL_ARG(o->buf), OCL_ARG(o->off), OCL_ARG(rs16), OCL_ARG(ro16),
                     OCL_ARG(rnd),    OCL_ARG(oast),   OCL_ARG(clen), OCL_ARG(P),
                     OCL_ARG(n),      OCL_ARG(ids),    OCL_ARG(oal)};
    st = ocl_run_1d(ctx, q, prog, "k_as_out", oa, 11, n, op);
  }
  clReleaseMemObject(keys);
  clReleaseMemObject(ids);
  return st != HWP_OK ? st : ocl_launch_done(ctx, q, op);
}

static HWP_Status ocl_kernel_argsort(const HWP_KernelContext *ctx) {
  const char *op = "argsort";
  HWP_Status st = begin(ctx, op, 1, 1, HWP_DTYPE_BOOL, 0, NULL, &(cl_command_queue){NULL});
  if (st != HWP_OK) return st;
  ix_view o, x;
  if ((st = view_load(op, "output 0", &ctx->outputs[0], &o)) != HWP_OK ||
      (st = view_load(op, "input 0", &ctx->inputs[0], &x)) != HWP_OK ||
      (st = same_dtype(op, "output 0", &o, HWP_DTYPE_INT64)) != HWP_OK ||
      (st = same_ndim(op, "output 0", &o, x.nd)) != HWP_OK ||
      (st = same_except(op, "input 0", &x, "output 0", &o, -1)) != HWP_OK)
    return st;
  view_promote0(&x); /* 0-d: one row of one element */
  view_promote0(&o);
  int axis;
  if ((st = attr_axis(ctx, op, x.nd, 0, -1, &axis)) != HWP_OK) return st;
  uint8_t desc = 0;
  HWP_Status ast = ctx->get_attr(ctx, "descending", HWP_ATTR_BOOL, &desc, NULL);
  if (ast == HWP_ERROR_INVALID_ARGUMENT) { /* an integer flag is accepted too */
    int64_t v = 0;
    ast = ctx->get_attr(ctx, "descending", HWP_ATTR_INT64, &v, NULL);
    desc = v != 0;
  }
  if (ast != HWP_OK && ast != HWP_ERROR_NOT_FOUND)
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute 'descending' is not a bool", op);
  if (x.numel == 0) return HWP_OK;
  return argsort_launch(ctx, op, &x, &o, axis, ast == HWP_OK && desc != 0);
}

/* ---- arange -------------------------------------------------------------------------------- */

/* A numeric attribute read both ways: INT64 (exact) and FLOAT64; absent gives `fallback`. */
static HWP_Status number_attr(const HWP_KernelContext *ctx, const char *op, const char *name,
                              int64_t fallback, int *have_int, int64_t *iv, int *have_float,
                              double *fv) {
  *have_int = ctx->get_attr(ctx, name, HWP_ATTR_INT64, iv, NULL) == HWP_OK;
  HWP_Status st = ctx->get_attr(ctx, name, HWP_ATTR_FLOAT64, fv, NULL);
  *have_float = st == HWP_OK;
  if (*have_int || *have_float) return HWP_OK;
  if (st == HWP_ERROR_NOT_FOUND) {
    *iv = fallback;
    *fv = (double)fallback;
    *have_int = *have_float = 1;
    return HWP_OK;
  }
  return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: attribute '%s' is not a number", op, name);
}

/* double -> int64 truncated toward zero, saturating, NaN -> 0 (cast semantics). */
static int64_t sat_int64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

static HWP_Status ocl_kernel_arange(const HWP_KernelContext *ctx) {
  const char *op = "arange";
  cl_program prog;
  cl_command_queue q;
  HWP_Status st = begin(ctx, op, 0, 0, HWP_DTYPE_BOOL, 0, NULL, &q);
  if (st != HWP_OK) return st;
  ix_view o;
  if ((st = view_load(op, "output 0", &ctx->outputs[0], &o)) != HWP_OK) return st;
  if (!view_contiguous(&o))
    return ocl_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the output must be contiguous", op);
  int si, sf, ti, tf;
  int64_t istart = 0, istep = 1;
  double fstart = 0, fstep = 1;
  if ((st = number_attr(ctx, op, "start", 0, &si, &istart, &sf, &fstart)) != HWP_OK ||
      (st = number_attr(ctx, op, "step", 1, &ti, &istep, &tf, &fstep)) != HWP_OK)
    return st;
  /* as the CPU plugin: an int64 beyond double's exact range reads as INT64 only */
  if (!sf) fstart = (double)istart;
  if (!tf) fstep = (double)istep;
  if (!si) istart = sat_int64(fstart);
  if (!ti) istep = sat_int64(fstep);
  int is_float = o.dtype >= HWP_DTYPE_FLOAT16 && o.dtype <= HWP_DTYPE_FLOAT64;
  if (is_float && !g_ix_fp64[ctx->device])
    return ocl_error(HWP_ERROR_NOT_SUPPORTED, "%s: device %d has no double precision", op,
                     (int)ctx->device);
  if (o.numel == 0) return HWP_OK;
  if ((st = begin(ctx, op, 0, 0, o.dtype, 0, &prog, &q)) != HWP_OK) return st;
  cl_ulong n = o.numel, fsb, fpb;
  memcpy(&fsb, &fstart, 8);
  memcpy(&fpb, &fstep, 8);
  cl_long cis = istart, cip = istep;
  cl_int al = o.al;
  ocl_arg a[] = {OCL_ARG(o.buf), OCL_ARG(o.off), OCL_ARG(n),   OCL_ARG(cis),
                  OCL_ARG(cip),   OCL_ARG(fsb),   OCL_ARG(fpb), OCL_ARG(al)};
  st = ocl_run_1d(ctx, q, prog, "k_arange", a, 8, n, op);
  return st != HWP_OK ? st : ocl_launch_done(ctx, q, op);
}

/* ---- registration ------------------------------------------------------------------------ */

HWP_Status ocl_register_index_kernels(const HWP_HostApi *host) {
  static const struct {
    const char *op;
    HWP_KernelFn fn;
    int numeric_only; /* ops.yaml dtypes: numeric (no bool); else all */
    int float_needs_fp64;
  } ops[] = {
      {"concat", ocl_kernel_concat, 0, 0},   {"pad", ocl_kernel_pad, 0, 0},
      {"gather", ocl_kernel_gather, 0, 0},   {"take_along_axis", ocl_kernel_take_along_axis, 0, 0},
      {"scatter", ocl_kernel_scatter, 0, 0}, {"argsort", ocl_kernel_argsort, 1, 0},
      {"arange", ocl_kernel_arange, 1, 1},
  };
  if (g_ocl.num_devices == 0) return HWP_OK;
  int fp64_all = 1;
  for (int32_t d = 0; d < g_ocl.num_devices; ++d) {
    g_ix_fp64[d] = ocl_device_has_fp64(g_ocl.devices[d].id);
    fp64_all &= g_ix_fp64[d];
    for (int dt = 0; dt < HWP_DTYPE_COUNT; ++dt)
      snprintf(g_ix_options[d][dt], sizeof g_ix_options[d][dt], "-DDT_%s=1%s",
               ocl_program_dtype(dt), g_ix_fp64[d] ? " -DHAS_FP64=1" : "");
  }
  int count = 0;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i)
    for (HWP_DType dt = 0; dt < HWP_DTYPE_COUNT; ++dt) {
      int is_float = dt >= HWP_DTYPE_FLOAT16;
      if ((ops[i].numeric_only && dt == HWP_DTYPE_BOOL) ||
          ((dt == HWP_DTYPE_FLOAT64 || (is_float && ops[i].float_needs_fp64)) && !fp64_all))
        continue;
      HWP_Status st = ocl_register_strided(host, ops[i].op, dt, ops[i].fn);
      if (st != HWP_OK) return st;
      ++count;
    }
  ocl_log(HWP_LOG_INFO, "opencl: registered %d index kernels (float64: %s)", count,
          fp64_all ? "yes" : "no");
  return HWP_OK;
}
