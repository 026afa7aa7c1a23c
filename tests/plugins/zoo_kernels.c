/* Zoo plugins that are wrong only past a size threshold (tests/conformance/test_zoo_sizes.py).
 * Built once per variant with -DHWP_TEST_VARIANT=<variant> into libhwport_test_<variant>.so
 * (device type "test_<variant>"), over the malloc-backed runtime of test_runtime.h. Each kernel
 * variant registers exactly one kernel (every other op runs on the host's CPU fallback), without
 * HWP_KERNEL_ACCEPTS_STRIDED, so its inputs arrive contiguous.
 *
 *   ktail_matmul       matmul float32 blocked by 64 along K: the K tail is dropped once K > 64
 *                      (K <= 64 runs as one partial block and is right).
 *   f16acc_sum         sum float16 accumulating in float16 (right for a few hundred elements;
 *                      a running sum of 16384 values near 1 stops growing at 4096).
 *   multipass_sum      sum float32 in passes of 4096 elements: past 4096 the last partial pass
 *                      is dropped (a multiple of 4096, like 1024 x 1024, is right).
 *   tail_add           add float32: inputs of 4096+ elements take an 8-wide body whose scalar
 *                      tail starts one element late (that element is never written).
 *   late_h2d           copy_h2d in 4 MiB chunks: the last chunk of a larger copy is finished by a
 *                      helper thread that only runs at the plugin's next submission, after the
 *                      synchronous call has returned (copy_d2h does not wait for it).
 *   unaligned_memset   memset on the NULL stream (synchronous) of 1 MiB+ fills 8-byte words from
 *                      the offset rounded down: at an unaligned offset it overwrites up to 7
 *                      bytes before the range and leaves as many at its end unwritten. */
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define TZ_ID_ktail_matmul 300
#define TZ_ID_f16acc_sum 301
#define TZ_ID_multipass_sum 302
#define TZ_ID_tail_add 303
#define TZ_ID_late_h2d 304
#define TZ_ID_unaligned_memset 305

#define TZ_CAT_(a, b) a##b
#define TZ_CAT(a, b) TZ_CAT_(a, b)
#define TZ_STR_(x) #x
#define TZ_STR(x) TZ_STR_(x)
#define TZ_VARIANT TZ_CAT(TZ_ID_, HWP_TEST_VARIANT)
#define TZ_IS(v) (TZ_VARIANT == TZ_ID_##v)
#if TZ_VARIANT < TZ_ID_ktail_matmul
#error "unknown zoo_kernels variant: define HWP_TEST_VARIANT as one listed at the top"
#endif

#if TZ_IS(unaligned_memset)
#define TR_WITH_STREAMS 1 /* memset_async comes with the stream table */
#endif
#include "test_runtime.h"

#define TZ_DEVICE_TYPE "test_" TZ_STR(HWP_TEST_VARIANT)

/* ---- helpers ----------------------------------------------------------------------------- */
TR_MAYBE_UNUSED
static int64_t tz_numel(const HWP_TensorView *t) {
  int64_t n = 1;
  int32_t k;
  for (k = 0; k < t->ndim; ++k) n *= t->shape[k];
  return n;
}

TR_MAYBE_UNUSED
static void *tz_data(const HWP_TensorView *t) { return (char *)t->buffer + t->byte_offset; }

TR_MAYBE_UNUSED
static HWP_Status tz_args(const HWP_KernelContext *ctx, int32_t ins, const char *op) {
  if (ctx == NULL || ctx->num_inputs != ins || ctx->num_outputs != 1 || !ctx->inputs ||
      !ctx->outputs)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "%s: expected %d inputs and 1 output", op,
                   (int)ins);
  return tr_check_device(ctx->device, op);
}

/* float16 <-> float32, round to nearest even (what a half-precision adder does per step). */
TR_MAYBE_UNUSED
static float tz_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  float f;
  if (exp == 0x1fu) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    f = (float)man / 16777216.0f; /* man * 2^-24 */
    return sign ? -f : f;
  } else {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  }
  memcpy(&f, &bits, sizeof f);
  return f;
}

