/* hwport CUDA plugin — reductions across a group of threads (CUDA C++), shared by the
 * reduction and fused nn kernels: a group is either G <= 32 lanes of one warp (warp shuffles
 * of width G) or a whole block (shuffles per warp, then the warps' values through shared
 * memory). `Comb` is a functor combining two values of type T; T may be a struct whose members
 * cu_shfl_xor moves one by one. */
#ifndef HWPORT_CUDA_BLOCK_REDUCE_CUH
#define HWPORT_CUDA_BLOCK_REDUCE_CUH

#include "dtype.cuh"

#define CU_FULL_MASK 0xffffffffu

template <class T>
CU_D T cu_shfl_xor(T v, int lane_mask, int width) {
  if constexpr (sizeof(T) <= 8 && std::is_arithmetic<T>::value) {
    return __shfl_xor_sync(CU_FULL_MASK, v, lane_mask, width);
  } else {
    T r;
    const T src = v;
    static_assert(sizeof(T) % 4 == 0, "shuffled structs are made of 4-byte words");
    const int *ps = reinterpret_cast<const int *>(&src);
    int *pr = reinterpret_cast<int *>(&r);
#pragma unroll
    for (int k = 0; k < (int)(sizeof(T) / 4); ++k)
      pr[k] = __shfl_xor_sync(CU_FULL_MASK, ps[k], lane_mask, width);
    return r;
  }
}

/* Every lane of each aligned group of `width` lanes (a power of two <= 32) gets the combination
 * of the group's values. All 32 lanes of the warp must call it. */
template <class T, class Comb>
CU_D T cu_warp_reduce(T v, int width, Comb comb) {
  for (int s = width >> 1; s > 0; s >>= 1) v = comb(v, cu_shfl_xor(v, s, width));
  return v;
}

/* Every thread of the block gets the combination of all the block's values. blockDim.x is a
 * multiple of 32 and at most 1024; `smem` holds 32 values. All threads must call it. */
template <class T, class Comb>
CU_D T cu_block_reduce(T v, Comb comb, T *smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = cu_warp_reduce(v, 32, comb);
  __syncthreads(); /* smem may still be read from a previous call */
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = smem[lane < nwarps ? lane : 0];
  for (int s = 16; s > 0; s >>= 1) {
    T o = cu_shfl_xor(v, s, 32);
    if ((lane ^ s) < nwarps && lane < nwarps) v = comb(v, o);
  }
  __syncthreads(); /* every warp has read smem */
  if (threadIdx.x == 0) smem[0] = v; /* lane 0 holds the block's value: give it to all */
  __syncthreads();
  return smem[0];
}

#endif /* HWPORT_CUDA_BLOCK_REDUCE_CUH */
