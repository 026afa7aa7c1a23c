/* hwport OpenCL plugin — the embedded OpenCL programs of the index and random kernels
 * (generated.cmake: elementwise_prelude.cl + kernels_common.cl + index.cl / argsort.cl /
 * random.cl, each one string constant). CMake builds define HWPORT_OCL_REQUIRE_GEN (a missing
 * header is an error there); a standalone compile of the sources (a warning check) gets empty
 * programs. */
#ifndef HWPORT_OPENCL_PROGRAMS_H
#define HWPORT_OPENCL_PROGRAMS_H

#if defined(HWPORT_OCL_REQUIRE_GEN) || !defined(__has_include)
#include "ocl_argsort_source.h"
#include "ocl_index_source.h"
#include "ocl_random_source.h"
#elif __has_include("ocl_index_source.h")
#include "ocl_argsort_source.h"
#include "ocl_index_source.h"
#include "ocl_random_source.h"
#else
static const char ocl_index_source[] = "";
static const char ocl_argsort_source[] = "";
static const char ocl_random_source[] = "";
#endif

#endif /* HWPORT_OPENCL_PROGRAMS_H */
