/* hwport OpenCL plugin — the explicit-vector part of the generated elementwise programs
 * (embedded after elementwise_prelude.cl and expf.cl by phi_ops/codegen/gen_opencl_elementwise.py;
 * not compiled alone).
 *
 * kv_<op> kernels (generated for the ops of VECTOR_EXPR in the generator, float32 and float16
 * only: bfloat16 through ushortN <-> uintN conversions measured 1.5x slower than kc_ on PoCL
 * 3.1, so it keeps kc_) take contiguous, element-aligned operands and make every work-item process
 * `arg` vectors of EW_VW elements in a row with vloadN/vstoreN: the host passes -DEW_VW=<the
 * device's CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, as 4, 8 or 16>. The implicit vectorization
 * of kc_<op> across work-items (PoCL's work-group loop vectorizer) leaves per-element address
 * arithmetic and a short loop per work-group; explicit vectors stream memory in whole vector
 * registers and run ocl_expf on a full vector (measured on PoCL 3.1, AVX-512: exp over 16M
 * float32 about 25% less CPU time). Results are bit-identical to k_/kc_: the same operations
 * in the same order (FP_CONTRACT OFF), only in lanes. The elements past the last whole
 * work-group of vectors go through kc_/k_ (the host splits the range). */
#if defined(EW_VW) && (defined(DT_float32) || defined(DT_float16))
#define EW_HAS_VEC 1
#define VT OCL_CAT(float, EW_VW)
#define VU OCL_CAT(uint, EW_VW)
#define VI OCL_CAT(int, EW_VW)
OCL_DEF_EXPF(ew_vexpf, VT, VU, VI)

/* ew_fmax_nan / ew_fmin_nan / the native sigmoid, lane by lane (select takes b where the
 * condition's lane is set, a elsewhere). */
#define EW_VMAX_NAN(x, y) select((y), (x), ((x) >= (y)) | isnan(x))
#define EW_VMIN_NAN(x, y) select((y), (x), ((x) <= (y)) | isnan(x))
static inline VT ew_vsigmoid(VT x) {
  VT e = ew_vexpf(-fabs(x));
  return select(e, (VT)(1.0f), isgreaterequal(x, (VT)(0.0f))) / ((VT)(1.0f) + e);
}

/* EW_VLD(p, i): vector i (elements i*EW_VW ..) of the buffer at p as floats; EW_VST stores. */
#if defined(DT_float32)
#define EW_VLD(p, i) OCL_CAT(vload, EW_VW)((i), (__global const float *)(p))
#define EW_VST(p, i, v) OCL_CAT(vstore, EW_VW)((v), (i), (__global float *)(p))
#else /* float16 */
#define EW_VLD(p, i) OCL_CAT(vload_half, EW_VW)((i), (__global const half *)(p))
#define EW_VST(p, i, v) OCL_CAT(OCL_CAT(vstore_half, EW_VW), _rte)((v), (i), (__global half *)(p))
#endif

/* Work-item g covers vectors [g * arg, (g + 1) * arg); launched from global offset 0. */
#define EW_PROLOGUE_V                                                                          \
  ulong v = get_global_id(0) * (ulong)arg;                                                     \
  __global uchar *po = out + out_off;                                                          \
  __global const uchar *px = a + a_off, *py = b + b_off;                                       \
  (void)px; (void)py; (void)c; (void)c_off; (void)n; (void)ndim_unused; (void)al_unused;      \
  (void)shape_unused; (void)sa; (void)sb; (void)sc; (void)at;
#endif
