# BLAS for the CPU plugin's matmul (included OPTIONAL by CMakeLists.txt, in its directory scope).
#
# Looks for OpenBLAS with its CBLAS header: pkg-config `openblas` first (Debian/Ubuntu's
# libopenblas-dev ships openblas.pc), then find_package(BLAS) with BLA_VENDOR=OpenBLAS plus a
# search for cblas.h (Debian: /usr/include/<multiarch>/openblas-pthread, others:
# /usr/include/openblas). A candidate counts only if a program calling cblas_sgemm and
# openblas_set_num_threads compiles and links against it. When found, the plugin is built with
# HWPORT_CPU_HAVE_CBLAS (and HWPORT_CPU_HAVE_OPENBLAS) and linked to it; when not, a STATUS
# message says so and matmul uses the plugin's own blocked GEMM. Never fails the build.
# HWPORT_CPU_BLAS=OFF skips the search.

option(HWPORT_CPU_BLAS "Use OpenBLAS (when found) for the CPU plugin's float matmul" ON)

# The reduction, matmul and nn kernels rely on the auto-vectorizer (multi-lane reductions,
# the GEMM register tile, the branch-free exp), which GCC runs fully at -O3 only.
set_property(SOURCE kernels_reduce.c kernels_linalg.c kernels_nn.c APPEND
  PROPERTY COMPILE_OPTIONS "$<$<NOT:$<CONFIG:Debug>>:-O3>")

set(_hwport_blas_found FALSE)
if(HWPORT_CPU_BLAS)
  include(CheckCSourceCompiles)
  include(CMakePushCheckState)
  set(_hwport_blas_libs "")
  set(_hwport_blas_incs "")
  set(_hwport_blas_how "")

  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(HWPORT_OPENBLAS_PC QUIET openblas)
    if(HWPORT_OPENBLAS_PC_FOUND)
      find_library(HWPORT_OPENBLAS_PC_LIB NAMES openblas
        HINTS ${HWPORT_OPENBLAS_PC_LIBRARY_DIRS} NO_DEFAULT_PATH)
      if(NOT HWPORT_OPENBLAS_PC_LIB)
        find_library(HWPORT_OPENBLAS_PC_LIB NAMES openblas HINTS ${HWPORT_OPENBLAS_PC_LIBRARY_DIRS})
      endif()
      if(HWPORT_OPENBLAS_PC_LIB)
        set(_hwport_blas_libs ${HWPORT_OPENBLAS_PC_LIB})
        set(_hwport_blas_incs ${HWPORT_OPENBLAS_PC_INCLUDE_DIRS})
        set(_hwport_blas_how "pkg-config openblas ${HWPORT_OPENBLAS_PC_VERSION}")
      endif()
    endif()
  endif()

  if(NOT _hwport_blas_libs)
    set(BLA_VENDOR OpenBLAS)
    find_package(BLAS QUIET)
    unset(BLA_VENDOR)
    if(BLAS_FOUND)
      set(_hwport_blas_libs ${BLAS_LIBRARIES})
      set(_hwport_blas_how "find_package(BLAS) OpenBLAS")
    endif()
  endif()

  if(_hwport_blas_libs)
    set(_hwport_multiarch "")
    if(CMAKE_LIBRARY_ARCHITECTURE)
      set(_hwport_multiarch /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-pthread
                            /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
                            /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-serial)
    endif()
    find_path(HWPORT_CBLAS_INCLUDE_DIR cblas.h
      HINTS ${_hwport_blas_incs}
      PATHS ${_hwport_multiarch} /usr/include/openblas /usr/local/include/openblas
            /opt/OpenBLAS/include
      PATH_SUFFIXES openblas)
    if(HWPORT_CBLAS_INCLUDE_DIR)
      list(PREPEND _hwport_blas_incs ${HWPORT_CBLAS_INCLUDE_DIR})
      cmake_push_check_state(RESET)
      set(CMAKE_REQUIRED_INCLUDES ${_hwport_blas_incs})
      set(CMAKE_REQUIRED_LIBRARIES ${_hwport_blas_libs})
      set(CMAKE_REQUIRED_QUIET ON)
      unset(HWPORT_CPU_CBLAS_LINKS CACHE) # re-check: the library may have come or gone
      check_c_source_compiles([=[
#include <cblas.h>
int main(void) {
  float a = 1.0f, b = 2.0f, c = 0.0f;
  openblas_set_num_threads(1);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
  return c == 2.0f ? 0 : 1;
}]=] HWPORT_CPU_CBLAS_LINKS)
      cmake_pop_check_state()
      if(HWPORT_CPU_CBLAS_LINKS)
        set(_hwport_blas_found TRUE)
      endif()
    endif()
  endif()
