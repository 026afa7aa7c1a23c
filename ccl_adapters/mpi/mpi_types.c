/* hwport MPI adapter — HWP_DType / HWP_CclReduceOp to MPI datatypes and operations.
 *
 * MPI has no float16 / bfloat16 and no average: the half types travel as 16-bit integers and
 * reduce through user operations that widen to float per element; AVG is SUM followed by a
 * division by nranks (mpi_scale_average). BOOL travels as bytes reduced with MAX (or) / MIN
 * (and). */
#include "mpi_adapter.h"

#include <string.h>

#include "half.h" /* device_plugins/cpu: exact widening, round-to-nearest-even narrowing */

static MPI_Op g_half_ops[2][4]; /* [bfloat16?][sum, prod, max, min] */
static int g_half_ops_made;

#define HALF_REDUCE(name, to_f32, from_f32, expr)                                              \
  static void name(void *in, void *inout, int *len, MPI_Datatype *type) {                     \
    (void)type;                                                                               \
    const uint16_t *a = (const uint16_t *)in;                                                 \
    uint16_t *b = (uint16_t *)inout;                                                          \
    for (int i = 0; i < *len; i++) {                                                          \
      float x = to_f32(a[i]), y = to_f32(b[i]);                                               \
      b[i] = from_f32(expr);                                                                  \
    }                                                                                         \
  }

HALF_REDUCE(f16_sum, cpu_f16_to_f32, cpu_f32_to_f16, x + y)
HALF_REDUCE(f16_prod, cpu_f16_to_f32, cpu_f32_to_f16, x * y)
HALF_REDUCE(f16_max, cpu_f16_to_f32, cpu_f32_to_f16, (x > y || x != x) ? x : y)
HALF_REDUCE(f16_min, cpu_f16_to_f32, cpu_f32_to_f16, (x < y || x != x) ? x : y)
HALF_REDUCE(bf16_sum, cpu_bf16_to_f32, cpu_f32_to_bf16, x + y)
HALF_REDUCE(bf16_prod, cpu_bf16_to_f32, cpu_f32_to_bf16, x * y)
HALF_REDUCE(bf16_max, cpu_bf16_to_f32, cpu_f32_to_bf16, (x > y || x != x) ? x : y)
HALF_REDUCE(bf16_min, cpu_bf16_to_f32, cpu_f32_to_bf16, (x < y || x != x) ? x : y)

static int make_half_ops(void) {
  if (g_half_ops_made) return MPI_SUCCESS;
  MPI_User_function *fns[2][4] = {{f16_sum, f16_prod, f16_max, f16_min},
                                  {bf16_sum, bf16_prod, bf16_max, bf16_min}};
  for (int t = 0; t < 2; t++)
    for (int o = 0; o < 4; o++) {
      int rc = MPI_Op_create(fns[t][o], 1 /* commutative */, &g_half_ops[t][o]);
      if (rc != MPI_SUCCESS) return rc;
    }
  g_half_ops_made = 1;
  return MPI_SUCCESS;
}

HWP_Status mpi_datatype(HWP_DType dtype, MPI_Datatype *out) {
  switch (dtype) {
    case HWP_DTYPE_BOOL: *out = MPI_UINT8_T; return HWP_OK;
    case HWP_DTYPE_INT8: *out = MPI_INT8_T; return HWP_OK;
    case HWP_DTYPE_UINT8: *out = MPI_UINT8_T; return HWP_OK;
    case HWP_DTYPE_INT16: *out = MPI_INT16_T; return HWP_OK;
    case HWP_DTYPE_INT32: *out = MPI_INT32_T; return HWP_OK;
    case HWP_DTYPE_INT64: *out = MPI_INT64_T; return HWP_OK;
    case HWP_DTYPE_FLOAT16:
    case HWP_DTYPE_BFLOAT16: *out = MPI_UINT16_T; return HWP_OK;
    case HWP_DTYPE_FLOAT32: *out = MPI_FLOAT; return HWP_OK;
    case HWP_DTYPE_FLOAT64: *out = MPI_DOUBLE; return HWP_OK;
    default: return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "unknown dtype code %d", (int)dtype);
  }
}

HWP_Status mpi_reduce_op(HWP_DType dtype, HWP_CclReduceOp op, MPI_Op *out) {
  if (op < 0 || op >= HWP_CCL_REDUCE_OP_COUNT)
    return mpi_error(HWP_ERROR_INVALID_ARGUMENT, "unknown reduction code %d", (int)op);
  int index = op == HWP_CCL_AVG ? HWP_CCL_SUM : op; /* AVG: SUM, then mpi_scale_average */
  if (dtype == HWP_DTYPE_BOOL) {
    if (op == HWP_CCL_AVG)
      return mpi_error(HWP_ERROR_NOT_SUPPORTED, "AVG of bool is not defined (use MAX or MIN)");
    *out = (index == HWP_CCL_SUM || index == HWP_CCL_MAX) ? MPI_MAX : MPI_MIN;
    return HWP_OK;
  }
  if (dtype == HWP_DTYPE_FLOAT16 || dtype == HWP_DTYPE_BFLOAT16) {
    if (make_half_ops() != MPI_SUCCESS)
      return mpi_error(HWP_ERROR_INTERNAL, "MPI_Op_create failed for the float16 reductions");
    *out = g_half_ops[dtype == HWP_DTYPE_BFLOAT16][index];
    return HWP_OK;
  }
  static const MPI_Op ops[4] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
  *out = ops[index];
  return HWP_OK;
}

/* data[i] /= nranks (integers truncate toward zero, as C's division does). */
void mpi_scale_average(void *data, uint64_t count, HWP_DType dtype, int nranks) {
  switch (dtype) {
#define DIV_INT(T)                                                            \
  {                                                                           \
    T *p = (T *)data;                                                         \
    for (uint64_t i = 0; i < count; i++) p[i] = (T)(p[i] / (T)nranks);       \
  }                                                                           \
  break;
    case HWP_DTYPE_INT8: DIV_INT(int8_t)
    case HWP_DTYPE_UINT8: DIV_INT(uint8_t)
    case HWP_DTYPE_INT16: DIV_INT(int16_t)
    case HWP_DTYPE_INT32: DIV_INT(int32_t)
    case HWP_DTYPE_INT64: DIV_INT(int64_t)
#undef DIV_INT
    case HWP_DTYPE_FLOAT32: {
      float *p = (float *)data;
      for (uint64_t i = 0; i < count; i++) p[i] /= (float)nranks;
      break;
    }
    case HWP_DTYPE_FLOAT64: {
      double *p = (double *)data;
      for (uint64_t i = 0; i < count; i++) p[i] /= (double)nranks;
      break;
    }
    case HWP_DTYPE_FLOAT16: {
      uint16_t *p = (uint16_t *)data;
      for (uint64_t i = 0; i < count; i++)
        p[i] = cpu_f32_to_f16(cpu_f16_to_f32(p[i]) / (float)nranks);
      break;
    }
    case HWP_DTYPE_BFLOAT16: {
      uint16_t *p = (uint16_t *)data;
      for (uint64_t i = 0; i < count; i++)
        p[i] = cpu_f32_to_bf16(cpu_bf16_to_f32(p[i]) / (float)nranks);
      break;
    }
    default: break;
  }
}

size_t mpi_dtype_size(HWP_DType dtype) {
  static const size_t sizes[HWP_DTYPE_COUNT] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return (dtype >= 0 && dtype < HWP_DTYPE_COUNT) ? sizes[dtype] : 0;
}