TR_MAYBE_UNUSED
static uint16_t tz_f2h(float f) {
  uint32_t bits, sign, man;
  int32_t exp;
  memcpy(&bits, &f, sizeof bits);
  sign = (bits >> 16) & 0x8000u;
  exp = (int32_t)((bits >> 23) & 0xffu) - 127 + 15;
  man = bits & 0x7fffffu;
  if (((bits >> 23) & 0xffu) == 0xffu) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
  if (exp >= 0x1f) return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0) {
    uint32_t shift, half, rest, out;
    if (exp < -10) return (uint16_t)sign;
    man |= 0x800000u;
    shift = (uint32_t)(14 - exp);
    out = man >> shift;
    rest = man & ((1u << shift) - 1u);
    half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (out & 1u))) ++out;
    return (uint16_t)(sign | out);
  }
  {
    uint32_t out = ((uint32_t)exp << 10) | (man >> 13), rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (out & 1u))) ++out; /* may carry into inf */
    return (uint16_t)(sign | out);
  }
}

/* ---- matmul float32, K blocked by 64 ------------------------------------------------------- */
#if TZ_IS(ktail_matmul)
#define TZ_KBLOCK 64
static HWP_Status tz_matmul_f32(const HWP_KernelContext *ctx) {
  const HWP_TensorView *x, *y, *out;
  int64_t m, n, k, M, N, K, b, batches = 1, kb;
  const float *px, *py;
  float *po;
  int32_t d;
  HWP_Status st = tz_args(ctx, 2, "matmul");
  if (st != HWP_OK) return st;
  x = &ctx->inputs[0];
  y = &ctx->inputs[1];
  out = &ctx->outputs[0];
  if (out->ndim < 2 || x->ndim != out->ndim || y->ndim != out->ndim)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "matmul: ranks %d, %d -> %d", (int)x->ndim,
                   (int)y->ndim, (int)out->ndim);
  M = x->shape[x->ndim - 2];
  K = x->shape[x->ndim - 1];
  N = y->shape[y->ndim - 1];
  for (d = 0; d < out->ndim - 2; ++d) batches *= out->shape[d];
  tr_kernel_wait(ctx->device, ctx->stream);
  for (b = 0; b < batches; ++b) { /* contiguous inputs, batch dims already broadcast */
    px = (const float *)tz_data(x) + b * M * K;
    py = (const float *)tz_data(y) + b * K * N;
    po = (float *)tz_data(out) + b * M * N;
    for (m = 0; m < M; ++m)
      for (n = 0; n < N; ++n) po[m * N + n] = 0.0f;
    for (kb = 0; kb < K; kb += TZ_KBLOCK) {
      int64_t kend = kb + TZ_KBLOCK;
      if (kend > K) {
        if (K > TZ_KBLOCK) break; /* the bug: the tail block only runs when it is the only one */
        kend = K;
      }
      for (m = 0; m < M; ++m)
        for (n = 0; n < N; ++n) {
          float acc = 0.0f;
          for (k = kb; k < kend; ++k) acc += px[m * K + k] * py[k * N + n];
          po[m * N + n] += acc;
        }
    }
  }
  return HWP_OK;
}
#define TZ_KERNEL_OP "matmul"
#define TZ_KERNEL_DTYPE HWP_DTYPE_FLOAT32
#define TZ_KERNEL_FN tz_matmul_f32
#endif

/* ---- sum: one pass over the input, reduced dims from attr axis ---------------------------- */
#if TZ_IS(f16acc_sum) || TZ_IS(multipass_sum)
/* Calls visit(out_index, reduced_index, input_index) for every input element, in order. */
typedef struct tz_reduce {
  int64_t numel, reduced;   /* input elements; elements per output */
  int64_t out_of[HWP_MAX_NDIM], red_of[HWP_MAX_NDIM]; /* linear weights of each input dim */
  int64_t shape[HWP_MAX_NDIM];
  int32_t ndim;
} tz_reduce;