endif()

if(_hwport_blas_found)
  target_compile_definitions(hwport_cpu PRIVATE HWPORT_CPU_HAVE_CBLAS HWPORT_CPU_HAVE_OPENBLAS)
  target_include_directories(hwport_cpu PRIVATE ${_hwport_blas_incs})
  target_link_libraries(hwport_cpu PRIVATE ${_hwport_blas_libs})
  message(STATUS "hwport: cpu plugin matmul uses OpenBLAS (${_hwport_blas_how}; "
                 "cblas.h in ${HWPORT_CBLAS_INCLUDE_DIR})")
elseif(NOT HWPORT_CPU_BLAS)
  message(STATUS "hwport: cpu plugin matmul: BLAS disabled (HWPORT_CPU_BLAS=OFF), "
                 "using the plugin's own blocked GEMM")
else()
  message(STATUS "hwport: cpu plugin matmul: OpenBLAS with cblas.h not found (install "
                 "libopenblas-dev for fast float matmul), using the plugin's own blocked GEMM")
endif()

# oneDNN (Debian/Ubuntu: libdnnl-dev) for the large float32 and bfloat16 products: its JIT
# kernels use AVX-512 and the CPU's bfloat16 dot products (AVX512_BF16) where OpenBLAS has no
# bfloat16 GEMM and may be held to AVX2 (OPENBLAS_CORETYPE). The v2 C API (dnnl_matmul_desc_init)
# is required; when absent, or with HWPORT_CPU_DNNL=OFF, matmul keeps OpenBLAS. Never fails the
# build.
option(HWPORT_CPU_DNNL "Use oneDNN (when found) for the CPU plugin's large float matmuls" ON)
if(HWPORT_CPU_DNNL)
  find_path(HWPORT_DNNL_INCLUDE_DIR dnnl.h)
  find_library(HWPORT_DNNL_LIBRARY dnnl)
  if(HWPORT_DNNL_INCLUDE_DIR AND HWPORT_DNNL_LIBRARY)
    include(CheckCSourceCompiles)
    include(CMakePushCheckState)
    cmake_push_check_state(RESET)
    set(CMAKE_REQUIRED_INCLUDES ${HWPORT_DNNL_INCLUDE_DIR})
    set(CMAKE_REQUIRED_LIBRARIES ${HWPORT_DNNL_LIBRARY})
    set(CMAKE_REQUIRED_QUIET ON)
    unset(HWPORT_CPU_DNNL_LINKS CACHE)
    check_c_source_compiles([=[
#include <dnnl.h>
int main(void) {
  dnnl_memory_desc_t md;
  dnnl_matmul_desc_t mm;
  dnnl_dims_t d = {2, 2}, s = {2, 1};
  dnnl_memory_desc_init_by_strides(&md, 2, d, dnnl_bf16, s);
  return dnnl_matmul_desc_init(&mm, &md, &md, NULL, &md) == dnnl_success ? 0 : 1;
}]=] HWPORT_CPU_DNNL_LINKS)
    cmake_pop_check_state()
  endif()
  if(HWPORT_CPU_DNNL_LINKS)
    target_compile_definitions(hwport_cpu PRIVATE HWPORT_CPU_HAVE_DNNL)
    target_include_directories(hwport_cpu PRIVATE ${HWPORT_DNNL_INCLUDE_DIR})
    target_link_libraries(hwport_cpu PRIVATE ${HWPORT_DNNL_LIBRARY})
    message(STATUS "hwport: cpu plugin large float32/bfloat16 matmul uses oneDNN "
                   "(${HWPORT_DNNL_LIBRARY})")
  else()
    message(STATUS "hwport: cpu plugin matmul: oneDNN (libdnnl-dev, v2 API) not found, large "
                   "products use OpenBLAS")
  endif()
endif()
