# cmake -DCONFIG=<build>/generated/<flavour>/check_wrappers.cmake -DOUT=DIR -P PerfvarCheckWrappers.cmake
# The unit.wrappers.<flavour> test. CONFIG (written by perfvar_add_mpi_layer) names the generator, the
# MPI's libraries, the C compiler and the layer's include directories and definitions. Checks that:
#   1. the generator, run afresh, writes what the build compiled (nothing stale, nothing random);
#   2. its C files compile against the flavour's mpi.h with -Wall -Wextra -Werror, as in the build
#      (-Wmissing-prototypes: every C wrapper is of a function mpi.h declares);
#   3. a prototype made wrong on purpose (a const dropped, an int for an MPI_Count) does not compile,
#      nor does a wrapper of a function mpi.h does not declare: the check has teeth.
# Prints "check_wrappers: ok" and exits 0, or stops with the reason.
include(${CONFIG})
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT}/fresh ${OUT}/wrong)

execute_process(COMMAND ${PV_PYTHON} ${PV_GENERATOR} --flavour ${PV_FLAVOUR} --out ${OUT}/fresh
                        ${PV_LIBRARIES}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_wrappers: the generator failed: ${err}")
endif()
set(sources pv_mpi_functions.c pv_wrappers_c.c pv_wrappers_fortran.c)
foreach(f pv_mpi_functions.h ${sources} coverage.txt)
  file(READ ${OUT}/fresh/${f} fresh)
  file(READ ${PV_GENERATED}/${f} built)
  if(NOT fresh STREQUAL built)
    message(FATAL_ERROR "check_wrappers: ${PV_GENERATED}/${f} differs from what the generator writes "
                        "now (${OUT}/fresh/${f}): rebuild")
  endif()
endforeach()

# The layer's flags: directories outside the project as system headers, as CMake passes imported ones.
set(flags -std=gnu11 -fsyntax-only -Wall -Wextra -Werror -Werror=incompatible-pointer-types
          -Wmissing-prototypes)
foreach(dir ${PV_INCLUDES})
  set(option -isystem)
  foreach(project_dir ${PV_PROJECT_DIRS})
    string(FIND "${dir}/" "${project_dir}/" at)
    if(at EQUAL 0)
      set(option -I)
    endif()
  endforeach()
  list(APPEND flags ${option} ${dir})
endforeach()
foreach(def ${PV_DEFINITIONS})
  list(APPEND flags -D${def})
endforeach()

function(compile dir file result output)
  execute_process(COMMAND ${PV_CC} -I${dir} ${flags} ${dir}/${file}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${result} ${rc} PARENT_SCOPE)
  set(${output} "${out}" PARENT_SCOPE)
endfunction()

foreach(f ${sources})
  compile(${OUT}/fresh ${f} rc out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_wrappers: ${f} does not compile against ${PV_FLAVOUR}'s mpi.h:\n${out}")
  endif()
endforeach()

# Wrong on purpose, one at a time: each must be refused, with the compiler's message `expected`.
function(expect_refused text expected what)
  file(WRITE ${OUT}/wrong/pv_wrappers_c.c "${text}")
  compile(${OUT}/wrong pv_wrappers_c.c rc out)
  if(rc EQUAL 0 OR NOT out MATCHES "${expected}")
    message(FATAL_ERROR "check_wrappers: ${what} was not refused against ${PV_FLAVOUR}'s mpi.h "
                        "(exit ${rc}):\n${out}")
  endif()
  message(STATUS "check_wrappers: ${what} refused, as it must be")
endfunction()

file(READ ${OUT}/fresh/pv_wrappers_c.c wrappers)
file(COPY ${OUT}/fresh/pv_mpi_functions.h DESTINATION ${OUT}/wrong)
set(wrong "int MPI_Send(const void* buf,|int MPI_Send(void* buf,")
if(wrappers MATCHES "int MPI_Send_c\\(const void\\* buf, MPI_Count count,")
  list(APPEND wrong "int MPI_Send_c(const void* buf, MPI_Count count,|int MPI_Send_c(const void* buf, int count,")
endif()
foreach(pair ${wrong})
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 right)
  list(GET pair 1 bad)
  string(FIND "${wrappers}" "${right}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "check_wrappers: '${right}' not in pv_wrappers_c.c: update this check")
  endif()
  string(REPLACE "${right}" "${bad}" text "${wrappers}")
  expect_refused("${text}" "conflicting types" "'${bad}...'")
endforeach()
# A wrapper of a function mpi.h does not declare (one the MPI exports but hides, say).
expect_refused("${wrappers}\nint MPI_Not_in_mpi_h(int x)\n{\n    return x;\n}\n" "missing-prototypes"
               "a wrapper of a function mpi.h does not declare")
message(STATUS "check_wrappers: ok (${PV_FLAVOUR})")
