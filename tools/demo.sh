#!/usr/bin/env bash
# The demo: installs what is missing, builds perfvar, installs the analysis command, then runs the
# Fortran stencil (examples/stencil) under perfvar twice, one rank per core (at least 2):
#   1. as it is                      -> perfvar analyze names no anomalous core (or a core the host
#                                       really ran slower, with what its fixed-work probes measured)
#   2. with the last rank doing 3x the work in its compute segment (on a shared host, 2x can hide
#      in the cores' own variation from one phase of the host's load to the next)
#                                    -> perfvar analyze names that rank and the segment as more work
#                                       (load imbalance: its probes ran at its peers' speed)
# Traces and analyses land in demo-output/ (open demo-output/*/traces.otf2 in Vampir).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake -S . -B build -G Ninja >/dev/null
cmake --build build
python3 -m pip install -q ./postproc # the `perfvar` command

nranks=$(nproc)
[ "$nranks" -ge 2 ] || nranks=2
slow=$((nranks - 1))
mpiexec=/usr/bin/mpiexec.openmpi
flags=(-n "$nranks" --oversubscribe --bind-to core)
[ "$(id -u)" = 0 ] && flags+=(--allow-run-as-root)
out=demo-output
rm -rf "$out"

echo
echo "=== run 1: $nranks ranks, no injected anomaly ================================"
"$mpiexec" "${flags[@]}" build/bin/perfvar-run -o "$out/clean" build/examples/stencil/stencil
python3 -m perfvar analyze "$out/clean"

echo
echo "=== run 2: $nranks ranks, rank $slow does three times the work in one compute segment ="
"$mpiexec" "${flags[@]}" build/bin/perfvar-run -o "$out/slow" build/examples/stencil/stencil \
    --slow-rank "$slow" --slow-factor 3
python3 -m perfvar analyze "$out/slow"
echo
echo "Traces: $out/clean and $out/slow (OTF2, open traces.otf2 in Vampir); analyses: */analysis.json"
echo "Reports: $out/clean/report.html and $out/slow/report.html (open them in a browser)"
