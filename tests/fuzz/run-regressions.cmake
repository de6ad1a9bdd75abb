# run-regressions.cmake: runs a fuzz target once over every input kept in a
# regressions directory (all files but README* and dotfiles) and fails when
# the target does. No input: passes.
#
# usage: cmake -DFUZZ_TARGET=path/to/fuzz_target -DFUZZ_INPUTS=dir -P run-regressions.cmake
if(NOT FUZZ_TARGET OR NOT FUZZ_INPUTS)
  message(FATAL_ERROR "usage: cmake -DFUZZ_TARGET=... -DFUZZ_INPUTS=... -P run-regressions.cmake")
endif()

file(GLOB candidates LIST_DIRECTORIES false "${FUZZ_INPUTS}/*")
set(inputs "")
foreach(path IN LISTS candidates)
  get_filename_component(name "${path}" NAME)
  if(NOT name MATCHES "^README" AND NOT name MATCHES "^\\.")
    list(APPEND inputs "${path}")
  endif()
endforeach()
list(SORT inputs)

list(LENGTH inputs count)
if(count EQUAL 0)
  message(STATUS "no regression input in ${FUZZ_INPUTS}")
  return()
endif()

message(STATUS "running ${count} regression inputs from ${FUZZ_INPUTS}")
# Given files rather than a directory, libFuzzer runs each one once.
execute_process(COMMAND "${FUZZ_TARGET}" -timeout=10 -rss_limit_mb=2048 ${inputs}
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${FUZZ_TARGET} failed (${status}) on a regression input")
endif()