/* Checks the arguments of a sum and plans its loop. */
static HWP_Status tz_reduce_plan(const HWP_KernelContext *ctx, tz_reduce *r) {
  const HWP_TensorView *x;
  const int64_t *axes = NULL;
  int64_t count = 0, ow = 1, rw = 1;
  int is_reduced[HWP_MAX_NDIM];
  int32_t d;
  HWP_Status st = tz_args(ctx, 1, "sum");
  if (st != HWP_OK) return st;
  x = &ctx->inputs[0];
  st = ctx->get_attr(ctx, "axis", HWP_ATTR_INT64_ARRAY, (void *)&axes, &count);
  if (st != HWP_OK) return tr_fail(st, "sum: no attr axis");
  r->ndim = x->ndim;
  for (d = 0; d < x->ndim; ++d) is_reduced[d] = 0;
  for (d = 0; d < (int32_t)count; ++d) {
    if (axes[d] < 0 || axes[d] >= x->ndim)
      return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "sum: axis %lld", (long long)axes[d]);
    is_reduced[axes[d]] = 1;
  }
  for (d = x->ndim - 1; d >= 0; --d) {
    r->shape[d] = x->shape[d];
    r->out_of[d] = is_reduced[d] ? 0 : ow;
    r->red_of[d] = is_reduced[d] ? rw : 0;
    if (is_reduced[d])
      rw *= x->shape[d];
    else
      ow *= x->shape[d];
  }
  r->numel = tz_numel(x);
  r->reduced = rw;
  return HWP_OK;
}

/* The output and reduced indices of input element i. */
static void tz_locate(const tz_reduce *r, int64_t i, int64_t *o, int64_t *j) {
  int32_t d;
  *o = 0;
  *j = 0;
  for (d = r->ndim - 1; d >= 0; --d) {
    int64_t c = i % r->shape[d];
    i /= r->shape[d];
    *o += c * r->out_of[d];
    *j += c * r->red_of[d];
  }
}
#endif

#if TZ_IS(f16acc_sum)
static HWP_Status tz_sum_f16(const HWP_KernelContext *ctx) {
  tz_reduce r;
  const uint16_t *px;
  uint16_t *po;
  int64_t i, o, j, nout;
  HWP_Status st = tz_reduce_plan(ctx, &r);
  if (st != HWP_OK) return st;
  px = (const uint16_t *)tz_data(&ctx->inputs[0]);
  po = (uint16_t *)tz_data(&ctx->outputs[0]);
  nout = tz_numel(&ctx->outputs[0]);
  for (o = 0; o < nout; ++o) po[o] = 0; /* +0.0 */
  for (i = 0; i < r.numel; ++i) {
    tz_locate(&r, i, &o, &j);
    po[o] = tz_f2h(tz_h2f(po[o]) + tz_h2f(px[i])); /* the bug: a float16 accumulator */
  }
  return HWP_OK;
}
#define TZ_KERNEL_OP "sum"
#define TZ_KERNEL_DTYPE HWP_DTYPE_FLOAT16
#define TZ_KERNEL_FN tz_sum_f16
#endif

