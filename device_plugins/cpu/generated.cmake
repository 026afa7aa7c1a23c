# Sources of the CPU plugin generated from phi_ops/ops.yaml at build time (included by
# CMakeLists.txt once the hwport_cpu target exists):
#   elementwise_ops.h  the elementwise op table (phi_ops/codegen/gen_cpu_elementwise.py) that
#                      kernels_elementwise.c expands into its kernels.
find_package(Python COMPONENTS Interpreter REQUIRED)

execute_process(COMMAND ${Python_EXECUTABLE} -c "import yaml"
                RESULT_VARIABLE _hwport_has_yaml OUTPUT_QUIET ERROR_QUIET)
if(NOT _hwport_has_yaml EQUAL 0)
  message(FATAL_ERROR "hwport: ${Python_EXECUTABLE} cannot import yaml; the CPU plugin's kernel "
                      "table is generated from phi_ops/ops.yaml with PyYAML (pip install pyyaml)")
endif()

set(HWPORT_OPS_YAML ${PROJECT_SOURCE_DIR}/phi_ops/ops.yaml)
set(HWPORT_GEN_CPU_ELEMENTWISE ${PROJECT_SOURCE_DIR}/phi_ops/codegen/gen_cpu_elementwise.py)
set(HWPORT_CPU_ELEMENTWISE_OPS_H ${CMAKE_CURRENT_BINARY_DIR}/elementwise_ops.h)

# The generator leaves an unchanged header untouched; the touch keeps the output newer than its
# inputs so the command does not rerun on every build.
add_custom_command(
  OUTPUT ${HWPORT_CPU_ELEMENTWISE_OPS_H}
  COMMAND ${Python_EXECUTABLE} ${HWPORT_GEN_CPU_ELEMENTWISE} ${HWPORT_OPS_YAML}
          ${CMAKE_CURRENT_BINARY_DIR}
  COMMAND ${CMAKE_COMMAND} -E touch ${HWPORT_CPU_ELEMENTWISE_OPS_H}
  DEPENDS ${HWPORT_OPS_YAML} ${HWPORT_GEN_CPU_ELEMENTWISE}
  COMMENT "Generating the CPU plugin's elementwise kernel table from phi_ops/ops.yaml"
  VERBATIM)

target_sources(hwport_cpu PRIVATE ${HWPORT_CPU_ELEMENTWISE_OPS_H})
target_include_directories(hwport_cpu PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
# kernels_elementwise.c includes the header: make the dependency explicit for every generator.
set_source_files_properties(kernels_elementwise.c PROPERTIES
  OBJECT_DEPENDS ${HWPORT_CPU_ELEMENTWISE_OPS_H}
  # Vectorized loops need -O3 (see CMakeLists.txt). floor, ceil, trunc and nearbyint vectorize
  # (vroundps) only where GCC may assume that float operations do not trap: no kernel reads the
  # floating-point exception flags, and the results are the same.
  COMPILE_OPTIONS "-fno-trapping-math;$<$<NOT:$<CONFIG:Debug>>:-O3>")

# The thread pool (parallel.c) pins the library with dladdr/dlopen.
target_link_libraries(hwport_cpu PRIVATE ${CMAKE_DL_LIBS})
