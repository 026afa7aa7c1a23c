/* hwport CUDA plugin — from a runtime dtype to a kernel instantiation (CUDA C++).
 *
 * cu_pick<Pick>(dtype) returns Pick<D>::get() for the dtype code D, instantiating Pick only for
 * the dtypes the plugin is built for (CU_DTYPE_MASK, generated from HWPORT_CUDA_DTYPES); for
 * the others, and for unknown codes, a null value. Pick<D>::get() itself returns null for the
 * dtypes its family does not support (e.g. bool for matmul). */
#ifndef HWPORT_CUDA_DISPATCH_CUH
#define HWPORT_CUDA_DISPATCH_CUH

#include "cuda_dtypes.h"
#include "dtype.cuh"
#include "hwport/types.h"

template <template <int> class Pick, int D>
auto cu_pick_one() -> decltype(Pick<8>::get()) {
  if constexpr ((CU_DTYPE_MASK >> D) & 1u) return Pick<D>::get();
  else return nullptr;
}

template <template <int> class Pick>
auto cu_pick(HWP_DType dt) -> decltype(Pick<8>::get()) {
  switch (dt) {
  case 0: return cu_pick_one<Pick, 0>();
  case 1: return cu_pick_one<Pick, 1>();
  case 2: return cu_pick_one<Pick, 2>();
  case 3: return cu_pick_one<Pick, 3>();
  case 4: return cu_pick_one<Pick, 4>();
  case 5: return cu_pick_one<Pick, 5>();
  case 6: return cu_pick_one<Pick, 6>();
  case 7: return cu_pick_one<Pick, 7>();
  case 8: return cu_pick_one<Pick, 8>();
  case 9: return cu_pick_one<Pick, 9>();
  default: return nullptr;
  }
}

#endif /* HWPORT_CUDA_DISPATCH_CUH */
