# Runs `lapse bench` on the Vulkan example config for the two figures that
# measure the plugin against bare Vulkan, and fails unless both came out as
# numbers (a figure that could not be measured is absent from the JSON's
# top level and says why under "details").
execute_process(
  COMMAND ${LAPSE} bench --quick --rounds 1 --config ${CONFIG}
          --filter "^vulkan_(window_vs_two_bare_stamps|readback_vs_one_query_call)$" --json ${JSON}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lapse bench exited ${rc}\n${out}\n${err}")
endif()
file(READ ${JSON} json)
foreach(key vulkan_window_vs_two_bare_stamps vulkan_readback_vs_one_query_call)
  string(JSON value ERROR_VARIABLE missing GET "${json}" ${key})
  if(missing OR NOT value GREATER 0)
    message(FATAL_ERROR "${key} was not measured: ${missing}\n${out}\n${err}")
  endif()
  message(STATUS "${key} = ${value}")
endforeach()
