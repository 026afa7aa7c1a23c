/* hwport CUDA plugin — cuBLAS through dlopen at first use (cublas_loader.c), so the plugin loads
 * and runs without it (matmul then uses the tiled kernel). Only the few entry points matmul
 * needs, declared here with the values of cublas_api.h / library_types.h (stable ABI). */
#ifndef HWPORT_CUDA_CUBLAS_LOADER_H
#define HWPORT_CUDA_CUBLAS_LOADER_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CU_BLAS_OP_N = 0, CU_BLAS_OP_T = 1 };
/* cudaDataType values. */
enum { CU_BLAS_R_32F = 0, CU_BLAS_R_64F = 1, CU_BLAS_R_16F = 2, CU_BLAS_R_16BF = 14 };
/* cublasComputeType_t values. */
enum { CU_BLAS_COMPUTE_32F = 68, CU_BLAS_COMPUTE_64F = 70 };
#define CU_BLAS_GEMM_DEFAULT (-1)

/* Runs C = A * B (column-major, cublasGemmStridedBatchedEx) on `stream` of `device` with the
 * device's cuBLAS handle (created at first use, one per device, calls serialized).
 * HWP_ERROR_NOT_SUPPORTED when cuBLAS cannot be loaded (the caller falls back), a device
 * error with the cuBLAS status otherwise. alpha/beta point to float (32F) or double (64F). */
HWP_Status cu_cublas_gemm(int32_t device, cudaStream_t stream, int transa, int transb, int m,
                          int n, int k, const void *alpha, const void *A, int a_type, int lda,
                          long long stride_a, const void *B, int b_type, int ldb,
                          long long stride_b, const void *beta, void *C, int c_type, int ldc,
                          long long stride_c, int batch, int compute_type);

#ifdef __cplusplus
}
#endif
#endif /* HWPORT_CUDA_CUBLAS_LOADER_H */
