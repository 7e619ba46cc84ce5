# perfvar_add_mpi_layer(FLAVOUR C_TARGET FORTRAN_TARGET LIBRARIES)
# Builds libperfvar_mpi_<FLAVOUR> (target perfvar_mpi_<FLAVOUR>, exported as perfvar::mpi_<FLAVOUR>):
# wrappers generated from the MPI standard and the symbols LIBRARIES export, compiled against the
# flavour's mpi.h, linked with its C and Fortran libraries (the Fortran profiling symbols live there).
function(perfvar_add_mpi_layer flavour c_target f_target libraries)
  set(gen ${PROJECT_BINARY_DIR}/generated/${flavour})
  set(files ${gen}/pv_mpi_functions.h ${gen}/pv_mpi_functions.c ${gen}/pv_wrappers_c.c
            ${gen}/pv_wrappers_fortran.c ${gen}/coverage.txt)
  set(shared_libs "")
  foreach(lib ${libraries})
    if(lib MATCHES "/lib(mpi|mpich)[^/]*\\.so")
      list(APPEND shared_libs ${lib})
    endif()
  endforeach()
  add_custom_command(OUTPUT ${files}
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/src/wrapgen/gen_wrappers.py --flavour ${flavour}
            --out ${gen} ${shared_libs}
    DEPENDS ${PROJECT_SOURCE_DIR}/src/wrapgen/gen_wrappers.py ${PROJECT_SOURCE_DIR}/src/wrapgen/mpi_groups.py
            ${PROJECT_SOURCE_DIR}/src/spec/contracts.py
            ${PROJECT_SOURCE_DIR}/src/wrapgen/requirements.txt
    COMMENT "Generating the ${flavour} MPI wrappers")
  # The wrappers are compiled with mpi.h's declarations in view: a prototype or an argument that
  # does not match the MPI's (const, MPI_Count, an array) is an error, never a warning, and so is a
  # C wrapper of a function mpi.h does not declare (-Wmissing-prototypes).
  if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
    set(werror -Werror -Werror=incompatible-pointer-types -Wmissing-prototypes)
    set_source_files_properties(${gen}/pv_mpi_functions.c ${gen}/pv_wrappers_c.c
                                ${gen}/pv_wrappers_fortran.c PROPERTIES COMPILE_OPTIONS "${werror}")
  endif()
  set(t perfvar_mpi_${flavour})
  add_library(${t} SHARED ${files}
    ${PROJECT_SOURCE_DIR}/src/pmpi/runtime.c ${PROJECT_SOURCE_DIR}/src/pmpi/fortran_args.c
    ${PROJECT_SOURCE_DIR}/src/pmpi/sites.c ${PROJECT_SOURCE_DIR}/src/pmpi/messages.c
    ${PROJECT_SOURCE_DIR}/src/pmpi/comms.c
    ${PROJECT_SOURCE_DIR}/src/pmpi/lifecycle.c ${PROJECT_SOURCE_DIR}/src/pmpi/flavour_check.c
    ${PROJECT_SOURCE_DIR}/src/pmpi/comm_pmpi.c ${PROJECT_SOURCE_DIR}/src/pmpi/clock_sync.c
    ${PROJECT_SOURCE_DIR}/src/pmpi/rank_meta.c ${PROJECT_SOURCE_DIR}/src/pmpi/threads.c
    ${PROJECT_SOURCE_DIR}/src/pmpi/signals.c ${PROJECT_SOURCE_DIR}/src/pmpi/roll_call.c
    ${PROJECT_SOURCE_DIR}/src/pmpi/inject.c
    ${PROJECT_SOURCE_DIR}/src/metrics/events.c ${PROJECT_SOURCE_DIR}/src/metrics/counting.c
    ${PROJECT_SOURCE_DIR}/src/metrics/neighbours.c
    ${PROJECT_SOURCE_DIR}/src/topology/topology.c
    $<TARGET_OBJECTS:perfvar_recorder_trace>)
  # pv_spec.h's directory named here too (perfvar_spec also brings it, through perfvar), so the
  # targets that copy this one's INCLUDE_DIRECTORIES (the wrapper check, the TSan build) have it.
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/pmpi ${gen}
                             ${PERFVAR_SPEC_DIR})
  target_compile_definitions(${t} PRIVATE PV_MPI_FLAVOUR="${flavour}")
  # PERFVAR_METRICS counts PAPI events when PAPI was found (CMakeLists.txt); without it the layer
  # builds and records no counters.
  if(PERFVAR_HAVE_PAPI)
    target_compile_definitions(${t} PRIVATE PERFVAR_HAVE_PAPI)
    target_include_directories(${t} PRIVATE ${PERFVAR_PAPI_INCLUDE})
    target_link_libraries(${t} PRIVATE ${PERFVAR_PAPI_LIBRARY})
  endif()
  # Where the rank ran: from hwloc where found (CMakeLists.txt), else from sysfs (src/topology).
  if(TARGET PkgConfig::HWLOC)
    target_compile_definitions(${t} PRIVATE PERFVAR_HAVE_HWLOC)
    target_link_libraries(${t} PRIVATE PkgConfig::HWLOC)
  endif()
  # MPI is private: the application links its own MPI, which must be the same flavour.
  target_link_libraries(${t} PUBLIC perfvar
                        PRIVATE ${c_target} ${f_target} PkgConfig::OTF2 ${CMAKE_DL_LIBS} m)
  # Nothing in an application references the layer by name: keep Debian's linker from dropping it.
  target_link_options(${t} INTERFACE "LINKER:--no-as-needed")
  # The wrappers call the runtime directly, not through the PLT: the layer's own functions are not
  # meant to be interposed (the MPI_* it exports are what applications and tools see).
  target_link_options(${t} PRIVATE "LINKER:-Bsymbolic-functions")
  set_target_properties(${t} PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
                        EXPORT_NAME mpi_${flavour})
  add_library(perfvar::mpi_${flavour} ALIAS ${t})
  # What the unit.wrappers.<flavour> test needs to generate the wrappers afresh and compile them
  # against this flavour's mpi.h as the build does (cmake/PerfvarCheckWrappers.cmake).
  file(GENERATE OUTPUT ${gen}/check_wrappers.cmake CONTENT "\
set(PV_PYTHON [==[${Python3_EXECUTABLE}]==])
set(PV_GENERATOR [==[${PROJECT_SOURCE_DIR}/src/wrapgen/gen_wrappers.py]==])
set(PV_FLAVOUR ${flavour})
set(PV_LIBRARIES [==[${shared_libs}]==])
set(PV_GENERATED [==[${gen}]==])
set(PV_CC [==[${CMAKE_C_COMPILER}]==])
set(PV_PROJECT_DIRS [==[${PROJECT_SOURCE_DIR};${PROJECT_BINARY_DIR}]==])
set(PV_INCLUDES [==[$<TARGET_PROPERTY:${t},INCLUDE_DIRECTORIES>]==])
set(PV_DEFINITIONS [==[$<TARGET_PROPERTY:${t},COMPILE_DEFINITIONS>]==])
")
  set(PERFVAR_MPI_FLAVOURS ${PERFVAR_MPI_FLAVOURS} ${flavour} PARENT_SCOPE)
endfunction()
