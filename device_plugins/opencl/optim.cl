/* hwport OpenCL plugin — adam_update (ops.yaml's optimizer section), one work-item per element:
 *   p = param * decay; m = moment1 * beta1 + grad * (1 - beta1);
 *   v = moment2 * beta2 + grad * grad * (1 - beta2); param_out = p - m / (sqrt(v) + eps) * lr
 * in the dtype T (float32 or float64), the decomposition's operations in its order and no
 * contraction, so its bytes match the decomposition's on the same device (the elementwise
 * kernels are built with the same correctly rounded divide/sqrt option). Buffers with byte
 * offsets; outputs may be their own inputs (element i is read before it is written). */
#pragma OPENCL FP_CONTRACT OFF
#ifdef DT_float64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double T;
#else
typedef float T;
#endif

#define AT(buf, off) ((__global T *)((buf) + (off)))

__kernel void k_adam(__global uchar *po, ulong po_off, __global uchar *mo, ulong mo_off,
                     __global uchar *vo, ulong vo_off, __global const uchar *p, ulong p_off,
                     __global const uchar *g, ulong g_off, __global const uchar *m1,
                     ulong m1_off, __global const uchar *m2, ulong m2_off, ulong n, T b1,
                     T ob1, T b2, T ob2, T eps, T lr, T decay, int decayed) {
  const ulong i = get_global_id(0);
  if (i >= n) return;
  const T gi = ((__global const T *)(g + g_off))[i];
  const T m = ((__global const T *)(m1 + m1_off))[i] * b1 + gi * ob1;
  const T v = ((__global const T *)(m2 + m2_off))[i] * b2 + (gi * gi) * ob2;
  const T p0 = ((__global const T *)(p + p_off))[i];
  const T pi = decayed ? p0 * decay : p0;
  AT(mo, mo_off)[i] = m;
  AT(vo, vo_off)[i] = v;
  AT(po, po_off)[i] = pi - (m / (sqrt(v) + eps)) * lr;
}
