/* hwport OpenCL plugin — uniform: Philox-4x32-10, bit-exact with phi_ops/philox.py and the CPU
 * plugin (one program per floating dtype, after elementwise_prelude.cl and kernels_common.cl;
 * built only with HAS_FP64: the value is computed in double and rounded once).
 * Element i uses counter (offset + i) as a 128-bit number (words low first) and key = seed;
 * the host passes the counter base as (lo, hi) 64-bit words, hi the sign extension. */

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

__kernel void k_uniform(__global uchar *out, ulong out_off, ulong n, uint k0, uint k1,
                        ulong base_lo, ulong base_hi, ulong low_bits, ulong range_bits, int al) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  ulong lo = base_lo + i, hi = base_hi + (lo < base_lo ? 1UL : 0UL);
  uint c0 = (uint)lo, c1 = (uint)(lo >> 32), c2 = (uint)hi, c3 = (uint)(hi >> 32);
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    uint hi0 = mul_hi(PHILOX_M0, c0), lo0 = PHILOX_M0 * c0;
    uint hi1 = mul_hi(PHILOX_M1, c2), lo1 = PHILOX_M1 * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
#ifdef HAS_FP64
#if defined(DT_float64)
  double u = (double)(((ulong)c1 << 21) ^ (ulong)(c0 >> 11)) * 0x1p-53;
#else
  double u = (double)(c0 >> 8) * 0x1p-24;
#endif
  double p = as_double(range_bits) * u;
  st_dbl(out + out_off + i * ITEM, al, as_double(low_bits) + p);
#endif
}
