/* hwport CPU plugin — the Philox-4x32-10 counter-based generator (Salmon et al., "Parallel
 * random numbers: as easy as 1, 2, 3", SC 2011; the Random123 library), and the mapping of its
 * output words to uniform floats that every plugin shares bit for bit (phi_ops/ops.yaml,
 * op "uniform"). */
#ifndef HWPORT_CPU_PHILOX_H
#define HWPORT_CPU_PHILOX_H

#include <stdint.h>

#define CPU_PHILOX_M0 0xD2511F53u /* multipliers */
#define CPU_PHILOX_M1 0xCD9E8D57u
#define CPU_PHILOX_W0 0x9E3779B9u /* key increments (golden ratio, sqrt(3) - 1) */
#define CPU_PHILOX_W1 0xBB67AE85u

/* out = Philox-4x32-10(ctr, key); word 0 is the lowest of the 128-bit counter. */
static inline void cpu_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                                     uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += CPU_PHILOX_W0;
      k1 += CPU_PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)CPU_PHILOX_M0 * c0;
    uint64_t p1 = (uint64_t)CPU_PHILOX_M1 * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* The counter of element i: (offset + i) as a 128-bit two's-complement number (offset is
 * sign-extended; i >= 0), word 0 lowest. */
static inline void cpu_philox_counter(int64_t offset, int64_t i, uint32_t ctr[4]) {
  uint64_t lo = (uint64_t)offset + (uint64_t)i;
  uint64_t hi = offset < 0 ? UINT64_MAX : 0;
  if (lo < (uint64_t)offset) ++hi; /* carry */
  ctr[0] = (uint32_t)lo;
  ctr[1] = (uint32_t)(lo >> 32);
  ctr[2] = (uint32_t)hi;
  ctr[3] = (uint32_t)(hi >> 32);
}

/* The key of a seed: low word first. */
static inline void cpu_philox_key(int64_t seed, uint32_t key[2]) {
  key[0] = (uint32_t)(uint64_t)seed;
  key[1] = (uint32_t)((uint64_t)seed >> 32);
}

/* Uniforms in [0, 1): 24 bits of word 0 (float32, float16, bfloat16), or 53 bits of words
 * 0 and 1 (float64). Both exact in double. */
static inline double cpu_philox_u24(const uint32_t w[4]) {
  return (double)(w[0] >> 8) * 0x1p-24;
}
static inline double cpu_philox_u53(const uint32_t w[4]) {
  return (double)(((uint64_t)w[1] << 21) ^ (uint64_t)(w[0] >> 11)) * 0x1p-53;
}

#endif /* HWPORT_CPU_PHILOX_H */
