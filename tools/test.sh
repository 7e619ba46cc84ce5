#!/usr/bin/env bash
# The whole test suite, on a fresh machine too: installs what is missing, builds, runs ctest
# (C and Fortran unit tests, MPI runs under the real mpiexec with 2 and 4 ranks by LD_PRELOAD and by
# relinking, trace validation, detection, install/package check, and pytest for the analysis).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
if [ "$(id -u)" = 0 ]; then # Open MPI refuses root without this (CI runs as root)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
cmake -S . -B build -G Ninja
cmake --build build
ctest --test-dir build --output-on-failure "$@"
