# Sources of the CUDA plugin generated from phi_ops/ops.yaml at build time
# (phi_ops/codegen/gen_cuda_elementwise.py), included by CMakeLists.txt once hwport_cuda exists:
#   cuda_ew_ops.cuh        one functor per unary/binary primitive (its c_expr)
#   cuda_ew_<dtype>.cu     the elementwise kernel table of each dtype in HWPORT_CUDA_DTYPES
#   cuda_ew_tables.h       the tables' declarations; cuda_dtypes.h: CU_DTYPE_MASK
find_package(Python COMPONENTS Interpreter REQUIRED)

set(HWPORT_CUDA_OPS_YAML ${PROJECT_SOURCE_DIR}/phi_ops/ops.yaml)
set(HWPORT_GEN_CUDA_ELEMENTWISE ${PROJECT_SOURCE_DIR}/phi_ops/codegen/gen_cuda_elementwise.py)
set(HWPORT_CUDA_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated)
set(HWPORT_CUDA_GEN_HEADERS
  ${HWPORT_CUDA_GEN_DIR}/cuda_ew_ops.cuh
  ${HWPORT_CUDA_GEN_DIR}/cuda_ew_tables.h
  ${HWPORT_CUDA_GEN_DIR}/cuda_dtypes.h)
set(HWPORT_CUDA_GEN_SOURCES "")
foreach(dt IN LISTS HWPORT_CUDA_DTYPES)
  list(APPEND HWPORT_CUDA_GEN_SOURCES ${HWPORT_CUDA_GEN_DIR}/cuda_ew_${dt}.cu)
endforeach()

add_custom_command(
  OUTPUT ${HWPORT_CUDA_GEN_HEADERS} ${HWPORT_CUDA_GEN_SOURCES}
  COMMAND ${Python_EXECUTABLE} ${HWPORT_GEN_CUDA_ELEMENTWISE} ${HWPORT_CUDA_OPS_YAML}
          ${HWPORT_CUDA_GEN_DIR} ${HWPORT_CUDA_DTYPES}
  COMMAND ${CMAKE_COMMAND} -E touch ${HWPORT_CUDA_GEN_HEADERS} ${HWPORT_CUDA_GEN_SOURCES}
  DEPENDS ${HWPORT_CUDA_OPS_YAML} ${HWPORT_GEN_CUDA_ELEMENTWISE}
          ${PROJECT_SOURCE_DIR}/phi_ops/codegen/gen_opencl_elementwise.py
          ${PROJECT_SOURCE_DIR}/phi_ops/codegen/gen_cpu_elementwise.py
  COMMENT "Generating the CUDA plugin's elementwise kernel tables from phi_ops/ops.yaml"
  VERBATIM)

target_sources(hwport_cuda PRIVATE ${HWPORT_CUDA_GEN_HEADERS} ${HWPORT_CUDA_GEN_SOURCES})
target_include_directories(hwport_cuda PRIVATE ${HWPORT_CUDA_GEN_DIR})
# Every source includes kernels.h, which includes the generated cuda_dtypes.h.
get_target_property(_hwport_cuda_srcs hwport_cuda SOURCES)
set_source_files_properties(${_hwport_cuda_srcs} PROPERTIES OBJECT_DEPENDS
  "${HWPORT_CUDA_GEN_HEADERS}")
