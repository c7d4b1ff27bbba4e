# Runs `lapse bench` on the default CPU subject for the two resolve figures
# and fails unless both came out as numbers and resolve_vs_read_stamps timed
# lapse.resolve_compact/1 (the CPU plugin offers it), never what the
# numbers are.
execute_process(
  COMMAND ${LAPSE} bench --quick --rounds 1 --filter "^resolve_(full_)?vs_read_stamps$" --json ${JSON}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lapse bench exited ${rc}\n${out}\n${err}")
endif()
file(READ ${JSON} json)
foreach(key resolve_vs_read_stamps resolve_full_vs_read_stamps)
  string(JSON value ERROR_VARIABLE missing GET "${json}" ${key})
  if(missing OR NOT value GREATER 0)
    message(FATAL_ERROR "${key} was not measured: ${missing}\n${out}\n${err}")
  endif()
  message(STATUS "${key} = ${value}")
endforeach()
string(JSON title ERROR_VARIABLE missing GET "${json}" details resolve_vs_read_stamps title)
if(missing OR NOT title MATCHES "lapse\\.resolve_compact/1\\)$")
  message(FATAL_ERROR "resolve_vs_read_stamps did not time the compact resolve: '${title}' ${missing}")
endif()
