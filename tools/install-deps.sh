#!/usr/bin/env bash
# Installs what perfvar needs to build, run and test, only where it is missing.
# Debian packages: compilers (and the aarch64 cross compilers + qemu-user for the Armv8 tests),
# Open MPI, MPICH, OTF2, PAPI, hwloc (where each rank ran), libunwind (the call-path unwinder, loaded at run time), ViTE with Xvfb
# and ImageMagick (the trace viewer's test), Chromium
# (the HTML report's test); PyPI: numpy, scipy, statsmodels, ruptures, pandas,
# matplotlib, plotly and rich (the report's plots, progress bars), scikit-learn (the reference
# the isolation forest is tested against),
# otf2 (trace reader used by the tests), mpi4py (perfvar calibrate under mpiexec), import-linter
# (the import contracts of the Python package); and, at the exact
# versions src/wrapgen/requirements.txt pins, pympistandard (MPI Forum API for wrapper generation).
# Idempotent; safe to run as root (CI) or with sudo available.
set -euo pipefail

apt_pkgs=(gfortran cmake ninja-build pkg-config
          openmpi-bin libopenmpi-dev mpich libmpich-dev
          libopen-trace-format2-dev otf2-tools libpapi-dev papi-tools libhwloc-dev binutils util-linux libunwind-dev
          gcc-aarch64-linux-gnu gfortran-aarch64-linux-gnu qemu-user
          vite xvfb imagemagick chromium)
py_pkgs=(numpy scipy scikit-learn statsmodels ruptures pandas matplotlib plotly rich otf2 pytest mpi4py
         import-linter)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${apt_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
py_missing=()
for p in "${py_pkgs[@]}"; do
    mod=${p//-/_}; [ "$p" = scikit-learn ] && mod=sklearn; [ "$p" = import-linter ] && mod=importlinter
    "$PYTHON" -c "import $mod" 2>/dev/null || py_missing+=("$p")
done
if [ ${#py_missing[@]} -gt 0 ]; then
    echo "install-deps: installing Python packages: ${py_missing[*]}"
    # mpi4py, if built from source, builds against Open MPI (perfvar calibrate under mpiexec).
    MPICC=${MPICC:-mpicc.openmpi} "$PYTHON" -m pip install -q "${py_missing[@]}"
fi
# What src/wrapgen/requirements.txt pins: installed, upgraded or downgraded to exactly that version.
pins=$(cd "$(dirname "$0")/.." && pwd)/src/wrapgen/requirements.txt
pin_missing=()
while read -r req; do
    req=${req%%#*}; req=${req// /}
    [ -n "$req" ] || continue
    have=$("$PYTHON" -c "import importlib.metadata as m; print(m.version('${req%%==*}'))" 2>/dev/null || true)
    [ "$have" = "${req#*==}" ] || pin_missing+=("$req")
done < "$pins"
if [ ${#pin_missing[@]} -gt 0 ]; then
    echo "install-deps: installing pinned Python packages: ${pin_missing[*]}"
    "$PYTHON" -m pip install -q "${pin_missing[@]}"
fi
echo "install-deps: all dependencies present"
