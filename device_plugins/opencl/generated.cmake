# Sources of the OpenCL plugin generated from phi_ops/ops.yaml at build time (included by
# CMakeLists.txt once the hwport_opencl target exists):
#   ocl_elementwise_gen.h  the elementwise OpenCL C programs (one per dtype, around the preludes
#                          elementwise_prelude.cl, expf.cl and elementwise_vector.cl) and op table
#                          (phi_ops/codegen/gen_opencl_elementwise.py), used by
#                          kernels_elementwise.c.
find_package(Python COMPONENTS Interpreter REQUIRED)

set(HWPORT_OCL_OPS_YAML ${PROJECT_SOURCE_DIR}/phi_ops/ops.yaml)
set(HWPORT_GEN_OCL_ELEMENTWISE ${PROJECT_SOURCE_DIR}/phi_ops/codegen/gen_opencl_elementwise.py)
set(HWPORT_OCL_PRELUDE ${CMAKE_CURRENT_SOURCE_DIR}/elementwise_prelude.cl)
set(HWPORT_OCL_EXPF ${CMAKE_CURRENT_SOURCE_DIR}/expf.cl)
set(HWPORT_OCL_EW_VECTOR ${CMAKE_CURRENT_SOURCE_DIR}/elementwise_vector.cl)
set(HWPORT_OCL_ELEMENTWISE_GEN_H ${CMAKE_CURRENT_BINARY_DIR}/ocl_elementwise_gen.h)

add_custom_command(
  OUTPUT ${HWPORT_OCL_ELEMENTWISE_GEN_H}
  COMMAND ${Python_EXECUTABLE} ${HWPORT_GEN_OCL_ELEMENTWISE} ${HWPORT_OCL_OPS_YAML}
          ${HWPORT_OCL_PRELUDE},${HWPORT_OCL_EXPF},${HWPORT_OCL_EW_VECTOR} ${CMAKE_CURRENT_BINARY_DIR}
  COMMAND ${CMAKE_COMMAND} -E touch ${HWPORT_OCL_ELEMENTWISE_GEN_H}
  DEPENDS ${HWPORT_OCL_OPS_YAML} ${HWPORT_GEN_OCL_ELEMENTWISE} ${HWPORT_OCL_PRELUDE}
          ${HWPORT_OCL_EXPF} ${HWPORT_OCL_EW_VECTOR}
          ${PROJECT_SOURCE_DIR}/phi_ops/codegen/gen_cpu_elementwise.py
  COMMENT "Generating the OpenCL plugin's elementwise programs from phi_ops/ops.yaml"
  VERBATIM)

target_sources(hwport_opencl PRIVATE ${HWPORT_OCL_ELEMENTWISE_GEN_H})
target_include_directories(hwport_opencl PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
set_source_files_properties(kernels_elementwise.c PROPERTIES
  OBJECT_DEPENDS ${HWPORT_OCL_ELEMENTWISE_GEN_H}
  COMPILE_DEFINITIONS HWPORT_OCL_REQUIRE_GEN=1)