#if TZ_IS(multipass_sum)
#define TZ_PASS 4096
static HWP_Status tz_sum_f32(const HWP_KernelContext *ctx) {
  tz_reduce r;
  const float *px;
  float *po;
  double *acc;
  int64_t i, o, j, nout, kept;
  HWP_Status st = tz_reduce_plan(ctx, &r);
  if (st != HWP_OK) return st;
  px = (const float *)tz_data(&ctx->inputs[0]);
  po = (float *)tz_data(&ctx->outputs[0]);
  nout = tz_numel(&ctx->outputs[0]);
  /* Each pass reduces 4096 elements per output; the bug: the pass count rounds down once
   * there is more than one pass, so a partial last pass never runs. */
  kept = r.reduced > TZ_PASS ? r.reduced / TZ_PASS * TZ_PASS : r.reduced;
  acc = (double *)calloc((size_t)(nout > 0 ? nout : 1), sizeof *acc);
  if (acc == NULL) return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "sum: no host memory");
  for (i = 0; i < r.numel; ++i) {
    tz_locate(&r, i, &o, &j);
    if (j < kept) acc[o] += px[i];
  }
  for (o = 0; o < nout; ++o) po[o] = (float)acc[o];
  free(acc);
  return HWP_OK;
}
#define TZ_KERNEL_OP "sum"
#define TZ_KERNEL_DTYPE HWP_DTYPE_FLOAT32
#define TZ_KERNEL_FN tz_sum_f32
#endif

/* ---- add float32 with a vector body for large inputs --------------------------------------- *
 * The copy and memset variants register it too (a plugin needs a kernel); only tail_add's tail
 * is wrong. */
#if !defined(TZ_KERNEL_OP)
#define TZ_VECTOR_FROM 4096 /* smaller inputs take the plain loop */
#define TZ_LANES 8
static HWP_Status tz_add_f32(const HWP_KernelContext *ctx) {
  const float *a, *b;
  float *out;
  int64_t i, n, body;
  int l;
  HWP_Status st = tz_args(ctx, 2, "add");
  if (st != HWP_OK) return st;
  n = tz_numel(&ctx->outputs[0]);
  a = (const float *)tz_data(&ctx->inputs[0]);
  b = (const float *)tz_data(&ctx->inputs[1]);
  out = (float *)tz_data(&ctx->outputs[0]);
  if (n < TZ_VECTOR_FROM) {
    for (i = 0; i < n; ++i) out[i] = a[i] + b[i];
    return HWP_OK;
  }
  body = n / TZ_LANES * TZ_LANES;
  for (i = 0; i < body; i += TZ_LANES)
    for (l = 0; l < TZ_LANES; ++l) out[i + l] = a[i + l] + b[i + l];
#if TZ_IS(tail_add)
  for (i = body + 1; i < n; ++i) out[i] = a[i] + b[i]; /* the bug: the tail starts late */
#else
  for (i = body; i < n; ++i) out[i] = a[i] + b[i];
#endif
  return HWP_OK;
}
#define TZ_KERNEL_OP "add"
#define TZ_KERNEL_DTYPE HWP_DTYPE_FLOAT32
#define TZ_KERNEL_FN tz_add_f32
#endif

/* ---- copy_h2d whose last chunk lands later -------------------------------------------------- */
#if TZ_IS(late_h2d)
#define TZ_CHUNK (4u << 20)
typedef struct tz_late {
  pthread_t thread;
  char *dst, *staged;
  size_t nbytes;
  int pending, kicked;
} tz_late;
static tz_late tz_pending_copy;
static pthread_cond_t tz_kick_cond = PTHREAD_COND_INITIALIZER;

/* The DMA "completion" thread: it is woken by the next submission (or after 5 s). */
static void *tz_late_chunk(void *arg) {
  tz_late *l = (tz_late *)arg;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 5;
  pthread_mutex_lock(&tr_lock);
  while (!l->kicked && pthread_cond_timedwait(&tz_kick_cond, &tr_lock, &until) == 0) {
  }
  pthread_mutex_unlock(&tr_lock);
  memcpy(l->dst, l->staged, l->nbytes);
  return NULL;
}

/* Finishes a pending chunk: every call that submits work (but copy_d2h) starts with it. */
static void tz_flush(void) {
  if (!tz_pending_copy.pending) return;
  pthread_mutex_lock(&tr_lock);
  tz_pending_copy.kicked = 1;
  pthread_cond_broadcast(&tz_kick_cond);
  pthread_mutex_unlock(&tr_lock);
  pthread_join(tz_pending_copy.thread, NULL);
  free(tz_pending_copy.staged);
  tz_pending_copy.pending = 0;
}

