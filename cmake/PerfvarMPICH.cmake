# MPICH beside Open MPI (Debian: mpicc.mpich, mpifort.mpich, mpiexec.mpich). FindMPI can find one MPI
# per configuration, so MPICH's flags are read from its compiler wrappers (-show) into the imported
# targets perfvar_mpich_c and perfvar_mpich_fortran. Sets PERFVAR_MPICH_FOUND, PERFVAR_MPICH_LIBRARIES
# (full paths), PERFVAR_MPICH_MPIEXEC. PERFVAR_WITH_MPICH=OFF skips it.
option(PERFVAR_WITH_MPICH "Also build the MPICH layer when MPICH is installed" ON)
set(PERFVAR_MPICH_FOUND FALSE)
find_program(PERFVAR_MPICH_CC NAMES mpicc.mpich)
find_program(PERFVAR_MPICH_FC NAMES mpifort.mpich mpif90.mpich)
find_program(PERFVAR_MPICH_MPIEXEC NAMES mpiexec.mpich)

# Split a wrapper's -show line into include dirs, libraries (full paths) and compile options.
function(_perfvar_mpich_flags wrapper incs libs opts)
  execute_process(COMMAND ${wrapper} -show OUTPUT_VARIABLE line OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc)
  set(i "")
  set(l "")
  set(o "")
  set(dirs "")
  if(rc EQUAL 0)
    separate_arguments(words UNIX_COMMAND "${line}")
    list(POP_FRONT words) # the compiler itself
    foreach(w ${words})
      if(w MATCHES "^-I(.+)")
        list(APPEND i ${CMAKE_MATCH_1})
      elseif(w MATCHES "^-L(.+)")
        list(APPEND dirs ${CMAKE_MATCH_1})
      elseif(w MATCHES "^-l(.+)")
        find_library(lib_${CMAKE_MATCH_1} NAMES ${CMAKE_MATCH_1} HINTS ${dirs} NO_CACHE)
        if(lib_${CMAKE_MATCH_1})
          list(APPEND l ${lib_${CMAKE_MATCH_1}})
        endif()
      elseif(w MATCHES "^-f(allow|no-)") # Fortran dialect flags MPICH's mpif.h needs
        list(APPEND o ${w})
      endif()
    endforeach()
  endif()
  list(REMOVE_DUPLICATES i)
  set(${incs} ${i} PARENT_SCOPE)
  set(${libs} ${l} PARENT_SCOPE)
  set(${opts} ${o} PARENT_SCOPE)
endfunction()

if(PERFVAR_WITH_MPICH AND PERFVAR_MPICH_CC AND PERFVAR_MPICH_FC AND PERFVAR_MPICH_MPIEXEC)
  _perfvar_mpich_flags(${PERFVAR_MPICH_CC} c_incs c_libs c_opts)
  _perfvar_mpich_flags(${PERFVAR_MPICH_FC} f_incs f_libs f_opts)
  if(c_libs AND f_libs)
    add_library(perfvar_mpich_c INTERFACE IMPORTED)
    set_target_properties(perfvar_mpich_c PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${c_incs}"
                          INTERFACE_LINK_LIBRARIES "${c_libs}")
    add_library(perfvar_mpich_fortran INTERFACE IMPORTED)
    set_target_properties(perfvar_mpich_fortran PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${f_incs}"
                          INTERFACE_LINK_LIBRARIES "${f_libs}"
                          INTERFACE_COMPILE_OPTIONS "$<$<COMPILE_LANGUAGE:Fortran>:${f_opts}>")
    set(PERFVAR_MPICH_LIBRARIES ${c_libs} ${f_libs})
    list(REMOVE_DUPLICATES PERFVAR_MPICH_LIBRARIES)
    set(PERFVAR_MPICH_FOUND TRUE)
  endif()
endif()
