# lapse_add_plugin(<target> NAME <name> SOURCES <src>...)
#
# Builds lapse_<name>.so: a MODULE with hidden visibility and a version script
# that exports only lapse_plugin_entry_v1. Shipped with the SDK so a third
# party's plugin is built exactly like ours.
set(LAPSE_PLUGIN_VERSION_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/lapse_plugin.map CACHE INTERNAL "")

function(lapse_add_plugin target)
  cmake_parse_arguments(ARG "" "NAME;OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT ARG_NAME)
    message(FATAL_ERROR "lapse_add_plugin(${target}): NAME is required")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  if(TARGET lapse::sdk)
    target_link_libraries(${target} PRIVATE lapse::sdk)
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME lapse_${ARG_NAME}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${LAPSE_PLUGIN_VERSION_SCRIPT})
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  elseif(DEFINED LAPSE_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${LAPSE_PLUGIN_OUTPUT_DIR})
  endif()
  target_link_options(${target} PRIVATE "LINKER:--version-script=${LAPSE_PLUGIN_VERSION_SCRIPT}")
endfunction()