static HWP_Status tz_copy_h2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset,
                              const void *src, uint64_t nbytes) {
  tr_header *h = NULL;
  uint64_t last;
  HWP_Status st = tr_header_of(device, dst, "copy_h2d", &h);
  if (st != HWP_OK) return st;
  if ((st = tr_check_range(h, dst_offset, nbytes, "copy_h2d")) != HWP_OK) return st;
  if (nbytes == 0) return HWP_OK;
  if (src == NULL) return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "copy_h2d: src is NULL");
  tz_flush();
  if (nbytes <= TZ_CHUNK) {
    memcpy((char *)dst + dst_offset, src, (size_t)nbytes);
    return HWP_OK;
  }
  last = (nbytes - 1) / TZ_CHUNK * TZ_CHUNK; /* the start of the last chunk */
  memcpy((char *)dst + dst_offset, src, (size_t)last);
  tz_pending_copy.nbytes = (size_t)(nbytes - last);
  tz_pending_copy.staged = (char *)malloc(tz_pending_copy.nbytes);
  if (tz_pending_copy.staged == NULL)
    return tr_fail(HWP_ERROR_OUT_OF_MEMORY, "copy_h2d: no staging memory");
  memcpy(tz_pending_copy.staged, (const char *)src + last, tz_pending_copy.nbytes);
  tz_pending_copy.dst = (char *)dst + dst_offset + last;
  tz_pending_copy.kicked = 0;
  if (pthread_create(&tz_pending_copy.thread, NULL, tz_late_chunk, &tz_pending_copy) != 0) {
    memcpy(tz_pending_copy.dst, tz_pending_copy.staged, tz_pending_copy.nbytes);
    free(tz_pending_copy.staged);
    return HWP_OK;
  }
  tz_pending_copy.pending = 1;
  return HWP_OK; /* the bug: the last chunk is still in flight */
}

static HWP_Status tz_allocate(int32_t device, uint64_t nbytes, HWP_Buffer *out) {
  tz_flush();
  return tr_allocate(device, nbytes, out);
}
static HWP_Status tz_deallocate(int32_t device, HWP_Buffer buffer) {
  tz_flush();
  return tr_deallocate(device, buffer);
}
static HWP_Status tz_copy_d2d(int32_t device, HWP_Buffer dst, uint64_t dst_offset,
                              HWP_Buffer src, uint64_t src_offset, uint64_t nbytes) {
  tz_flush();
  return tr_copy_d2d(device, dst, dst_offset, src, src_offset, nbytes);
}
static HWP_Status tz_synchronize_device(int32_t device) {
  tz_flush();
  return tr_synchronize_device(device);
}
#define TZ_ALLOCATE tz_allocate
#define TZ_DEALLOCATE tz_deallocate
#define TZ_COPY_H2D tz_copy_h2d
#define TZ_COPY_D2D tz_copy_d2d
#define TZ_SYNCHRONIZE_DEVICE tz_synchronize_device
#endif

