# expect_failure.cmake — run PROG, require a non-zero exit status and output matching REGEX.
#   cmake -DPROG=<path> -DREGEX=<regex> [-DEMULATOR=<cmd|arg|...>] -P expect_failure.cmake
# EMULATOR (cross builds: qemu-user) has its words separated by '|'.
string(REPLACE "|" ";" emulator "${EMULATOR}")
execute_process(COMMAND ${emulator} ${PROG} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit status: ${rc}\nstdout:\n${out}\nstderr:\n${err}")
if(rc STREQUAL "0")
  message(FATAL_ERROR "${PROG} exited with status 0; a non-zero status was expected")
endif()
if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "${PROG} did not exit normally: ${rc}")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "the output of ${PROG} does not match '${REGEX}'")
endif()
if("${out}" MATCHES "NOT REACHED")
  message(FATAL_ERROR "${PROG} went on after the error")
endif()
