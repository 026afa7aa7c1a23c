# Installs hwport's CMake package (hwport/cmake) and pkg-config file (hwport/lib/pkgconfig) with
# the wheel, so a vendor builds a plugin against the installed headers alone.
include(CMakePackageConfigHelpers)
if(DEFINED SKBUILD_PROJECT_VERSION)
  set(HWPORT_PACKAGE_VERSION "${SKBUILD_PROJECT_VERSION}")
else()
  set(HWPORT_PACKAGE_VERSION "0.0.0")
endif()
set(_hwport_pkg ${CMAKE_BINARY_DIR}/hwport_package)
configure_file(${CMAKE_CURRENT_LIST_DIR}/hwportConfig.cmake.in ${_hwport_pkg}/hwportConfig.cmake
               @ONLY)
write_basic_package_version_file(${_hwport_pkg}/hwportConfigVersion.cmake
  VERSION ${HWPORT_PACKAGE_VERSION} COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
configure_file(${CMAKE_CURRENT_LIST_DIR}/hwport.pc.in ${_hwport_pkg}/hwport.pc @ONLY)
install(FILES ${_hwport_pkg}/hwportConfig.cmake ${_hwport_pkg}/hwportConfigVersion.cmake
        DESTINATION hwport/cmake)
install(FILES ${_hwport_pkg}/hwport.pc DESTINATION hwport/lib/pkgconfig)
