/* hwport CUDA plugin — CUDA runtime errors as HWP_Status values with the CUDA error's name and
 * description in the thread's last-error message (plugin_support.c holds the message). */
#include "internal.h"

int cu_error_is_sticky(cudaError_t err) {
  switch (err) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorAssert:
  case cudaErrorLaunchTimeout:
  case cudaErrorECCUncorrectable:
    return 1;
  default:
    return 0;
  }
}

HWP_Status cu_status_of(cudaError_t err) {
  switch (err) {
  case cudaSuccess: return HWP_OK;
  case cudaErrorMemoryAllocation: return HWP_ERROR_OUT_OF_MEMORY;
  case cudaErrorInvalidValue:
  case cudaErrorInvalidDevice:
  case cudaErrorInvalidDevicePointer:
  case cudaErrorInvalidResourceHandle:
  case cudaErrorInvalidConfiguration:
  case cudaErrorInvalidPitchValue:
  case cudaErrorInvalidMemcpyDirection:
    return HWP_ERROR_INVALID_ARGUMENT;
  case cudaErrorNotReady: return HWP_ERROR_NOT_READY;
  case cudaErrorNotSupported:
  case cudaErrorNoKernelImageForDevice:
  case cudaErrorUnsupportedPtxVersion:
    return HWP_ERROR_NOT_SUPPORTED;
  default: return HWP_ERROR_DEVICE;
  }
}

HWP_Status cu_cuda_error(cudaError_t err, const char *fn, const char *call) {
  const HWP_Status st = cu_status_of(err);
  if (st == HWP_OK) return HWP_OK;
  return cu_error(st, "%s: %s failed: %s (%s)%s", fn, call, cudaGetErrorName(err),
                  cudaGetErrorString(err),
                  cu_error_is_sticky(err)
                      ? "; this error is sticky: the CUDA context is unusable and every later "
                        "call on the device fails, restart the process"
                      : "");
}
