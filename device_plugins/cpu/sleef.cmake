# SLEEF, the vectorized math library PyTorch uses, for the CPU plugin's float32/float64 math
# (included OPTIONAL by CMakeLists.txt, in its directory scope).
#
# Looks for sleef.h and libsleef (pkg-config `sleef`, Debian's libsleef-dev ships sleef.pc, then a
# plain search). A candidate counts only if a program calling an AVX2 and a scalar SLEEF function
# compiles and links. x86-64 with GCC only: the generated loops reach SLEEF through GCC's simd
# clones of declarations (`__attribute__((simd))`, see sleef_math.h), which Clang does not honour.
# When found, the plugin is built with HWPORT_CPU_HAVE_SLEEF and the wrappers math_sleef_*.c;
# when not, a STATUS message says so and the math stays scalar libm. Never fails the build.
# HWPORT_CPU_SLEEF=OFF skips the search.

option(HWPORT_CPU_SLEEF "Use SLEEF (when found) for the CPU plugin's vectorized float math" ON)

set(_hwport_sleef_found FALSE)
set(_hwport_sleef_why "")
if(NOT HWPORT_CPU_SLEEF)
  set(_hwport_sleef_why "disabled (HWPORT_CPU_SLEEF=OFF)")
elseif(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$"
       OR NOT CMAKE_C_COMPILER_ID STREQUAL "GNU")
  set(_hwport_sleef_why "needs x86-64 and GCC (have ${CMAKE_SYSTEM_PROCESSOR}, ${CMAKE_C_COMPILER_ID})")
else()
  include(CheckCSourceCompiles)
  include(CMakePushCheckState)
  set(_hwport_sleef_incs "")
  set(_hwport_sleef_hints "")
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(HWPORT_SLEEF_PC QUIET sleef)
    if(HWPORT_SLEEF_PC_FOUND)
      set(_hwport_sleef_incs ${HWPORT_SLEEF_PC_INCLUDE_DIRS})
      set(_hwport_sleef_hints ${HWPORT_SLEEF_PC_LIBRARY_DIRS})
    endif()
  endif()
  find_path(HWPORT_SLEEF_INCLUDE_DIR sleef.h HINTS ${_hwport_sleef_incs})
  find_library(HWPORT_SLEEF_LIBRARY NAMES sleef HINTS ${_hwport_sleef_hints})
  if(HWPORT_SLEEF_INCLUDE_DIR AND HWPORT_SLEEF_LIBRARY)
    cmake_push_check_state(RESET)
    set(CMAKE_REQUIRED_INCLUDES ${HWPORT_SLEEF_INCLUDE_DIR})
    set(CMAKE_REQUIRED_LIBRARIES ${HWPORT_SLEEF_LIBRARY} m)
    set(CMAKE_REQUIRED_FLAGS "-mavx2 -mfma")
    set(CMAKE_REQUIRED_QUIET ON)
    unset(HWPORT_CPU_SLEEF_LINKS CACHE) # re-check: the library may have come or gone
    check_c_source_compiles([=[
#include <immintrin.h>
#include <sleef.h>
int main(void) {
  volatile float s = Sleef_sinf_u10(0.5f);
  __m256 v = Sleef_expf8_u10avx2(_mm256_set1_ps(s));
  return _mm256_cvtss_f32(v) > 0.0f ? 0 : 1;
}]=] HWPORT_CPU_SLEEF_LINKS)
    cmake_pop_check_state()
    if(HWPORT_CPU_SLEEF_LINKS)
      set(_hwport_sleef_found TRUE)
    else()
      set(_hwport_sleef_why "sleef.h and libsleef found but a test program does not link")
    endif()
  else()
    set(_hwport_sleef_why "sleef.h or libsleef not found (install libsleef-dev)")
  endif()
endif()

if(_hwport_sleef_found)
  # One wrapper file per instruction set, each compiled for it (sleef.h declares a set's
  # functions only when the compiler targets it); only code chosen at load for a CPU that has
  # the set calls into them.
  target_sources(hwport_cpu PRIVATE math_sleef_scalar.c math_sleef_avx2.c math_sleef_avx512.c)
  set_source_files_properties(math_sleef_avx2.c PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma")
  set_source_files_properties(math_sleef_avx512.c PROPERTIES COMPILE_OPTIONS "-mavx512f;-mfma")
  target_compile_definitions(hwport_cpu PRIVATE HWPORT_CPU_HAVE_SLEEF)
  target_include_directories(hwport_cpu PRIVATE ${HWPORT_SLEEF_INCLUDE_DIR})
  target_link_libraries(hwport_cpu PRIVATE ${HWPORT_SLEEF_LIBRARY})
  message(STATUS "hwport: cpu plugin float math uses SLEEF (${HWPORT_SLEEF_LIBRARY})")
else()
  message(STATUS "hwport: cpu plugin float math: SLEEF ${_hwport_sleef_why}; scalar libm")
endif()
