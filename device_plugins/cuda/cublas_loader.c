/* hwport CUDA plugin — cuBLAS loaded with dlopen at first use (see cublas_loader.h).
 *
 * Where it looks: $HWPORT_CUBLAS_LIBRARY (a path) first, then libcublas.so.13, .12, .11 and
 * libcublas.so through the dynamic loader's search path (the system toolkit, or the PyPI
 * nvidia-cublas wheel's lib/ folder on LD_LIBRARY_PATH). When none loads, matmul uses the tiled
 * kernel and the log says why once. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "cublas_loader.h"
#include "kernels.h"

typedef int (*cublas_create_fn)(void **handle);
typedef int (*cublas_destroy_fn)(void *handle);
typedef int (*cublas_set_stream_fn)(void *handle, cudaStream_t stream);
typedef int (*cublas_gemm_fn)(void *handle, int transa, int transb, int m, int n, int k,
                              const void *alpha, const void *A, int a_type, int lda,
                              long long stride_a, const void *B, int b_type, int ldb,
                              long long stride_b, const void *beta, void *C, int c_type,
                              int ldc, long long stride_c, int batch, int compute_type, int algo);

static struct {
  pthread_once_t once;
  void *lib;
  cublas_create_fn create;
  cublas_destroy_fn destroy;
  cublas_set_stream_fn set_stream;
  cublas_gemm_fn gemm;
  pthread_mutex_t mu; /* guards handles and serializes their use */
  void *handles[CU_MAX_DEVICES];
} g_blas = {PTHREAD_ONCE_INIT, NULL, NULL, NULL, NULL, NULL, PTHREAD_MUTEX_INITIALIZER, {NULL}};

static void blas_load(void) {
  const char *names[] = {getenv("HWPORT_CUBLAS_LIBRARY"), "libcublas.so.13", "libcublas.so.12",
                         "libcublas.so.11", "libcublas.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0] && g_blas.lib == NULL; ++i)
    if (names[i] != NULL && names[i][0] != '\0')
      g_blas.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (g_blas.lib == NULL) {
    cu_log(HWP_LOG_INFO, "cuda: cuBLAS not found (%s): matmul uses the tiled kernel", dlerror());
    return;
  }
  g_blas.create = (cublas_create_fn)dlsym(g_blas.lib, "cublasCreate_v2");
  g_blas.destroy = (cublas_destroy_fn)dlsym(g_blas.lib, "cublasDestroy_v2");
  g_blas.set_stream = (cublas_set_stream_fn)dlsym(g_blas.lib, "cublasSetStream_v2");
  g_blas.gemm = (cublas_gemm_fn)dlsym(g_blas.lib, "cublasGemmStridedBatchedEx");
  if (!g_blas.create || !g_blas.destroy || !g_blas.set_stream || !g_blas.gemm) {
    cu_log(HWP_LOG_WARNING, "cuda: cuBLAS lacks an entry point: matmul uses the tiled kernel");
    dlclose(g_blas.lib);
    g_blas.lib = NULL;
  }
}

HWP_Status cu_cublas_gemm(int32_t device, cudaStream_t stream, int transa, int transb, int m,
                          int n, int k, const void *alpha, const void *A, int a_type, int lda,
                          long long stride_a, const void *B, int b_type, int ldb,
                          long long stride_b, const void *beta, void *C, int c_type, int ldc,
                          long long stride_c, int batch, int compute_type) {
  pthread_once(&g_blas.once, blas_load);
  if (g_blas.lib == NULL) return HWP_ERROR_NOT_SUPPORTED;
  pthread_mutex_lock(&g_blas.mu);
  int rc = 0;
  if (g_blas.handles[device] == NULL) rc = g_blas.create(&g_blas.handles[device]);
  if (rc == 0) rc = g_blas.set_stream(g_blas.handles[device], stream);
  if (rc == 0)
    rc = g_blas.gemm(g_blas.handles[device], transa, transb, m, n, k, alpha, A, a_type, lda,
                     stride_a, B, b_type, ldb, stride_b, beta, C, c_type, ldc, stride_c, batch,
                     compute_type, CU_BLAS_GEMM_DEFAULT);
  pthread_mutex_unlock(&g_blas.mu);
  if (rc != 0)
    return cu_error(HWP_ERROR_DEVICE, "matmul: cuBLAS failed with cublasStatus_t %d", rc);
  return HWP_OK;
}

void cu_cublas_shutdown(void) {
  pthread_mutex_lock(&g_blas.mu);
  for (int d = 0; d < CU_MAX_DEVICES; ++d)
    if (g_blas.handles[d] != NULL) {
      (void)cudaSetDevice(g_cu.devices[d].ordinal);
      (void)g_blas.destroy(g_blas.handles[d]);
      g_blas.handles[d] = NULL;
    }
  pthread_mutex_unlock(&g_blas.mu);
}
