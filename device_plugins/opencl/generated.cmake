# Sources of the OpenCL plugin generated from phi_ops/ops.yaml at build time (included by
# CMakeLists.txt once the hwport_opencl target exists):
#   ocl_elementwise_gen.h  the elementwise OpenCL C programs (one per dtype, around the prelude
#                          elementwise_prelude.cl) and op table
#                          (phi_ops/codegen/gen_opencl_elementwise.py), used by
#                          kernels_elementwise.c.
find_package(Python COMPONENTS Interpreter REQUIRED)

set(HWPORT_OCL_OPS_YAML ${PROJECT_SOURCE_DIR}/phi_ops/ops.yaml)
set(HWPORT_GEN_OCL_ELEMENTWISE ${PROJECT_SOURCE_DIR}/phi_ops/codegen/gen_opencl_elementwise.py)
set(HWPORT_OCL_PRELUDE ${CMAKE_CURRENT_SOURCE_DIR}/elementwise_prelude.cl)
set(HWPORT_OCL_ELEMENTWISE_GEN_H ${CMAKE_CURRENT_BINARY_DIR}/ocl_elementwise_gen.h)

add_custom_command(
  OUTPUT ${HWPORT_OCL_ELEMENTWISE_GEN_H}
  COMMAND ${Python_EXECUTABLE} ${HWPORT_GEN_OCL_ELEMENTWISE} ${HWPORT_OCL_OPS_YAML}
          ${HWPORT_OCL_PRELUDE} ${CMAKE_CURRENT_BINARY_DIR}
  COMMAND ${CMAKE_COMMAND} -E touch ${HWPORT_OCL_ELEMENTWISE_GEN_H}
  DEPENDS ${HWPORT_OCL_OPS_YAML} ${HWPORT_GEN_OCL_ELEMENTWISE} ${HWPORT_OCL_PRELUDE}
          ${PROJECT_SOURCE_DIR}/phi_ops/codegen/gen_cpu_elementwise.py
  COMMENT "Generating the OpenCL plugin's elementwise programs from phi_ops/ops.yaml"
  VERBATIM)

target_sources(hwport_opencl PRIVATE ${HWPORT_OCL_ELEMENTWISE_GEN_H})
target_include_directories(hwport_opencl PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
set_source_files_properties(kernels_elementwise.c PROPERTIES
  OBJECT_DEPENDS ${HWPORT_OCL_ELEMENTWISE_GEN_H}
  COMPILE_DEFINITIONS HWPORT_OCL_REQUIRE_GEN=1)

# The OpenCL C programs of the index and random kernel families, each embedded as one string
# constant <name> in <name>.h (embed_cl.cmake): the prelude, kernels_common.cl, then the
# family's own file. ocl_index_source (index.cl) and ocl_argsort_source (argsort.cl) are used by
# kernels_index.c, ocl_random_source (random.cl) by kernels_random.c.
set(HWPORT_OCL_EMBED ${CMAKE_CURRENT_SOURCE_DIR}/embed_cl.cmake)
function(hwport_ocl_embed name cl_file)
  set(inputs ${HWPORT_OCL_PRELUDE} ${CMAKE_CURRENT_SOURCE_DIR}/kernels_common.cl
             ${CMAKE_CURRENT_SOURCE_DIR}/${cl_file})
  string(REPLACE ";" "\\;" inputs_arg "${inputs}")
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${name}.h
    COMMAND ${CMAKE_COMMAND} -DOUT=${CMAKE_CURRENT_BINARY_DIR}/${name}.h -DNAME=${name}
            -DINPUTS=${inputs_arg} -P ${HWPORT_OCL_EMBED}
    DEPENDS ${inputs} ${HWPORT_OCL_EMBED}
    COMMENT "Embedding the OpenCL program ${name}"
    VERBATIM)
  target_sources(hwport_opencl PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/${name}.h)
endfunction()
hwport_ocl_embed(ocl_index_source index.cl)
hwport_ocl_embed(ocl_argsort_source argsort.cl)
hwport_ocl_embed(ocl_random_source random.cl)
set_source_files_properties(kernels_index.c kernels_random.c PROPERTIES
  OBJECT_DEPENDS "${CMAKE_CURRENT_BINARY_DIR}/ocl_index_source.h;${CMAKE_CURRENT_BINARY_DIR}/ocl_argsort_source.h;${CMAKE_CURRENT_BINARY_DIR}/ocl_random_source.h"
  COMPILE_DEFINITIONS HWPORT_OCL_REQUIRE_GEN=1)
