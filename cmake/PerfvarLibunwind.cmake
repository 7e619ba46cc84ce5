# libunwind (Debian libunwind-dev; the "nongnu" libunwind, not LLVM's) for the call-path unwinder
# of the MPI layers (src/pmpi/sites.c). Its unw_backtrace caches each return address's frame rule
# and walks a frame in ~50-80 ns, where libgcc's _Unwind_Backtrace takes ~0.3-1 us.
# It is not linked: libunwind.so exports _Unwind_RaiseException, _Unwind_Backtrace and backtrace,
# which would interpose libgcc's for the whole application when the layer is preloaded. The layer
# dlopens it (RTLD_LOCAL) by SONAME, then by the path found here, on the first call path it
# unwinds, and falls back to libgcc when it cannot load it (one message).
# Sets PERFVAR_LIBUNWIND_DEFINITIONS (compile definitions for sites.c, empty when not found) and
# PERFVAR_LIBUNWIND_SUMMARY (the configuration summary's line).
option(PERFVAR_USE_LIBUNWIND "Unwind call paths with libunwind where found (else libgcc)" ON)
set(PERFVAR_LIBUNWIND_DEFINITIONS "")
set(PERFVAR_LIBUNWIND_SUMMARY "off (PERFVAR_USE_LIBUNWIND=OFF): call paths unwound with libgcc")
if(PERFVAR_USE_LIBUNWIND)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(PC_LIBUNWIND QUIET libunwind)
  endif()
  find_path(PERFVAR_LIBUNWIND_INCLUDE libunwind.h HINTS ${PC_LIBUNWIND_INCLUDE_DIRS})
  find_library(PERFVAR_LIBUNWIND_LIBRARY NAMES unwind HINTS ${PC_LIBUNWIND_LIBRARY_DIRS})
  set(PERFVAR_LIBUNWIND_SUMMARY
      "not found (install libunwind-dev): call paths unwound with libgcc, ~10x slower")
  if(PERFVAR_LIBUNWIND_INCLUDE AND PERFVAR_LIBUNWIND_LIBRARY)
    # unw_backtrace is what sets the nongnu libunwind apart (LLVM's has no such function).
    include(CheckSymbolExists)
    set(CMAKE_REQUIRED_INCLUDES ${PERFVAR_LIBUNWIND_INCLUDE})
    set(CMAKE_REQUIRED_DEFINITIONS -DUNW_LOCAL_ONLY)
    set(CMAKE_REQUIRED_LIBRARIES ${PERFVAR_LIBUNWIND_LIBRARY})
    set(CMAKE_REQUIRED_QUIET ON)
    check_symbol_exists(unw_backtrace libunwind.h PERFVAR_HAVE_UNW_BACKTRACE)
    unset(CMAKE_REQUIRED_INCLUDES)
    unset(CMAKE_REQUIRED_DEFINITIONS)
    unset(CMAKE_REQUIRED_LIBRARIES)
    unset(CMAKE_REQUIRED_QUIET)
    file(REAL_PATH ${PERFVAR_LIBUNWIND_LIBRARY} unwind_real)
    get_filename_component(unwind_name ${unwind_real} NAME)
    string(REGEX MATCH "^(libunwind\\.so\\.[0-9]+)" unwind_soname "${unwind_name}")
    if(PERFVAR_HAVE_UNW_BACKTRACE AND unwind_soname)
      set(PERFVAR_LIBUNWIND_DEFINITIONS PV_LIBUNWIND_SONAME="${unwind_soname}"
          PV_LIBUNWIND_PATH="${unwind_real}")
      set(PERFVAR_LIBUNWIND_SUMMARY "${unwind_soname} (loaded at run time by the MPI layers)")
    else()
      set(PERFVAR_LIBUNWIND_SUMMARY
          "${unwind_real} is not the libunwind with unw_backtrace: call paths unwound with libgcc")
    endif()
  endif()
endif()
