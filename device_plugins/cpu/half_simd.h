/* hwport CPU plugin — float16 / bfloat16 rows to and from float32 at vector width, for the
 * elementwise loops built for AVX2 (+F16C) and AVX-512 (kernels_elementwise.c): float16 by F16C's
 * vcvtph2ps / vcvtps2ph, 8 or 16 lanes at a time (round to nearest even, NaN kept quiet with
 * its top payload bits, as half.h does), bfloat16 by loops the compiler vectorizes; the tails
 * and strided rows element by element through half.h. Only x86-64 GCC builds include it. */
#ifndef HWPORT_CPU_HALF_SIMD_H
#define HWPORT_CPU_HALF_SIMD_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "half.h"

#define CPU_HALF_AVX2 __attribute__((target("avx2,fma,f16c"), always_inline))
#define CPU_HALF_AVX512 __attribute__((target("avx512f,avx512dq,fma,f16c"), always_inline))

/* d[0..m) = the m values at s (byte stride st; 0: one value broadcast). */
#define CPU_HALF_LOAD_TAIL(conv)                                                               \
  if (st == 0) {                                                                               \
    uint16_t h;                                                                                \
    memcpy(&h, s, 2);                                                                          \
    const float v = conv(h);                                                                   \
    for (int64_t j = 0; j < m; ++j) d[j] = v;                                                  \
    return;                                                                                    \
  }                                                                                            \
  for (; i < m; ++i) {                                                                         \
    uint16_t h;                                                                                \
    memcpy(&h, s + i * st, 2);                                                                 \
    d[i] = conv(h);                                                                            \
  }

static inline CPU_HALF_AVX2 void cpu_half_load_float16_avx2(float *d, const char *s, int64_t st,
                                                            int64_t m) {
  int64_t i = 0;
  if (st == 2)
    for (; i + 8 <= m; i += 8)
      _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + 2 * i))));
  CPU_HALF_LOAD_TAIL(cpu_f16_to_f32)
}
static inline CPU_HALF_AVX512 void cpu_half_load_float16_avx512(float *d, const char *s,
                                                                int64_t st, int64_t m) {
  int64_t i = 0;
  if (st == 2)
    for (; i + 16 <= m; i += 16)
      _mm512_storeu_ps(d + i,
                       _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + 2 * i))));
  CPU_HALF_LOAD_TAIL(cpu_f16_to_f32)
}

/* o[0..m) = d rounded to float16: W lanes per conversion (VEC_CVT), the tail one by one. */
#define CPU_HALF_STORE_F16(isa, ATTRS, W, VEC_CVT)                                             \
  static inline ATTRS void cpu_half_store_float16##isa(char *o, const float *d, int64_t m) {   \
    int64_t i = 0;                                                                             \
    for (; i + W <= m; i += W) VEC_CVT(o + 2 * i, d + i);                                      \
    for (; i < m; ++i) {                                                                       \
      uint16_t h = cpu_f32_to_f16(d[i]);                                                       \
      memcpy(o + 2 * i, &h, 2);                                                                \
    }                                                                                          \
  }
#define CPU_HALF_CVT8(o, d)                                                                    \
  _mm_storeu_si128((__m128i *)(o), _mm256_cvtps_ph(_mm256_loadu_ps(d), _MM_FROUND_TO_NEAREST_INT))
#define CPU_HALF_CVT16(o, d)                                                                   \
  _mm256_storeu_si256((__m256i *)(o),                                                          \
                      _mm512_cvtps_ph(_mm512_loadu_ps(d), _MM_FROUND_TO_NEAREST_INT))
CPU_HALF_STORE_F16(_avx2, CPU_HALF_AVX2, 8, CPU_HALF_CVT8)
CPU_HALF_STORE_F16(_avx512, CPU_HALF_AVX512, 16, CPU_HALF_CVT16)

/* One vector of float16/bfloat16 to and from float32, for fused loops (load, compute, store per
 * vector: no float32 buffer in between). bfloat16 narrowing as cpu_f32_to_bf16: round to
 * nearest even, a NaN kept quiet with its top payload bits. */
static inline CPU_HALF_AVX512 __m512 cpu_h16_load_float16_avx512(const char *p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline CPU_HALF_AVX512 void cpu_h16_store_float16_avx512(char *p, __m512 v) {
  _mm256_storeu_si256((__m256i *)p, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
static inline CPU_HALF_AVX512 __m512 cpu_h16_load_bfloat16_avx512(const char *p) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}
static inline CPU_HALF_AVX512 void cpu_h16_store_bfloat16_avx512(char *p, __m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)),
                                                 lsb), 16);
  const __m512i ax = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(ax, _mm512_set1_epi32(0x7f800000));
  r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
  _mm256_storeu_si256((__m256i *)p, _mm512_cvtepi32_epi16(r));
}
static inline CPU_HALF_AVX2 __m256 cpu_h16_load_float16_avx2(const char *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline CPU_HALF_AVX2 void cpu_h16_store_float16_avx2(char *p, __m256 v) {
  _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
static inline CPU_HALF_AVX2 __m256 cpu_h16_load_bfloat16_avx2(const char *p) {
  return _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}
static inline CPU_HALF_AVX2 void cpu_h16_store_bfloat16_avx2(char *p, __m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)),
                                                 lsb), 16);
  const __m256i ax = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(ax, _mm256_set1_epi32(0x7f800000));
  const __m256i q = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  r = _mm256_blendv_epi8(r, q, nan);
  /* 8 x 32-bit values below 2^16 -> 8 x 16 bits (packus works per 128-bit lane) */
  const __m128i lo = _mm256_castsi256_si128(r), hi = _mm256_extracti128_si256(r, 1);
  _mm_storeu_si128((__m128i *)p, _mm_packus_epi32(lo, hi));
}

/* bfloat16: the plain loops, which vectorize in these instruction sets. */
#define CPU_HALF_BF16(isa, ATTRS, W, VLOAD)                                                              \
  static inline ATTRS void cpu_half_load_bfloat16##isa(float *d, const char *s, int64_t st,    \
                                                       int64_t m) {                            \
    int64_t i = 0;                                                                             \
    if (st == 2) {                                                                             \
      typedef uint16_t u16 __attribute__((aligned(1)));                                       \
      const u16 *h = (const u16 *)s;                                                           \
      for (; i < m; ++i) d[i] = cpu_bf16_to_f32(h[i]);                                         \
    }                                                                                          \
    CPU_HALF_LOAD_TAIL(cpu_bf16_to_f32)                                                        \
  }                                                                                            \
  static inline ATTRS void cpu_half_store_bfloat16##isa(char *o, const float *d, int64_t m) {  \
    typedef uint16_t u16 __attribute__((aligned(1)));                                         \
    u16 *h = (u16 *)o;                                                                         \
    int64_t i = 0;                                                                             \
    for (; i + W <= m; i += W) cpu_h16_store_bfloat16##isa(o + 2 * i, VLOAD(d + i));           \
    for (; i < m; ++i) h[i] = cpu_f32_to_bf16(d[i]);                                           \
  }
CPU_HALF_BF16(_avx2, CPU_HALF_AVX2, 8, _mm256_loadu_ps)
CPU_HALF_BF16(_avx512, CPU_HALF_AVX512, 16, _mm512_loadu_ps)

#endif /* HWPORT_CPU_HALF_SIMD_H */
