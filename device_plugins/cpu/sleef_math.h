/* hwport CPU plugin — float32/float64 math through SLEEF, reached by the generated elementwise
 * loops through GCC's simd clones (HWPORT_CPU_HAVE_SLEEF, see sleef.cmake).
 *
 * Each function f of CPU_SLEEF_UNARY / CPU_SLEEF_BINARY is declared here as cpu_vf_f (float) and
 * cpu_vf_d (double) with __attribute__((simd)): when GCC vectorizes a loop that calls one, it
 * calls the vector variant of the x86-64 vector function ABI for the loop's instruction set
 * (_ZGVbN4v_cpu_vsin_f for SSE2, _ZGVdN8v_ for AVX2, _ZGVeN16v_ for AVX-512; ...vv_ for two
 * arguments), and the scalar function elsewhere (tails, strided views). math_sleef_scalar.c
 * (scalar and SSE2), math_sleef_avx2.c and math_sleef_avx512.c define them over SLEEF's
 * functions of the listed accuracy (u10: at most 1.0 ulp; tanh u35: 3.5 ulp, within every
 * dtype's tolerance and 4x faster than its u10, which works in double-float; float erf uses
 * the faster fast_erff.h instead, its float wrapper stays for completeness). Which
 * instruction set a loop runs is chosen at load (kernels_elementwise.c). */
#ifndef HWPORT_CPU_SLEEF_MATH_H
#define HWPORT_CPU_SLEEF_MATH_H

/* X(function, SLEEF accuracy suffix) */
#define CPU_SLEEF_UNARY(X) X(exp, u10) X(log2, u10) X(tan, u10) X(erf, u10)
/* The same, except that the AVX2 and AVX-512 float variants are fast_vmathf.h's (faster than
 * Debian's SLEEF 3.5 at <= 1.6 ulp; sin/cos hand vectors with some |x| > CPU_FAST_TRIG_MAX to
 * SLEEF): the wrapper files define those by hand. */
#define CPU_SLEEF_UNARY_OWNF(X) X(expm1, u10) X(sin, u10) X(cos, u10) X(log, u10) X(tanh, u35)
#define CPU_SLEEF_BINARY(X) X(pow, u10)
/* log1p too, but SLEEF's overflows to inf above 1e38 (float) / 1e307 (double), where
 * log1p(x) == log(x) in the type: the wrappers take log there (the AVX2/AVX-512 float variants
 * are fast_vmathf.h's log1pf, exact to 0.83 ulp over the whole range). */
#define CPU_SLEEF_LOG1P_BIG_F 1e38f
#define CPU_SLEEF_LOG1P_BIG_D 1e307

/* The wrapper files define the vector variants themselves: there the scalar functions carry
 * no simd attribute (else GCC would also emit clones of their bodies under the same names). */
#ifdef CPU_SLEEF_DEFINING_WRAPPERS
#define CPU_SLEEF_ATTRS __attribute__((const, nothrow))
#else
#define CPU_SLEEF_ATTRS __attribute__((simd("notinbranch"), const, nothrow))
#endif

#define CPU_SLEEF_DECLARE1(f, ulp)                                                             \
  CPU_SLEEF_ATTRS float cpu_v##f##_f(float x);                                                 \
  CPU_SLEEF_ATTRS double cpu_v##f##_d(double x);
#define CPU_SLEEF_DECLARE2(f, ulp)                                                             \
  CPU_SLEEF_ATTRS float cpu_v##f##_f(float x, float y);                                        \
  CPU_SLEEF_ATTRS double cpu_v##f##_d(double x, double y);
/* The vector variants of CPU_SLEEF_UNARY / CPU_SLEEF_BINARY for one instruction set, defined
 * (with their prototypes) by the wrapper file of that set: ABI letter and lane counts (float,
 * double), vector types, and SLEEF's suffix (sse2, avx2, avx512f). */
#define CPU_SLEEF_PASTE(a, b, c, d, e) a##b##c##d##e
#define CPU_SLEEF_FN(fn, lanes, ulp, isa) CPU_SLEEF_PASTE(Sleef_, fn, lanes, _, ulp##isa)
#define CPU_SLEEF_WRAP1(abi, nf, nd, VF, VD, isa, fn, ulp)                                     \
  VF _ZGV##abi##N##nf##v_cpu_v##fn##_f(VF x);                                                  \
  VD _ZGV##abi##N##nd##v_cpu_v##fn##_d(VD x);                                                  \
  VF _ZGV##abi##N##nf##v_cpu_v##fn##_f(VF x) { return CPU_SLEEF_FN(fn, f##nf, ulp, isa)(x); }  \
  VD _ZGV##abi##N##nd##v_cpu_v##fn##_d(VD x) { return CPU_SLEEF_FN(fn, d##nd, ulp, isa)(x); }
