#!/bin/sh
# check_install.sh BUILD_DIR WORK_DIR MPIEXEC MPICC MPIFORT [MPICH_MPIEXEC MPICH_FORT]
# Installs perfvar from BUILD_DIR into a fresh prefix under WORK_DIR and uses it the way a user of an
# HPC installation does, with nothing pointing into the prefix but the commands' own paths (no
# LD_LIBRARY_PATH, no PERFVAR_LIB, no PYTHONPATH): builds this consumer project through the CMake
# package and through pkg-config and runs its programs; traces a Fortran MPI program by relinking
# and, unchanged, by bin/perfvar-run (LD_PRELOAD of the layer), with MPICH too when its layer and
# tools are given; runs bin/perfvar analyze on a trace and bin/perfvar calibrate --quick.
set -eu
build=$1 work=$2 mpiexec=$3 mpicc=$4 mpifort=$5
mpich_mpiexec=${6:-} mpich_fort=${7:-}
here=$(cd "$(dirname "$0")" && pwd)
unset LD_LIBRARY_PATH PERFVAR_LIB PYTHONPATH PERFVAR_PRELOAD_LIB PERFVAR_MPI
# A build's PERFVAR_OUTPUT or calibration settings would change what this checks.
unset PERFVAR_OUTPUT PERFVAR_CALIBRATION
fail() { echo "check_install: $*"; exit 1; }

# The MPI of MPIEXEC, MPICC and MPIFORT: the build's default layer, perfvar::mpi.
flavour=mpich flags="-n 2"
if "$mpiexec" --version 2>&1 | grep -Eq "Open MPI|OpenRTE"; then
    flavour=openmpi flags="$flags --oversubscribe --allow-run-as-root"
fi

rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/perfvar-run bin/perfvar bin/perfvar-recover bin/perfvar-markers include/perfvar.h include/perfvar_clock.h \
         lib/pkgconfig/perfvar.pc lib/pkgconfig/perfvar-mpi-$flavour.pc \
         lib/cmake/perfvar/perfvarConfig.cmake lib/libperfvar.so lib/libperfvar_mpi_$flavour.so \
         lib/libperfvar_stats.so \
         lib/perfvar/python/perfvar/_install_paths.py; do
    [ -e "$prefix/$f" ] || fail "missing $f"
done
ls "$prefix"/include/perfvar/*/perfvar.mod >/dev/null

# Every installed library and program finds its perfvar libraries by a RUNPATH relative to itself.
for f in "$prefix"/lib/libperfvar*.so "$prefix/bin/perfvar-recover" "$prefix/bin/perfvar-markers"; do
    readelf -d "$f" | grep -q 'RUNPATH.*\$ORIGIN' || fail "no \$ORIGIN RUNPATH in $f"
done

# The consumer project through the CMake package: its programs run from its build tree.
cmake -S "$here" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DMPI_C_COMPILER="$mpicc" -DMPI_Fortran_COMPILER="$mpifort" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/c_timer"
"$work/build/f_timer"

# Through pkg-config: Libs carries the rpath.
pc="env PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config"
cc "$here/c_timer.c" -o "$work/c_timer_pc" $($pc --cflags --libs perfvar)
"$work/c_timer_pc"

# A trace directory is complete when it has the OTF2 anchor file.
traced() { [ -e "$1/traces.otf2" ] || fail "no trace in $1 ($2)"; }
# A Fortran program's own calls are in its trace (the layer's Fortran symbols, not MPI_Init alone),
# read by OTF2's tools when installed; the analysis below checks the same on the preloaded run.
has_sendrecv() {
    if command -v otf2-print >/dev/null 2>&1; then
        otf2-print "$1/traces.otf2" | grep -q MPI_Sendrecv || fail "no MPI_Sendrecv in $1"
    fi
}

# Relinked: through the CMake package (C and Fortran), through pkg-config (C).
PERFVAR_OUTPUT="$work/trace-relink-c" "$mpiexec" $flags "$work/build/c_mpi"
traced "$work/trace-relink-c" "C, CMake package"
PERFVAR_OUTPUT="$work/trace-relink-f" "$mpiexec" $flags "$work/build/f_mpi"
traced "$work/trace-relink-f" "Fortran, CMake package"
has_sendrecv "$work/trace-relink-f"
"$mpicc" "$here/c_mpi.c" -o "$work/c_mpi_pc" $($pc --cflags --libs perfvar-mpi-$flavour)
PERFVAR_OUTPUT="$work/trace-relink-pc" "$mpiexec" $flags "$work/c_mpi_pc"
traced "$work/trace-relink-pc" "C, pkg-config"

# Unchanged, by the installed launcher. PERFVAR_DEBUG belongs to the Python tools: the traced
# program must not call it unknown.
"$mpifort" "$here/f_mpi.f90" -o "$work/f_mpi_plain"
log=$work/preload.log
PERFVAR_DEBUG=1 "$mpiexec" $flags "$prefix/bin/perfvar-run" -o "$work/trace-preload" \
    "$work/f_mpi_plain" >"$log" 2>&1 || { cat "$log"; fail "perfvar-run failed"; }
cat "$log"
if grep -q "unknown variable" "$log"; then fail "the traced program refused PERFVAR_DEBUG"; fi
traced "$work/trace-preload" "Fortran, perfvar-run"
if [ "$flavour" = openmpi ] && [ -n "$mpich_mpiexec" ] && [ -n "$mpich_fort" ] &&
   [ -e "$prefix/lib/libperfvar_mpi_mpich.so" ]; then
    "$mpich_fort" "$here/f_mpi.f90" -o "$work/f_mpi_mpich"
    "$mpich_mpiexec" -n 2 "$prefix/bin/perfvar-run" -o "$work/trace-preload-mpich" "$work/f_mpi_mpich"
    traced "$work/trace-preload-mpich" "Fortran, MPICH, perfvar-run"
    has_sendrecv "$work/trace-preload-mpich"
fi

# The installed Python tools, with the installed package and library; run from the work directory
# so that nothing is written elsewhere.
cd "$work"
"$prefix/bin/perfvar" analyze "$work/trace-preload" >"$work/analyze.log" 2>&1 ||
    { cat "$work/analyze.log"; fail "perfvar analyze failed"; }
[ -s "$work/trace-preload/analysis.json" ] || fail "perfvar analyze wrote no analysis.json"
grep -q MPI_Sendrecv "$work/trace-preload/analysis.json" ||
    fail "the analysis of the preloaded Fortran run has no MPI_Sendrecv segment"
# Its OS-noise filter grows its forests in the installed libperfvar_stats.
stats=$(PYTHONPATH="$prefix/lib/perfvar/python" python3 -c \
    'from perfvar.stats import isolation; print(isolation.native()._name)')
case "$stats" in
    "$prefix"/lib/perfvar/python/perfvar/../../libperfvar_stats.so | "$prefix"/lib/libperfvar_stats.so) ;;
    *) fail "the installed package's isolation forest library is '$stats'" ;;
esac
"$prefix/bin/perfvar" calibrate --quick --timers barrier --states 0 --budget 5 --quiet \
    --json "$work/calibrate.json"
# The library the calibration measured is the installed one (found by _install_paths.py).
grep -q "\"$prefix/lib/libperfvar" "$work/calibrate.json" ||
    fail "perfvar calibrate did not use $prefix/lib: $(grep '"library"' "$work/calibrate.json")"
echo "check_install: ok"