/* ---- memset with a word-wise fast path -------------------------------------------------------- */
#if TZ_IS(unaligned_memset)
#define TZ_FAST_MEMSET (1u << 20)
static HWP_Status tz_memset_async(int32_t device, HWP_Stream stream, HWP_Buffer dst,
                                  uint64_t dst_offset, uint8_t value, uint64_t nbytes) {
  tr_header *h = NULL;
  uint64_t word, i, words;
  uint64_t *w;
  char *start;
  HWP_Status st;
  if (stream != NULL || nbytes < TZ_FAST_MEMSET)
    return tr_memset_async(device, stream, dst, dst_offset, value, nbytes);
  if ((st = tr_header_of(device, dst, "memset_async", &h)) != HWP_OK) return st;
  if ((st = tr_check_range(h, dst_offset, nbytes, "memset_async")) != HWP_OK) return st;
  tr_device_wait(device);
  memset(&word, value, sizeof word);
  start = (char *)dst + dst_offset;
  /* the bug: the start is rounded down to a word instead of filling a byte-wise head */
  w = (uint64_t *)(void *)((uintptr_t)start & ~(uintptr_t)7);
  words = nbytes / 8;
  for (i = 0; i < words; ++i) w[i] = word;
  memset((char *)(w + words), value, (size_t)(nbytes % 8));
  return HWP_OK;
}
#define TZ_ASYNC_COPIES tr_copy_h2d_async, tr_copy_d2h_async, tr_copy_d2d_async, tz_memset_async
#define TZ_STREAM_TABLE &tr_stream_table
#endif

/* ---- tables ---------------------------------------------------------------------------------- */
#ifndef TZ_ALLOCATE
#define TZ_ALLOCATE tr_allocate
#define TZ_DEALLOCATE tr_deallocate
#define TZ_COPY_H2D tr_copy_h2d
#define TZ_COPY_D2D tr_copy_d2d
#define TZ_SYNCHRONIZE_DEVICE tr_synchronize_device
#endif
#ifndef TZ_ASYNC_COPIES
#define TZ_ASYNC_COPIES NULL, NULL, NULL, NULL
#define TZ_STREAM_TABLE NULL
#endif

static const HWP_DeviceTable tz_device_table = {
    sizeof(HWP_DeviceTable), tr_get_device_count, TZ_SYNCHRONIZE_DEVICE, tr_get_properties,
    NULL, NULL, NULL};
static const HWP_MemoryTable tz_memory_table = {
    sizeof(HWP_MemoryTable), TZ_ALLOCATE, TZ_DEALLOCATE, TZ_COPY_H2D, tr_copy_d2h, TZ_COPY_D2D,
    TZ_ASYNC_COPIES, tr_get_memory_stats, NULL, NULL, NULL, TR_DLPACK_MEMORY};
static const HWP_PluginApi tz_api = {
    sizeof(HWP_PluginApi), HWP_ABI_VERSION_MAJOR, HWP_ABI_VERSION_MINOR, TZ_DEVICE_TYPE, "1.0.0",
    &tz_device_table, &tz_memory_table, tr_get_last_error, TZ_STREAM_TABLE, NULL, NULL, NULL,
    NULL};

HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out);
HWP_EXPORT HWP_Status hwport_plugin_init(const HWP_HostApi *host, const HWP_PluginApi **out) {
  if (host == NULL || out == NULL)
    return tr_fail(HWP_ERROR_INVALID_ARGUMENT, "hwport_plugin_init: NULL argument");
  if (!HWP_HAS_FIELD(host, HWP_HostApi, register_kernel) || host->abi_major != HWP_ABI_VERSION_MAJOR)
    return tr_fail(HWP_ERROR_VERSION_MISMATCH, "host ABI major %u, plugin %d",
                   (unsigned)host->abi_major, HWP_ABI_VERSION_MAJOR);
  tr_memory_init(TZ_DEVICE_TYPE); /* HWPORT_<DEVICE TYPE>_MEMORY_LIMIT */
#ifdef TZ_KERNEL_OP
  {
    HWP_KernelRegistration reg;
    HWP_Status st;
    memset(&reg, 0, sizeof reg);
    reg.struct_size = sizeof reg;
    reg.op_name = TZ_KERNEL_OP;
    reg.dtype = TZ_KERNEL_DTYPE;
    reg.flags = 0; /* contiguous inputs */
    reg.fn = TZ_KERNEL_FN;
    st = host->register_kernel(host->host_context, &reg);
    if (st != HWP_OK) return tr_fail(st, "register_kernel(%s) failed with %d", TZ_KERNEL_OP, (int)st);
  }
#endif
  *out = &tz_api;
  return HWP_OK;
}
