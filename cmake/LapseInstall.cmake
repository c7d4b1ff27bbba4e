# Install rules and the packages a third party builds against, included at
# the end of the top-level CMakeLists.txt once every target exists.
#
#   <prefix>/include/lapse/*.h, lapse/sdk/*.hpp   the C ABI and the C++ adapter
#   <prefix>/include/lapse/core*.hpp             the host library's C++ API (core/ installs it)
#   <prefix>/include/lapse/host_api.h            its C host API (core/ installs it)
#   <prefix>/lib/python3.X/dist-packages/lapse/  the Python package (core/python installs it)
#   <prefix>/lib/liblapse_core.so*               the host library
#   <prefix>/lib/lapse/lapse_<name>.so           every shipped plugin (found beside the core)
#   <prefix>/bin/lapse                           the command
#   <prefix>/lib/cmake/lapse/                    find_package(lapse): lapse::sdk, lapse::core,
#                                                lapse_add_plugin() and its version script
#   <prefix>/lib/pkgconfig/lapse-{sdk,core}.pc   the same for pkg-config users
include(CMakePackageConfigHelpers)

set(LAPSE_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lapse)

# The SDK headers (the core installs its own).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/sdk/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Every shipped plugin this build made (plugins/CMakeLists.txt lists them).
get_property(_lapse_plugins GLOBAL PROPERTY LAPSE_SHIPPED_PLUGINS)
install(TARGETS ${_lapse_plugins} LIBRARY DESTINATION ${LAPSE_PLUGIN_INSTALL_DIR})

# The exported targets: lapse::sdk (headers) and lapse::core (the library).
# core/ installs the library file already; naming it again here puts it in
# the export set so find_package(lapse) can import it.
# Exported as lapse::sdk and lapse::core (the names the build tree's aliases
# use), not lapse::lapse_sdk.
set_target_properties(lapse_sdk PROPERTIES EXPORT_NAME sdk)
set_target_properties(lapse_core PROPERTIES EXPORT_NAME core)
install(TARGETS lapse_sdk lapse_core EXPORT lapseTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT lapseTargets NAMESPACE lapse:: DESTINATION ${LAPSE_CMAKE_INSTALL_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/sdk/cmake/lapseConfig.cmake.in
  ${PROJECT_BINARY_DIR}/lapseConfig.cmake
  INSTALL_DESTINATION ${LAPSE_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR LAPSE_PLUGIN_INSTALL_DIR)
# 0.x: every minor may break the C++ API; the C ABI has its own major.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lapseConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/lapseConfig.cmake
  ${PROJECT_BINARY_DIR}/lapseConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/sdk/cmake/LapsePlugin.cmake
  ${PROJECT_SOURCE_DIR}/sdk/cmake/lapse_plugin.map
  DESTINATION ${LAPSE_CMAKE_INSTALL_DIR})

# pkg-config: the prefix is found from the .pc file's own place
# (${pcfiledir}), so `cmake --install --prefix DIR` and a moved tree both work.
file(RELATIVE_PATH LAPSE_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" LAPSE_PC_TO_PREFIX "${LAPSE_PC_TO_PREFIX}")
foreach(_lapse_pc lapse-sdk lapse-core)
  configure_file(${PROJECT_SOURCE_DIR}/sdk/cmake/${_lapse_pc}.pc.in ${PROJECT_BINARY_DIR}/${_lapse_pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${_lapse_pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
