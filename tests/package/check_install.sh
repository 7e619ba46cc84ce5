#!/bin/sh
# check_install.sh BUILD_DIR WORK_DIR MPIEXEC — install perfvar from BUILD_DIR into WORK_DIR/prefix,
# build this consumer project against it (CMake package and pkg-config), run its programs, trace an
# MPI run with the installed launcher, and build the Python package's wheel.
set -eu
build=$1 work=$2 mpiexec=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
prefix=$work/prefix
for f in bin/perfvar-run include/perfvar.h include/perfvar_clock.h lib/pkgconfig/perfvar.pc \
         lib/cmake/perfvar/perfvarConfig.cmake lib/libperfvar_mpi_openmpi.so lib/libperfvar_mpi_mpich.so; do
    [ -e "$prefix/$f" ] || { echo "missing $f"; exit 1; }
done
ls "$prefix"/include/perfvar/*/perfvar.mod >/dev/null
cmake -S "$here" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DMPI_C_COMPILER="$(dirname "$mpiexec")/mpicc.openmpi" >/dev/null
cmake --build "$work/build" >/dev/null
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$work/build/c_timer"
"$work/build/f_timer"
# pkg-config gives the flags of the timer library.
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" cc "$here/c_timer.c" -o "$work/c_timer_pc" \
    $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs perfvar)
"$work/c_timer_pc"
flags="-n 2"
if "$mpiexec" --version 2>&1 | grep -Eq "Open MPI|OpenRTE"; then flags="$flags --oversubscribe --allow-run-as-root"; fi
# Relinked and preloaded by the installed launcher: both leave a trace.
PERFVAR_OUTPUT="$work/trace-relink" "$mpiexec" $flags "$work/build/c_mpi"
[ -e "$work/trace-relink/traces.otf2" ] || { echo "no trace from the relinked program"; exit 1; }
cc "$here/c_mpi.c" -o "$work/c_mpi_plain" $(pkg-config --cflags --libs ompi-c)
"$mpiexec" $flags "$prefix/bin/perfvar-run" -o "$work/trace-preload" "$work/c_mpi_plain"
[ -e "$work/trace-preload/traces.otf2" ] || { echo "no trace from perfvar-run"; exit 1; }
python3 -m pip wheel --no-deps -q -w "$work/wheel" "$here/../../postproc"
ls "$work"/wheel/perfvar-*.whl >/dev/null
echo "check_install: ok"