#define CPU_SLEEF_WRAP2(abi, nf, nd, VF, VD, isa, fn, ulp)                                     \
  VF _ZGV##abi##N##nf##vv_cpu_v##fn##_f(VF x, VF y);                                           \
  VD _ZGV##abi##N##nd##vv_cpu_v##fn##_d(VD x, VD y);                                           \
  VF _ZGV##abi##N##nf##vv_cpu_v##fn##_f(VF x, VF y) {                                          \
    return CPU_SLEEF_FN(fn, f##nf, ulp, isa)(x, y);                                            \
  }                                                                                            \
  VD _ZGV##abi##N##nd##vv_cpu_v##fn##_d(VD x, VD y) {                                          \
    return CPU_SLEEF_FN(fn, d##nd, ulp, isa)(x, y);                                            \
  }

/* The double vector variant alone (CPU_SLEEF_UNARY_OWNF's functions in the AVX2/AVX-512 files). */
#define CPU_SLEEF_WRAP1_D(abi, nd, VD, isa, fn, ulp)                                           \
  VD _ZGV##abi##N##nd##v_cpu_v##fn##_d(VD x);                                                  \
  VD _ZGV##abi##N##nd##v_cpu_v##fn##_d(VD x) { return CPU_SLEEF_FN(fn, d##nd, ulp, isa)(x); }
/* The float vector variants of CPU_SLEEF_UNARY_OWNF (and sigmoid) from fast_vmathf.h's P##_<fn>f:
 * BIG(x) is nonzero when some lane is outside sin/cos's range (then SLEEF takes the vector);
 * ODD(x) when some lane is not a positive normal finite float (then log takes its full path). */
#define CPU_OWN_WRAP_F(abi, nf, VF, P, isa, BIG, ODD)                                          \
  VF _ZGV##abi##N##nf##v_cpu_vexpm1_f(VF x);                                                   \
  VF _ZGV##abi##N##nf##v_cpu_vsin_f(VF x);                                                     \
  VF _ZGV##abi##N##nf##v_cpu_vcos_f(VF x);                                                     \
  VF _ZGV##abi##N##nf##v_cpu_vlog_f(VF x);                                                     \
  VF _ZGV##abi##N##nf##v_cpu_vtanh_f(VF x);                                                    \
  VF _ZGV##abi##N##nf##v_cpu_vsigmoid_f(VF x);                                                 \
  VF _ZGV##abi##N##nf##v_cpu_vexpm1_f(VF x) { return P##_expm1f(x); }                          \
  VF _ZGV##abi##N##nf##v_cpu_vsigmoid_f(VF x) { return P##_sigmoidf(x); }                      \
  VF _ZGV##abi##N##nf##v_cpu_vlog_f(VF x) {                                                    \
    return ODD(x) ? P##_logf(x) : P##_logf_normal(x);                                          \
  }                                                                                            \
  VF _ZGV##abi##N##nf##v_cpu_vtanh_f(VF x) { return P##_tanhf(x); }                            \
  VF _ZGV##abi##N##nf##v_cpu_vsin_f(VF x) {                                                    \
    return BIG(x) ? CPU_SLEEF_FN(sin, f##nf, u10, isa)(x) : P##_sinf(x);                       \
  }                                                                                            \
  VF _ZGV##abi##N##nf##v_cpu_vcos_f(VF x) {                                                    \
    return BIG(x) ? CPU_SLEEF_FN(cos, f##nf, u10, isa)(x) : P##_cosf(x);                       \
  }

/* sqrt's vector variants: the instruction (SQRTF, SQRTD: the set's sqrt intrinsics). */
#define CPU_SLEEF_SQRT(abi, nf, nd, VF, VD, SQRTF, SQRTD)                                      \
  VF _ZGV##abi##N##nf##v_cpu_vsqrt_f(VF x);                                                    \
  VD _ZGV##abi##N##nd##v_cpu_vsqrt_d(VD x);                                                    \
  VF _ZGV##abi##N##nf##v_cpu_vsqrt_f(VF x) { return SQRTF(x); }                                \
  VD _ZGV##abi##N##nd##v_cpu_vsqrt_d(VD x) { return SQRTD(x); }

CPU_SLEEF_UNARY(CPU_SLEEF_DECLARE1)
CPU_SLEEF_UNARY_OWNF(CPU_SLEEF_DECLARE1)
CPU_SLEEF_DECLARE1(log1p, u10)
/* float32 sigmoid (the elementwise sigmoid and silu kernels): fast_vmathf.h's sigmoidf in every
 * variant (SSE2 and scalar without FMA); SLEEF has none, and the generic expression over
 * cpu_expf costs ~1.5x as many instructions. */
CPU_SLEEF_ATTRS float cpu_vsigmoid_f(float x);
/* sqrt: the instruction (correctly rounded; SLEEF's "u05" sqrt is not, at the top of the range),
 * through the same simd clones because libm's sqrt sets errno and so never vectorizes. */
CPU_SLEEF_DECLARE1(sqrt, u05)
CPU_SLEEF_BINARY(CPU_SLEEF_DECLARE2)

#endif /* HWPORT_CPU_SLEEF_MATH_H */
