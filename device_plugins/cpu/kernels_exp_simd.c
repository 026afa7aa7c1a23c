/* hwport CPU plugin — float32 exp at full vector width. exp is compute-bound (about 25 flops an
 * element), so the baseline SSE2 build of the generated loop leaves half or more of the CPU
 * unused; this kernel compiles the contiguous loop also for AVX2+FMA and AVX-512 and picks one
 * per CPU at load (no -march flags). The generated exp kernel runs this loop for float32. */
#include "fast_expf.h"
#include "kernels.h"

#define EXP_ROW(name, attrs)                                                                    \
  attrs static void name(float *o, const float *x, int64_t n) {                                \
    typedef float uf __attribute__((aligned(1)));                                               \
    uf *uo = (uf *)o;                                                                           \
    const uf *ux = (const uf *)x;                                                               \
    for (int64_t i = 0; i < n; ++i) uo[i] = cpu_expf(ux[i]);                                    \
  }

EXP_ROW(exp_row_base, )
#if defined(__x86_64__) && defined(__GNUC__) && !defined(HWPORT_CPU_NO_DISPATCH)
EXP_ROW(exp_row_avx2, __attribute__((target("avx2,fma"))))
EXP_ROW(exp_row_avx512, __attribute__((target("avx512f,avx512dq,fma"))))
#endif

static void (*g_exp_row)(float *, const float *, int64_t) = exp_row_base;

void cpu_exp_f32_inner(char *const *p, const int64_t *s, int64_t n, const void *aux) {
  (void)aux;
  if (s[0] == 4 && s[1] == 4) {
    g_exp_row((float *)p[0], (const float *)p[1], n);
    return;
  }
  typedef float uf __attribute__((aligned(1)));
  char *po = p[0];
  const char *px = p[1];
  for (int64_t i = 0; i < n; ++i, po += s[0], px += s[1])
    *(uf *)po = cpu_expf(*(const uf *)px);
}

void cpu_exp_select_simd(void) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(HWPORT_CPU_NO_DISPATCH)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    g_exp_row = exp_row_avx512;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    g_exp_row = exp_row_avx2;
#endif
}
