#!/usr/bin/env bash
# Armv8: cross-build perfvar's MPI-free part (clock `isb; mrs cntvct_el0; isb`, timers, the aarch64
# ADD-chain kernel, calibration, Fortran module) with Debian's aarch64 cross compilers and run its
# unit tests under qemu-user. Usage: tools/test-aarch64.sh [BUILD_DIR]  (default build-aarch64)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-aarch64}
for tool in aarch64-linux-gnu-gcc aarch64-linux-gnu-gfortran qemu-aarch64; do
    command -v "$tool" >/dev/null || { echo "test-aarch64: $tool missing: run tools/install-deps.sh"; exit 1; }
done
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$src/tools/aarch64-linux-gnu.cmake" \
      -DPERFVAR_BUILD_MPI=OFF -DPERFVAR_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure
