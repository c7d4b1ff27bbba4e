# Runs `lapse bench --quick` for the figures FILTER selects (on CONFIG, when
# given) and fails unless every key of KEYS (a ;-list, ; passed as |) came
# out as a number: a figure that could not be measured is absent from the
# JSON's top level and says why under "details". With TITLE_KEY, that
# figure's title must also match TITLE_REGEX (it says what was timed).
# Never checks what the numbers are.
string(REPLACE "|" ";" keys "${KEYS}")
set(config_args)
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()
execute_process(
  COMMAND ${LAPSE} bench --quick --rounds 1 ${config_args} --filter "${FILTER}" --json ${JSON}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lapse bench exited ${rc}\n${out}\n${err}")
endif()
file(READ ${JSON} json)
foreach(key ${keys})
  string(JSON value ERROR_VARIABLE missing GET "${json}" ${key})
  if(missing OR NOT value GREATER 0)
    message(FATAL_ERROR "${key} was not measured: ${missing}\n${out}\n${err}")
  endif()
  message(STATUS "${key} = ${value}")
endforeach()
if(TITLE_KEY)
  string(JSON title ERROR_VARIABLE missing GET "${json}" details ${TITLE_KEY} title)
  if(missing OR NOT title MATCHES "${TITLE_REGEX}")
    message(FATAL_ERROR "${TITLE_KEY} did not time what it should ('${TITLE_REGEX}'): '${title}' ${missing}")
  endif()
endif()
