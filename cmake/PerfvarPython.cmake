# PerfvarPython.cmake — installs the post-processing package and its `perfvar` command with the
# rest of perfvar, so that an installed prefix is all a user needs (no pip, no PYTHONPATH, no
# PERFVAR_LIB). The package goes to a private directory, <libdir>/perfvar/python/perfvar, not into
# an interpreter's site-packages (Debian marks the system's externally managed, and an HPC prefix
# is shared by users of different interpreters); bin/perfvar runs it with the interpreter perfvar
# was configured with, the one that has its dependencies (numpy, scikit-learn, otf2, ...).
# A generated perfvar/_install_paths.py gives the package the installed libperfvar, relative to
# itself so the prefix can be moved. Sets PERFVAR_PYTHON_SUMMARY for the configuration summary.
option(PERFVAR_INSTALL_PYTHON "Install the Python post-processing package and bin/perfvar" ON)
set(PERFVAR_PYTHON_SUMMARY "off")
if(NOT PERFVAR_INSTALL_PYTHON)
  return()
endif()

find_package(Python3 REQUIRED COMPONENTS Interpreter)
# The interpreter's own path (sys.executable), not a version manager's shim that may pick another
# interpreter in another directory; a virtual environment's python stays the environment's.
if(NOT PERFVAR_PYTHON)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import sys; print(sys.executable)"
                  OUTPUT_VARIABLE python OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR python STREQUAL "")
    set(python ${Python3_EXECUTABLE})
  endif()
  set(PERFVAR_PYTHON ${python} CACHE FILEPATH "Interpreter that runs the installed bin/perfvar")
endif()
# Missing dependencies do not stop the build (the C tools work without them): say so now rather
# than at the first `perfvar analyze`.
execute_process(COMMAND ${PERFVAR_PYTHON} -c "import numpy, scipy, sklearn, statsmodels, ruptures, otf2"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(rc EQUAL 0)
  set(PERFVAR_PYTHON_SUMMARY "${PERFVAR_PYTHON}")
else()
  set(PERFVAR_PYTHON_SUMMARY "${PERFVAR_PYTHON} (dependencies missing)")
  message(WARNING "${PERFVAR_PYTHON} lacks some of numpy, scipy, scikit-learn, statsmodels, ruptures, "
          "otf2: the installed bin/perfvar will not run until they are installed for it "
          "(or choose another interpreter with -DPERFVAR_PYTHON=...)")
endif()

set(PERFVAR_PYTHON_DIR ${CMAKE_INSTALL_LIBDIR}/perfvar/python)
file(RELATIVE_PATH PERFVAR_BIN_TO_PYTHON ${CMAKE_INSTALL_FULL_BINDIR}
     ${CMAKE_INSTALL_FULL_LIBDIR}/perfvar/python)
# The SONAME, present in every installation (the unversioned name is for linking only).
set(lib_file
    "${CMAKE_SHARED_LIBRARY_PREFIX}perfvar${CMAKE_SHARED_LIBRARY_SUFFIX}.${PROJECT_VERSION_MAJOR}")
file(RELATIVE_PATH PERFVAR_PACKAGE_TO_LIB ${CMAKE_INSTALL_FULL_LIBDIR}/perfvar/python/perfvar
     ${CMAKE_INSTALL_FULL_LIBDIR}/${lib_file})
file(RELATIVE_PATH PERFVAR_PACKAGE_TO_BIN ${CMAKE_INSTALL_FULL_LIBDIR}/perfvar/python/perfvar
     ${CMAKE_INSTALL_FULL_BINDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/postproc/perfvar DESTINATION ${PERFVAR_PYTHON_DIR}
        FILES_MATCHING PATTERN "*.py"
        PATTERN "__pycache__" EXCLUDE PATTERN "_install_paths.py" EXCLUDE)
configure_file(${PROJECT_SOURCE_DIR}/postproc/perfvar/_install_paths.py.in
               ${PROJECT_BINARY_DIR}/python/_install_paths.py @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/python/_install_paths.py DESTINATION ${PERFVAR_PYTHON_DIR}/perfvar)
configure_file(${PROJECT_SOURCE_DIR}/cmake/perfvar-launcher.py.in ${PROJECT_BINARY_DIR}/perfvar.install
               @ONLY)
install(PROGRAMS ${PROJECT_BINARY_DIR}/perfvar.install DESTINATION ${CMAKE_INSTALL_BINDIR}
        RENAME perfvar)
# Byte-compiled at install, as pip does: an installation users cannot write to would otherwise
# compile every module at every start. A failure here costs start-up time only.
install(CODE "
  set(dir \"${PERFVAR_PYTHON_DIR}\")
  if(NOT IS_ABSOLUTE \"\${dir}\")
    set(dir \"\${CMAKE_INSTALL_PREFIX}/\${dir}\")
  endif()
  execute_process(COMMAND \"${PERFVAR_PYTHON}\" -m compileall -q \"\$ENV{DESTDIR}\${dir}/perfvar\"
                  OUTPUT_QUIET ERROR_QUIET)
")
